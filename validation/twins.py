"""Predicted twins: the model's prediction of every case a validation run measured.

A measured case (named by :mod:`hostlink.validation.manifest`) has a twin
that issues the same memory traffic in the model:

- traversal cases ``<kernel>/<graph>/<variant>/<memory_mode>/<id_bytes>B``:
  :mod:`hostlink.validation.twin_traversal` (the same graph, sources, kernel,
  variant and id width, emulated by :mod:`hostlink.traces.emulator` and
  predicted in the memory mode's model);
- microbenchmark cases ``micro/<benchmark>/<parameters>``:
  :mod:`hostlink.validation.twin_micro` (the request stream the CUDA program of
  ``gpu_kernels/micro`` issues, built from its documented access pattern);
- what both share (case names and groups, the measured run, the model behind
  one interface): :mod:`hostlink.validation.twin_common`.

Each of those modules states its assumptions. This one predicts every case of
a run (:func:`predict_run`), limits a run's measurements to the sources
predicted, and makes measured-looking results from the model for testing
calibration (:func:`synthesize`). Its namespace carries the names of all
three, so callers import twins from here; :func:`predict_run` looks up
:func:`build_micro`, :func:`predict_traversal` and :class:`GraphSource` here
(a worker process or a test may replace them).

The twins are split by kind so that stored predictions go stale by kind: an
edit of the microbenchmark twins leaves a report's stored traversal predictions
valid, and the other way round (:data:`hostlink.validation.report.PREDICTION_CODE`).
"""
from __future__ import annotations

from typing import Callable

import numpy as np
import pandas as pd

from hostlink.model.errors import HostlinkError
from hostlink.validation.twin_common import (  # noqa: F401  (the twins' names, re-exported)
    PREDICT_MODE, PRIMARY_METRIC, TRAVERSAL_PRIMARY, UVM_MODES, ZEROCOPY_MODES, ModelRun, RunData, TwinError, case_group, load_run,
    micro_group, params_from_name, primary_metric, run_model)
from hostlink.validation.twin_micro import (  # noqa: F401
    DEFAULT_MAX_REQUESTS, DEFAULT_MAX_UVM_B, MICRO_BASE, MIN_LOADS_PER_WARP, PERM_MULTIPLIER,
    MicroTwin, build_launch, build_memcpy, build_micro, build_ptr_chase, build_uvm_touch,
    build_zc, device_chase_levels, host_cache_for, mix64, random_region_B,
    read_kernel_in_flight, read_kernel_symbol, run_loads_in_flight, warps_per_block)
from hostlink.validation.twin_traversal import (  # noqa: F401
    GraphSource, predict_traversal, requests_ahead)


# ----------------------------------------------------------------------------
# Every case of a run


def predict_run(run: RunData, system, *, fidelity: str = "des", graph_dir=None,
                only: str | None = None, progress: bool = False,
                max_requests: int = DEFAULT_MAX_REQUESTS,
                max_uvm_B: int = DEFAULT_MAX_UVM_B,
                timings: dict | None = None,
                max_sources: int | None = None, skip_cases: set[str] | None = None,
                on_case: Callable[[str, pd.DataFrame, str | None], None] | None = None,
                ) -> tuple[pd.DataFrame, dict[str, str]]:
    """Tidy predicted rows for every measured case (model_kind = fidelity), and the
    cases whose twin failed with the reason (``timings``, a dict, receives each traversal case's wall-clock seconds
    and each microbenchmark case's bound, ``{"bound": ...}``; and
    ``max_sources`` samples each traversal case's sources, see
    :func:`predict_traversal`). ``skip_cases``: cases not predicted (already done
    elsewhere, e.g. a resumed report); ``on_case(case, rows, failure)`` is called as
    each case finishes, with its tidy rows (empty if it failed) and the failure
    message or None, so a caller can keep finished cases."""
    from hostlink.validation.results_io import make_table, unit_of

    if fidelity not in ("des", "analytic"):
        raise TwinError(f"fidelity must be 'des' or 'analytic', not '{fidelity}'")
    skip = set(skip_cases or ())
    cases = [c for c in run.measured["case"].unique() if selected(c, only) and c not in skip]
    graphs = GraphSource(run, graph_dir)
    def order_key(c):
        p = run.cases[c]
        return (p.get("kind") != "micro", str(p.get("graph", "")), str(p.get("kernel", "")),
                str(p.get("variant", "")), int(p.get("id_bytes", 0) or 0), c)
    order = sorted(cases, key=order_key)
    rows, failures = [], {}
    run_id = f"{run.experiment}-twin-{fidelity}"
    in_flight = run_loads_in_flight(run.path)
    bar = _progress(len(order), progress)
    for case in order:
        params = run.cases[case]
        kind = params.get("kind")
        first = len(rows)
        failure = None
        try:
            if kind == "micro":
                twin = build_micro(case, params, system, hints=lambda m, c=case: run.hint(c, m),
                                   max_requests=max_requests, max_uvm_B=max_uvm_B,
                                   loads_in_flight=in_flight)
                for metric, value in twin.predict(system, fidelity).items():
                    rows.append((run_id, run.experiment, case, fidelity, metric, value,
                                 unit_of(metric), 0))
                if timings is not None and getattr(twin, "bound", ""):
                    timings[case] = {"bound": twin.bound}
            elif kind == "traversal":
                timing = {} if timings is not None else None
                if timings is not None:
                    timings[case] = timing
                for metric, value, rep in predict_traversal(case, params, system, graphs,
                                                            fidelity=fidelity,
                                                            timing=timing,
                                                            max_sources=max_sources):
                    rows.append((run_id, run.experiment, case, fidelity, metric, value,
                                 unit_of(metric), rep))
        except HostlinkError as exc:
            failures[case] = failure = str(exc)
        if on_case is not None:
            on_case(case, make_table(rows[first:]), failure)
        bar(case)
    return make_table(rows), failures


