"""Registers a thread of each traversal kernel uses, as the programs are built.

The SM's register file bounds how many CTAs of a launch run at once
(:mod:`hostlink.model.occupancy`). :data:`REGISTERS` holds the registers of
``walk<Id, VARIANT, kNoTrace, AHEAD, Algo>`` (gpu_kernels/traversal/walk.cuh)
for every kernel, variant, id width and load-ahead the programs are built with,
as ptxas reports them (``-Xptxas -v``) for the Makefile's own flags and sm_90:
``validation/experiments/registers/runs/h200`` (nvcc 13.0.88, the
compiler the H100 and H200 runs were built with, their ``build.txt``). Only the
balanced walk uses more than 32 (40-61): its 32 list starts and window
arithmetic stay in registers, and an SM holds 4 to 6 of its CTAs instead of 8.
:func:`with_program_registers` sets them on a run's launches.

Assumptions: a build for another architecture or by another compiler may use
other counts; the traced builds (``TRACE`` other than ``kNoTrace``) are not the
timed ones and are left out.
"""
from __future__ import annotations

#: (kernel, variant) -> {(id bytes, load-ahead): registers per thread}, from the ptxas
#: reports in validation/experiments/registers/runs/h200.
REGISTERS: dict[tuple[str, str], dict[tuple[int, int], int]] = {
    ("bfs", "naive"): {(4, 1): 22, (4, 4): 28, (8, 1): 20, (8, 4): 28},
    ("bfs", "merged"): {(4, 1): 26, (4, 4): 30, (8, 1): 24, (8, 4): 30},
    ("bfs", "merged_aligned"): {(4, 1): 26, (4, 4): 32, (8, 1): 24, (8, 4): 32},
    ("bfs", "chunked"): {(4, 1): 32, (4, 4): 32, (8, 1): 32, (8, 4): 30},
    ("bfs", "balanced"): {(4, 1): 44, (4, 4): 58, (8, 1): 44, (8, 4): 58},
    ("sssp", "naive"): {(4, 1): 26, (4, 4): 32, (8, 1): 24, (8, 4): 30},
    ("sssp", "merged"): {(4, 1): 24, (4, 4): 32, (8, 1): 22, (8, 4): 32},
    ("sssp", "merged_aligned"): {(4, 1): 24, (4, 4): 32, (8, 1): 22, (8, 4): 32},
    ("sssp", "chunked"): {(4, 1): 32, (4, 4): 32, (8, 1): 32, (8, 4): 32},
    ("sssp", "balanced"): {(4, 1): 48, (4, 4): 60, (8, 1): 45, (8, 4): 60},
    ("cc", "naive"): {(4, 1): 22, (4, 4): 24, (8, 1): 20, (8, 4): 24},
    ("cc", "merged"): {(4, 1): 26, (4, 4): 28, (8, 1): 22, (8, 4): 26},
    ("cc", "merged_aligned"): {(4, 1): 26, (4, 4): 30, (8, 1): 22, (8, 4): 30},
    ("cc", "chunked"): {(4, 1): 30, (4, 4): 28, (8, 1): 32, (8, 4): 28},
    ("cc", "balanced"): {(4, 1): 42, (4, 4): 58, (8, 1): 42, (8, 4): 59},
    ("pagerank", "naive"): {(4, 1): 20, (4, 4): 28, (8, 1): 20, (8, 4): 28},
    ("pagerank", "merged"): {(4, 1): 24, (4, 4): 26, (8, 1): 22, (8, 4): 24},
    ("pagerank", "merged_aligned"): {(4, 1): 22, (4, 4): 28, (8, 1): 22, (8, 4): 32},
    ("pagerank", "chunked"): {(4, 1): 32, (4, 4): 32, (8, 1): 32, (8, 4): 32},
    ("pagerank", "balanced"): {(4, 1): 40, (4, 4): 58, (8, 1): 40, (8, 4): 61},
}


def registers(kernel: str, variant: str, id_bytes: int, load_ahead: int) -> int:
    """Registers a thread of the kernel's launch uses (0 where not known)."""
    return REGISTERS.get((kernel, variant), {}).get((int(id_bytes), int(load_ahead)), 0)


def with_program_registers(stream, kernel: str, variant: str, id_bytes: int, load_ahead: int):
    """``stream`` with each launch record's registers per thread set to the program's."""
    from dataclasses import replace
    regs = registers(kernel, variant, id_bytes, load_ahead)
    if regs <= 0 or not stream.launches:
        return stream
    return replace(stream, launches=tuple(replace(info, regs_per_thread=regs)
                                          for info in stream.launches))
