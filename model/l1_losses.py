"""The L1's losses of strided zero-copy reads on a GH100 SM (H100, H200), as measured.

What a strided zero-copy read through a GH100 L1 fetches from the host per
sector the kernel reads (``refetch``; 1 = every sector once), taken instead of an
LRU replay of its loads by the request streams of ``zc_read``/``zc_warps``'
strided pattern (:mod:`hostlink.validation.twin_micro`). Measured on an H200 by
the ``l1_policy`` experiment's probe script under Nsight Compute
(``lts__t_sectors_srcunit_tex_aperture_sysmem_op_read`` over the bytes read / 32 B),
tabled in the committed run ``validation/experiments/l1_policy/runs/h200/refetch.csv`` and
installed with the package as ``hostlink.model`` data (``data/l1_refetch.csv``,
read through :mod:`importlib.resources`; its header names the run): chunks of 128 B to
4 KiB, 4, 8 and 16 B per lane (the compiled kernel's groups at unroll 4: four
loads, two pairs, two pairs), 8 to 64 warps per SM (as many as the width's
registers allow), each thread reading one chunk or four.

Why a measurement and not the L1 model (:mod:`hostlink.traces.cache`): the same
L1 keeps every line of a cycle one thread chases up to its capacity, at any
stride, as the model does; but the strided reads lose sectors with far fewer
lines in use, from a few dozen warps per SM on, and with 16 B per lane between
the two loads of one pair (the committed run's README.md gives the numbers). No
LRU, FIFO or random replay of the loads, in issue order or timed with the link's
queue, with lines still being filled kept or evicted first, gives these losses
(the ``l1_policy`` experiment's ``l1_replay_ab.py`` and README). Nor is it the time
a line waits for its data: strided reads of device memory, whose misses are served
many times sooner, lose the same at the same points
(``validation/experiments/l1_latency/runs/h200``). The losses follow the sequence of lines
the SM's warps touch, by a placement or replacement that is not published.

Interpolation (:func:`strided_refetch`): linear in warps per SM, linear in log2 of
the chunk between the measured chunks (clamped to 128 B - 4 KiB), linear in log2
of the rounds between one and four (clamped: the H100's drift probe, 16 MiB -
1 GiB, shows the losses settled after four rounds). Where it stands
(:func:`measured_loss`): within what was measured (at least 8 warps per SM, at
least one round: every thread has a chunk) and where the table shows a loss
beyond its points' repeatability (:data:`RESOLUTION`). Elsewhere the streams keep
their LRU replays, which lose nothing at so few warps either.

A stream takes the losses as requests (:func:`lossy_sector_requests`): a lane reads
each of its sectors in ``V`` instructions (its groups of ``group`` loads, ``group x
bytes_per_lane`` bytes each; V = 1 where a group reads the whole sector). The first
fetches the sector; each later one fetches it again with probability ``p``, and where
``refetch`` exceeds V every fetch is sent twice with probability ``d``: 1 + (V - 1) p
= refetch up to V, V (1 + d) = refetch beyond. The draws are a hash of the lane's
bytes (SplitMix64's output function, :func:`mix64`), so the losses spread evenly over
warps and sectors and predictions stay deterministic.

Checked against measurements not in the table: the H200's ``l1_probe`` (an
earlier lease, 256 MiB per point, 16-64 warps per SM) and the H100's
``drift_probe`` (16 MiB - 1 GiB) (tests/validation/test_twin_strided_l1.py).
Applies where the stream's GPU has the GH100 L1 the table was measured on
(:func:`applies`): Hopper, 224 KiB left by the 32 KiB carve-out
(:data:`hostlink.traces.cache.NO_SHARED_CARVEOUT_B`), default cache operator,
host memory, the kernel of unroll 4.
"""
from __future__ import annotations

import csv
import functools
import math
from importlib import resources
from pathlib import Path

import numpy as np

from hostlink.model.errors import HostlinkError
from hostlink.model.geometry import SECTOR_B

#: the measured table, package data of hostlink.model (lines starting with '#' name its source)
TABLE_CSV = Path(str(resources.files("hostlink.model") / "data" / "l1_refetch.csv"))
#: the L1 the table was measured on: GH100's 256 KiB less the 32 KiB carve-out
MEASURED_L1_B = 224 * 1024
MEASURED_ARCH = "hopper"
#: the kernels measured: read_kernel<BPL, default, 4, strided> (zc_common.cuh), whose SASS
#: keeps four loads (4 B per lane) or two pairs (8 and 16 B) in flight per thread
#: (validation/experiments/sass/runs/h200); other unrolls lose otherwise (16 B per lane at unroll 2:
#: nothing at 48 warps per SM, validation/experiments/unroll_probe/runs/h200)
MEASURED_UNROLL = 4
MEASURED_BYTES_PER_LANE = (4, 8, 16)
#: rounds beyond which the losses are taken as settled
MAX_ROUNDS = 4.0
#: the fewest warps per SM and rounds measured
MIN_WARPS_PER_SM = 8.0
MIN_ROUNDS = 1.0
#: losses the table does not resolve: the largest difference between a point's two
#: launches at 16 warps per SM or fewer (0.0029; at 40-64 warps they differ by up to 0.2)
RESOLUTION = 0.003
COLUMNS = ("chunk_B", "rounds", "bytes_per_lane", "warps_per_sm", "refetch")


