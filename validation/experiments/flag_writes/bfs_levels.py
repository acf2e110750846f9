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
from pathlib import Path

import numpy as np

from hostlink.model.config import load_system
from hostlink.traces.emulator.algorithms import bfs
from hostlink.traces.shared_writes import shared_writes
from hostlink.validation.launches import compare_launches
from hostlink.validation.twin_common import load_run
from hostlink.validation.twin_traversal import GraphSource

HERE = Path(__file__).resolve().parent
#: GPU -> its preset (the runs are ../families/runs/<gpu>-grid3d, written to runs/<gpu>)
PRESETS = {"h200": "h200-pcie5", "h100": "h100-pcie5"}
GRAPH, VARIANTS, MODE = "grid3d", ("naive", "merged_aligned"), "device"


def levels(gpu: str) -> list[dict]:
    """Per variant and level of the GPU's run: its shared writes and times (us)."""
    run_dir = HERE.parent / "families" / "runs" / f"{gpu}-grid3d"
    preset = load_system(PRESETS[gpu])
    without = load_system(PRESETS[gpu], {"gpu.shared_write_ns": 0.0})
    csr = GraphSource(load_run(run_dir)).get(GRAPH)
    rows = []
    for variant in VARIANTS:
        case = f"bfs/{GRAPH}/{variant}/{MODE}/8B"
        with_w = compare_launches(run_dir, case, preset)
        without_w = compare_launches(run_dir, case, without)
        source = with_w.attrs["source"]
        writes = shared_writes(csr.offsets, "bfs", variant, bfs(csr, source).active)
        n = min(len(with_w), len(writes))
        measured = with_w["measured_ms"].to_numpy()[:n] * 1e3
        predicted = with_w["predicted_ms"].to_numpy()[:n] * 1e3
        alone = without_w["predicted_ms"].to_numpy()[:n] * 1e3
        slope = np.polyfit(writes[:n], measured - alone, 1)[0] * 1e3
        print(f"{gpu} {variant}: source {source}, {n} levels; measured "
              f"{measured.sum():.0f} us, predicted {predicted.sum():.0f} (without the "
              f"writes {alone.sum():.0f}); measured less predicted without them: "
              f"{slope:.2f} ns a shared write")
        rows += [{"variant": variant, "level": k, "shared_writes": int(writes[k]),
                  "measured_us": round(float(measured[k]), 3),
                  "predicted_us": round(float(predicted[k]), 3),
                  "predicted_without_us": round(float(alone[k]), 3)} for k in range(n)]
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
