"""The naive BFS cases of `group_rule.csv` against the median of every lease that ran
them, where `group_rule.csv` compares them with one lease.

The families manifest's BFS ran on six H100 leases (`families/runs/h100*`). Per naive
zero-copy case, this reads each lease's median kernel time (the same per-case median
`hostlink validate repeat` takes), and sets the two predictions of
`group_rule.csv` (one load in flight, and the group's) against the median of the
leases. Writes `lease_median.csv` beside this script and prints MAPE and bias per rule.
Writes `lease_spread.csv` too: per memory mode and BFS variant, how far the cases'
kernel times spread over the six leases (largest over smallest, %).

    python3 validation/experiments/naive_phases/lease_median.py
"""
from __future__ import annotations

import csv
import statistics
import sys
from pathlib import Path

from hostlink.validation.repeatability import case_medians
from hostlink.validation.twins import load_run

HERE = Path(__file__).resolve().parent
FAMILIES = HERE.parent / "families" / "runs"
LEASES = ("h100", "h100-b", "h100-repeat", "h100-repeat2", "h100-repeat3", "h100-repeat4")
GROUP_RUN = "validation/experiments/families/runs/h100"


def lease_times() -> dict[str, list[float]]:
    """Per BFS case, its kernel time (ms) on each lease, in LEASES' order (cases every
    lease ran)."""
    times: dict[str, list[float]] = {}
    for lease in LEASES:
        per_case = case_medians(load_run(FAMILIES / lease))
        for case, row in per_case.iterrows():
            if case.startswith("bfs/") and row["metric"] == "kernel_time_ms":
                times.setdefault(case, []).append(float(row["median"]))
    return {c: t for c, t in times.items() if len(t) == len(LEASES)}


def write_spread(times: dict[str, list[float]]) -> None:
    """lease_spread.csv: per mode and variant, the cases' spread over the leases."""
    spread: dict[tuple[str, str], list[float]] = {}
    for case, t in times.items():
        _, _, variant, mode, _ = case.split("/")
        spread.setdefault((mode, variant), []).append(100 * (max(t) / min(t) - 1))
    with open(HERE / "lease_spread.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["mode", "variant", "cases", "median_spread_pct", "max_spread_pct"])
        for (mode, variant), s in sorted(spread.items()):
            w.writerow([mode, variant, len(s), round(statistics.median(s), 1),
                        round(max(s), 1)])


def main() -> int:
    predicted = {}
    with open(HERE / "group_rule.csv", newline="") as f:
        for row in csv.DictReader(f):
            if row["run"] == GROUP_RUN:
                predicted[row["case"]] = (float(row["one_load_ms"]), float(row["group_ms"]))
    times = lease_times()
    write_spread(times)
    rows = []
    for case, t in sorted(times.items()):
        if case not in predicted or "/naive/zerocopy/" not in case:
            continue
        med = statistics.median(t)
        one, group = predicted[case]
        rows.append({"case": case, **{f"{lease}_ms": round(x, 4) for lease, x in zip(LEASES, t)},
                     "median_ms": round(med, 4),
                     "spread_pct": round(100 * (max(t) / min(t) - 1), 1),
                     "one_load_ms": one, "group_ms": group,
                     "one_load_error_pct": round(100 * (one / med - 1), 1),
                     "group_error_pct": round(100 * (group / med - 1), 1),
                     "one_load_first_lease_pct": round(100 * (one / t[0] - 1), 1),
                     "group_first_lease_pct": round(100 * (group / t[0] - 1), 1)})
    if not rows:
        print("no naive zero-copy case of group_rule.csv ran on every lease", file=sys.stderr)
        return 2
    with open(HERE / "lease_median.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    for rule in ("one_load", "group"):
        for basis, key in (("lease median", f"{rule}_error_pct"),
                           ("first lease", f"{rule}_first_lease_pct")):
            errs = [r[key] for r in rows]
            print(f"{rule:8s} against the {basis:12s}: MAPE {statistics.mean(map(abs, errs)):5.1f}%"
                  f"  bias {statistics.mean(errs):+5.1f}%  ({len(errs)} cases)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
