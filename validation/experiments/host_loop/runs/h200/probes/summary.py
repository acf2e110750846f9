"""Median gap per iteration (us) of the two host_loop probes in this folder.

walk_length.jsonl: every named loop (the table before walk_copy_memset_v was added)
around walks of 0, 20 and 200 us, V = 16384 and 2^21, 1/4/16 iterations (the lease
before host_loop/'s run). walk_shape.jsonl: the programs' loops and three parts
around walks of 1, 64 and 2048 CTAs, with and without each thread setting a
flag byte (the lease of host_loop_repeat/'s run, right after it).

    python validation/experiments/host_loop/runs/h200/probes/summary.py
"""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent


def load(name: str) -> pd.DataFrame:
    rows = []
    for line in (HERE / name).read_text().splitlines():
        d = json.loads(line)
        if d.get("type") == "measurement":
            rows.append({**d["params"], **d["metrics"], "rep": d["rep"]})
    return pd.DataFrame(rows)


def main() -> None:
    pd.set_option("display.width", 200)
    a = load("walk_length.jsonl")
    print("walk_length: gap_us, median of 10 runs")
    print(a.groupby(["loop", "walk_us", "vertices", "iterations"]).gap_us.median()
          .unstack(["vertices", "iterations"]).round(1).to_string())
    b = load("walk_shape.jsonl")
    print("\nwalk_shape: gap_us, median of 10 runs (16 iterations, V = 16384)")
    print(b.groupby(["loop", "walk_us", "walk_ctas", "walk_writes"]).gap_us.median()
          .unstack(["walk_ctas", "walk_writes"]).round(1).to_string())


if __name__ == "__main__":
    main()
