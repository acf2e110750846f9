"""Table of a scatter_host run: per pattern, region or chunk, bytes per lane, cache
operator and bytes read, the median time of the timed repetitions, the useful bandwidth
and the rate of lane loads (each a 32 B request where the lanes' words lie in distinct sectors:
scatter over a region far larger than the GPU's caches or with ld.cv, and strided,
whose lanes walk their own chunks, before the L1 serves part of them again).

    python3 validation/experiments/scatter_host/scatter_host_summary.py RUN

RUN holds plain.jsonl (probe.sh's zc_read output); writes RUN/summary_by_point.csv and prints it.
"""
from __future__ import annotations

import csv
import json
import statistics
import sys
from pathlib import Path

KNOB = {"scatter": "region_B", "strided": "chunk_B", "coalesced": "offset_B"}


def rows(run: Path) -> list[dict]:
    """One row per measured point: the median over its repetitions."""
    points: dict[tuple, list[dict]] = {}
    for n, line in enumerate((run / "plain.jsonl").read_text().splitlines(), 1):
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as e:
            raise SystemExit(f"{run / 'plain.jsonl'}:{n}: not JSON ({e})") from None
        if rec.get("type") != "measurement":
            continue
        p = rec["params"]
        key = (p["pattern"], int(p.get(KNOB[p["pattern"]], 0)), int(p["bytes_per_lane"]),
               p.get("cache", "default"), int(rec["metrics"]["bytes_B"]))
        points.setdefault(key, []).append(rec["metrics"])
    out = []
    for (pattern, knob, bpl, cache, useful_B), ms in sorted(points.items()):
        time_ms = statistics.median(m["time_ms"] for m in ms)
        out.append({"pattern": pattern, "knob": KNOB[pattern], "knob_B": knob,
                    "bytes_per_lane": bpl, "cache": cache, "total_B": useful_B,
                    "reps": len(ms),
                    "time_ms": round(time_ms, 4),
                    "bw_GBps": round(useful_B / time_ms / 1e6, 3),
                    "lane_loads_per_us": round(useful_B / bpl / time_ms / 1e3, 1)})
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    run = Path(argv[1])
    if not (run / "plain.jsonl").is_file():
        print(f"{run}: no plain.jsonl (probe.sh's output)", file=sys.stderr)
        return 2
    table = rows(run)
    with open(run / "summary_by_point.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(table[0]))
        w.writeheader()
        w.writerows(table)
    for r in table:
        print(",".join(str(v) for v in r.values()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