@functools.lru_cache(maxsize=4)
def load_table(path: str | Path = TABLE_CSV) -> dict[tuple[int, int, int], tuple[np.ndarray, np.ndarray]]:
    """{(bytes_per_lane, chunk_B, rounds): (warps_per_sm, refetch)} of a refetch CSV,
    warps ascending. Errors name the file and line."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise HostlinkError(f"{path}: cannot read the L1 loss table ({exc.strerror})") from exc
    lines = text.splitlines()
    comments = 0
    while comments < len(lines) and lines[comments].startswith("#"):
        comments += 1
    reader = csv.DictReader(lines[comments:])
    missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
    if missing:
        raise HostlinkError(f"{path}: no column {', '.join(missing)}")
    points: dict[tuple[int, int, int], list[tuple[int, float]]] = {}
    for line, row in enumerate(reader, start=comments + 2):
        try:
            key = (int(row["bytes_per_lane"]), int(row["chunk_B"]), int(row["rounds"]))
            warps, value = int(row["warps_per_sm"]), float(row["refetch"])
        except (TypeError, ValueError) as exc:
            raise HostlinkError(f"{path}, line {line}: {exc}") from exc
        if value < 1.0 or warps < 1:
            raise HostlinkError(f"{path}, line {line}: refetch {value} below 1 or warps "
                                f"{warps} below 1")
        points.setdefault(key, []).append((warps, value))
    if not points:
        raise HostlinkError(f"{path}: no rows")
    out = {}
    for key, pts in points.items():
        pts.sort()
        out[key] = (np.array([w for w, _ in pts], dtype=float),
                    np.array([v for _, v in pts], dtype=float))
    return out


def _along_warps(table, bpl: int, chunk: int, rounds: int, warps: float) -> float:
    w, v = table[(bpl, chunk, rounds)]
    return float(np.interp(warps, w, v))


def _bracket(values: list[int], x: float) -> tuple[int, int, float]:
    """The grid values around ``x`` (log2 spacing) and the weight of the upper one."""
    if x <= values[0]:
        return values[0], values[0], 0.0
    if x >= values[-1]:
        return values[-1], values[-1], 0.0
    hi = next(i for i, v in enumerate(values) if v >= x)
    lo_v, hi_v = values[hi - 1], values[hi]
    return lo_v, hi_v, (math.log2(x) - math.log2(lo_v)) / (math.log2(hi_v) - math.log2(lo_v))


def strided_refetch(chunk_B: float, bytes_per_lane: int, warps_per_sm: float, rounds: float,
                    *, table_path: str | Path = TABLE_CSV) -> float:
    """Host sectors the L1 fetches per sector read by the strided pattern, the table
    interpolated (see the module notes; clamped to the measured warps): ``rounds`` =
    chunks per thread (chunks / threads of the grid), ``warps_per_sm`` the grid's warps
    over the SMs."""
    table = load_table(str(table_path))
    bpl = int(bytes_per_lane)
    chunks = sorted({c for b, c, _ in table if b == bpl})
    if not chunks:
        raise HostlinkError(f"{table_path}: no rows with {bpl} B per lane")
    rounds = min(max(rounds, MIN_ROUNDS), MAX_ROUNDS)
    c_lo, c_hi, c_w = _bracket(chunks, float(chunk_B))
    value = 0.0
    for chunk, cw in ((c_lo, 1.0 - c_w), (c_hi, c_w)):
        if cw == 0.0:
            continue
        measured = sorted(r for b, c, r in table if b == bpl and c == chunk)
        r_lo, r_hi, r_w = _bracket(measured, rounds)
        value += cw * ((1.0 - r_w) * _along_warps(table, bpl, chunk, r_lo, warps_per_sm)
                       + r_w * _along_warps(table, bpl, chunk, r_hi, warps_per_sm))
    return value


def measured_loss(chunk_B: float, bytes_per_lane: int, warps_per_sm: float, rounds: float,
                  *, table_path: str | Path = TABLE_CSV) -> float | None:
    """:func:`strided_refetch` where the table stands for the run (see the module notes),
    else None (fewer warps per SM or rounds than measured, or no loss it resolves)."""
    if warps_per_sm < MIN_WARPS_PER_SM or rounds < MIN_ROUNDS:
        return None
    value = strided_refetch(chunk_B, bytes_per_lane, warps_per_sm, rounds, table_path=table_path)
    return value if value - 1.0 > RESOLUTION else None


def applies(gpu, *, cache_op: str, space_host: bool, bytes_per_lane: int, unroll: int) -> bool:
    """Whether the table stands for a strided stream's L1: the GPU's L1 is the one measured,
    the loads use the default cache operator and read host memory, and the kernel is the
    one measured (:data:`MEASURED_UNROLL`, :data:`MEASURED_BYTES_PER_LANE`)."""
    from hostlink.traces.cache import NO_SHARED_CARVEOUT_B

    arch = getattr(gpu, "arch", None)
    l1 = gpu.l1_B - NO_SHARED_CARVEOUT_B.get(arch, 0)
    return (arch == MEASURED_ARCH and l1 == MEASURED_L1_B and cache_op == "default"
            and space_host and int(unroll) == MEASURED_UNROLL
            and int(bytes_per_lane) in MEASURED_BYTES_PER_LANE)


#: salts of the losses' draws (any fixed values: the draws are deterministic)
REVISIT_SALT, DUPLICATE_SALT = 0x5EC7_0A11, 0xD0B1_E5EC


def mix64(x: np.ndarray) -> np.ndarray:
    """SplitMix64's output function (Steele, Lea and Flood, "Fast splittable
    pseudorandom number generators", OOPSLA 2014), wrapping like C++ uint64_t."""
    x = np.asarray(x, dtype=np.uint64) + np.uint64(0x9E3779B97F4A7C15)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def _uniform(key: np.ndarray, salt: int) -> np.ndarray:
    """A deterministic draw in [0, 1) per key."""
    return (mix64(key.astype(np.uint64) ^ np.uint64(salt)) >> np.uint64(11)).astype(np.float64) \
        * (1.0 / (1 << 53))


