"""Sector caches that filter the coalescer's sectors: an L1 per SM and a shared L2.

Model (used by :mod:`hostlink.traces.coalescer`):
- 128 B lines of four 32 B sectors (NVIDIA CUDA C++ Programming Guide,
  "Compute Capability 7.x", Global Memory; from Volta on the L1 fetches only
  the missing sectors of a line), set associative, LRU
  over the lines of a set.
- A load's sector hits if its line is present and the sector valid;
  otherwise it misses, the line is allocated if absent (evicting the set's
  least recently used line) and the sector becomes valid.
- Set index (``CacheConfig.set_index``): ``"line"``, the line address modulo
  the number of sets (the default of a config built by hand), or ``"xor"``,
  the line address XORed with its copies shifted right by b, 2b, ... bits
  (b = bits of the set count), modulo the sets, which
  :meth:`CacheConfig.from_gpu` and so :func:`host_read_cache` use. With a
  power-of-two number of sets that is the XOR of the address's b-bit groups,
  which maps each aligned block of ``sets`` lines onto every set once, so
  contiguous and power-of-two-strided lines alike spread evenly. Assumption:
  NVIDIA publishes no L1 set function and none was found reverse engineered
  (Accel-Sim's microbenchmarks count 4 L1 sets since Kepler,
  accel-sim-framework util/tuner/GPU_Microbenchmark/ubench/l1_cache/
  l1_config/l1_config.cu, and its H100 configuration, gpgpu-sim_distribution
  configs/tested-cfgs/SM90_H100, indexes them linearly, which would put the
  4 KiB-strided lines below into one set; GPGPU-Sim offers XOR set
  functions, ``BITWISE_XORING_FUNCTION`` in gpu-cache.cc). The fold is taken
  because it reproduces the measured refetch and hit rates (below) and the
  modulo does not.
- Geometry of a GPU's L1 (:meth:`CacheConfig.from_gpu`): ``gpu.l1_B`` (L1 and
  shared memory together) less the shared-memory carve-out the driver gives a
  kernel that uses no shared memory (:data:`NO_SHARED_CARVEOUT_B`, measured on
  Hopper; other architectures keep the upper bound ``gpu.l1_B``; the
  project's kernels use no shared memory), in :data:`GPU_L1_SETS` sets
  (assumption: a power of two, so the fold is even; the ways follow the
  size, as the carve-out takes whole ways: an L1 of 224 KiB is 7 ways).

- Assumption: stores and atomics neither look up nor allocate (write-through,
  no write-allocate; atomics are performed beyond the L1) and leave cached
  copies valid (the store updates them).
- Assumption: CTA ``c`` of a launch runs on SM ``c mod sm_count``
  (round robin), every L1 is invalidated when a launch starts (the L1 is not
  coherent), the L2 keeps its contents across launches.
- Assumption: accesses reach the caches in trace row order (the order the
  trace source emitted them), not in a simulated warp interleaving.
- Ways of a config built by hand: 4 for the L1 and 16 for the L2 unless
  given; :meth:`CacheConfig.from_gpu`: the L2's 16, the L1's its size over
  :data:`GPU_L1_SETS` sets (assumptions; NVIDIA does not publish them).

What the measurements fix (the numbers are in the experiments' folders):
- The ``l1_probe`` experiment (validation/experiments/l1_probe/: zc_read
  under Nsight Compute, the card's clocks untouched) gives the L1's size
  after the shared-memory carve-out, the host bytes fetched per byte read of
  the strided pattern by warps in the grid, and the L1 hit share of random
  128 B blocks over small regions. Replaying one SM's loads in the twins'
  issue order (validation/twin_micro.py: warps in turn, a warp's unrolled
  group back to back) through this L1 reproduces the refetch at low and full
  occupancy and the hit shares with the XOR fold, not with the modulo index
  (tests/traces/test_cache_set_index.py checks it).
- Not modelled: the partial losses between those extremes, and the losses
  with 8 B and 16 B per lane over short chunks, where a thread reads each
  sector in one group only: sectors are lost between the loads of one group,
  which the LRU never evicts in trace order. Both depend on when the loads
  reach the L1 and their data returns, which the trace order does not hold;
  no timed LRU replay gives them either, and the strided microbenchmarks'
  twins take them from a measurement (:mod:`hostlink.model.l1_losses`).
- One thread chasing a random cycle of lines (the ``l1_policy`` experiment,
  strides 128 B to 2 MiB, device and host memory alike) keeps every line up
  to near the L1's capacity and then loses its later loads gradually, where
  this model drops them at once: the same capacity, a softer edge.

Which request a cached sector came from (for the coalescer's useful bytes):
every cached sector copy points to a *fill record* of the request that
brought it in from memory: the request's global index and, per sector of its
line, the bytes already credited to it. The copies a request fills (L1 and
L2, every sector of its run) share its record; an L1 fill from an L2 hit
points to the L2 copy's record, since its data came with that request. A hit
credits the bytes its lanes read that the record has not counted yet, so a
byte read many times counts once per request and a request is never credited
more than its size.

Layout, for speed (a lookup touches one contiguous block per set): each way
holds its line's tag, last use and the states of its four sectors (invalid,
valid without a record, or a record's index) in four int64 (32 B). Records
(32 B each) are allocated in order; when the pool runs out, the records no
cached sector points to any more are dropped and the rest compacted (a pass
over the ways and the pool), and the pool doubles if that frees less than
half of it. Memory: 32 B per way plus the pool, at first 64 B per way (an
H200's L1s and L2 take about 70 MiB).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from hostlink.model.geometry import LINE_B, SECTOR_B
from hostlink.model.errors import ConfigError

SECTORS_PER_LINE = LINE_B // SECTOR_B
DEFAULT_L1_WAYS = 4    # assumption
DEFAULT_L2_WAYS = 16   # assumption
#: set index functions: "line" = line address mod sets; "xor" = the line address
#: XOR-folded onto the set bits, mod sets (assumption, see above)
SET_FUNCTIONS = ("line", "xor")
SET_LINE, SET_XOR = 0, 1
#: sets of a GPU's L1 (:meth:`CacheConfig.from_gpu`; assumption, see above)
GPU_L1_SETS = 256
#: shared memory the driver carves out of ``gpu.l1_B`` for a kernel that uses none, by
#: architecture: Hopper measured (above); others not measured (no carve-out: upper bound)
NO_SHARED_CARVEOUT_B = {"hopper": 32 * 1024}


@dataclass(frozen=True)
class CacheConfig:
    """Sizes of the two levels (0 disables a level), their ways and the SM count."""
    l1_size_B: int = 0
    l2_size_B: int = 0
    l1_ways: int = DEFAULT_L1_WAYS
    l2_ways: int = DEFAULT_L2_WAYS
    sm_count: int = 1
    set_index: str = "line"

    def __post_init__(self) -> None:
        if self.set_index not in SET_FUNCTIONS:
            raise ConfigError(f"cache: set_index must be one of {', '.join(SET_FUNCTIONS)}, "
                              f"got '{self.set_index}'")
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
        """From a GPU config with ``sm_count``, ``l1_B``, ``l2_B`` and optionally
        ``arch`` (sizes rounded down to a whole number of sets), XOR-folded set
        index. ``l1_B`` is the L1 and shared memory together; the data cache
        gets what shared memory leaves: ``l1_B`` less the carve-out of a kernel
        without shared memory (:data:`NO_SHARED_CARVEOUT_B`; none for an
        architecture not measured, an upper bound), in :data:`GPU_L1_SETS` sets
        unless ``l1_ways`` is given. Override ``l1_size_B`` for a kernel that
        uses shared memory, ``set_index`` for the modulo index."""
        l1_B = max(0, gpu.l1_B - NO_SHARED_CARVEOUT_B.get(getattr(gpu, "arch", None), 0))
        l1_ways = overrides.pop("l1_ways", max(1, l1_B // (GPU_L1_SETS * LINE_B)))
        l2_ways = overrides.pop("l2_ways", DEFAULT_L2_WAYS)

        def whole_sets(size_B: int, ways: int) -> int:
            return size_B // (LINE_B * ways) * LINE_B * ways

        fields = {"l1_size_B": whole_sets(l1_B, l1_ways) if l1 else 0,
                  "l2_size_B": whole_sets(gpu.l2_B, l2_ways) if l2 else 0,
                  "l1_ways": l1_ways, "l2_ways": l2_ways, "sm_count": gpu.sm_count,
                  "set_index": "xor"}
        fields.update(overrides)
        return cls(**fields)


def host_read_cache(gpu) -> CacheConfig | None:
    """The caches zero-copy host reads go through on ``gpu`` (a GpuConfig), or None.

    The per-SM L1 of :meth:`CacheConfig.from_gpu` (what shared memory leaves
    of it, XOR-folded set index; see the module notes), and no L2, when
    ``gpu.caches_host_reads``; else None: the one rule every caller that
    coalesces host reads for a GPU applies (use it with ``cache_host=True``).
    Measured on an H200 (validation/experiments/first_run/runs/h200/results.parquet,
    README.md there): random 4 B zero-copy loads over a 4 KiB host region run
    at 628 GB/s with the default cache operator and 2.6 GB/s with ``ld.cv``,
    so default loads of host memory are cached; over 64 KiB still 502 GB/s
    (the L1), but over 1 MiB, far inside the 60 MiB L2, only 63 GB/s (the
    link): the L2 does not keep host lines, and the L1 is empty at each
    launch. The seed saw the
    naive kernel send a new 32 B request only when a thread crossed a 32 B
    boundary (emogi_vldb2020 §3.3), which the L1 alone gives. Device sectors
    of a trace coalesced with this config see the L1 only as well.
    """
    if not gpu.caches_host_reads:
        return None
    return CacheConfig.from_gpu(gpu, l2=False)


# fields of a way (CacheState.l1_lines / l2_lines)
TAG, STAMP, SEC01, SEC23 = 0, 1, 2, 3
WAY_FIELDS = 4
# sector states other than a fill record's index
INVALID = -1
NO_RECORD = -2
# fields of a fill record (CacheState.recs): its request's global index, the bytes
# of sectors 0 and 1 (bits 0-31, 32-63) and 2 and 3 already credited, its line
REC_OWNER, REC_MASK01, REC_MASK23, REC_LINE = 0, 1, 2, 3
REC_FIELDS = 4
_LO32 = 0xFFFFFFFF


@njit(cache=True)
def _flush_sms(lines, sms):
    """Mark every way of the listed SMs' L1 empty (tag and sector states -1)."""
    for s in sms:
        for i in range(lines.shape[1]):
            for w in range(lines.shape[2]):
                lines[s, i, w, TAG] = -1
                lines[s, i, w, SEC01] = -1
                lines[s, i, w, SEC23] = -1


