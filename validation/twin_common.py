"""What the predicted twins share: a measured run's cases and the model behind one interface.

A measured case (named by :mod:`hostlink.validation.manifest`) has a twin that
issues the same memory traffic in the model (:mod:`hostlink.validation.twin_micro`
for microbenchmarks, :mod:`hostlink.validation.twin_traversal` for traversal
kernels). This module holds what both kinds use: the case names' parameters and
groups, a measured run directory (:class:`RunData`, :func:`load_run`), and
:func:`run_model`, which predicts a request stream in the memory mode's model
(:func:`hostlink.model.predict.predict`, the same door every command uses).

It makes no modelling assumption of its own: those of the twins are in their
modules' docstrings, those of the model in :mod:`hostlink.model`'s.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from hostlink.model.errors import HostlinkError
from hostlink.model.workload import RequestStream


#: The metric each benchmark is judged by (the others are reported too).
PRIMARY_METRIC = {"memcpy": "bw_GBps", "zc_read": "bw_GBps", "zc_warps": "bw_GBps",
                  "ptr_chase": "lat_ns", "uvm_touch": "time_ms", "launch": "time_us",
                  "host_loop": "gap_us"}
TRAVERSAL_PRIMARY = "kernel_time_ms"

#: Harness memory mode -> the model's prediction mode.
#: SetAccessedBy on host-resident managed memory is a remote mapping (no migration
#: on x86 without ATS, NVIDIA/open-gpu-kernel-modules kernel-open/nvidia-uvm
#: uvm_gpu_access_counters.c): its reads are zero-copy reads.
PREDICT_MODE = {"device": "device", "zerocopy": "zerocopy", "registered": "zerocopy",
                "uvm_accessedby": "zerocopy", "uvm": "uvm", "uvm_readmostly": "uvm_readmostly"}
ZEROCOPY_MODES = ("zerocopy", "registered", "uvm_accessedby")
UVM_MODES = ("uvm", "uvm_readmostly")


class TwinError(HostlinkError):
    """A case whose twin cannot be built (unknown parameters, missing graph)."""


# ----------------------------------------------------------------------------
# Cases of a run


@dataclass
class RunData:
    """A measured run directory: its tidy results, case parameters and manifest."""
    path: Path
    measured: pd.DataFrame
    cases: dict[str, dict]
    metadata: dict
    experiment: str

    def hint(self, case: str, metric: str) -> float | None:
        """Median of a measured metric of a case (launch parameters such as warps_launched)."""
        m = self._hints.get((case, metric))
        return None if m is None or not np.isfinite(m) else float(m)

    def __post_init__(self) -> None:
        df = self.measured
        med = df.groupby(["case", "metric"], sort=False)["value"].median()
        self._hints = med.to_dict()


def load_run(results_dir: str | Path) -> RunData:
    """Read RESULTS_DIR/results.csv (or .parquet) and the case parameters in metadata.json."""
    from hostlink.validation.results_io import read_results

    path = Path(results_dir)
    if not path.is_dir():
        raise TwinError(f"{path}: not a results directory")
    table = None
    for name in ("results.parquet", "results.csv"):
        if (path / name).is_file():
            table = read_results(path / name)
            break
    if table is None:
        raise TwinError(f"{path}: no results.csv or results.parquet")
    measured = table[table["model_kind"] == "measured"].copy()
    if measured.empty:
        raise TwinError(f"{path}: the results hold no measured rows")
    meta = {}
    if (path / "metadata.json").is_file():
        try:
            meta = json.loads((path / "metadata.json").read_text())
        except json.JSONDecodeError as exc:
            raise TwinError(f"{path / 'metadata.json'}: not valid JSON ({exc.msg})") from None
    cases = dict(meta.get("cases") or {})
    for case in measured["case"].unique():
        if case not in cases:
            cases[case] = params_from_name(case, where=str(path / "results"))
    experiment = meta.get("experiment") or str(measured["experiment"].iloc[0])
    return RunData(path, measured, cases, meta, experiment)


def _parse_value(text: str):
    try:
        return int(text)
    except ValueError:
        return text


def params_from_name(case: str, where: str = "case") -> dict:
    """Parameters of a case from its name alone (settings take their defaults)."""
    from hostlink.validation.manifest import KERNELS, MICRO_BENCHMARKS

    parts = case.split("/")
    if parts[0] == "micro":
        if len(parts) != 3 or parts[1] not in MICRO_BENCHMARKS:
            raise TwinError(f"{where}: case '{case}' is not micro/<benchmark>/<key>=<value>,...")
        spec = MICRO_BENCHMARKS[parts[1]][1]
        params: dict = {"kind": "micro", "benchmark": parts[1]}
        for item in filter(None, parts[2].split(",")):
            key, sep, value = item.partition("=")
            if not sep or key not in spec:
                raise TwinError(f"{where}: case '{case}': unknown parameter '{item}'")
            params[key] = _parse_value(value)
        for key, p in spec.items():
            if not p.naming:
                params.setdefault(key, p.default)
        return params
    if parts[0] == "trace":
        return {"kind": "trace"}
    if len(parts) == 5 and parts[0] in KERNELS and parts[4].endswith("B"):
        return {"kind": "traversal", "kernel": parts[0], "graph": parts[1], "variant": parts[2],
                "memory_mode": parts[3], "id_bytes": int(parts[4][:-1])}
    raise TwinError(f"{where}: case '{case}' is neither a traversal nor a micro case name")


def micro_group(params: dict) -> str:
    """The microbenchmark group of a case: the unit calibration uses or holds out."""
    b = params["benchmark"]
    if b == "memcpy":
        return f"micro/memcpy/{params.get('direction', 'h2d')}"
    if b == "zc_read":
        return f"micro/zc_read/{params.get('pattern', 'coalesced')}"
    if b == "zc_warps":
        # coalesced lines against warps (the requester limit); 32 B reads against
        # warps (the tag window) are a group of their own
        pattern = params.get("pattern", "coalesced")
        return "micro/zc_warps" if pattern == "coalesced" else f"micro/zc_warps/{pattern}"
    if b == "ptr_chase":
        if params.get("cache") == "atomic":       # atomics: a cost of their own
            return "micro/ptr_chase/atomic"
        where = "device" if params.get("memory_mode") == "device" else "host"
        return f"micro/ptr_chase/{where}"
    if b == "uvm_touch":
        group = f"micro/uvm_touch/{params.get('advice', 'none')}/{params.get('pattern', 'seq')}"
        group += "/returned" if params.get("host_state", "fresh") == "returned" else ""
        # the read split over launches: judged on its first launch (a group of its own)
        return group + ("/launches" if int(params.get("launches", 1)) > 1 else "")
    if b == "launch":
        return f"micro/launch/{params.get('work', 'empty')}"
    if b == "host_loop":
        # the traversal programs' own loops are held out; their parts calibrate
        from hostlink.model.host_loop import PROGRAMS
        return "micro/host_loop/" + ("program" if params.get("loop") in PROGRAMS else "parts")
    if b == "gather":
        # the acceptance's classes: zero-copy (pinned, registered, AccessedBy), the CPU
        # gather plus copy, UVM first touch; a resident table (device, UVM warm)
        mode = params.get("memory_mode", "zerocopy")
        cls = {"registered": "zerocopy", "uvm_accessedby": "zerocopy", "uvm_warm": "device",
               "uvm": "uvm"}.get(mode, mode)
        return f"micro/gather/{cls}"
    if b == "host_read":
        # rows only read (they calibrate the host threads) and rows copied (held out)
        return f"micro/host_read/{params.get('op', 'sum')}"
    return f"micro/{b}"


def case_group(case: str, params: dict) -> str:
    """Group of any case: micro groups above; traversal by memory-mode class."""
    kind = params.get("kind")
    if kind == "micro":
        return micro_group(params)
    if kind == "traversal":
        mode = params["memory_mode"]
        cls = ("zerocopy" if mode in ZEROCOPY_MODES else "uvm" if mode in UVM_MODES else "device")
        return f"traversal/{cls}"
    return "other"


def primary_metric(params: dict) -> str:
    if params.get("kind") == "micro":
        if params["benchmark"] == "uvm_touch" and int(params.get("launches", 1)) > 1:
            return "first_launch_ms"        # the launch that pays the run's one-off cost
        return PRIMARY_METRIC.get(params["benchmark"], "bw_GBps")
    return TRAVERSAL_PRIMARY


# ----------------------------------------------------------------------------
# The model behind one interface


@dataclass
class ModelRun:
    """What a twin needs from a prediction."""
    time_ns: float                 # whole run, with launch overheads
    kernel_ns: np.ndarray          # per launch, kernel time only
    host_bytes_B: float = 0.0      # bytes the host requests moved
    # per launch, bytes the UVM model migrated host to device (None outside the UVM modes)
    launch_h2d_B: np.ndarray | None = None


def run_model(stream: RequestStream, system, mode: str, fidelity: str, *,
              back_to_back: bool = False, host_loop: str | None = None,
              vertices: int = 0) -> ModelRun:
    """Predict one request stream with :func:`hostlink.model.predict.predict`, the door
    every command uses: the system carries every cost (the loaded round trip, the UVM
    driver's costs and one-off cost of ``back_to_back`` launches, the host loop's).

    ``host_loop`` (with ``vertices``): the program's loop around its launches; the
    run's time is then its launches' plus that loop's
    (:mod:`hostlink.model.host_loop`), else the prediction's own."""
    from hostlink.model.predict import predict

    pred = predict(stream, system, mode=mode, fidelity=fidelity, back_to_back=back_to_back,
                   host_loop=host_loop, vertices=vertices)
    kernel = getattr(pred, "kernel_time_s", None)
    per_launch = getattr(pred, "per_launch_kernel_s", None)
    if per_launch is not None:
        kernel_ns = np.asarray(per_launch, dtype=np.float64) * 1e9
    elif kernel is not None:
        kernel_ns = np.asarray([kernel * 1e9])
    else:
        kernel_ns = np.asarray([pred.time_s * 1e9])
    launch_h2d_B = None
    uvm = (getattr(pred, "extra", None) or {}).get("uvm")
    if uvm and uvm.get("per_launch") is not None:
        launch_h2d_B = np.zeros(len(kernel_ns))
        for row in uvm["per_launch"]:
            if 0 <= int(row["launch"]) < len(launch_h2d_B):
                launch_h2d_B[int(row["launch"])] += float(row["h2d_B"])
    return ModelRun(time_ns=float(pred.time_s) * 1e9, kernel_ns=kernel_ns,
                    host_bytes_B=float(getattr(pred, "host_bytes_B", 0.0) or 0.0),
                    launch_h2d_B=launch_h2d_B)
