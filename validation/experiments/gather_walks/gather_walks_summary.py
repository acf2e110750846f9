"""Median rows (or lines) a second of each point of a gather_walks run.

Usage: python gather_walks_summary.py RUN_DIR  (reads those of gather.jsonl,
gather_long.jsonl and zc_read.jsonl the run has; prints one line per point, and fails
if any check failed)."""
from __future__ import annotations

import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

KEYS = ("table_B", "region_B", "row_B", "store", "id_source", "load", "cache", "l2_flush",
        "seed_step")


def points(path: Path) -> dict[tuple, list[float]]:
    rates: dict[tuple, list[float]] = defaultdict(list)
    for line in path.read_text().splitlines():
        rec = json.loads(line)
        if rec.get("type") != "measurement":
            continue
        if rec["metrics"].get("check_pass", 1) != 1:
            raise SystemExit(f"{path}: a check failed: {line}")
        params = rec["params"]
        key = tuple((k, params[k]) for k in KEYS if k in params)
        if "bytes_B" in rec["metrics"]:     # zc_read: the kernel's length
            key += (("bytes_B", int(rec["metrics"]["bytes_B"])),)
        row_B = params.get("row_B", 32 * params.get("bytes_per_lane", 4))
        rates[key].append(rec["metrics"]["bw_GBps"] * 1e9 / row_B / 1e6)   # M rows/s
    return rates


def main(run: Path) -> None:
    for name in ("gather.jsonl", "gather_long.jsonl", "zc_read.jsonl"):
        if not (run / name).is_file():
            continue
        for key, rates in points(run / name).items():
            what = ", ".join(f"{k}={v}" for k, v in key)
            print(f"{name:18s} {what:90s} {statistics.median(rates):6.1f} M/s ({len(rates)} reps)")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