class CacheState:
    """The ways of both levels and the fill records (Numba-friendly arrays).

    ``l1_lines[sm, set, way]`` / ``l2_lines[0, set, way]``: the fields
    :data:`TAG` (line address, -1: empty), :data:`STAMP` (last use) and
    :data:`SEC01`/:data:`SEC23` (the states of sectors 0 and 1, 2 and 3, as
    two int32 halves: :data:`INVALID`, :data:`NO_RECORD` or a record's
    index). ``recs[:rec_used[0]]``: the records allocated since the last
    compaction.
    """

    def __init__(self, config: CacheConfig):
        self.config = config
        self.set_fn = SET_FUNCTIONS.index(config.set_index)
        self.use_l1 = config.l1_size_B > 0
        self.use_l2 = config.l2_size_B > 0
        l1_shape = (config.sm_count if self.use_l1 else 1, max(config.l1_sets, 1),
                    config.l1_ways, WAY_FIELDS)
        l2_shape = (1, max(config.l2_sets, 1), config.l2_ways, WAY_FIELDS)
        self.l1_lines = _empty_lines(l1_shape)
        self.l2_lines = _empty_lines(l2_shape)
        self.clock = np.zeros(1, dtype=np.int64)
        ways = ((self.l1_lines.size if self.use_l1 else 0)
                + (self.l2_lines.size if self.use_l2 else 0)) // WAY_FIELDS
        self.recs = np.zeros((max(1024, 2 * ways), REC_FIELDS), dtype=np.int64)
        self.rec_used = np.zeros(1, dtype=np.int64)

    def flush_l1(self, sms: np.ndarray | None = None) -> None:
        """Invalidate every L1 (a launch starts), or those of ``sms`` alone (the SMs a
        caller has used since its last flush: the others hold nothing)."""
        if sms is None:
            self.l1_lines[..., TAG] = -1
            self.l1_lines[..., SEC01] = -1
            self.l1_lines[..., SEC23] = -1
        else:
            _flush_sms(self.l1_lines, np.asarray(sms, dtype=np.int64))

    def grow_records(self) -> None:
        """Double the record pool (the coalescer asks when compacting freed too little)."""
        grown = np.zeros((2 * len(self.recs), REC_FIELDS), dtype=np.int64)
        used = int(self.rec_used[0])
        grown[:used] = self.recs[:used]
        self.recs = grown

    def live_records(self) -> int:
        """Records some cached sector points to (compacts the pool to count them)."""
        return int(compact_records(self.l1_lines, self.l2_lines, self.use_l1, self.use_l2,
                                   self.recs, self.rec_used))

    def load(self, sm: int, sector: int) -> str:
        """Look one sector up as a load: 'l1', 'l2' (where it hit) or 'miss'."""
        return LEVEL_NAMES[int(self.levels(sm, np.asarray([sector], dtype=np.int64))[0])]

    def levels(self, sm: int, sectors: np.ndarray) -> np.ndarray:
        """Look sectors up as loads of SM ``sm``, in order, filling both levels on the
        way: per sector the level that served it (:data:`LEVEL_L1`, :data:`LEVEL_L2`,
        :data:`LEVEL_MEMORY`; int8). A disabled level never serves."""
        sec = np.ascontiguousarray(sectors, dtype=np.int64)
        out = np.empty(len(sec), dtype=np.int8)
        _levels(self.l1_lines, self.l2_lines, self.clock, sm, sec, self.use_l1, self.use_l2,
                self.set_fn, out)
        return out


