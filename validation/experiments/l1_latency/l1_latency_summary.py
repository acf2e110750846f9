"""Tables of the L1 latency probe (validation/experiments/l1_latency/l1_latency_probe.sh): for each
memory mode, chunk, bytes per lane and warps per SM, the sectors the L2 served the L1
per sector the program read (1 = every sector fetched once), and the median bandwidth
of the same points timed without Nsight Compute.

Usage: python l1_latency_summary.py FOLDER [--csv FILE]
(the probe's folder, holding rounds/); --csv writes the table as CSV (memory_mode,
chunk_B, bytes_per_lane, warps_per_sm, refetch, sysmem_share, bw_GBps). Standard
library only (it also runs on the lent machine).
"""
from __future__ import annotations

import csv
import json
import re
import statistics
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "l1_policy"))
from l1_policy_summary import SMS, launch_point, ncu_launches, number  # noqa: E402

Key = tuple[str, int, int, int]


def refetch_table(rounds: Path) -> dict[Key, tuple[float, float]]:
    """{(memory_mode, chunk_B, bytes_per_lane, warps_per_sm): (L2 sectors served to the
    L1 per sector read, the share of them from system memory)}, the mean over a point's
    launches (sectors read: :func:`l1_policy_summary.launch_point`)."""
    out: dict[Key, list[tuple[float, float]]] = defaultdict(list)
    for f in sorted(rounds.glob("ncu_*_*.csv")):
        mode, chunk = re.fullmatch(r"ncu_(\w+?)_(\d+)\.csv", f.name).groups()
        for rec in ncu_launches(f):
            bpl, warps_per_sm, sectors_read = launch_point(rec)
            served = number(rec["lts__t_sectors_srcunit_tex_op_read.sum"])
            sysmem = number(rec["lts__t_sectors_srcunit_tex_aperture_sysmem_op_read.sum"])
            out[(mode, int(chunk), bpl, warps_per_sm)].append(
                (served / sectors_read, sysmem / served if served else 0.0))
    return {k: (statistics.fmean(a for a, _ in v), statistics.fmean(b for _, b in v))
            for k, v in out.items()}


def bandwidth_table(plain: Path) -> dict[Key, float]:
    """{key: median GB/s} of the timed points (zc_read's JSON lines)."""
    bw: dict[Key, list[float]] = defaultdict(list)
    for line in plain.read_text().splitlines():
        rec = json.loads(line)
        if rec.get("type") != "measurement":
            continue
        p, m = rec["params"], rec["metrics"]
        key = (p["memory_mode"], int(p["chunk_B"]), int(p["bytes_per_lane"]),
               int(round(int(p["warps"]) / SMS)))
        bw[key].append(float(m["bw_GBps"]))
    return {k: statistics.median(v) for k, v in bw.items()}


def table_rows(folder: Path) -> list[tuple]:
    """(memory_mode, chunk_B, bytes_per_lane, warps_per_sm, refetch, sysmem_share,
    bw_GBps) of every profiled point of a probe folder, sorted."""
    refetch = refetch_table(folder / "rounds")
    bw = bandwidth_table(folder / "rounds" / "plain.jsonl")
    return [(*k, *refetch[k], bw.get(k, float("nan"))) for k in sorted(refetch)]


def write_csv(folder: Path, path: Path) -> int:
    """The table of ``folder`` as CSV at ``path``; returns its rows."""
    rows = table_rows(folder)
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["memory_mode", "chunk_B", "bytes_per_lane", "warps_per_sm", "refetch",
                    "sysmem_share", "bw_GBps"])
        for r in rows:
            w.writerow([r[0], r[1], r[2], r[3], f"{r[4]:.4f}", f"{r[5]:.4f}", f"{r[6]:.2f}"])
    return len(rows)


def main(argv: list[str]) -> int:
    args = [a for a in argv if not a.startswith("--")]
    if "--csv" in argv:
        args = [a for a in args if a != argv[argv.index("--csv") + 1]]
    if not args:
        print(__doc__)
        return 2
    folder = Path(args[0])
    table = {r[:4]: r for r in table_rows(folder)}
    for chunk, bpl in sorted({(c, b) for _, c, b, _ in table}):
        warps = sorted({w for _, c, b, w in table if (c, b) == (chunk, bpl)})
        print(f"\nchunk {chunk} B, {bpl} B per lane: sectors served per sector read (GB/s)")
        print("| memory | " + " | ".join(f"{w} warps/SM" for w in warps) + " |")
        print("|---|" + "---:|" * len(warps))
        for mode in sorted({m for m, c, b, _ in table if (c, b) == (chunk, bpl)}):
            cells = [f"{table[k][4]:.3f} ({table[k][6]:.0f})" if k in table else ""
                     for k in ((mode, chunk, bpl, w) for w in warps)]
            print(f"| {mode} | " + " | ".join(cells) + " |")
    if "--csv" in argv:
        write_csv(folder, Path(argv[argv.index("--csv") + 1]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
