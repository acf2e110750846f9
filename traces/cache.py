"""Sector caches that filter the coalescer's sectors: an L1 per SM and a shared L2.

Model (used by :mod:`hostlink.traces.coalescer`):
- 128 B lines of four 32 B sectors (REFERENCE.md "GPU side"; from Volta on
  the L1 fetches only the missing sectors of a line), set associative, LRU
  over the lines of a set.
- A load's sector hits if its line is present and the sector valid;
  otherwise it misses, the line is allocated if absent (evicting the set's
  least recently used line) and the sector becomes valid.
- Assumption: the set index is the line address modulo the number of sets
  (real GPUs hash it; the modulo keeps the model simple and deterministic).
- Assumption: stores and atomics neither look up nor allocate (write-through,
  no write-allocate; atomics are performed beyond the L1) and leave cached
  copies valid (the store updates them).
- Assumption: CTA ``c`` of a launch runs on SM ``c mod sm_count``
  (round robin), every L1 is invalidated when a launch starts (the L1 is not
  coherent), the L2 keeps its contents across launches.
- Assumption: accesses reach the caches in trace row order (the order the
  trace source emitted them), not in a simulated warp interleaving.
- Ways: 4 for the L1 and 16 for the L2 unless given (assumptions; NVIDIA
  does not publish them).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from hostlink.model.errors import ConfigError

LINE_B = 128
SECTOR_B = 32
SECTORS_PER_LINE = LINE_B // SECTOR_B
DEFAULT_L1_WAYS = 4    # assumption
DEFAULT_L2_WAYS = 16   # assumption


@dataclass(frozen=True)
class CacheConfig:
    """Sizes of the two levels (0 disables a level), their ways and the SM count."""
    l1_size_B: int = 0
    l2_size_B: int = 0
    l1_ways: int = DEFAULT_L1_WAYS
    l2_ways: int = DEFAULT_L2_WAYS
    sm_count: int = 1

    def __post_init__(self) -> None:
        for level in ("l1", "l2"):
            size = getattr(self, f"{level}_size_B")
            ways = getattr(self, f"{level}_ways")
            if ways < 1:
                raise ConfigError(f"cache: {level}_ways must be >= 1, got {ways}")
            if size < 0 or size % (LINE_B * ways):
                raise ConfigError(f"cache: {level}_size_B = {size} must be >= 0 and a multiple of "
                                  f"{LINE_B} B x {ways} ways")
        if self.sm_count < 1:
            raise ConfigError(f"cache: sm_count must be >= 1, got {self.sm_count}")

    @property
    def l1_sets(self) -> int:
        return self.l1_size_B // (LINE_B * self.l1_ways)

    @property
    def l2_sets(self) -> int:
        return self.l2_size_B // (LINE_B * self.l2_ways)

    @classmethod
    def from_gpu(cls, gpu, *, l1: bool = True, l2: bool = True, **overrides) -> "CacheConfig":
        """From a GPU config with ``sm_count``, ``l1_B`` and ``l2_B`` (sizes rounded
        down to a whole number of sets). ``l1_B`` is the L1 and shared memory
        together; the data cache gets what shared memory leaves, so this is
        an upper bound: override ``l1_size_B`` for a kernel's actual split."""
        l1_ways = overrides.pop("l1_ways", DEFAULT_L1_WAYS)
        l2_ways = overrides.pop("l2_ways", DEFAULT_L2_WAYS)

        def whole_sets(size_B: int, ways: int) -> int:
            return size_B // (LINE_B * ways) * LINE_B * ways

        fields = {"l1_size_B": whole_sets(gpu.l1_B, l1_ways) if l1 else 0,
                  "l2_size_B": whole_sets(gpu.l2_B, l2_ways) if l2 else 0,
                  "l1_ways": l1_ways, "l2_ways": l2_ways, "sm_count": gpu.sm_count}
        fields.update(overrides)
        return cls(**fields)


class CacheState:
    """The tag, valid-sector and LRU arrays of both levels (Numba-friendly)."""

    def __init__(self, config: CacheConfig):
        self.config = config
        self.use_l1 = config.l1_size_B > 0
        self.use_l2 = config.l2_size_B > 0
        l1_shape = (config.sm_count, max(config.l1_sets, 1), config.l1_ways)
        l2_shape = (1, max(config.l2_sets, 1), config.l2_ways)
        self.l1_tags = np.full(l1_shape, -1, dtype=np.int64)
        self.l1_valid = np.zeros(l1_shape, dtype=np.uint8)
        self.l1_stamp = np.zeros(l1_shape, dtype=np.int64)
        self.l2_tags = np.full(l2_shape, -1, dtype=np.int64)
        self.l2_valid = np.zeros(l2_shape, dtype=np.uint8)
        self.l2_stamp = np.zeros(l2_shape, dtype=np.int64)
        self.clock = np.zeros(1, dtype=np.int64)

    def flush_l1(self) -> None:
        self.l1_tags.fill(-1)
        self.l1_valid.fill(0)

    def load(self, sm: int, sector: int) -> str:
        """Look one sector up as a load: 'l1', 'l2' (where it hit) or 'miss'."""
        if self.use_l1 and lookup_fill(self.l1_tags, self.l1_valid, self.l1_stamp, self.clock,
                                       sm, sector):
            return "l1"
        if self.use_l2 and lookup_fill(self.l2_tags, self.l2_valid, self.l2_stamp, self.clock,
                                       0, sector):
            return "l2"
        return "miss"


@njit(cache=True, nogil=True)
def lookup_fill(tags, valid, stamp, clock, unit, sector):
    """Look up ``sector`` (address >> 5) in cache ``unit``; fill it on a miss.

    Returns True on a hit. ``tags[unit, set, way]`` holds the line address
    (-1 when empty), ``valid`` a 4-bit sector mask, ``stamp`` the last use.
    """
    line = sector >> 2
    bit = np.uint8(1 << (sector & 3))
    nsets = tags.shape[1]
    s = line % nsets
    clock[0] += 1
    now = clock[0]
    ways = tags.shape[2]
    victim = 0
    oldest = stamp[unit, s, 0]
    for w in range(ways):
        if tags[unit, s, w] == line:
            stamp[unit, s, w] = now
            if valid[unit, s, w] & bit:
                return True
            valid[unit, s, w] |= bit
            return False
        if tags[unit, s, w] == -1:
            if oldest != -1:
                victim = w
                oldest = -1
        elif oldest != -1 and stamp[unit, s, w] < oldest:
            victim = w
            oldest = stamp[unit, s, w]
    tags[unit, s, victim] = line
    valid[unit, s, victim] = bit
    stamp[unit, s, victim] = now
    return False
