"""Edges SSSP and CC read per run: measured against the emulator's schedules of a launch.

Usage (repository root): python validation/experiments/warp_slots/runs/h200/waves_ab.py [--twins]
(writes waves_ab.csv beside this file; with ``--twins`` also waves_ab_kernel_time.csv,
about ten minutes on two cores).

For every SSSP and CC configuration of both GPUs' ``first_run`` (scale-14 kron and
urand; naive, merged, merged_aligned, chunked; each source) the median measured
``edges_read`` over memory modes, id widths and GPUs, beside the edges the functional
run reads under three schedules of a launch's vertices:

- ``waves_by_id`` (the emulator's, :mod:`hostlink.traces.emulator.algorithms`): waves of
  the vertex ids the resident warps handle (132 SMs x 64 warps), a later wave seeing
  every update of the earlier ones; chunked's 8 vertices per warp in 8 steps by
  ``v % 8``.
- ``waves_packed``: the warps that hold an active vertex only, packed into the SMs'
  64 warp slots and 32 CTA slots in CTA order (warps of inactive vertices free their
  slots at once; this folder measures that they do in part); chunked's steps by rank
  among the warp's active vertices.
- ``jacobi``: every vertex reads its value at the start of the launch.

``--twins``: the H200 ``first_run``'s zero-copy SSSP and CC cases predicted by their
twins (its calibration) with the emulator's schedule and with ``waves_packed`` in its
place, kernel time against the measured median.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from hostlink.traces.emulator import algorithms as alg
from hostlink.validation.twin_common import load_run
from hostlink.validation.twin_traversal import GraphSource
from hostlink.validation.data_tree import run_dir
from hostlink.validation.data_tree import run_dir

ROOT = Path(__file__).resolve().parents[5]
HERE = Path(__file__).resolve().parent
# both GPUs: 132 SMs (the programs' device record), 64 warps and 32 CTAs an SM holds
# (residency.csv beside this file), 8 warps a CTA (gpu_kernels/KERNELS.md)
SMS, WARPS_PER_SM, CTAS_PER_SM, WARPS_PER_CTA = 132, 64, 32, 8
PER_WARP = {"naive": 32, "chunked": alg.CHUNK_VERTICES}          # vertices a warp handles
SCHEDULES = ("waves_by_id", "waves_packed", "jacobi")


def steps(frontier: np.ndarray, schedule: str, variant: str) -> np.ndarray:
    """The step each active vertex reads its value in (frontier sorted)."""
    per_warp = PER_WARP.get(variant, 1)
    serial = alg.serial_steps_of(variant)
    if schedule == "jacobi":
        return np.zeros(len(frontier), dtype=np.int64)
    if schedule == "waves_by_id":
        return (frontier // (SMS * WARPS_PER_SM * per_warp)) * serial + frontier % serial
    warp = frontier // per_warp
    warps, in_warp = np.unique(warp, return_inverse=True)
    ctas, in_cta, count = np.unique(warps // WARPS_PER_CTA, return_inverse=True, return_counts=True)
    warps_before = np.concatenate(([0], np.cumsum(count)[:-1]))
    wave = np.maximum(warps_before // (SMS * WARPS_PER_SM),
                      np.arange(len(ctas)) // (SMS * CTAS_PER_SM))[in_cta][in_warp]
    if serial == 1:
        return wave
    rank = np.arange(len(frontier)) - np.searchsorted(warp, warps)[in_warp]
    return wave * serial + rank


def relax(csr, value: np.ndarray, frontier: np.ndarray, kernel: str, schedule: str,
          variant: str) -> alg.AlgorithmRun:
    """SSSP or CC from ``frontier`` under ``schedule`` (the emulator's relaxation with
    this script's steps)."""
    return alg.relax_in_steps(csr, value, frontier, kernel, kernel == "sssp",
                              lambda f: steps(f, schedule, variant))


def edges_read(csr, kernel: str, variant: str, source: int, schedule: str) -> int:
    """Edges of every launch's active lists under ``schedule`` (SSSP with its weights)."""
    V = csr.num_vertices
    if kernel == "sssp":
        value = np.full(V, alg.INF_U32, dtype=np.uint32)
        value[source] = 0
        frontier = np.array([source], dtype=np.int64)
    else:
        value = np.arange(V, dtype=np.uint32)
        frontier = np.arange(V, dtype=np.int64)
    run = relax(csr, value, frontier, kernel, schedule, variant)
    return sum(int((csr.offsets[a + 1] - csr.offsets[a]).sum()) for a in run.active)


def kernel_time_ab() -> pd.DataFrame:
    """Zero-copy SSSP and CC twins of the H200's first_run: the emulator's schedule
    against waves_packed (patched in for the emulator's), kernel time error per case."""
    from hostlink.model.predict import resolve_system
    from hostlink.validation.twins import predict_run

    folder = run_dir("first_run", "h200")
    system = resolve_system(str(folder / "calibrated.toml"))
    run = load_run(folder)
    cases = set(run.measured["case"].unique())
    keep = {c for c in cases if c.split("/")[0] in ("sssp", "cc") and "/zerocopy/" in c
            and "/balanced/" not in c}
    resident = SMS * WARPS_PER_SM
    by_wave = {resident * PER_WARP.get(v, 1): v for v in ("naive", "merged", "chunked")}
    measured_ms = (run.measured[run.measured.metric == "kernel_time_ms"]
                   .groupby("case").value.median())
    original = alg._relax_waves
    out = []
    try:
        for schedule in ("emulator", "waves_packed"):
            if schedule == "emulator":
                alg._relax_waves = original
            else:
                def patched(csr, value, first_active, kernel, weighted, wave, serial=1):
                    return relax(csr, value, first_active, kernel, "waves_packed", by_wave[wave])
                alg._relax_waves = patched
            pred, failures = predict_run(run, system, skip_cases=cases - keep)
            if failures:
                raise SystemExit(f"twins failed: {failures}")
            ms = pred[pred.metric == "kernel_time_ms"].groupby("case").value.median()
            for case, value in ms.items():
                out.append({"case": case, "schedule": schedule, "measured_ms": measured_ms[case],
                            "predicted_ms": value,
                            "error_pct": 100 * (value / measured_ms[case] - 1)})
    finally:
        alg._relax_waves = original
    return pd.DataFrame(out)


def measured() -> pd.DataFrame:
    rows = []
    for gpu in ("h200", "h100"):
        folder = run_dir("first_run", gpu)
        res = pd.read_parquet(folder / "results.parquet")
        res = res[res.case.str.match(r"^(sssp|cc)/") & (res.metric == "edges_read")]
        cases = json.loads((folder / "metadata.json").read_text())["cases"]
        for case, g in res.groupby("case"):
            kernel, graph, variant, _mode, _ids = case.split("/")
            if variant == "balanced":
                continue
            sources, reps = cases[case].get("sources") or [0], int(cases[case].get("reps", 1))
            for rep, value in zip(g.rep, g.value):
                rows.append({"kernel": kernel, "graph": graph, "variant": variant,
                             "source": int(sources[int(rep) // reps]) if kernel == "sssp" else 0,
                             "edges": float(value)})
    return pd.DataFrame(rows)


def main(argv: list[str]) -> None:
    meas = measured()
    graphs = GraphSource(load_run(run_dir("first_run", "h200")))
    out = []
    for (kernel, graph, variant, source), g in meas.groupby(["kernel", "graph", "variant", "source"]):
        csr = graphs.get(graph)
        row = {"kernel": kernel, "graph": graph, "variant": variant, "source": source,
               "runs": len(g), "measured_median": g.edges.median(),
               "measured_min": g.edges.min(), "measured_max": g.edges.max()}
        for schedule in SCHEDULES:
            row[schedule] = edges_read(csr, kernel, variant, source, schedule)
        out.append(row)
    table = pd.DataFrame(out)
    table.to_csv(HERE / "waves_ab.csv", index=False)
    for schedule in SCHEDULES:
        err = 100 * (table[schedule] / table.measured_median - 1)
        print(f"{schedule:13s} mean {err.mean():+6.1f}%  mean |error| {err.abs().mean():5.1f}%")
    if "--twins" in argv:
        ab = kernel_time_ab()
        ab.to_csv(HERE / "waves_ab_kernel_time.csv", index=False)
        kind = ab.case.str.split("/").str[0] + " " + ab.case.str.split("/").str[2]
        print(ab.assign(kind=kind).pivot_table(index="kind", columns="schedule", values="error_pct")
              .round(1).to_string())


if __name__ == "__main__":
    import sys
    main(sys.argv[1:])
