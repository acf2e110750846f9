"""Predictions of the H100's BFS against the median of the six H100 leases that ran it.

Reads a report's `summary.csv` (SUMMARY: predictions of `runs/h100`'s cases) and
each lease's measured kernel time (`runs/h100*/results.parquet`, the mean over a
case's repetitions and sources), takes the median over the leases per case, and
writes `median_errors.csv` beside SUMMARY: per graph and placement, the cases, the
MAPE and the bias (%) of SUMMARY's predictions and of the latest committed ones
(`runs/h100/summary.csv` with `runs/h100/walks`, then `runs/h100/l2_lines`, over it).

    python3 validation/experiments/families/h100_median_errors.py SUMMARY
"""
from __future__ import annotations

import csv
import sys
from pathlib import Path

import numpy as np

from hostlink.validation.results_io import read_results

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from lease_errors import predictions as predicted  # noqa: E402  (a report's predictions)
LEASES = ("h100", "h100-b", "h100-repeat", "h100-repeat2", "h100-repeat3", "h100-repeat4")
#: the committed predictions, each over the one before (oldest first)
LATEST = ("runs/h100/summary.csv", "runs/h100/walks/summary.csv",
          "runs/h100/l2_lines/summary.csv")


def lease_median() -> dict[str, float]:
    """Per case, the median over the leases of its mean measured kernel time (ms)."""
    per_case: dict[str, list[float]] = {}
    for lease in LEASES:
        d = read_results(HERE / "runs" / lease / "results.parquet")
        d = d[(d["metric"] == "kernel_time_ms") & (d["model_kind"] == "measured")]
        for case, value in d.groupby("case")["value"].mean().items():
            per_case.setdefault(case, []).append(float(value))
    return {case: float(np.median(v)) for case, v in per_case.items()}


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    summary = Path(argv[0])
    new = predicted(summary)
    latest: dict[str, float] = {}
    for name in LATEST:
        if (HERE / name).exists():
            latest.update(predicted(HERE / name))
    median = lease_median()
    groups: dict[tuple[str, str], dict[str, list[float]]] = {}
    for case, value in new.items():
        m = median[case]
        g = groups.setdefault((case.split("/")[1], case.split("/")[3]), {"new": [], "latest": []})
        g["new"].append(100 * (value - m) / m)
        g["latest"].append(100 * (latest[case] - m) / m)
    rows = []
    for (graph, mode), g in sorted(groups.items()):
        row = {"graph": graph, "placement": mode, "cases": len(g["new"])}
        for name in ("latest", "new"):
            errs = np.array(g[name])
            row[f"mape_{name}_pct"] = round(float(np.abs(errs).mean()), 2)
            row[f"bias_{name}_pct"] = round(float(errs.mean()), 2)
        rows.append(row)
    out = summary.parent / "median_errors.csv"
    with open(out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    for r in rows:
        print(f"{r['graph']:15s} {r['placement']:9s} {r['cases']:2d} cases: "
              f"{r['mape_latest_pct']:5.1f} -> {r['mape_new_pct']:5.1f}% MAPE")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
