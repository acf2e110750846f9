"""Benchmark: how much slower the DES is than the GPU it predicts.

BFS merged_aligned, 8 B ids, zero-copy, on GAP kron scale 21 degree 16 from
the three sources the H200 run used (validation/experiments/first_run/runs/h200): the
emulation (with the GPU's host-read caches) and the DES prediction are timed
on this machine, one core, and set against the kernel time measured on the
H200 (median over sources and repeats). Writes tests/bench/results/des_vs_hardware.json.
"""
from __future__ import annotations

import json
import os
import platform
import time
from pathlib import Path

import pandas as pd

from hostlink.model.config import load_any_system
from hostlink.model.predict import predict
from hostlink.traces.cache import host_read_cache
from hostlink.traces.emulator import emulate
from hostlink.traces.graphs import kron
from hostlink.validation.data_tree import run_dir

REPO = Path(__file__).resolve().parents[2]
RUN = run_dir("first_run", "h200")
CASE = "bfs/kron21/merged_aligned/zerocopy/8B"
SOURCES = (322668, 1165409, 1786843)  # metadata.json of the run


def main() -> dict:
    measured = pd.read_parquet(RUN / "results.parquet")
    measured = measured[(measured.case == CASE) & (measured.metric == "kernel_time_ms")]
    measured_ms = float(measured.value.median())
    system = load_any_system(RUN / "calibrated.toml")
    graph = kron(21, 16)
    runs = []
    for source in SOURCES:
        t0 = time.perf_counter()
        stream = emulate(graph, "bfs", "merged_aligned", source=source,
                         id_bytes=8).requests(host_read_cache(system.gpu))
        t1, c1 = time.perf_counter(), time.process_time()
        p = predict(stream, system, mode="zerocopy", fidelity="des")
        t2, c2 = time.perf_counter(), time.process_time()
        runs.append({"source": source, "requests": len(stream), "emulate_s": t1 - t0,
                     "des_s": t2 - t1, "des_cpu_s": c2 - c1,
                     "predicted_kernel_ms": p.kernel_time_s * 1e3})
    des_s = min(r["des_cpu_s"] for r in runs)
    out = {"benchmark": "des_vs_hardware", "case": CASE, "gpu": "NVIDIA H200, PCIe 5.0 x16",
           "measured_kernel_ms_median": measured_ms, "runs": runs,
           "des_cpu_s_best": des_s, "slowdown_vs_hardware": des_s / (measured_ms / 1e3),
           "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                       "load_average_1min": os.getloadavg()[0]}}
    path = REPO / "tests" / "bench" / "results" / "des_vs_hardware.json"
    path.write_text(json.dumps(out, indent=2) + "\n")
    print(f"DES of {CASE}: {des_s:.2f} CPU s for {runs[0]['requests']:,} requests; "
          f"the H200 ran it in {measured_ms:.2f} ms: {out['slowdown_vs_hardware']:.0f}x slower")
    return out


if __name__ == "__main__":
    main()
