"""Per launch of a naive_lists probe run: the walk's time under Nsight Compute and
by CUDA events, its load sectors, the L1's hits, and the sectors and requests
the L2 read from host memory for the SMs (zero-copy).

Usage: python3 naive_lists_summary.py RUN  (reads RUN/ncu.csv, whose lines the probe
prefixed with ``graph,variant,``, and RUN/plain.jsonl; writes RUN/summary_by_launch.csv
and prints it)
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "traversal_l1"))
from traversal_l1_summary import LOAD, walk_launches  # noqa: E402

SYSMEM = "lts__t_sectors_srcunit_tex_aperture_sysmem_op_read.sum"
SYSMEM_REQ = "lts__t_requests_srcunit_tex_aperture_sysmem_op_read.sum"


def event_launch_ms(path: Path) -> pd.DataFrame:
    """Median over repetitions of each launch's time by CUDA events."""
    rows = []
    for line in path.read_text().splitlines():
        rec = json.loads(line)
        if rec.get("type") == "measurement":
            p = rec["params"]
            for i, ms in enumerate(rec["detail"]["launch_ms"]):
                rows.append({"graph": p["graph"], "variant": p["variant"], "launch": i,
                             "event_us": 1e3 * ms})
    return (pd.DataFrame(rows).groupby(["graph", "variant", "launch"])["event_us"].median()
            .reset_index())


def summary(run: Path) -> pd.DataFrame:
    df = walk_launches(run / "ncu.csv")
    df["launch"] = df.groupby(["graph", "variant"]).cumcount()
    out = pd.DataFrame({
        "graph": df["graph"], "variant": df["variant"], "launch": df["launch"],
        "ncu_us": df["gpu__time_duration.sum"] / 1e3,
        "ld_sectors": df[LOAD],
        "l1_hit_pct": 100 * df["l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum"]
        / df[LOAD],
        "host_sectors": df[SYSMEM], "host_requests": df[SYSMEM_REQ],
        "warp_inst": df["smsp__inst_executed.sum"]})
    return out.merge(event_launch_ms(run / "plain.jsonl"), on=["graph", "variant", "launch"])


def main(run: str) -> None:
    out = summary(Path(run))
    out.to_csv(Path(run) / "summary_by_launch.csv", index=False, float_format="%.6g")
    print(out.round(1).to_string(index=False))


if __name__ == "__main__":
    main(sys.argv[1])
