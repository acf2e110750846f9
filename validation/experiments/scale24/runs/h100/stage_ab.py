"""This run's traversal cases predicted again with the model of 2026-11-27 (the walk's
dependent steps and the SM's issue stage), against the committed report's predictions.

The new predictions come from
    hostlink validate report validation/experiments/scale24/runs/h100 \
        --system SYSTEM --calibration validation/experiments/scale24/runs/h100/calibration.json \
        --out OUT --max-sources 1 --only micro/,/merged_aligned/
where SYSTEM is this folder's calibrated.toml with the H100 preset's issue costs
(gpu.request_gap_ns, gpu.host_request_gap_ns, gpu.sm_request_ns: 6.54, 13.64,
4.34 ns; the calibration predates them) written by
hostlink.model.config.loader.write_resolved. Nothing else is refitted.

Usage: python3 stage_ab.py OUT  (reads OUT/predictions.parquet, writes stage_ab.csv
beside this script: case, measured_ms, committed_ms, committed_error_pct, now_ms,
now_error_pct, for every kernel_time_ms case of summary.csv the new predictions
hold; prints each group's MAPE both ways)
"""
from __future__ import annotations

import csv
import sys
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent
ZEROCOPY = ("zerocopy", "registered", "uvm_accessedby")


def group(case: str) -> str:
    mode = case.split("/")[3]
    return "zerocopy" if mode in ZEROCOPY else ("uvm" if mode.startswith("uvm") else mode)


def main(out: str) -> None:
    new = pd.read_parquet(Path(out) / "predictions.parquet")
    new = new[new.metric == "kernel_time_ms"].drop_duplicates("case").set_index("case")["value"]
    old = pd.read_csv(HERE / "summary.csv")
    old = old[old.metric == "kernel_time_ms"].drop_duplicates("case").set_index("case")
    rows = []
    for case in sorted(set(new.index) & set(old.index)):
        m, p = float(old.loc[case, "measured"]), float(new.loc[case])
        rows.append({"case": case, "measured_ms": round(m, 4),
                     "committed_ms": round(float(old.loc[case, "predicted"]), 4),
                     "committed_error_pct": round(float(old.loc[case, "error_pct"]), 1),
                     "now_ms": round(p, 4), "now_error_pct": round(100 * (p / m - 1), 1)})
    with open(HERE / "stage_ab.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    by = {}
    for r in rows:
        by.setdefault(group(r["case"]), []).append(r)
    for g, rs in sorted(by.items()):
        before = sum(abs(r["committed_error_pct"]) for r in rs) / len(rs)
        after = sum(abs(r["now_error_pct"]) for r in rs) / len(rs)
        print(f"{g}: {len(rs)} cases, MAPE {before:.1f}% committed, {after:.1f}% now")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    main(sys.argv[1])
