"""What reading the edges from host memory adds to a launch, measured and predicted.

For each graph, BFS variant and id width of a report that holds both placements,
the kernel time per launch in device memory and what zero-copy adds to it (the
mean over reps and sources of kernel time over launches): the GPU's, and the
model's. On graphs whose launches take 10-45 us, the GPU pays 1-3 us a launch for
the host reads of a small frontier. The model hides them where they end within
the launch's CTA dispatch; in the chunked and balanced launches, whose vertex
tests set their time (``traces/scan_cost.py``), it adds what the longest walks
from host memory take beyond device memory (``hostlink.model.predict.host_walks_ns``).

Usage: python3 host_per_launch.py REPORT [--out FOLDER]
(reads REPORT/summary.csv of `hostlink validate report`; writes
FOLDER/host_per_launch.csv, FOLDER defaulting to REPORT, and prints it).
"""
from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd


def host_per_launch(summary: pd.DataFrame) -> pd.DataFrame:
    """One row per (graph, variant, id width) of BFS measured in zero-copy and device
    memory: launches, device time per launch and what zero-copy adds, in us."""
    s = summary[summary["case"].str.startswith("bfs/")
                & summary["metric"].isin(["kernel_time_ms", "iterations"])].copy()
    parts = s["case"].str.split("/", expand=True)
    s["graph"], s["variant"], s["mode"], s["ids"] = parts[1], parts[2], parts[3], parts[4]
    wide = s.pivot_table(index=["graph", "variant", "ids", "mode"], columns="metric",
                         values=["measured", "predicted"])
    rows = []
    for (graph, variant, ids), g in wide.groupby(level=[0, 1, 2]):
        modes = g.index.get_level_values("mode")
        if "zerocopy" not in modes or "device" not in modes:
            continue
        zc, dev = g.xs("zerocopy", level="mode").iloc[0], g.xs("device", level="mode").iloc[0]
        launches = float(zc[("measured", "iterations")])
        per = {side: (1e3 * zc[(side, "kernel_time_ms")] / launches,
                      1e3 * dev[(side, "kernel_time_ms")] / launches)
               for side in ("measured", "predicted")}
        rows.append({"graph": graph, "variant": variant, "ids": ids, "launches": launches,
                     "device_us_measured": per["measured"][1],
                     "device_us_predicted": per["predicted"][1],
                     "host_adds_us_measured": per["measured"][0] - per["measured"][1],
                     "host_adds_us_predicted": per["predicted"][0] - per["predicted"][1]})
    return pd.DataFrame(rows)


def main(argv: list[str]) -> int:
    if not argv or argv[0].startswith("-"):
        print("usage: python3 host_per_launch.py REPORT [--out FOLDER]", file=sys.stderr)
        return 2
    report = Path(argv[0])
    out = Path(argv[argv.index("--out") + 1]) if "--out" in argv else report
    path = report / "summary.csv"
    if not path.is_file():
        print(f"{path}: no summary.csv (the folder of a `hostlink validate report`)",
              file=sys.stderr)
        return 2
    table = host_per_launch(pd.read_csv(path))
    if table.empty:
        print(f"{path}: no BFS case measured in both zero-copy and device memory",
              file=sys.stderr)
        return 2
    out.mkdir(parents=True, exist_ok=True)
    table.to_csv(out / "host_per_launch.csv", index=False, float_format="%.3f")
    print(table.to_string(index=False, float_format=lambda v: f"{v:.2f}"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
