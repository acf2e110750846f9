"""Benchmark: the coalescer's rate in lane accesses per second, and the Accel-Sim reader's.

Target: >= 5 million lane accesses per second in every case (the target asks
for "several million"), timed end to end through ``coalesce`` (chunks of
65536 warp instructions in, a sorted RequestStream out), best of REPEATS runs
after a warm-up that compiles the Numba kernel. Cases, each 400,000 warp
loads of 4 B per lane into one host region (deterministic, seeded):
- merged_aligned: 32 lanes on one 128 B line (one 128 B request each);
- merged_misaligned: 32 consecutive lanes from a random 4 B boundary;
- naive: every active lane on its own random address (about 24 of 32 lanes
  active; one 32 B request per lane), the worst case;
- merged_misaligned_cached: as above through an L1 (128 KiB x 80 SMs) and an
  L2 (6 MiB) with host memory cached.
Also reports the Accel-Sim text reader's rate (instruction lines per second)
on a generated trace of the tracer's layout. Prints the figures and writes
them to tests/bench/results/coalescer.json. Exits 1 if the target is missed.
"""
from __future__ import annotations

import json
import os
import platform
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from hostlink.traces.accelsim import read_accelsim, write_accelsim
from hostlink.traces.cache import CacheConfig
from hostlink.traces.coalescer import coalesce, popcount32
from hostlink.traces.schema import OP_LOAD, InstTable, KernelLaunch, Region, WarpTrace

ROWS = 400_000
CHUNK = 1 << 16
REPEATS = 3
TARGET_LANES_PER_S = 5e6
SEED = 20240607
BASE = 0x7F0000000000
SPAN_B = 1 << 30
RESULTS = Path(__file__).resolve().parent / "results" / "coalescer.json"
REGIONS = [Region("edges", BASE, SPAN_B + 4096, "host")]
WARPS_PER_CTA = 8
LAUNCHES = [KernelLaunch("bench", (ROWS // WARPS_PER_CTA, 1, 1), (32 * WARPS_PER_CTA, 1, 1))]


def make_table(case: str, rng: np.random.Generator) -> InstTable:
    lanes = np.arange(32, dtype=np.uint64)
    n = ROWS
    mask = np.full(n, 0xFFFFFFFF, dtype=np.uint32)
    if case == "merged_aligned":
        start = rng.integers(0, SPAN_B // 128, n).astype(np.uint64) * 128
        addrs = BASE + start[:, None] + 4 * lanes
    elif case.startswith("merged_misaligned"):
        start = rng.integers(0, SPAN_B // 4, n).astype(np.uint64) * 4
        addrs = BASE + start[:, None] + 4 * lanes
    elif case == "naive":
        addrs = BASE + rng.integers(0, SPAN_B // 4, (n, 32)).astype(np.uint64) * 4
        active = rng.random((n, 32)) < 0.75
        mask = (active * (1 << lanes.astype(np.int64))).sum(axis=1).astype(np.uint32)
        addrs = np.where(active, addrs, 0).astype(np.uint64)
    else:
        raise ValueError(case)
    warp = np.arange(n) % WARPS_PER_CTA
    return InstTable(launch=np.zeros(n), cta=np.arange(n) // WARPS_PER_CTA, warp=warp,
                     pc=np.zeros(n), opcode=np.zeros(n), op=np.full(n, OP_LOAD),
                     space=np.zeros(n), width_B=np.full(n, 4), mask=mask, addrs=addrs)


def time_case(table: InstTable, cache: CacheConfig | None) -> dict:
    chunks = [table.select(slice(i, i + CHUNK)) for i in range(0, len(table), CHUNK)]
    lanes = int(popcount32(table.mask).sum())
    runs = []
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        rs = coalesce(chunks, REGIONS, launches=LAUNCHES, cache=cache,
                      cache_host=cache is not None)
        runs.append(time.perf_counter() - t0)
    best = min(runs)
    return {"warp_insts": len(table), "lane_accesses": lanes, "requests": len(rs),
            "requests_by_size_B": {str(k): v for k, v in rs.size_histogram().items()},
            "seconds_runs": runs, "seconds_best": best, "lane_accesses_per_s": lanes / best}


def reader_rate() -> dict:
    """Write a trace in the tracer's layout (4 loads in every 16 lines), then time reading it."""
    rng = np.random.default_rng(SEED)
    n = 200_000
    table = make_table("merged_misaligned", rng).select(slice(0, n))
    table.width_B[np.arange(n) % 4 != 0] = 0  # three in four lines are non-memory instructions
    table.op[table.width_B == 0] = 3
    table.addrs[table.width_B == 0] = 0
    table.cta[:] = np.arange(n) // (WARPS_PER_CTA * 100)
    table.warp[:] = (np.arange(n) // 100) % WARPS_PER_CTA
    launch = KernelLaunch("bench", (int(table.cta.max()) + 1, 1, 1), (32 * WARPS_PER_CTA, 1, 1))
    with tempfile.TemporaryDirectory() as tmp:
        write_accelsim(WarpTrace([launch], ["LDG.E"], [], [table]), tmp)
        size_B = sum(p.stat().st_size for p in Path(tmp).iterdir())
        t0 = time.perf_counter()
        rows = sum(len(c) for c in read_accelsim(tmp).chunks)
        dt = time.perf_counter() - t0
    return {"lines": rows, "file_B": size_B, "seconds": dt, "lines_per_s": rows / dt,
            "MBps": size_B / dt / 1e6}


def main() -> int:
    rng = np.random.default_rng(SEED)
    coalesce(make_table("merged_aligned", rng).select(slice(0, 1000)), REGIONS,
             launches=LAUNCHES)  # compile
    cache = CacheConfig(l1_size_B=128 * 1024, l2_size_B=6 * 1024 * 1024, sm_count=80)
    cases = {}
    for case in ("merged_aligned", "merged_misaligned", "naive", "merged_misaligned_cached"):
        table = make_table(case, np.random.default_rng(SEED))
        cases[case] = time_case(table, cache if case.endswith("cached") else None)
        c = cases[case]
        print(f"{case:26s} {c['lane_accesses'] / 1e6:6.1f} M lanes in {c['seconds_best']:.3f} s: "
              f"{c['lane_accesses_per_s'] / 1e6:6.1f} M lane accesses/s, "
              f"{c['requests'] / 1e6:.2f} M requests")
    reader = reader_rate()
    print(f"{'accelsim reader':26s} {reader['lines']:,} lines in {reader['seconds']:.2f} s: "
          f"{reader['lines_per_s'] / 1e3:.0f} k lines/s ({reader['MBps']:.1f} MB/s)")
    worst = min(c["lane_accesses_per_s"] for c in cases.values())
    passed = worst >= TARGET_LANES_PER_S
    result = {
        "benchmark": "coalescer",
        "target_lane_accesses_per_s": TARGET_LANES_PER_S,
        "worst_lane_accesses_per_s": worst,
        "passed": passed,
        "cases": cases,
        "accelsim_reader": reader,
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                    "python": platform.python_version(), "numpy": np.__version__,
                    "load_avg_1min": os.getloadavg()[0]},
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(f"worst case {worst / 1e6:.1f} M lane accesses/s (target {TARGET_LANES_PER_S / 1e6:.0f} M): "
          f"{'PASS' if passed else 'FAIL'}; wrote {RESULTS}")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
