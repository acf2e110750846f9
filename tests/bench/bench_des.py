"""Benchmark: the zero-copy discrete-event model's speed.

1. Engine rate, in requests simulated per second on one core (the compiled
   engine is single threaded), target >= 10 million: the CPU time of the
   process (so that other work sharing the machine's two cores does not
   count; wall time is recorded beside it), best of REPEATS runs of
   :func:`hostlink.model.des.fast.run` after a warm-up that compiles it, on
   seeded synthetic streams of 4 million requests on the v100-pcie3 system:
   - streaming: warps each read 8 consecutive 128 B lines, one per
     instruction (link bound);
   - scattered: warps issue instructions of 1 to 32 requests of 32-128 B at
     random lines (tag bound, deep credit queue);
   - mixed: as scattered, with a third of the requests to device memory,
     two loads in flight per warp and a one-entry TLB (page walks).
   ``predict_s`` is the whole ``predict(..., fidelity="des")`` for the same
   stream (costing, layout, translation and the engine).
   Each stream is timed again with the SM's issue stage on (``+stage``: the
   H100 preset's gpu.request_gap_ns, host_request_gap_ns and sm_request_ns on
   the same system), target >= 2 million requests/s: every read then passes
   two more events (reaching its SM, leaving it), so the stage's cost is the
   ratio of the two rates, measured side by side. ``mixed+stage+atomics``: the
   mixed stream with the instructions of half its warps marked atomics that return
   (``RequestStream.atomic``), on the staged system with the H200's fitted atomic
   costs (validation/experiments/atomic_chase/runs/h200): their device reads take their own
   queue and their lines the log-spaced path through the stage.
2. From graph to predicted time: a kron graph of scale 22 (degree 16), BFS
   merged_aligned with 8 B ids from a seeded source, emulated to its request
   stream and predicted with the DES on v100-pcie3; each stage timed. The
   ratio of the predicted time to the kernel's measured time on real
   hardware is recorded once the validation results hold that run (null
   until then).

Prints the figures, writes tests/bench/results/des.json, exits 1 if the
engine target is missed.
"""
from __future__ import annotations

import json
import os
import platform
import resource
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from hostlink.model.config import load_system
from hostlink.model.des import build_inputs, fast
from hostlink.model.predict import predict
from hostlink.model.workload import SPACE_DEVICE, SPACE_HOST, LaunchInfo, RequestStream

N_REQUESTS = 4_000_000
REPEATS = 3
TARGET_REQUESTS_PER_S = 10e6
TARGET_STAGED_REQUESTS_PER_S = 2e6
# the issue stage's three costs as the H100 preset carries them
STAGE_KEYS = ("gpu.request_gap_ns", "gpu.host_request_gap_ns", "gpu.sm_request_ns")
# what an atomic that returns costs (the H200's fit: validation/experiments/atomic_chase/runs/h200)
ATOMIC_COSTS = {"gpu.atomic_extra_ns": 57.1, "gpu.atomic_spread_ns": 19.36}
SEED = 20240611
GRAPH_SCALE = 22
RESULTS = Path(__file__).resolve().parent / "results" / "des.json"


