"""What the predicted twins share: a measured run's cases and the model behind one interface.

A measured case (named by :mod:`hostlink.validation.manifest`) has a twin that
issues the same memory traffic in the model (:mod:`hostlink.validation.twin_micro`
for microbenchmarks, :mod:`hostlink.validation.twin_traversal` for traversal
kernels). This module holds what both kinds use: the case names' parameters and
groups, a measured run directory (:class:`RunData`, :func:`load_run`), and
:func:`run_model`, which predicts a request stream in the memory mode's model
(zero-copy through the link model, at the discrete-event or analytic fidelity,
with the loaded round trip settled by :func:`loaded_prediction`; UVM through the
fault model; device memory through the GPU's memory model).

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

SECTOR_B = 32
DEFAULT_MAX_DEVICE_EDGES = 1 << 24     # graphs up to this many edges carry their device arrays
WEIGHT_B = 4                           # an edge weight: uint32 (gpu_kernels/traversal/walk.cuh)

#: The metric each benchmark is judged by (the others are reported too).
PRIMARY_METRIC = {"memcpy": "bw_GBps", "zc_read": "bw_GBps", "zc_warps": "bw_GBps",
                  "ptr_chase": "lat_ns", "uvm_touch": "time_ms", "launch": "time_us",
                  "host_loop": "gap_us"}
TRAVERSAL_PRIMARY = "kernel_time_ms"

#: Harness memory mode -> the model's prediction mode.
#: SetAccessedBy on host-resident managed memory is a remote mapping (no migration
#: on x86 without ATS, REFERENCE.md "UVM"): its reads are zero-copy reads.
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


#: ``options.uvm`` keys that are not keywords of the UVM model: each stands in for the
#: model's key in one context of a run, and falls back to it where absent. A run's
#: one-off fault cost (the wake-up of the driver's fault servicing) grows with the
#: host's idle time before the first faulting launch (validation/results/*/uvm_launches),
#: so a single launch after the CPU filled and advised the buffer pays another one than
#: a run whose faults come in launches back to back after its pages went to the GPU and
#: back (a traversal, first touch split over launches): ``launches_first_fault_us``.
UVM_CONTEXT_KEYS = {"launches_first_fault_us": "first_fault_us"}


def uvm_options_in_context(options: dict | None, *, launches: bool) -> dict:
    """``options`` with the UVM keys of one context resolved (:data:`UVM_CONTEXT_KEYS`):
    for a run of back-to-back launches (``launches``), ``launches_first_fault_us``
    replaces ``first_fault_us`` where set; either way no context key is left, so the
    ``uvm`` group holds keywords of the UVM model only. A copy; ``options`` is kept."""
    out = {g: dict(v) if isinstance(v, dict) else v for g, v in (options or {}).items()}
    uvm = out.get("uvm")
    if not isinstance(uvm, dict):
        return out
    for key, model_key in UVM_CONTEXT_KEYS.items():
        if key in uvm:
            value = uvm.pop(key)
            if launches and value is not None:
                uvm[model_key] = value
    return out


LOADED_RTT_PASSES = 4          # at most: the fixed point settles in two or three
LOADED_RTT_TOL = 2e-3          # relative change of the predicted time that ends the passes


def run_model(stream: RequestStream, system, mode: str, fidelity: str,
              options: dict | None = None, *, launches_context: bool = False,
              host_loop: str | None = None, vertices: int = 0) -> ModelRun:
    """Predict one request stream with :func:`hostlink.model.predict.predict`.

    ``options``: model options beyond the system config: ``{"uvm": {...}}``
    (keywords of :func:`hostlink.model.uvm.simulate_uvm`, used in the UVM modes, and
    the context keys of :data:`UVM_CONTEXT_KEYS`, resolved for a run of back-to-back
    launches where ``launches_context``, else for a single launch after the host's
    set-up: :func:`uvm_options_in_context`) and
    ``{"link": {"rtt_at_full_link_ns": d}}``, a round trip that grows with the link's
    load (zero-copy mode; see :func:`loaded_prediction`). ``{"prefetch": {"call_us": c}}``
    is read by the prefetch first-touch twin only (:func:`_predict_uvm_touch`),
    ``{"micro": {"random_load_ns": t, "random_chain_ns": c}}`` by the random-pattern
    read twins only
    (:func:`random_pattern_floor_ns`).

    ``host_loop`` (with ``vertices``): the program's loop around its launches; the
    run's time is then its launches' plus that loop's
    (:func:`hostlink.model.host_loop.loop_gap_ns`), else the prediction's own."""
    from hostlink.model.predict import predict

    options = uvm_options_in_context(options, launches=launches_context)
    uvm_options = dict(options.get("uvm") or {})
    full_ns = float(((options or {}).get("link") or {}).get("rtt_at_full_link_ns", 0.0) or 0.0)
    if mode == "zerocopy" and full_ns > 0:
        pred = loaded_prediction(stream, system, fidelity, full_ns)
    else:
        pred = predict(stream, system, mode=mode, fidelity=fidelity,
                       uvm_options=uvm_options if mode in ("uvm", "uvm_readmostly") else None)
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
    time_ns = float(pred.time_s) * 1e9
    if host_loop is not None:
        from hostlink.model.host_loop import loop_gap_ns
        time_ns = float(np.sum(kernel_ns)) + loop_gap_ns(system, host_loop, vertices, len(kernel_ns))
    return ModelRun(time_ns=time_ns, kernel_ns=kernel_ns,
                    host_bytes_B=float(getattr(pred, "host_bytes_B", 0.0) or 0.0),
                    launch_h2d_B=launch_h2d_B)


def link_utilisation(pred, system) -> float:
    """Share of the run's kernel time the downstream link spends on its completions."""
    from hostlink.model.des.inputs import link_rate_Bpns

    kernel_ns = float(np.sum(pred.per_launch_kernel_s)) * 1e9
    if kernel_ns <= 0:
        return 0.0
    return min(1.0, float(pred.wire_B_down) / (kernel_ns * link_rate_Bpns(system)))


def loaded_prediction(stream: RequestStream, system, fidelity: str, full_ns: float):
    """Zero-copy prediction with a round trip that grows with the link's load.

    On the H200 the round trip of a 128 B read grows with the load long before the
    link saturates (1.22 us up to 16 warps with one read each, 1.32 us at 132 warps
    and 25% of the link, 1.41 us at 264 and 47%, 1.54 us at 528 and 85%): about
    ``full_ns`` x the downstream link's utilisation, which the engines' fixed
    ``link.rtt_ns`` does not give (their queueing adds only the link's own
    serialisation). Mean-field approximation, pending a per-read mechanism in the
    engines: the run is predicted with ``rtt_ns = link.rtt_ns + full_ns * U``, U the
    utilisation of the previous pass (:func:`link_utilisation`), from U of the
    unloaded pass until the time moves by less than ``LOADED_RTT_TOL``. One U stands
    for every launch of a run, so short launches on a quiet link get the round trip
    of the busy ones."""
    from hostlink.model.config import system_with
    from hostlink.model.predict import predict

    rtt0 = float(system.link.rtt_ns)
    pred = predict(stream, system, mode="zerocopy", fidelity=fidelity)
    for _ in range(LOADED_RTT_PASSES):
        u = link_utilisation(pred, system)
        if u <= 0:
            break
        nxt = predict(stream, system_with(system, {"link.rtt_ns": rtt0 + full_ns * u}),
                      mode="zerocopy", fidelity=fidelity)
        done = abs(nxt.time_s - pred.time_s) <= LOADED_RTT_TOL * pred.time_s
        pred = nxt
        if done:
            break
    return pred


