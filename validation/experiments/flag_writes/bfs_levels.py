"""Each level of grid3d's BFS in device memory, measured and predicted with and without
the L2's time per shared write, beside the level's shared writes.

Reads the first source's launch times of `../families/runs/h200-grid3d` (the H200
lease that ran this experiment's microbenchmarks, the families' grid3d BFS right
after), predicts the same source with the `h200-pcie5` preset as it stands and with
`gpu.shared_write_ns` at 0, and counts each level's writes to the edge counter and
the `changed` flag (hostlink.traces.shared_writes). Writes `runs/h200/bfs_levels.csv`
(one row per variant and level, times in us) and prints, per variant, the sums and
the slope of the measured time less the prediction without the writes against them.

    python3 validation/experiments/flag_writes/bfs_levels.py
"""
from __future__ import annotations

import csv
import io
import json
import tarfile
from pathlib import Path

import numpy as np

from hostlink.model.config import load_system
from hostlink.traces.emulator.algorithms import bfs
from hostlink.traces.shared_writes import shared_writes
from hostlink.validation.twin_common import load_run
from hostlink.validation.twin_traversal import GraphSource, predict_traversal

HERE = Path(__file__).resolve().parent
RUN = HERE.parent / "families" / "runs" / "h200-grid3d"
OUT = HERE / "runs" / "h200" / "bfs_levels.csv"
GRAPH, VARIANTS, MODE = "grid3d", ("naive", "merged_aligned"), "device"


def measured_levels(variant: str) -> tuple[int, np.ndarray]:
    """The first source and the median of its repetitions' launch times (us)."""
    with tarfile.open(RUN / "raw.tar.xz") as tar:
        member = next(m for m in tar.getmembers() if m.name.endswith(f"bfs__{GRAPH}.jsonl"))
        lines = io.TextIOWrapper(tar.extractfile(member), encoding="utf-8").readlines()
    by_source: dict[int, list] = {}
    for line in lines:
        d = json.loads(line)
        p = d.get("params", {})
        if d.get("type") == "measurement" and (p["variant"], p["memory_mode"], p["id_bytes"]) \
                == (variant, MODE, 8):
            by_source.setdefault(int(p["source"]), []).append(d["detail"]["launch_ms"])
    source = next(iter(by_source))
    return source, np.median(np.array(by_source[source]), axis=0) * 1e3


def predicted_levels(run, graphs, variant: str, system) -> np.ndarray:
    case = f"bfs/{GRAPH}/{variant}/{MODE}/8B"
    timing: dict = {}
    predict_traversal(case, run.cases[case], system, graphs, timing=timing, max_sources=1)
    return np.array(timing["launch_ms"][0]) * 1e3


def main() -> int:
    run = load_run(RUN)
    graphs = GraphSource(run)
    preset = load_system("h200-pcie5")
    without = load_system("h200-pcie5", {"gpu.shared_write_ns": 0.0})
    rows = []
    for variant in VARIANTS:
        source, measured = measured_levels(variant)
        csr = graphs.get(GRAPH)
        writes = shared_writes(csr.offsets, "bfs", variant, bfs(csr, source).active)
        with_w = predicted_levels(run, graphs, variant, preset)
        without_w = predicted_levels(run, graphs, variant, without)
        n = min(len(measured), len(with_w), len(writes))
        slope = np.polyfit(writes[:n], measured[:n] - without_w[:n], 1)[0] * 1e3
        print(f"{variant}: source {source}, {n} levels; measured {measured[:n].sum():.0f} us, "
              f"predicted {with_w[:n].sum():.0f} (without the writes {without_w[:n].sum():.0f}); "
              f"measured less predicted without them: {slope:.2f} ns a shared write")
        for k in range(n):
            rows.append({"variant": variant, "level": k, "shared_writes": int(writes[k]),
                         "measured_us": round(float(measured[k]), 3),
                         "predicted_us": round(float(with_w[k]), 3),
                         "predicted_without_us": round(float(without_w[k]), 3)})
    OUT.parent.mkdir(parents=True, exist_ok=True)
    with open(OUT, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