def streaming(rng) -> RequestStream:
    per = 8
    warps = N_REQUESTS // per
    n = warps * per
    return RequestStream(
        launch=np.zeros(n), warp=np.repeat(np.arange(warps), per), inst=np.tile(np.arange(per), warps),
        addr=rng.permutation(n).astype(np.uint64) * np.uint64(128), size_B=np.full(n, 128),
        useful_B=np.full(n, 128), space=np.zeros(n), is_write=np.zeros(n, bool),
        launches=(LaunchInfo("streaming", warps // 8, 8, 256),))


def scattered(rng, device_share=0.0) -> RequestStream:
    per_inst = rng.integers(1, 33, N_REQUESTS // 16)
    per_inst = per_inst[np.cumsum(per_inst) <= N_REQUESTS]
    n_inst = len(per_inst)
    inst_warp = np.arange(n_inst) // 6          # six instructions per warp
    inst_idx = np.arange(n_inst) % 6
    n = int(per_inst.sum())
    size = rng.choice([32, 64, 96, 128], n)
    line = rng.integers(0, 1 << 26, n).astype(np.uint64) * np.uint64(128)
    off = (rng.integers(0, 4, n) * 32 % (160 - size)) // 32 * 32
    space = np.where(rng.random(n) < device_share, SPACE_DEVICE, SPACE_HOST)
    warps = int(inst_warp[-1]) + 1
    return RequestStream(
        launch=np.zeros(n), warp=np.repeat(inst_warp, per_inst), inst=np.repeat(inst_idx, per_inst),
        addr=line + off.astype(np.uint64), size_B=size, useful_B=size, space=space,
        is_write=np.zeros(n, bool), launches=(LaunchInfo("scattered", -(-warps // 8), 8, 256),))


def time_engine(name, stream, system) -> dict:
    inputs = build_inputs(stream, system)
    fast.run(inputs)                                    # compile / warm up
    runs, cpu = [], []
    for _ in range(REPEATS):
        t0, c0 = time.perf_counter(), time.process_time()
        out = fast.run(inputs)
        runs.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    t0 = time.perf_counter()
    pred = predict(stream, system, fidelity="des")
    predict_s = time.perf_counter() - t0
    best = min(cpu)
    return {"requests": len(stream), "cpu_seconds_runs": cpu, "wall_seconds_runs": runs,
            "cpu_seconds_best": best, "requests_per_s": len(stream) / best,
            "requests_per_wall_s": len(stream) / min(runs), "predict_s": predict_s,
            "predicted_time_s": pred.time_s, "link_bw_GBps": pred.link_bw_GBps,
            "bound": pred.bound, "walks": out.stat("walks")}


def graph_to_time() -> dict:
    from hostlink.traces.emulator import emulate
    from hostlink.traces.graphs import kron
    stages = {}
    t0 = time.perf_counter()
    g = kron(GRAPH_SCALE, 16)
    stages["graph_s"] = time.perf_counter() - t0
    deg = np.diff(g.offsets)
    src = int(np.random.default_rng(1).choice(np.flatnonzero(deg > 0)))
    t0 = time.perf_counter()
    stream = emulate(g, "bfs", "merged_aligned", source=src, id_bytes=8).requests()
    stages["emulate_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    pred = predict(stream, "v100-pcie3", fidelity="des")
    stages["predict_des_s"] = time.perf_counter() - t0
    stages["total_s"] = stages["graph_s"] + stages["emulate_s"] + stages["predict_des_s"]
    return {"graph": f"kron scale {GRAPH_SCALE} degree 16", "vertices": g.num_vertices,
            "list_entries": g.num_edges, "source": src, "kernel": "bfs merged_aligned, 8 B ids",
            "system": "v100-pcie3", "requests": len(stream), "launches": pred.launches,
            "requests_by_size_B": {str(k): v for k, v in sorted(pred.requests_by_size_B.items())},
            "predicted_time_s": pred.time_s, "predicted_link_bw_GBps": pred.link_bw_GBps,
            "bound": pred.bound, "stages": stages,
            "des_requests_per_s_end_to_end": len(stream) / stages["predict_des_s"],
            "measured_kernel_time_s": None, "predicted_over_measured": None}


def main() -> int:
    rng = np.random.default_rng(SEED)
    h100 = load_system("h100-pcie5").gpu
    stage = {k: float(getattr(h100, k.split(".")[1])) for k in STAGE_KEYS}
    mixed = {"gpu.loads_in_flight_per_warp": 2, "translation.tlb_entries": 1,
             "translation.page_B": 4096}
    streams = {"streaming": (streaming(rng), {}), "scattered": (scattered(rng), {}),
               "mixed": (scattered(rng, device_share=1 / 3), mixed)}
    cases = {}
    for name, (stream, overrides) in streams.items():
        cases[name] = time_engine(name, stream, load_system("v100-pcie3", overrides))
        cases[name + "+stage"] = time_engine(name + "+stage", stream,
                                             load_system("v100-pcie3", {**overrides, **stage}))
        cases[name + "+stage"]["issue_stage"] = stage
        cases[name + "+stage"]["slowdown_vs_no_stage"] = (
            cases[name]["requests_per_s"] / cases[name + "+stage"]["requests_per_s"])
    stream, overrides = streams["mixed"]
    atomics = stream.with_atomic(stream.warp % 2 == 0)
    cases["mixed+stage+atomics"] = time_engine(
        "mixed+stage+atomics", atomics,
        load_system("v100-pcie3", {**overrides, **stage, **ATOMIC_COSTS}))
    cases["mixed+stage+atomics"]["atomic_costs"] = ATOMIC_COSTS
    cases["mixed+stage+atomics"]["slowdown_vs_mixed_stage"] = (
        cases["mixed+stage"]["requests_per_s"] / cases["mixed+stage+atomics"]["requests_per_s"])
    worst = min(c["requests_per_s"] for n, c in cases.items() if "+stage" not in n)
    worst_staged = min(c["requests_per_s"] for n, c in cases.items() if "+stage" in n)
    for name, c in cases.items():
        print(f"{name:16s} {c['requests']:>9d} requests  engine {c['cpu_seconds_best']:.3f} s = "
              f"{c['requests_per_s'] / 1e6:6.1f} M requests/s  predict(des) {c['predict_s']:.2f} s  "
              f"({c['link_bw_GBps']:.2f} GB/s, {c['bound']})")
    g2t = graph_to_time()
    st = g2t["stages"]
    print(f"kron {GRAPH_SCALE} BFS merged_aligned: {g2t['requests']} requests, "
          f"graph {st['graph_s']:.1f} s + emulate {st['emulate_s']:.1f} s + DES predict "
          f"{st['predict_des_s']:.1f} s = {st['total_s']:.1f} s; predicted "
          f"{g2t['predicted_time_s'] * 1e3:.2f} ms at {g2t['predicted_link_bw_GBps']:.2f} GB/s")
    passed = worst >= TARGET_REQUESTS_PER_S and worst_staged >= TARGET_STAGED_REQUESTS_PER_S
    record = {
        "benchmark": "des", "target_requests_per_s": TARGET_REQUESTS_PER_S,
        "worst_requests_per_s": worst,
        "target_staged_requests_per_s": TARGET_STAGED_REQUESTS_PER_S,
        "worst_staged_requests_per_s": worst_staged, "passed": passed, "cases": cases,
        "graph_to_predicted_time": g2t,
        "peak_rss_GiB": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
        "machine": {"python": platform.python_version(), "platform": platform.platform(),
                    "cpus": os.cpu_count(), "processor": platform.processor() or None},
        "recorded_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    print(f"worst engine rate {worst / 1e6:.1f} M requests/s (target "
          f"{TARGET_REQUESTS_PER_S / 1e6:.0f} M), with the issue stage {worst_staged / 1e6:.1f} M "
          f"(target {TARGET_STAGED_REQUESTS_PER_S / 1e6:.0f} M): {'ok' if passed else 'MISSED'}; "
          f"wrote {RESULTS}")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
