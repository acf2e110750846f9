"""Tables of the L1 probe (validation/experiments/l1_policy/l1_policy_probe.sh): the chases' median
latency per link by stride and lines, and the host sectors the strided reads fetched
per sector read by chunk, rounds, bytes per lane and warps per SM.

Usage: python l1_policy_summary.py FOLDER [FOLDER ...] [--csv FILE]
(the probe's folders: chase/, rounds/); --csv writes the strided table of every
folder as one CSV (chunk_B, rounds, bytes_per_lane, warps_per_sm, refetch, part:
the folder's name), the table model/l1_losses.py reads (copied into
model/data/l1_refetch.csv). Standard library only
(it also runs on the lent machine).
"""
from __future__ import annotations

import csv
import io
import json
import re
import statistics
import sys
from collections import defaultdict
from pathlib import Path

SECTOR_B = 32         # hostlink.model.geometry.SECTOR_B: this script runs without hostlink
SMS = 132


def chase_table(path: Path) -> dict[tuple[int, int], float]:
    """{(stride_B, lines): median lat_ns} of a chase JSON-lines file."""
    lat = defaultdict(list)
    for line in path.read_text().splitlines():
        rec = json.loads(line)
        if rec.get("type") != "measurement":
            continue
        p, m = rec["params"], rec["metrics"]
        lat[(int(p["stride_B"]), int(m["nodes"]))].append(float(m["lat_ns"]))
    return {k: statistics.median(v) for k, v in lat.items()}


def ncu_launches(path: Path) -> list[dict[str, str]]:
    """The read_kernel rows of an ncu --csv --page raw file (several runs concatenated)."""
    text = "".join(row for row in path.read_text().splitlines(keepends=True) if row.startswith('"'))
    rows, header = [], None
    for row in csv.reader(io.StringIO(text)):
        if row and row[0] == "ID":
            header = row
            continue
        if header and len(row) == len(header) and row[0]:
            rec = dict(zip(header, row))
            if "read_kernel" in rec.get("Kernel Name", ""):
                rows.append(rec)
    return rows


def number(text: str) -> float:
    return float(text.replace(",", ""))


def refetch_table(folder: Path) -> dict[tuple[int, int, int, int], float]:
    """{(chunk_B, rounds, bytes_per_lane, warps_per_sm): host sectors fetched per sector
    read}, the mean of the point's launches. Bytes per lane from the kernel's template
    argument, sectors read from the L1's sector lookups (one per 4 B x lanes ...):
    bytes read = lookups x 32 B / (32 B / bytes_per_lane) per lane and sector."""
    out = defaultdict(list)
    for f in sorted(folder.glob("ncu_*_r*.csv")):
        chunk, rounds = map(int, re.fullmatch(r"ncu_(\d+)_r(\d+)\.csv", f.name).groups())
        for rec in ncu_launches(f):
            bpl, warps_per_sm, sectors_read = launch_point(rec)
            fetched = number(rec["lts__t_sectors_srcunit_tex_aperture_sysmem_op_read.sum"])
            out[(chunk, rounds, bpl, warps_per_sm)].append(fetched / sectors_read)
    return {k: sum(v) / len(v) for k, v in out.items()}


def launch_point(rec: dict[str, str]) -> tuple[int, int, float]:
    """(bytes per lane, warps per SM, sectors read) of one read_kernel launch: bytes
    per lane from the kernel's template argument, sectors read from the L1's sector
    lookups, one per 32 B / bytes_per_lane lanes' loads of a sector."""
    bpl = int(re.search(r"read_kernel<(\d+),", rec["Kernel Name"]).group(1))
    warps = number(rec["launch__grid_size"]) * number(rec["launch__block_size"]) / 32
    lookups = number(rec["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"])
    return bpl, int(round(warps / SMS)), lookups * bpl / SECTOR_B


def write_csv(folders: list[Path], path: Path) -> int:
    """The strided tables of ``folders`` as one CSV (sorted); returns its rows."""
    rows = []
    for folder in folders:
        for (chunk, rounds, bpl, warps), value in refetch_table(folder / "rounds").items():
            rows.append((chunk, rounds, bpl, warps, value, folder.name))
    rows.sort()
    with path.open("w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["chunk_B", "rounds", "bytes_per_lane", "warps_per_sm", "refetch", "part"])
        for chunk, rounds, bpl, warps, value, part in rows:
            out.writerow([chunk, rounds, bpl, warps, f"{value:.4f}", part])
    return len(rows)


def show(root: Path) -> None:
    for name in ("device", "host"):
        path = root / "chase" / f"{name}.jsonl"
        if not path.exists():
            continue
        table = chase_table(path)
        strides = sorted({s for s, _ in table})
        lines = sorted({n for _, n in table})
        print(f"chase, {name} memory: median ns per link, by lines (rows) and stride (columns)")
        print("lines  " + "".join(f"{s:>9d}" for s in strides))
        for n in lines:
            print(f"{n:5d}  " + "".join(f"{table[(s, n)]:9.1f}" if (s, n) in table else " " * 9
                                        for s in strides))
    table = refetch_table(root / "rounds")
    if table:
        print("strided: host sectors fetched per sector read, by warps per SM (columns)")
        warps = sorted({k[3] for k in table})
        print("chunk rounds bpl " + "".join(f"{w:>7d}" for w in warps))
        for chunk, rounds, bpl in sorted({k[:3] for k in table}):
            print(f"{chunk:5d} {rounds:6d} {bpl:3d} " + "".join(
                f"{table[(chunk, rounds, bpl, w)]:7.3f}" if (chunk, rounds, bpl, w) in table
                else " " * 7 for w in warps))


def main(argv: list[str]) -> None:
    args = list(argv)
    csv_path = None
    if "--csv" in args:
        i = args.index("--csv")
        csv_path = Path(args[i + 1])
        del args[i:i + 2]
    if not args:
        sys.exit("usage: l1_policy_summary.py FOLDER [FOLDER ...] [--csv FILE]")
    for folder in args:
        print(f"== {folder}")
        show(Path(folder))
    if csv_path is not None:
        print(f"{write_csv([Path(a) for a in args], csv_path)} rows -> {csv_path}")


if __name__ == "__main__":
    main(sys.argv[1:])