#: sectors are indexed by offset while they span at most this many per read, plus the
#: slack (the counts' memory, not a measurement); else ranked by a sort
OFFSET_SPAN_PER_READ, OFFSET_SPAN_SLACK = 4, 1024


def _sector_index(sectors: np.ndarray) -> tuple[np.ndarray, int]:
    """An index per sector read, the same for reads of one sector, and the number of
    indices: the sector's offset from the least where they lie close together (a
    strided pattern's), else its rank among the distinct sectors (a sort)."""
    if len(sectors) == 0:
        return np.zeros(0, dtype=np.int64), 0
    lo, hi = int(sectors.min()), int(sectors.max())
    if hi - lo < OFFSET_SPAN_PER_READ * len(sectors) + OFFSET_SPAN_SLACK:
        return (sectors - lo).astype(np.int64), hi - lo + 1
    keys, inverse = np.unique(sectors, return_inverse=True)
    return inverse, len(keys)


def lossy_sector_requests(warp: np.ndarray, gid: np.ndarray, e: np.ndarray,
                          lane_lo: np.ndarray, active: np.ndarray, bytes_per_lane: int,
                          group: int, refetch: float):
    """The 32 B requests of strided loads through an L1 that fetches ``refetch`` host
    sectors per sector read (see the module notes).

    Load ``r`` (in issue order) is of warp ``warp[r]``, instruction ``gid[r]``, element
    ``e[r]`` of its lanes' chunks; ``lane_lo`` (n, 32): each lane's first byte,
    ``active``: which lanes load. Returns per request its load's row, address, size and
    the useful bytes credited as the coalescer credits them (a fetch the bytes its
    instruction reads of the sector, the sector's first fetch also those of the later
    visits that hit it, a second copy nothing)."""
    bpl = int(bytes_per_lane)
    span = group * bpl
    visits = max(1, -(-SECTOR_B // span))
    p = 0.0 if visits == 1 else min(1.0, max(0.0, (refetch - 1.0) / (visits - 1)))
    d = max(0.0, refetch / visits - 1.0)
    sector = lane_lo >> 5
    prev = np.roll(sector, 1, axis=0)
    new_inst = np.ones(len(warp), dtype=bool)
    new_inst[1:] = (warp[1:] != warp[:-1]) | (gid[1:] != gid[:-1])
    # the instruction's first load of the sector, and whether it is the sector's first visit
    first_in_inst = active & (new_inst[:, None] | (sector != prev))
    first_visit = (e[:, None] == 0) | (sector != ((lane_lo - bpl) >> 5))
    send = first_in_inst & (first_visit | (_uniform(lane_lo >> 4, REVISIT_SALT) < p))
    copies = send.astype(np.int64) * (1 + (_uniform(lane_lo >> 4, DUPLICATE_SALT) < d))
    inverse, n_keys = _sector_index(sector[active])
    read_B = np.bincount(inverse, minlength=n_keys) * bpl
    refetched_B = np.bincount(inverse, weights=(send & ~first_visit)[active] * span,
                              minlength=n_keys)
    credit = np.zeros(lane_lo.shape, dtype=np.int64)
    credit[active] = np.where(first_visit[active], read_B[inverse] - refetched_B[inverse],
                              np.minimum(span, read_B[inverse]))
    rows = np.broadcast_to(np.arange(len(warp))[:, None], lane_lo.shape)
    count = copies.ravel()
    row = np.repeat(rows.ravel(), count)
    addr = np.repeat((sector << 5).ravel(), count)
    useful = np.repeat(credit.ravel(), count)
    first_copy = np.ones(len(row), dtype=bool)
    first_copy[1:] = (row[1:] != row[:-1]) | (addr[1:] != addr[:-1])
    useful = np.where(first_copy, useful, 0)
    return row, addr, np.full(len(row), SECTOR_B), useful
