"""Per graph and variant of a traversal_l1 probe run: the walk launches' global-load
sectors, how many the L1 served, how many it asked of the L2, the L2's hits, and time.

Usage: python3 traversal_l1_summary.py RUN  (reads RUN/ncu.csv, whose lines the probe
prefixed with ``graph,variant,``; writes RUN/summary_by_graph.csv and prints it)
"""
from __future__ import annotations

import csv
import sys
from pathlib import Path

import pandas as pd

LOAD = "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"


def walk_launches(path: Path) -> pd.DataFrame:
    """One row per profiled walk launch, numeric counters as floats."""
    rows, head = [], None
    for line in path.read_text().splitlines():
        graph, variant, rest = line.split(",", 2)
        if rest.startswith('"ID"'):
            head = next(csv.reader([rest]))
            continue
        if head is None or not rest.startswith('"'):
            continue
        r = next(csv.reader([rest]))
        if len(r) == len(head) and "walk<" in r[head.index("Kernel Name")]:
            rows.append({**dict(zip(head, r)), "graph": graph, "variant": variant})
    if not rows:
        raise SystemExit(f"{path}: no walk launches")
    df = pd.DataFrame(rows)
    for c in df.columns:
        if "__" in c and c.endswith(".sum"):
            df[c] = pd.to_numeric(df[c].str.replace(",", ""), errors="coerce")
    return df


def summary(df: pd.DataFrame) -> pd.DataFrame:
    g = df.groupby(["graph", "variant"])
    s = g[[c for c in df.columns if c.endswith(".sum")]].sum()
    return pd.DataFrame({
        "launches": g.size(),
        "ncu_us": s["gpu__time_duration.sum"] / 1e3,
        "ld_requests": s["l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"],
        "ld_sectors": s[LOAD],
        "l1_hit_pct": 100 * s["l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum"] / s[LOAD],
        "to_l2_sectors": s["l1tex__m_xbar2l1tex_read_sectors.sum"],
        "l2_hit_pct": 100 * s["lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum"]
        / s["lts__t_sectors_srcunit_tex_op_read.sum"],
        "warp_inst": s["smsp__inst_executed.sum"]}).reset_index()


def main(run: str) -> None:
    out = summary(walk_launches(Path(run) / "ncu.csv"))
    out.to_csv(Path(run) / "summary_by_graph.csv", index=False, float_format="%.6g")
    print(out.round(1).to_string(index=False))


if __name__ == "__main__":
    main(sys.argv[1])
