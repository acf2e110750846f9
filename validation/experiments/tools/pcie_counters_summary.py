"""Per offset, what Nsight Compute's PCIe counters saw of pcie_counter_probe.sh's reads.

Reads ``ncu.csv`` (``pcie_counter_probe.sh``: warp-coalesced zero-copy reads of
256 MiB, 4 B per lane, offsets 0 to 112 B from the 128 B line in that order, each
kernel profiled twice) and prints, per offset and profiled kernel, the kernel time,
the useful bandwidth and the PCIe bytes the GPU sent (``pcie__write_bytes``: read
requests) and received (``pcie__read_bytes``: completions) per 128 B read.

Usage: python pcie_counters_summary.py [PATH/TO/ncu.csv]
"""
from __future__ import annotations

import io
import sys
from pathlib import Path

import pandas as pd

OFFSETS_B = (0, 16, 32, 48, 64, 80, 96, 112)
READ_B = 256 << 20          # --total-B of the probe's ncu run
WARP_LOAD_B = 128           # 32 lanes x 4 B


def summary(path: Path) -> pd.DataFrame:
    rows = [line for line in path.read_text().splitlines(keepends=True) if line.startswith('"')]
    d = pd.read_csv(io.StringIO("".join(rows)), dtype=str)
    d = d[pd.to_numeric(d["ID"], errors="coerce").notna()].reset_index(drop=True)

    def num(col: str) -> pd.Series:
        return pd.to_numeric(d[col].str.replace(",", "", regex=False))

    per = len(d) // len(OFFSETS_B)
    if per * len(OFFSETS_B) != len(d):
        raise SystemExit(f"{path}: {len(d)} kernels, not a multiple of {len(OFFSETS_B)} offsets")
    loads = READ_B / WARP_LOAD_B
    time_ns = num("gpu__time_duration.sum")
    return pd.DataFrame({
        "offset_B": [OFFSETS_B[i // per] for i in range(len(d))],
        "kernel_ms": time_ns / 1e6,
        "bw_GBps": READ_B / time_ns,
        "sent_B_per_128B": num("pcie__write_bytes.sum") / loads,
        "received_B_per_128B": num("pcie__read_bytes.sum") / loads,
    })


if __name__ == "__main__":
    path = Path(sys.argv[1] if len(sys.argv) > 1 else "ncu.csv")
    print(summary(path).round(2).to_string(index=False))
