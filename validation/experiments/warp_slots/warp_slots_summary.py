"""Table of a warp_slots_probe.sh folder: per CTA size, live warps per CTA and grid,
the launch's time and the CTAs each SM held spinning at once.

Usage: python3 warp_slots_summary.py FOLDER  (writes FOLDER/residency.csv)

Reads every ``spin*.jsonl`` (launch_grid's work "spin": one line per timed launch).
Columns: threads_per_cta, live_warps, ctas, ctas_per_sm (the grid over the SMs used),
reps, time_us (median over the repetitions), concurrent_median_sm (median over the
repetitions of the median over SMs of the most CTAs an SM held spinning at once),
concurrent_max_sm (the most, over repetitions and SMs), live_warps_median_sm
(concurrent_median_sm x live_warps: the warps spinning at once on a typical SM).
"""
from __future__ import annotations

import csv
import json
import sys
from collections import defaultdict
from pathlib import Path
from statistics import median

COLUMNS = ("threads_per_cta", "live_warps", "ctas", "ctas_per_sm", "reps", "time_us",
           "concurrent_median_sm", "concurrent_max_sm", "live_warps_median_sm")


def read_points(folder: Path) -> dict[tuple[int, int, int], list[dict]]:
    files = sorted(folder.glob("spin*.jsonl"))
    if not files:
        raise SystemExit(f"{folder}: no spin*.jsonl (launch_grid --work spin output)")
    points: dict[tuple[int, int, int], list[dict]] = defaultdict(list)
    for path in files:
        for n, line in enumerate(path.read_text().splitlines(), 1):
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as exc:
                raise SystemExit(f"{path}:{n}: not JSON ({exc.msg})") from None
            if rec.get("type") != "measurement" or rec.get("params", {}).get("work") != "spin":
                continue
            p, m = rec["params"], rec["metrics"]
            try:
                key = (int(p["threads_per_cta"]), int(p["live_warps"]), int(p["ctas"]))
                points[key].append({k: float(m[k]) for k in
                                    ("time_us", "sms_used", "concurrent_ctas_median_sm",
                                     "concurrent_ctas_max_sm")})
            except KeyError as exc:
                raise SystemExit(f"{path}:{n}: spin measurement without {exc}") from None
    return points


def summary_rows(points: dict[tuple[int, int, int], list[dict]]) -> list[dict]:
    rows = []
    for (threads, live, ctas), reps in sorted(points.items()):
        sms = median(r["sms_used"] for r in reps)
        conc = median(r["concurrent_ctas_median_sm"] for r in reps)
        rows.append({"threads_per_cta": threads, "live_warps": live, "ctas": ctas,
                     "ctas_per_sm": round(ctas / sms, 3), "reps": len(reps),
                     "time_us": round(median(r["time_us"] for r in reps), 3),
                     "concurrent_median_sm": conc,
                     "concurrent_max_sm": max(r["concurrent_ctas_max_sm"] for r in reps),
                     "live_warps_median_sm": conc * live})
    return rows


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        raise SystemExit(__doc__.split("\n\n")[1])
    folder = Path(argv[0])
    rows = summary_rows(read_points(folder))
    with (folder / "residency.csv").open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        w.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
