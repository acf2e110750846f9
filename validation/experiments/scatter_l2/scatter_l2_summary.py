"""Per point of a scatter_l2 probe run: how long an SM took per line of the scatter
reads, where the L2 held the region (8 MiB) and where DRAM served it (4 GiB).

Each lane reads its own 8 B word, so every word is a line of its own (the
region's lines are few enough that two lanes of one load rarely share one). An
SM's time per line is the read's time over the lines its SM sent:
``time / (bytes / 8 / sm_count)``.

Usage: python3 scatter_l2_summary.py RUN  (reads RUN/plain.jsonl; writes
RUN/summary_by_point.csv, one row per point with the median of its repetitions, and prints it)
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd


def points(path: Path) -> pd.DataFrame:
    """One row per timed repetition, with the SM count of the device record."""
    rows, sms = [], None
    for line in path.read_text().splitlines():
        rec = json.loads(line)
        if rec.get("type") == "device":
            sms = int(rec["sm_count"])
        elif rec.get("type") == "measurement":
            p, m = rec["params"], rec["metrics"]
            rows.append({"region_B": p["region_B"], "warps": p["warps"], "unroll": p["unroll"],
                         "cache": p["cache"], "l2_flush": p.get("l2_flush", 1),
                         "bytes_B": m["bytes_B"], "time_ms": m["time_ms"],
                         "bytes_per_lane": p["bytes_per_lane"]})
    if not rows or sms is None:
        raise SystemExit(f"{path}: no device record or no measurements")
    df = pd.DataFrame(rows)
    df["warps_per_sm"] = df["warps"] / sms
    lines_per_sm = df["bytes_B"] / df["bytes_per_lane"] / sms
    df["sm_line_ns"] = df["time_ms"] * 1e6 / lines_per_sm
    df["lines_per_ns"] = df["bytes_B"] / df["bytes_per_lane"] / (df["time_ms"] * 1e6)
    return df


def summary(df: pd.DataFrame) -> pd.DataFrame:
    keys = ["region_B", "l2_flush", "warps_per_sm", "unroll", "cache"]
    return (df.groupby(keys)[["time_ms", "sm_line_ns", "lines_per_ns"]].median()
            .reset_index())


def main(run: str) -> None:
    out = summary(points(Path(run) / "plain.jsonl"))
    out.to_csv(Path(run) / "summary_by_point.csv", index=False, float_format="%.6g")
    print(out.round(3).to_string(index=False))


if __name__ == "__main__":
    main(sys.argv[1])
