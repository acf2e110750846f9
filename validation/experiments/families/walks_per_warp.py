"""What host memory adds to a launch, by the active vertices one warp walks in turn.

The chunked BFS gives each warp eight consecutive vertices. It tests them one
after another and walks the list of each active one before testing the next,
so a warp with k active vertices walks k lists in turn. The balanced variant
walks its eight vertices' lists together, one window of lines at a time.

For each graph of a run measured in zero-copy and device memory, this takes
the first source's BFS levels (one launch each) and, per launch, the most
active vertices in one warp's eight (``most_active_per_warp``). It then
averages what zero-copy adds to the launch's time (the median over repetitions
in each placement, zero-copy's less device memory's) over the launches with
the same count. If the walks end under the launch's vertex tests, the count
changes nothing. If the tests wait for the walks, each one more adds a round
trip, less the device memory's.

Usage: python3 walks_per_warp.py RUN [--out FOLDER] [--graphs A,B]
(RUN: a measured run with its raw program output; writes FOLDER/walks_per_warp.csv,
FOLDER defaulting to RUN, and prints it).
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

VARIANTS = ("chunked", "balanced")
VERTICES_PER_WARP = 8          # kChunkVertices, gpu_kernels/traversal/walk.cuh
MOST_SHOWN = 4                 # counts above this are pooled into one row


def most_active_per_warp(level: np.ndarray, launches: int) -> np.ndarray:
    """Per BFS level 0..launches-1, the most vertices of that level among one warp's
    :data:`VERTICES_PER_WARP` consecutive vertices (0 where the level is empty)."""
    warp = np.arange(len(level), dtype=np.int64) // VERTICES_PER_WARP
    out = np.zeros(launches, dtype=np.int64)
    reached = level >= 0
    if not reached.any():
        return out
    key = level[reached].astype(np.int64) * (int(warp[-1]) + 1) + warp[reached]
    uniq, counts = np.unique(key, return_counts=True)
    lv = uniq // (int(warp[-1]) + 1)
    keep = lv < launches
    np.maximum.at(out, lv[keep], counts[keep])
    return out


def walks_per_warp(run_dir: Path, graphs: list[str] | None = None) -> pd.DataFrame:
    """One row per (graph, variant, most active vertices per warp): launches and the
    mean of what zero-copy adds to them, us (8 B ids, the run's first source)."""
    from hostlink.traces.sampled import bfs_levels
    from hostlink.validation.launches import measured_launches
    from hostlink.validation.twin_common import load_run
    from hostlink.validation.twin_traversal import GraphSource

    run = load_run(run_dir)
    source = GraphSource(run)
    rows = []
    names = sorted({p["graph"] for p in run.cases.values()
                    if p.get("kernel") == "bfs" and p.get("variant") in VARIANTS})
    for graph in names:
        if graphs and graph not in graphs:
            continue
        cases = {(p["variant"], p["memory_mode"]): (c, p) for c, p in run.cases.items()
                 if p.get("kernel") == "bfs" and p.get("graph") == graph
                 and int(p.get("id_bytes", 0)) == 8 and p.get("variant") in VARIANTS}
        first = next(iter(cases.values()), None)
        if first is None or not first[1].get("sources"):
            continue
        src = int(first[1]["sources"][0])
        level = bfs_levels(source.get(graph), src)
        for variant in VARIANTS:
            if (variant, "zerocopy") not in cases or (variant, "device") not in cases:
                continue
            zc = np.median(measured_launches(run_dir, cases[(variant, "zerocopy")][0], src),
                           axis=0)
            dev = np.median(measured_launches(run_dir, cases[(variant, "device")][0], src),
                            axis=0)
            n = min(len(zc), len(dev))
            adds_us = (zc[:n] - dev[:n]) * 1e3
            most = np.minimum(most_active_per_warp(level, n), MOST_SHOWN)
            for k in np.unique(most[most > 0]):
                sel = most == k
                rows.append({"graph": graph, "variant": variant,
                             "most_active_per_warp": (f"{k}+" if k == MOST_SHOWN else str(k)),
                             "launches": int(sel.sum()),
                             "device_us": float(dev[:n][sel].mean() * 1e3),
                             "host_adds_us": float(adds_us[sel].mean())})
    return pd.DataFrame(rows)


def main(argv: list[str]) -> int:
    if not argv or argv[0].startswith("-"):
        print("usage: python3 walks_per_warp.py RUN [--out FOLDER] [--graphs A,B]",
              file=sys.stderr)
        return 2
    run_dir = Path(argv[0])
    out = Path(argv[argv.index("--out") + 1]) if "--out" in argv else run_dir
    graphs = argv[argv.index("--graphs") + 1].split(",") if "--graphs" in argv else None
    if not (run_dir / "metadata.json").is_file():
        print(f"{run_dir}: not a measured run (no metadata.json)", file=sys.stderr)
        return 2
    from hostlink.model.errors import HostlinkError
    try:
        table = walks_per_warp(run_dir, graphs)
    except HostlinkError as exc:
        print(f"{run_dir}: {exc}", file=sys.stderr)
        return 2
    if table.empty:
        print(f"{run_dir}: no chunked or balanced BFS measured in both zero-copy and "
              f"device memory", file=sys.stderr)
        return 2
    out.mkdir(parents=True, exist_ok=True)
    table.to_csv(out / "walks_per_warp.csv", index=False, float_format="%.3f")
    print(table.to_string(index=False, float_format=lambda v: f"{v:.2f}"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
