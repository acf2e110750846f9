"""The cost of a flushed L2 per page-table span, from a run of ``flush_probe.sh``.

For each region, the short kernels' median time after an L2 flush less their median
time without one is the flush's cost; the kernel's random lines (zc_read's hash,
``mix64(seed ^ mix64(j)) % lines``, the first timed repetition's seed) give the
distinct spans of 16, 32 and 64 KiB they touch. Prints each ratio and the least-squares
cost per span through the origin (``translation.cold_span_ns`` for 32 KiB spans,
:data:`hostlink.model.translation.PAGE_TABLE_SPAN_B`).

Usage: python cold_span_fit.py RUN_DIR (reads zc_read.jsonl)."""
from __future__ import annotations

import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

from hostlink.traces.graphs.generators import splitmix64

LINE_B = 128


def main(run: Path) -> None:
    times: dict[tuple[int, int, int], list[float]] = defaultdict(list)
    step = 0
    for line in (run / "zc_read.jsonl").read_text().splitlines():
        rec = json.loads(line)
        if rec.get("type") != "measurement" or rec["params"].get("pattern") != "random":
            continue
        p, m = rec["params"], rec["metrics"]
        key = (int(p["region_B"]), int(p.get("l2_flush", 1)), int(m["bytes_B"]))
        times[key].append(float(m["time_ms"]) * 1e6)
        step = max(step, int(p.get("seed_step", 0)))
    short_B = min(b for _, _, b in times)
    rows = []
    for region_B in sorted({r for r, _, _ in times}):
        flushed = statistics.median(times[(region_B, 1, short_B)])
        warm = statistics.median(times[(region_B, 0, short_B)])
        j = np.arange(short_B // LINE_B, dtype=np.uint64)
        seed = np.uint64(1 + step)       # the first timed repetition's (the default seed 1)
        addr = splitmix64(seed ^ splitmix64(j)) % np.uint64(region_B // LINE_B) * np.uint64(LINE_B)
        spans = {kib: len(np.unique(addr // np.uint64(kib << 10))) for kib in (16, 32, 64)}
        rows.append((region_B, flushed - warm, spans))
        ratios = ", ".join(f"{k} KiB {(flushed - warm) / n:.2f} ns" for k, n in spans.items())
        print(f"{region_B >> 30:3d} GiB: flush costs {(flushed - warm) / 1e6:.3f} ms; per span: {ratios}")
    extra = np.array([e for _, e, _ in rows])
    n32 = np.array([s[32] for _, _, s in rows], dtype=float)
    print(f"cost per 32 KiB span (least squares through 0): {extra @ n32 / (n32 @ n32):.2f} ns")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