#: the level that served a load (:meth:`CacheState.levels`)
LEVEL_L1, LEVEL_L2, LEVEL_MEMORY = 0, 1, 2
LEVEL_NAMES = ("l1", "l2", "miss")


@njit(cache=True, nogil=True)
def _levels(l1_lines, l2_lines, clock, sm, sectors, use_l1, use_l2, set_fn, out):
    for i in range(len(sectors)):
        s = sectors[i]
        if use_l1 and lookup_fill(l1_lines, clock, sm, s, set_fn) >= 0:
            out[i] = LEVEL_L1
        elif use_l2 and lookup_fill(l2_lines, clock, 0, s, set_fn) >= 0:
            out[i] = LEVEL_L2
        else:
            out[i] = LEVEL_MEMORY


def _empty_lines(shape) -> np.ndarray:
    lines = np.full(shape, -1, dtype=np.int64)
    lines[..., STAMP] = 0
    return lines


@njit(cache=True, nogil=True)
def sector_state(lines, unit, s, way, sub):
    """State of sector ``sub`` (0-3) of a way: INVALID, NO_RECORD or a record index."""
    v = (lines[unit, s, way, SEC01 + (sub >> 1)] >> np.int64(32 * (sub & 1))) & _LO32
    return v - (1 << 32) if v >= (1 << 31) else v


