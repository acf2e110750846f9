"""Per-launch table of a device_work_probe.sh folder: Nsight Compute counters beside the
launch's time without the profiler.

Usage: python3 device_work_summary.py FOLDER [--launch-offset N]  (writes FOLDER/launches.csv)

Each ``ncu_<kernel>_<graph>_<mode>[_<anything>].csv`` holds the walk launches of one
program run (one source, one repetition, no warm-up), configuration after
configuration; the kernel name's template arguments give the id type and the
variant, and the launches of one configuration come in order, the first being
launch N (``--launch-offset``, 0 unless the probe skipped launches).
``plain.jsonl`` holds the same configurations timed by CUDA events (three
repetitions; the table takes the median of each launch over the repetitions after
the first, which pays the run's first touches, among those with the most common
launch count: SSSP and CC may converge in fewer launches).
Columns: kernel, graph, memory_mode, variant, id_bytes, launch, event_ms (median),
then the counters under short names (``NAMES``), and ``ipc_per_sm``: warp
instructions per active SM cycle (at most 4 on Hopper: four schedulers per SM).
"""
from __future__ import annotations

import csv
import io
import json
import re
import sys
from pathlib import Path

import numpy as np

VARIANTS = ("naive", "merged", "merged_aligned", "chunked", "balanced")   # walk.cuh: enum Variant
NAMES = {
    "gpu__time_duration.sum": "ncu_us",
    "smsp__inst_executed.sum": "warp_inst",
    "sm__cycles_active.avg": "sm_active_cycles",
    "smsp__issue_active.avg.pct_of_peak_sustained_active": "issue_active_pct",
    "sm__warps_active.avg.pct_of_peak_sustained_active": "occupancy_pct",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum": "ld_requests",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": "ld_sectors",
    "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum": "st_requests",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum": "ld_l1_hit_sectors",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum": "st_sectors",
    "lts__t_sectors_op_read.sum": "l2_read_sectors",
    "lts__t_sectors_op_read_lookup_hit.sum": "l2_read_hit_sectors",
    "lts__t_sectors_op_write.sum": "l2_write_sectors",
    "dram__bytes_write.sum": "dram_write_B",
    "smsp__average_warps_issue_stalled_drain_per_issue_active.ratio": "stall_drain",
    "lts__t_sectors_srcunit_tex_aperture_sysmem_op_read.sum": "sysmem_read_sectors",
    "dram__bytes_read.sum": "dram_read_B",
    "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio": "stall_long_scoreboard",
    "smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio": "stall_lg_throttle",
    "smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio": "stall_not_selected",
    "smsp__average_warps_issue_stalled_wait_per_issue_active.ratio": "stall_wait",
    "launch__grid_size": "grid_ctas",
    "launch__registers_per_thread": "registers",
}
MODES = ("device", "zerocopy", "registered", "uvm", "uvm_accessedby", "uvm_readmostly")
KERNEL_RE = re.compile(r"walk<\s*(unsigned int|unsigned long)\s*,\s*(\d)\s*,")


def read_ncu(path: Path) -> list[dict]:
    text = path.read_text()
    start = text.find('"ID"')
    if start < 0:
        raise SystemExit(f"{path}: no Nsight Compute table")
    rows = list(csv.reader(io.StringIO(text[start:])))
    head = rows[0]
    out = []
    for r in rows[2:]:                       # row 1 holds the units
        if len(r) != len(head):
            continue
        rec = dict(zip(head, r))
        m = KERNEL_RE.search(rec.get("Kernel Name", ""))
        if not m:
            continue
        rec["id_bytes"] = 4 if m.group(1) == "unsigned int" else 8
        rec["variant"] = VARIANTS[int(m.group(2))]
        out.append(rec)
    return out


def event_times(folder: Path) -> tuple[dict, int]:
    """(kernel, graph, mode, variant, id_bytes) -> per-launch median over reps >= 1;
    and the GPU's SM count (the programs' device record)."""
    runs: dict[tuple, list[list[float]]] = {}
    sm_count = 0
    for line in (folder / "plain.jsonl").read_text().splitlines():
        if not line.startswith("{"):
            continue
        rec = json.loads(line)
        if rec.get("type") == "device":
            sm_count = int(rec["sm_count"])
        if rec.get("type") != "measurement":
            continue
        p = rec["params"]
        key = (rec["benchmark"], p["graph"], p["memory_mode"], p["variant"], int(p["id_bytes"]))
        if rec.get("rep", 0) >= 1:
            runs.setdefault(key, []).append(rec["detail"]["launch_ms"])
    if not sm_count:
        raise SystemExit(f"{folder / 'plain.jsonl'}: no device record")
    out = {}
    for k, reps in runs.items():                 # SSSP and CC may converge in fewer launches
        n = max(set(map(len, reps)), key=[len(r) for r in reps].count)
        out[k] = np.median(np.array([r for r in reps if len(r) == n]), axis=0)
    return out, sm_count


def split_name(path: Path) -> tuple[str, str, str]:
    """(kernel, graph, mode) of ``ncu_<kernel>_<graph>_<mode>[_<anything>].csv``; the
    graph's name may hold underscores."""
    kernel, *rest = path.stem.split("_")[1:]
    at = [i for i, part in enumerate(rest) if part in MODES]
    if not at or at[0] == 0:
        raise SystemExit(f"{path}: expected ncu_<kernel>_<graph>_<mode>[_...].csv")
    return kernel, "_".join(rest[:at[0]]), rest[at[0]]


def main(argv: list[str]) -> int:
    folder = Path(argv[0])
    offset = 0
    if len(argv) == 3 and argv[1] == "--launch-offset":
        offset = int(argv[2])
    elif len(argv) != 1:
        raise SystemExit("usage: device_work_summary.py FOLDER [--launch-offset N]")
    events, sm_count = event_times(folder)
    table = []
    for path in sorted(folder.glob("ncu_*.csv")):
        kernel, graph, mode = split_name(path)
        seen: dict[tuple, int] = {}
        for rec in read_ncu(path):
            key = (kernel, graph, mode, rec["variant"], rec["id_bytes"])
            launch = seen.get(key, offset)
            seen[key] = launch + 1
            ev = events.get(key)
            row = {"kernel": kernel, "graph": graph, "memory_mode": mode,
                   "variant": rec["variant"], "id_bytes": rec["id_bytes"], "launch": launch,
                   "event_ms": float(ev[launch]) if ev is not None and launch < len(ev) else ""}
            for metric, name in NAMES.items():
                v = rec.get(metric, "")
                row[name] = float(v.replace(",", "")) if v not in ("", "n/a") else ""
            if row["ncu_us"] != "":
                row["ncu_us"] /= 1000.0              # gpu__time_duration is in ns
            row["ipc_per_sm"] = (row["warp_inst"] / sm_count / row["sm_active_cycles"]
                                 if row["warp_inst"] != "" and row["sm_active_cycles"] else "")
            table.append(row)
    if not table:
        raise SystemExit(f"{folder}: no ncu_*.csv with walk launches")
    out = folder / "launches.csv"
    with out.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(table[0]))
        w.writeheader()
        for row in table:
            w.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in row.items()})
    print(f"{out}: {len(table)} launches")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
