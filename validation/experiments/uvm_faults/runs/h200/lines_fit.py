"""Sparse first touch against the lines it touches (this folder's and its repeat's runs).

Each sparse point reads one 128 B line every stride_B bytes. From 4 KiB to 64 KiB every
64 KiB big page holding a line moves whole, so the same pages move (all of the buffer)
while the lines touched, one per page touched, fall from 16 to 1 per big page. A straight
line through time against lines per (advice, size) gives the cost of a touched page
beyond the pages moved; the dense sequential touch (every page touched) is printed
beside it. One row per point: median time_ms over the repetitions.

Usage: python3 validation/experiments/uvm_faults/runs/h200/lines_fit.py [RUN_DIR ...] (from the
repository root; default: this folder and ../h200-repeat)
"""
import sys
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
RUNS = [Path(a) for a in sys.argv[1:]] or [HERE, HERE.parent / "h200-repeat"]


def points(run: Path) -> pd.DataFrame:
    d = pd.read_parquet(run / "results.parquet")
    d = d[d.case.str.startswith("micro/uvm_touch/") & (d.metric == "time_ms")
          & ~d.case.str.contains("launches=")]
    p = d.case.str.extract(r"size_B=(?P<size_B>\d+),pattern=(?P<pattern>\w+)"
                           r"(?:,stride_B=(?P<stride_B>\d+))?,advice=(?P<advice>\w+)")
    d = pd.concat([d.reset_index(drop=True), p.reset_index(drop=True)], axis=1)
    d = d[d.advice.isin(["none", "readmostly"])]
    g = d.groupby(["advice", "size_B", "pattern", "stride_B"], dropna=False)["value"].median()
    return g.reset_index()


for run in RUNS:
    if not (run / "results.parquet").exists():
        continue
    t = points(run)
    print(f"\n{run}: sparse first touch, 4-64 KiB strides (same pages moved)")
    print("| advice | size | ms at 4/8/16/32/64 KiB | seq ms | fit: ms + us per line | residuals % |")
    print("|---|---:|---|---:|---|---|")
    for (advice, size), s in t.groupby(["advice", "size_B"]):
        sp = s[(s.pattern == "sparse")].copy()
        sp["stride_B"] = sp.stride_B.astype(int)
        sp = sp[sp.stride_B <= 65536].sort_values("stride_B")
        lines = int(size) / sp.stride_B.to_numpy()
        ms = sp.value.to_numpy()
        slope, icpt = np.polyfit(lines, ms, 1)
        res = 100 * (icpt + slope * lines - ms) / ms
        seq = s[s.pattern == "seq"].value
        print(f"| {advice} | {int(size) >> 20} MiB | {' / '.join(f'{v:.2f}' for v in ms)} | "
              f"{float(seq.iloc[0]) if len(seq) else float('nan'):.2f} | {icpt:.2f} ms + "
              f"{slope * 1e3:.3f} us x lines | {' '.join(f'{r:+.0f}' for r in res)} |")