@njit(cache=True, nogil=True)
def set_sector_state(lines, unit, s, way, sub, value):
    """Set the state of sector ``sub`` of a way (see :func:`sector_state`)."""
    f = SEC01 + (sub >> 1)
    shift = np.int64(32 * (sub & 1))
    keep = ~(np.int64(_LO32) << shift)
    lines[unit, s, way, f] = (lines[unit, s, way, f] & keep) | ((np.int64(value) & _LO32) << shift)


@njit(cache=True, nogil=True)
def set_index(line, sets, set_fn):
    """The set of ``line`` (address >> 7) in a cache of ``sets`` sets under ``set_fn``
    (:data:`SET_LINE` or :data:`SET_XOR`)."""
    if set_fn == SET_XOR and sets > 1:
        bits = 1
        while (1 << bits) < sets:
            bits += 1
        h = line
        rest = line >> bits
        while rest > 0:
            h ^= rest
            rest >>= bits
        return h % sets
    return line % sets


@njit(cache=True, nogil=True)
def lookup_fill(lines, clock, unit, sector, set_fn):
    """Look up ``sector`` (address >> 5) in cache ``unit``; fill it on a miss.

    Set: :func:`set_index` of the line under ``set_fn``. Returns the way on a
    hit; on a miss ``-(way + 1)``, the way now holding the line with the sector
    valid and no record (a line allocated in place of another starts with its
    other sectors invalid).
    """
    line = sector >> 2
    sub = sector & 3
    s = set_index(line, lines.shape[1], set_fn)
    clock[0] += 1
    now = clock[0]
    ways = lines.shape[2]
    victim = 0
    oldest = lines[unit, s, 0, STAMP]
    for w in range(ways):
        tag = lines[unit, s, w, TAG]
        if tag == line:
            lines[unit, s, w, STAMP] = now
            if sector_state(lines, unit, s, w, sub) != INVALID:
                return w
            set_sector_state(lines, unit, s, w, sub, NO_RECORD)
            return -(w + 1)
        if tag == -1:
            if oldest != -1:
                victim = w
                oldest = -1
        elif oldest != -1 and lines[unit, s, w, STAMP] < oldest:
            victim = w
            oldest = lines[unit, s, w, STAMP]
    lines[unit, s, victim, TAG] = line
    lines[unit, s, victim, STAMP] = now
    lines[unit, s, victim, SEC01] = -1
    lines[unit, s, victim, SEC23] = -1
    set_sector_state(lines, unit, s, victim, sub, NO_RECORD)
    return -(victim + 1)


