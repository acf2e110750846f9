"""Device-memory load latency by the level of the GPU's hierarchy that serves a load.

A load of device memory is served by the SM's L1, the shared L2 or device DRAM,
and a warp waits the level's load-to-use latency for it:

- ``gpu.l1_hit_ns``: the L1 holds the sector (loads with the default cache
  operator; ``ld.cg``/``ld.cv`` of device memory skip the L1);
- ``gpu.device_lat_ns``: the L1 misses, the L2 holds it. This is also the
  latency the request-stream models (:mod:`hostlink.model.des`,
  :func:`hostlink.model.predict.critical_path_ns`) charge a device request
  (an atomic that returns waits ``gpu.atomic_extra_ns`` more, and more again
  for its lines, ``gpu.atomic_spread_ns``) that the L2 serves; their streams
  hold what the L1 let pass, and where ``gpu.sm_l2_request_ns`` is set the
  discrete-event and analytic models replay the L2 over the device reads
  (:mod:`hostlink.model.l2_lines`), else every read is taken as the L2's;
- ``gpu.dram_lat_ns``: both miss, DRAM serves it.

A chain of dependent loads (one in flight at a time, as in a pointer chase)
takes the sum of its loads' latencies: :func:`dependent_chain_ns`. Which level
serves each load comes from a cache replay
(:meth:`hostlink.traces.cache.CacheState.levels`).

Assumptions: one latency per level, with no dependence on the L2 partition a
line lives in, DRAM row hits or address translation. The device pointer
chases (``gpu_kernels/micro/ptr_chase``, fresh nodes after an L2 flush; the
``launch_latency`` and ``scale24`` experiments) support them: a miss costs the
same whether the nodes lie 128 B or 2 MiB apart, so translation misses add no
visible time.
"""
from __future__ import annotations

import numpy as np

#: levels, in the order of :data:`hostlink.traces.cache.LEVEL_NAMES` (L1, L2, memory)
LEVELS = ("l1", "l2", "dram")
#: the GPU config key of each level's latency
LEVEL_KEYS = ("gpu.l1_hit_ns", "gpu.device_lat_ns", "gpu.dram_lat_ns")


def level_latency_ns(gpu) -> np.ndarray:
    """Load-to-use latency of a device load served by each level, in :data:`LEVELS`
    order (a GpuConfig)."""
    return np.asarray([float(gpu.l1_hit_ns), float(gpu.device_lat_ns),
                       float(gpu.dram_lat_ns)], dtype=np.float64)


def level_counts(levels: np.ndarray) -> np.ndarray:
    """How many loads each level served (``levels``: codes 0, 1, 2 per load)."""
    lv = np.asarray(levels, dtype=np.int64)
    if len(lv) and (lv.min() < 0 or lv.max() >= len(LEVELS)):
        raise ValueError(f"level codes must be 0..{len(LEVELS) - 1}")
    return np.bincount(lv, minlength=len(LEVELS)).astype(np.float64)


def dependent_chain_ns(gpu, counts) -> float:
    """Time of a chain of dependent device loads, each waiting for the last: the
    loads served by each level (``counts``, in :data:`LEVELS` order) times its
    latency."""
    c = np.asarray(counts, dtype=np.float64)
    if c.shape != (len(LEVELS),) or np.any(c < 0):
        raise ValueError(f"counts must be {len(LEVELS)} non-negative numbers, got {counts!r}")
    return float(np.dot(c, level_latency_ns(gpu)))