def sampled_measurements(run: RunData, max_sources: int | None) -> pd.DataFrame:
    """The run's measured rows, traversal cases limited to the repetitions of their first
    ``max_sources`` sources (``rep < max_sources * reps``): what a twin predicted with
    ``max_sources`` is compared with."""
    m = run.measured
    if max_sources is None:
        return m
    limit = {}
    for case, p in run.cases.items():
        if p.get("kind") == "traversal" and p.get("kernel") in ("bfs", "sssp"):
            limit[case] = max(1, int(max_sources)) * int(p.get("reps", 1) or 1)
    lim = m["case"].map(limit).fillna(np.inf).to_numpy(dtype=float)
    return m[m["rep"].to_numpy(dtype=float) < lim]


def selected(case: str, only: str | None) -> bool:
    """Whether a case matches ``only``: comma-separated substrings, any of which may match."""
    if not only:
        return True
    return any(part and part in case for part in only.split(","))


def _progress(total: int, enabled: bool):
    if not enabled:
        return lambda case: None
    import sys
    state = {"n": 0}

    def step(case: str) -> None:
        state["n"] += 1
        sys.stderr.write(f"\r[{state['n']}/{total}] {case[:70]:<70}")
        if state["n"] == total:
            sys.stderr.write("\n")
        sys.stderr.flush()
    return step


def synthesize(cases: dict[str, dict], system, *, fidelity: str = "des", noise_pct: float = 0.0,
               reps: int = 3, seed: int = 0, experiment: str = "synthetic",
               max_requests: int = DEFAULT_MAX_REQUESTS) -> pd.DataFrame:
    """Measured-looking results of microbenchmark cases, generated by the model itself.

    Each case's predicted metrics are repeated ``reps`` times with independent
    log-normal noise of ``noise_pct`` percent (a seeded NumPy generator), and
    labelled ``measured``: data with known parameters for testing calibration.
    """
    from hostlink.validation.results_io import make_table, unit_of

    rng = np.random.default_rng(seed)
    rows = []
    for case, params in cases.items():
        twin = build_micro(case, params, system, max_requests=max_requests)
        values = twin.predict(system, fidelity)
        if twin.benchmark in ("zc_read", "zc_warps", "uvm_touch"):
            values["warps_launched"] = float(twin.extra.get("warps", 0))
        for rep in range(reps):
            noise = np.exp(rng.normal(0.0, noise_pct / 100.0)) if noise_pct else 1.0
            for metric, value in values.items():
                v = value if metric == "warps_launched" else value * (
                    1.0 / noise if metric.endswith("GBps") else noise)
                rows.append((f"{experiment}-synthetic", experiment, case, "measured", metric,
                             float(v), unit_of(metric), rep))
    return make_table(rows)