@njit(cache=True, nogil=True)
def _mark(lines, live):
    flat = lines.reshape(-1, WAY_FIELDS)
    for i in range(flat.shape[0]):
        if flat[i, TAG] == -1:
            continue
        for f in (SEC01, SEC23):
            for shift in (0, 32):
                v = (flat[i, f] >> np.int64(shift)) & _LO32
                if v < (1 << 31):
                    live[v] = True


@njit(cache=True, nogil=True)
def _remap(lines, new_index):
    flat = lines.reshape(-1, WAY_FIELDS)
    for i in range(flat.shape[0]):
        if flat[i, TAG] == -1:
            flat[i, SEC01] = -1
            flat[i, SEC23] = -1
            continue
        for f in (SEC01, SEC23):
            word = flat[i, f]
            out = np.int64(0)
            for shift in (0, 32):
                v = (word >> np.int64(shift)) & _LO32
                if v < (1 << 31):
                    v = new_index[v]
                out |= (v & _LO32) << np.int64(shift)
            flat[i, f] = out


@njit(cache=True, nogil=True)
def compact_records(l1_lines, l2_lines, use_l1, use_l2, recs, rec_used):
    """Drop the records no cached sector points to, keep the rest in order at the
    front of the pool (sector states renumbered); returns the records kept."""
    used = rec_used[0]
    live = np.zeros(used, dtype=np.bool_)
    if use_l1:
        _mark(l1_lines, live)
    if use_l2:
        _mark(l2_lines, live)
    new_index = np.empty(used, dtype=np.int64)
    j = 0
    for i in range(used):
        if live[i]:
            new_index[i] = j
            if j != i:
                for f in range(REC_FIELDS):
                    recs[j, f] = recs[i, f]
            j += 1
    if use_l1:
        _remap(l1_lines, new_index)
    if use_l2:
        _remap(l2_lines, new_index)
    rec_used[0] = j
    return j
