"""Measured against predicted for this folder's zc_warps points (plain.jsonl): each
strided point with the warps spread as the program spreads them by default, predicted
by the micro twin with validation/experiments/warp_rounds/runs/h100' calibrated system (the
DES). One JSON line per point on stdout, then the table the README shows.

Usage: python3 validation/experiments/cv_pages/runs/h100/twin_ab.py (from the repository root)
"""
import json
import statistics
from collections import defaultdict
from pathlib import Path

from hostlink.model.config import load_any_system
from hostlink.validation import twins
from hostlink.validation.twin_micro import warps_per_block

HERE = Path(__file__).resolve().parent
CAL = HERE.parents[2] / "warp_rounds" / "runs" / "h100" / "calibrated.toml"

system = load_any_system(str(CAL))
points = defaultdict(list)
for line in (HERE / "plain.jsonl").read_text().splitlines():
    rec = json.loads(line)
    if rec.get("type") != "measurement":
        continue
    p, m = rec["params"], rec["metrics"]
    if m["warps_per_block"] != warps_per_block(p["warps"], system.gpu.sm_count):
        continue                                   # packed onto fewer SMs: no twin
    points[(p["cache"], p["chunk_B"], p["warps"])].append(m["bw_GBps"])
rows = []
for (cache, chunk, warps), bw in sorted(points.items()):
    params = dict(kind="micro", benchmark="zc_warps", pattern="strided", chunk_B=chunk,
                  bytes_per_lane=4, memory_mode="zerocopy", warps=warps, unroll=1, cache=cache,
                  total_B=16 << 20, max_per_warp_B=256 << 10)
    got = twins.build_micro("p", params, system).predict(system, "des")["bw_GBps"]
    meas = statistics.median(bw)
    row = {"cache": cache, "chunk_B": chunk, "warps": warps, "measured_GBps": round(meas, 4),
           "predicted_GBps": round(got, 4), "error_pct": round(100 * (got / meas - 1), 1)}
    rows.append(row)
    print(json.dumps(row), flush=True)
for cache in ("cv", "default"):
    sel = [r for r in rows if r["cache"] == cache]
    warps = sorted({r["warps"] for r in sel})
    print(f"\n{cache}: error % of the twin (measured GB/s)")
    print("| chunk | " + " | ".join(f"{w} warps" for w in warps) + " |")
    print("|---|" + "---:|" * len(warps))
    for chunk in sorted({r["chunk_B"] for r in sel}):
        cells = {r["warps"]: r for r in sel if r["chunk_B"] == chunk}
        print(f"| {chunk} B | " + " | ".join(
            f"{cells[w]['error_pct']:+.0f} ({cells[w]['measured_GBps']:.3g})" for w in warps) + " |")
