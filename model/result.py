"""The result of a prediction: one type for every mode and fidelity.

A :class:`Prediction` is what :func:`hostlink.model.predict.predict` returns
for zero-copy, UVM and device-memory runs, from the analytic model and from
the discrete-event model alike, so that results line up row for row with
each other and with measurements (``to_rows`` gives the tidy table the
validation's results use, :mod:`hostlink.validation.results_io`: ``run_id,
experiment, case, model_kind, metric, value, unit, rep``).

Definitions (all counts over the stream's host-memory requests, the ones
that cross the link in zero-copy mode):
- ``bw_GBps``: useful bytes (bytes some lane asked for) over the total time;
- ``link_bw_GBps``: bytes the link carried as payload (zero-copy: the
  requested bytes; UVM: the bytes migrated both ways; device mode: 0) over the
  total time, the figure an FPGA or VTune PCIe monitor reports;
- ``read_amplification``: bytes read from host memory (zero-copy: the DRAM
  bursts the requests touch; UVM: the bytes migrated to the GPU; device: 0)
  over the distinct useful bytes (the least of the useful bytes and the
  distinct bytes the requests cover: a list read again counts once);
- ``outstanding_mean`` / ``outstanding_peak``: host reads holding tags,
  time-weighted over the kernels' time (excluding launch overheads) / at most;
- ``time_s`` includes launch overheads and the synchronisation between launches;
  ``per_launch_time_s`` splits it by launch, ``per_launch_kernel_s`` gives
  the kernels alone.
Values that do not apply (outstanding reads of a UVM run) are NaN here and
``null`` in JSON.
"""
from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field

MODEL_KINDS = ("analytic", "des")

# metric -> unit string of the tidy table (GB/s = 1e9 B/s)
_UNITS = {"_s": "s", "_GBps": "GB/s", "_B": "B", "_ns": "ns"}

ROW_METRICS = ("time_s", "kernel_time_s", "bw_GBps", "link_bw_GBps", "requests", "useful_B",
               "requested_B", "wire_B_down", "wire_B_up", "dram_B", "outstanding_mean",
               "outstanding_peak", "read_amplification")


def unit_of(metric: str) -> str:
    for suffix, unit in _UNITS.items():
        if metric.endswith(suffix):
            return unit
    return "1"


def _clean(value):
    """JSON-safe: NaN and infinities become None, NumPy scalars Python numbers."""
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


@dataclass
class Prediction:
    """Predicted time, bandwidth and traffic of one request stream on one system."""
    mode: str                           # zerocopy | uvm | uvm_readmostly | device
    fidelity: str                       # analytic | des
    system: str                         # system name
    time_s: float
    bw_GBps: float
    link_bw_GBps: float
    requests_by_size_B: dict[int, int]
    requests: int
    useful_B: int
    requested_B: int
    wire_B_down: float
    wire_B_up: float
    dram_B: int
    outstanding_mean: float
    outstanding_peak: float
    read_amplification: float
    bound: str
    per_launch_time_s: list[float]
    per_launch_kernel_s: list[float] = field(default_factory=list)
    extra: dict = field(default_factory=dict)

    @property
    def kernel_time_s(self) -> float:
        """Time inside the kernels (no launch overheads or synchronisation)."""
        return float(sum(self.per_launch_kernel_s))

    @property
    def host_bytes_B(self) -> int:
        """Bytes the host requests moved (the requested bytes)."""
        return self.requested_B

    @property
    def launches(self) -> int:
        return len(self.per_launch_time_s)

    def to_dict(self) -> dict:
        """Plain, JSON-ready data (NaN as None); ``requests_by_size_B`` keys as strings."""
        d = asdict(self)
        d["kernel_time_s"] = self.kernel_time_s
        d["requests_by_size_B"] = {str(k): int(v)
                                   for k, v in sorted(self.requests_by_size_B.items())}
        return _clean(d)

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, sort_keys=True, allow_nan=False)

    @property
    def model_kind(self) -> str:
        return self.fidelity

    def to_rows(self, run_id: str, experiment: str, case: str, rep: int = 0) -> list[dict]:
        """Tidy rows: one per scalar metric, one per request size
        (``requests_<size>B``), one per launch (``launch_<k>_time_s``)."""
        base = {"run_id": run_id, "experiment": experiment, "case": case,
                "model_kind": self.fidelity, "rep": int(rep)}
        rows = []
        d = self.to_dict()
        for metric in ROW_METRICS:
            value = d[metric]
            rows.append({**base, "metric": metric,
                         "value": float("nan") if value is None else float(value),
                         "unit": unit_of(metric)})
        for size, count in sorted(self.requests_by_size_B.items()):
            rows.append({**base, "metric": f"requests_{int(size)}B", "value": float(count),
                         "unit": "1"})
        for k, t in enumerate(self.per_launch_time_s):
            rows.append({**base, "metric": f"launch_{k}_time_s", "value": float(t), "unit": "s"})
        return [{k: r[k] for k in ("run_id", "experiment", "case", "model_kind", "metric",
                                   "value", "unit", "rep")} for r in rows]

    def to_frame(self, run_id: str, experiment: str, case: str, rep: int = 0):
        """:meth:`to_rows` as a pandas DataFrame."""
        import pandas as pd
        return pd.DataFrame(self.to_rows(run_id, experiment, case, rep))
