"""How many CTAs of a launch one SM holds at once: its warp slots and its registers.

An SM runs a CTA only when it has room for all of the CTA's warps and for their
registers:

- warp slots: ``gpu.max_warps_per_sm // warps_per_cta`` CTAs;
- registers: the SM's ``gpu.registers_per_sm`` 32-bit registers are allocated
  to a warp in units of :data:`REG_ALLOC_UNIT` (a warp of a kernel using ``r``
  registers a thread holds ``ceil(32 r / 256) x 256``), so at most
  ``registers_per_sm // (warps_per_cta x that)`` CTAs fit (NVIDIA CUDA C++
  Programming Guide, "Technical Specifications per Compute Capability":
  register allocation unit size 256, allocation granularity warp, for compute
  capabilities 5.0 to 9.0; the CUDA Occupancy Calculator computes the same).

A launch whose registers per thread are unknown (0) is bound by its warp slots
alone. Assumptions: shared memory and the CTA-count limit per SM (32 on Volta to
Hopper) never bind the programs modelled here (no shared memory; CTAs of 8
warps); the four SM sub-partitions' register shares give the same count as the
SM's whole file for CTAs of 8 warps.
"""
from __future__ import annotations

import numpy as np

from hostlink.model.geometry import WARP_SIZE

REG_ALLOC_UNIT = 256          # registers: a warp's allocation unit (CUDA C++ Programming Guide)


def ctas_per_sm(max_warps_per_sm: int, registers_per_sm: int, warps_per_cta,
                regs_per_thread=0):
    """CTAs of ``warps_per_cta`` warps (and ``regs_per_thread`` registers a thread; 0:
    unknown) one SM holds at once, given its warp slots and registers (a GPU's
    ``max_warps_per_sm`` and ``registers_per_sm``); at least 1. Arrays broadcast."""
    wpc = np.maximum(1, np.asarray(warps_per_cta, dtype=np.int64))
    regs = np.asarray(regs_per_thread, dtype=np.int64)
    slots = np.maximum(1, int(max_warps_per_sm) // wpc)
    per_warp = -(-regs * WARP_SIZE // REG_ALLOC_UNIT) * REG_ALLOC_UNIT
    by_regs = np.where(per_warp > 0, int(registers_per_sm) // np.maximum(1, wpc * per_warp),
                       slots)
    out = np.maximum(1, np.minimum(slots, by_regs))
    return int(out) if out.ndim == 0 else out


def launch_shapes(launches, n_launch: int) -> tuple[np.ndarray, np.ndarray]:
    """Per launch (``n_launch`` of them), its warps per CTA (at least 1) and its
    registers a thread (0: unknown), from its record in ``launches``
    (:class:`hostlink.model.workload.LaunchInfo`); a launch without one is taken as a
    warp per CTA."""
    wpc = np.ones(n_launch, dtype=np.int64)
    regs = np.zeros(n_launch, dtype=np.int64)
    for k, info in enumerate(launches[:n_launch]):
        wpc[k] = max(1, int(info.warps_per_cta))
        regs[k] = int(info.regs_per_thread)
    return wpc, regs
