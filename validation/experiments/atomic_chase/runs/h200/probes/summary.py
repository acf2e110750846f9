"""Median latency per link (ns) of the atomic chase probes in this folder.

    python validation/experiments/atomic_chase/runs/h200/probes/summary.py
"""
from __future__ import annotations

import json
from pathlib import Path
from statistics import median

HERE = Path(__file__).resolve().parent


def main() -> None:
    for f in sorted(HERE.glob("*.jsonl")):
        rows: dict[tuple, list[float]] = {}
        for line in f.read_text().splitlines():
            d = json.loads(line)
            if d.get("type") != "measurement":
                continue
            p = d["params"]
            key = (p["footprint_B"], p["stride_B"], p["cache"])
            rows.setdefault(key, []).append(d["metrics"]["lat_ns"])
        print(f.name)
        for (fp, stride, cache), v in sorted(rows.items()):
            print(f"  footprint {fp:>11} B  stride {stride:>5} B  {cache:<8} {median(v):7.1f} ns")


if __name__ == "__main__":
    main()
