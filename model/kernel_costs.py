"""Time a kernel's own work adds to its memory traffic: loads that pick lines by a hash.

A sampled run whose loads pick their blocks by a hash
(:class:`hostlink.model.workload.HashedLines`; the random pattern of
``gpu_kernels/micro/zc_common.cuh``: ``mix64(seed ^ mix64(j)) % blocks``, two 64-bit
hashes and a 64-bit modulo; its scatter pattern draws a word per lane the same way, so a
warp load costs the same instructions) takes at least :func:`hashed_lines_floor_ns`,
whatever its traffic allows:

- issue: every SM spends ``gpu.random_load_ns`` per warp load and each warp, whose
  instructions depend on one another (the modulo is a called routine),
  ``gpu.random_chain_ns`` per load (both fitted by calibration on random lines in
  device memory, committed runs ``validation/experiments/hot_lines/runs/*``); 0 leaves a
  bound out. A load's own latency is not added to the chain;
- ``ld.cv`` on host memory: every load goes to the host one at a time, so each warp
  spends its chain time plus a round trip (``link.rtt_ns + gpu.host_path_ns``) per
  load; and a line has one read at a time, which holds it ``gpu.cv_line_ns`` (at
  least the round trip) plus ``gpu.cv_line_gap_ns`` per line read at once (at most
  the lines, the warps (their lanes where each draws its own word), and the reads the
  run's bandwidth keeps in flight over one round trip): the region's lines bound the
  bandwidth (calibrate step ``cv_lines``);
- the default operator on host memory: every SM's L1 starts empty and first fetches
  the lines of the region it reads (:func:`cold_fill_ns`), and a warp spends its
  chain time plus a round trip per load the caches do not serve once warm
  (:func:`steady_miss_fraction`): the kernel keeps one load in flight whatever its
  unroll (the call to the modulo routine waits for the load before it; the SASS in
  ``validation/experiments/sass/runs/h200``).

Assumptions: lines are drawn uniformly from the region; the L1 is the one
:func:`hostlink.traces.cache.host_read_cache` gives for the GPU (none for ``cv``,
without the L1 for ``cg``). References: the CUDA C++ Programming Guide, "Global
Memory" (cache operators ``.cg``, ``.cv``), the PTX ISA, "Cache Operators".
"""
from __future__ import annotations

import dataclasses

import numpy as np

from hostlink.model.geometry import LINE_B

HOST_MODES = ("zerocopy", "uvm_accessedby")


def cache_for_operator(gpu, cache_op: str = "default"):
    """The caches a host load with cache operator ``cache_op`` goes through: the GPU's
    (:func:`hostlink.traces.cache.host_read_cache`) for ``default``, without the L1 for
    ``cg`` (``ld.cg`` caches in the L2 only), None for ``cv`` (``ld.cv`` fetches again)
    or where no level is left."""
    from hostlink.traces.cache import host_read_cache

    if cache_op == "cv":
        return None
    cache = host_read_cache(gpu)
    if cache is not None and cache_op == "cg":
        cache = dataclasses.replace(cache, l1_size_B=0)
    if cache is None or (cache.l1_size_B == 0 and cache.l2_size_B == 0):
        return None
    return cache


def round_trip_ns(system) -> float:
    """A host load's unloaded round trip: the link's and the GPU's own path."""
    return system.link.rtt_ns + system.gpu.host_path_ns


def _warps(run, system) -> int:
    return int(run.warps or 0) or system.gpu.sm_count


def steady_miss_fraction(run, system) -> float:
    """Share of a hashed run's host loads that miss once the caches are warm:
    1 - L1 / region for a region larger than an L1 that holds host lines, 1 where the
    loads skip the L1, 0 for a region it holds (its first fetches are
    :func:`cold_fill_ns`'s)."""
    cache = cache_for_operator(system.gpu, run.hashed.cache_op)
    if cache is None or cache.l1_size_B == 0:
        return 1.0
    return max(0.0, 1.0 - cache.l1_size_B / run.hashed.region_B)


def cold_fill_ns(run, system, mode: str, host_GBps: float | None) -> float:
    """Time a hashed run through the L1 spends filling its SMs' empty L1s, beyond the
    kernel's own time, ns (0 where the loads skip the L1 or read device memory).

    Each SM reads ``min(region, L1)`` bytes of distinct lines, the lines its loads pick
    before they are filled. Two bounds, the larger added:

    - the link: all SMs' fill bytes at ``host_GBps`` (the rate the memory model gives
      the run's host requests); with lines arriving at a constant rate over the fill
      time T, a warp's group of ``g`` loads finds its lines present with probability
      (t/T)^g, so the SMs do T / (g + 1) of their work during the fill and the fill
      adds T g / (g + 1);
    - the round trip: an SM's ``w`` warps keep ``w g`` misses in flight, so its lines
      take ``lines / (w g)`` round trips, during which its warps wait."""
    if mode == "device" or not run.cached or not host_GBps:
        return 0.0
    cache = cache_for_operator(system.gpu, run.hashed.cache_op)
    if cache is None or cache.l1_size_B == 0:
        return 0.0
    blk = run.hashed.block_B
    warps = _warps(run, system)
    ctas = run.stream.launches[0].ctas if run.stream.launches else system.gpu.sm_count
    sms = max(1, min(system.gpu.sm_count, int(ctas)))
    loads_per_sm = run.full_B / blk / sms
    lines = min(run.hashed.region_B, cache.l1_size_B) / LINE_B
    lines *= -np.expm1(-loads_per_sm * run.hashed.lines_per_load / lines)  # the lines picked
    g = max(1, int(run.group))
    link_ns = sms * lines * LINE_B / host_GBps * g / (g + 1)
    latency_ns = lines / (max(1.0, warps / sms) * g) * round_trip_ns(system)
    return float(max(link_ns, latency_ns))


def hashed_lines_floor_ns(run, system, mode: str, traffic_GBps: float | None = None,
                          host_GBps: float | None = None) -> float:
    """Least time of a sampled run beyond its memory traffic, ns (see the module
    notes; 0 for loads that do not pick their lines by a hash). ``traffic_GBps``: the
    run's bandwidth as the memory model gives it; ``host_GBps``: its host requests'."""
    hashed = run.hashed
    if hashed is None:
        return 0.0
    gpu = system.gpu
    load_ns, chain_ns = float(gpu.random_load_ns), float(gpu.random_chain_ns)
    warps = _warps(run, system)
    loads = run.full_B / hashed.block_B
    floor = max(loads / min(warps, gpu.sm_count) * load_ns, loads / warps * chain_ns)
    rtt_ns = round_trip_ns(system)
    if hashed.cache_op == "cv" and mode in HOST_MODES:
        lines = max(1, hashed.region_B // LINE_B)
        hold_ns = max(rtt_ns, float(gpu.cv_line_ns))
        read_B = hashed.read_B
        at_once = min(lines, warps * hashed.reads_per_load)
        if traffic_GBps is not None and traffic_GBps > 0:
            at_once = min(at_once, traffic_GBps * rtt_ns / read_B)
        line_ns = hold_ns + float(gpu.cv_line_gap_ns) * at_once
        floor = max(floor, loads / warps * (chain_ns + rtt_ns),
                    run.full_B / read_B * line_ns / lines)
    elif floor > 0:
        floor += cold_fill_ns(run, system, mode, host_GBps)
        if mode in HOST_MODES:
            floor = max(floor, loads / warps * (chain_ns + steady_miss_fraction(run, system)
                                                * rtt_ns))
    return floor
