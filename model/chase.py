"""Time of a pointer chase: one dependent load after another.

A chase (:class:`hostlink.model.workload.PointerChase`) is timed from inside its
kernel (``%globaltimer``), so no launch cost enters it.

- Device memory: each step waits the latency of the level that serves it
  (:func:`hostlink.model.device_memory.dependent_chain_ns`), which a replay of the
  GPU's caches finds (:func:`chase_levels`). An atomic that returns its
  word is performed at the L2: a step the L2 serves waits ``gpu.atomic_extra_ns`` more
  than a load, one DRAM serves as long as a load; a step of ``lanes`` threads (each
  its own node, one line each) waits for its slowest lane and :func:`atomic_step_ns`
  more, and takes at least the SM's round of its warps' lines (:func:`atomic_round_ns`),
  as in :mod:`hostlink.model.des.events` (committed runs
  ``validation/experiments/atomic_chase/runs/h200`` and ``atomic_warps``).
- Host memory: the loads the L1 misses go through the memory model as one 32 B request
  each, one after another; each load the L1 holds costs ``gpu.l1_hit_ns`` (the chain
  waits for it; the SM's L1 serves a host line as it serves a device one:
  ``validation/experiments/micro_tags/runs/h100-c``, ``validation/experiments/first_run/runs/h200``).

Assumptions: a step's latency does not depend on the address beyond the level that
serves it; the lanes of a step leave the SM as one warp's lines do.
"""
from __future__ import annotations

import numpy as np

from hostlink.model.errors import HostlinkError


def chase_levels(gpu, timed_addr, *, warmup_addr=None, l1: bool = True,
                 lanes: int = 1) -> np.ndarray:
    """Steps of a device chase each level served (L1, L2, DRAM:
    :data:`hostlink.model.device_memory.LEVELS` order), the GPU's caches
    (:class:`hostlink.traces.cache.CacheState`) replayed from empty.

    ``timed_addr``: the timed pass's addresses, one per step, or (steps, threads) for
    threads stepping in lockstep (looked up in thread order), of which the first
    ``lanes`` are timed: a step waits for its slowest. ``warmup_addr``: an untimed pass
    before it whose lines stay in the L2 (None: the L2 was flushed); the L1 starts
    empty with the timed launch. ``l1``: the loads go through the L1 (the default
    cache operator; ``ld.cg``, ``ld.cv`` and atomics skip it: device memory's point of
    coherence is the L2)."""
    from hostlink.model.device_memory import level_counts
    from hostlink.model.geometry import SECTOR_B
    from hostlink.traces.cache import CacheConfig, CacheState

    state = CacheState(CacheConfig.from_gpu(gpu, l1=l1))
    if warmup_addr is not None:
        state.levels(0, np.asarray(warmup_addr, dtype=np.int64) // SECTOR_B)
        state.flush_l1()
    addr = np.asarray(timed_addr, dtype=np.int64)
    levels = state.levels(0, addr.ravel() // SECTOR_B)
    if addr.ndim == 1:
        return level_counts(levels)
    return level_counts(levels.reshape(addr.shape)[:, :lanes].max(axis=1))


def atomic_round_ns(gpu, lanes: int, warps: int) -> float:
    """The least time a step of an atomic chase by ``warps`` warps of one SM, ``lanes``
    lines each, takes where atomics spread (``gpu.atomic_spread_ns`` set): the SM lets
    their lines out one ``gpu.atomic_sm_ns`` apart."""
    if gpu.atomic_spread_ns is None:
        return 0.0
    return warps * lanes * float(gpu.atomic_sm_ns)


def atomic_step_ns(gpu, lanes: int) -> float:
    """What a step of an atomic chase of ``lanes`` lanes (one line each) takes beyond a
    load's of its slowest level: ``gpu.atomic_spread_ns * log2(lanes)``, or where that
    is unset the lines leaving one warp as a load's do (one ``request_gap_ns`` or SM
    turn, ``sm_request_ns``, whichever is longer, per line beyond the first)."""
    if lanes <= 1:
        return 0.0
    if gpu.atomic_spread_ns is None:
        return (lanes - 1) * max(float(gpu.request_gap_ns), float(gpu.sm_request_ns))
    return float(gpu.atomic_spread_ns) * float(np.log2(lanes))


def device_chase_ns(gpu, levels, *, atomic: bool = False, lanes: int = 1,
                    warps: int = 1) -> float:
    """Time of a device chase whose steps each level served ``levels`` times
    (:data:`hostlink.model.device_memory.LEVELS` order), ns."""
    from hostlink.model.device_memory import dependent_chain_ns, level_latency_ns

    counts = np.asarray(levels, dtype=float)
    if not atomic:
        return dependent_chain_ns(gpu, counts)
    per_level = level_latency_ns(gpu) + atomic_step_ns(gpu, lanes)
    per_level[1] += float(gpu.atomic_extra_ns)
    per_level = np.maximum(per_level, atomic_round_ns(gpu, lanes, warps))
    return float(np.dot(counts, per_level))


def host_chase_ns(miss_ns: float, steps: int, missed: int, gpu) -> float:
    """Time of a host chase of ``steps`` loads of which ``missed`` went to the host and
    took ``miss_ns`` together, the others served by the L1, ns."""
    hits = steps - missed
    if hits < 0:
        raise HostlinkError(f"pointer chase: the timed pass sends {missed} requests for "
                            f"{steps} loads")
    return miss_ns + hits * float(gpu.l1_hit_ns)
