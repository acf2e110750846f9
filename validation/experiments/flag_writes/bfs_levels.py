"""Each level of grid3d's BFS in device memory, measured and predicted with and without
the L2's time per shared write, beside the level's shared writes.

For each GPU, reads the first source's launch times of `../families/runs/<gpu>-grid3d`
(the lease that ran this experiment's microbenchmarks, the families' grid3d BFS right
after), predicts the same source with the GPU's preset as it stands and with
`gpu.shared_write_ns` at 0, and counts each level's writes to the edge counter and
the `changed` flag (hostlink.traces.shared_writes). Writes `runs/<gpu>/bfs_levels.csv`
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
#: GPU -> its preset (the runs are ../families/runs/<gpu>-grid3d, written to runs/<gpu>)
PRESETS = {"h200": "h200-pcie5", "h100": "h100-pcie5"}
GRAPH, VARIANTS, MODE = "grid3d", ("naive", "merged_aligned"), "device"


def measured_levels(run_dir: Path, variant: str) -> tuple[int, np.ndarray]:
    """The first source and the median of its repetitions' launch times (us)."""
    with tarfile.open(run_dir / "raw.tar.xz") as tar:
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


def levels(gpu: str) -> list[dict]:
    """Per variant and level of the GPU's run: its shared writes and times (us)."""
    run_dir = HERE.parent / "families" / "runs" / f"{gpu}-grid3d"
    run = load_run(run_dir)
    graphs = GraphSource(run)
    preset = load_system(PRESETS[gpu])
    without = load_system(PRESETS[gpu], {"gpu.shared_write_ns": 0.0})
    rows = []
    for variant in VARIANTS:
        source, measured = measured_levels(run_dir, variant)
        csr = graphs.get(GRAPH)
        writes = shared_writes(csr.offsets, "bfs", variant, bfs(csr, source).active)
        with_w = predicted_levels(run, graphs, variant, preset)
        without_w = predicted_levels(run, graphs, variant, without)
        n = min(len(measured), len(with_w), len(writes))
        slope = np.polyfit(writes[:n], measured[:n] - without_w[:n], 1)[0] * 1e3
        print(f"{gpu} {variant}: source {source}, {n} levels; measured "
              f"{measured[:n].sum():.0f} us, predicted {with_w[:n].sum():.0f} (without the "
              f"writes {without_w[:n].sum():.0f}); measured less predicted without them: "
              f"{slope:.2f} ns a shared write")
        for k in range(n):
            rows.append({"variant": variant, "level": k, "shared_writes": int(writes[k]),
                         "measured_us": round(float(measured[k]), 3),
                         "predicted_us": round(float(with_w[k]), 3),
                         "predicted_without_us": round(float(without_w[k]), 3)})
    return rows


def main() -> int:
    for gpu in PRESETS:
        rows = levels(gpu)
        out = HERE / "runs" / gpu / "bfs_levels.csv"
        out.parent.mkdir(parents=True, exist_ok=True)
        with open(out, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
        print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
