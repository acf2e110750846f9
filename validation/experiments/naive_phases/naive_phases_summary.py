"""Per graph and load-ahead of a naive_phases probe run: the median time of launch 1,
the launch that walks the probe's lists, and its time per group of four trips.

Usage: python3 naive_phases_summary.py RUN  (reads RUN/plain.jsonl and RUN/graphs.jsonl;
writes RUN/summary_by_graph.csv and prints it)
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd


def summary(run: Path) -> pd.DataFrame:
    lines = (run / "graphs.jsonl").read_text().splitlines()
    graphs = {g["graph"]: g for g in map(json.loads, lines)}
    rows = []
    for line in (run / "plain.jsonl").read_text().splitlines():
        rec = json.loads(line)
        if rec.get("type") == "measurement":
            p = rec["params"]
            rows.append({"graph": p["graph"], "load_ahead": p["load_ahead"],
                         "launch1_us": 1e3 * rec["detail"]["launch_ms"][1]})
    df = pd.DataFrame(rows).groupby(["graph", "load_ahead"], sort=False)["launch1_us"]
    out = df.median().reset_index()
    out["lanes"] = [graphs[g]["lanes"] for g in out["graph"]]
    out["warps"] = [graphs[g]["warps"] for g in out["graph"]]
    out["length"] = [graphs[g]["length"] for g in out["graph"]]
    out["group_us"] = out["launch1_us"] / (-(-out["length"] // 4))
    return out[["graph", "lanes", "warps", "length", "load_ahead", "launch1_us", "group_us"]]


def main(run: str) -> None:
    out = summary(Path(run))
    out.to_csv(Path(run) / "summary_by_graph.csv", index=False, float_format="%.6g")
    print(out.round(3).to_string(index=False))


if __name__ == "__main__":
    main(sys.argv[1])
