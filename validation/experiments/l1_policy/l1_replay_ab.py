"""Replays of one SM's strided loads through an L1 against the GH100's measured losses.

What `validation/experiments/l1_policy/README.md` says of replays: none of these
reproduces the host sectors the L1 fetches per sector read in the H200's
`l1_probe` (256 MiB a point) and the H100's `drift_probe` (16 MiB - 1 GiB). Each
replays SM 0's warps (CTAs of 8 warps dealt to the 132 SMs in turn) reading
`zc_read`'s strided pattern, a group of loads per round trip (4 B per lane: four
loads; 8 and 16 B: a pair), over 256 sets of 7 ways with the XOR-folded index of
`hostlink.traces.cache`:

- in issue order (the warps in turn, a warp's group back to back) with LRU, FIFO
  or random replacement;
- timed: an SM's misses are served in order at its share of the link's 32 B read
  rate (24 GB/s over 132 SMs) after a 1.2 us round trip, hits take 40 ns, a warp
  issues its next group 20 ns after its last load returns; with LRU, with LRU that
  evicts a line whose data is still on its way first, with LRU that never evicts
  such a line (and with it, a miss that finds every way of its set so held is not
  cached), and with random replacement.

Usage: python validation/experiments/l1_policy/l1_replay_ab.py   (about a minute; prints each
replay's mean and largest difference from the measurements, in sectors per sector)
"""
from __future__ import annotations

import csv
import io
import re
import sys
from pathlib import Path

import numpy as np
from numba import njit

ROOT = Path(__file__).resolve().parents[3]
SMS, WARPS_PER_CTA, SETS, WAYS = 132, 8, 256, 7
LOADS_PER_TRIP = {4: 4, 8: 2, 16: 2}        # the compiled groups at unroll 4
ORDER_POLICIES = ("lru", "fifo", "random")
TIMED_POLICIES = ("lru", "pending first", "pending kept", "pending kept, bypass", "random")
#: host sectors fetched per sector read, H200 l1_probe (256 MiB a point, unroll 4; tabled in
#: hostlink.traces.cache's notes): (chunk_B, bytes_per_lane, warps per SM) -> refetch
L1_PROBE = {(128, 4, 16): 1.007, (128, 4, 32): 1.124, (128, 4, 64): 1.945,
            (512, 4, 16): 1.003, (512, 4, 32): 1.227, (512, 4, 64): 2.192,
            (4096, 4, 16): 1.001, (4096, 4, 32): 1.019, (4096, 4, 64): 1.048,
            (128, 8, 16): 1.005, (128, 8, 32): 1.093, (128, 8, 48): 1.222,
            (512, 8, 16): 1.003, (512, 8, 32): 1.146, (512, 8, 48): 1.441,
            (4096, 8, 16): 1.000, (4096, 8, 32): 1.009, (4096, 8, 48): 1.028,
            (128, 16, 40): 1.046, (512, 16, 40): 1.087, (4096, 16, 40): 1.009}


# no on-disk cache: run as a script or imported from its file (tests), the module has no
# importable name for numba to rebuild a cached function's globals from
@njit
def _set_of(line):
    h, rest = line, line >> 8
    while rest > 0:
        h ^= rest
        rest >>= 8
    return h % SETS


@njit
def _next(rng):
    rng[0] ^= (rng[0] << 13) & 0xFFFFFFFFFFFF
    rng[0] ^= rng[0] >> 7
    rng[0] ^= (rng[0] << 17) & 0xFFFFFFFFFFFF
    return rng[0]


@njit
def _replay(grid_warps, chunk_B, bpl, total_B, policy, timed):
    """Host sectors fetched and bytes read by SM 0. policy: 0 LRU, 1 FIFO (order) or
    LRU evicting lines in flight first (timed), 2 random (order) or LRU keeping lines
    in flight (timed), 3 the same with bypass (timed), 4 random (timed)."""
    loads = 4 if bpl == 4 else 2
    threads = grid_warps * 32
    nchunks = total_B // chunk_B
    per_chunk = chunk_B // bpl
    trips = (per_chunk + loads - 1) // loads
    n = 0
    for c in range(0, grid_warps // WARPS_PER_CTA, SMS):
        n += WARPS_PER_CTA
    warp_id = np.empty(n, dtype=np.int64)
    k = 0
    for c in range(0, grid_warps // WARPS_PER_CTA, SMS):
        for w in range(WARPS_PER_CTA):
            warp_id[k] = c * WARPS_PER_CTA + w
            k += 1
    pos = np.zeros(n, dtype=np.int64)
    ready = np.arange(n) * 2.0
    done = np.zeros(n, dtype=np.bool_)
    tags = -np.ones((SETS, WAYS), dtype=np.int64)
    stamp = np.zeros((SETS, WAYS), dtype=np.float64)
    valid = np.zeros((SETS, WAYS), dtype=np.int64)
    fill = np.zeros((SETS, WAYS, 4), dtype=np.float64)
    filled = np.zeros((SETS, WAYS), dtype=np.float64)
    rng = np.array([0x9E3779B97F4A7C15 & 0xFFFFFFFFFFFF], dtype=np.int64)
    service = 32.0 / (24.0 / SMS)
    server = 0.0
    clock = 0.0
    fetched = 0
    read_B = 0
    left = n
    turn = 0
    while left > 0:
        if timed:
            wi, best = -1, 1e300
            for i in range(n):
                if not done[i] and ready[i] < best:
                    best, wi = ready[i], i
            t = max(best, clock)
        else:
            while done[turn % n]:
                turn += 1
            wi = turn % n
            turn += 1
            t = clock
        g = pos[wi]
        rnd, j0 = g // trips, (g % trips) * loads
        finish = t
        for u in range(loads):
            j = j0 + u
            if j >= per_chunk:
                continue
            for lane in range(32):
                c = warp_id[wi] * 32 + lane + rnd * threads
                if c >= nchunks:
                    continue
                now = t
                t += 0.5 if timed else 1.0
                sector = (c * chunk_B + j * bpl) >> 5
                line, sub = sector >> 2, sector & 3
                s = _set_of(line)
                read_B += bpl
                way = -1
                for w in range(WAYS):
                    if tags[s, w] == line:
                        way = w
                lru = timed or policy != 1          # FIFO keeps the allocation's time
                if way >= 0 and (valid[s, way] >> sub) & 1:
                    if lru:
                        stamp[s, way] = now
                    finish = max(finish, now + 40.0, fill[s, way, sub])
                    continue
                fetched += 1
                start = max(now, server)
                server = start + service
                arrive = start + 1200.0 if timed else now
                finish = max(finish, arrive)
                if way < 0:
                    victim = -1
                    for w in range(WAYS):
                        if tags[s, w] == -1:
                            victim = w
                            break
                    if victim < 0:
                        if (not timed and policy == 2) or (timed and policy == 4):
                            victim = _next(rng) % WAYS
                        else:
                            old = 1e300
                            for w in range(WAYS):
                                st = stamp[s, w]
                                if timed and filled[s, w] > now:
                                    st = -1.0 if policy == 1 else (1e299 if policy >= 2 else st)
                                if st < old:
                                    old, victim = st, w
                    if timed and policy == 3 and filled[s, victim] > now:
                        continue
                    way = victim
                    tags[s, way] = line
                    valid[s, way] = 0
                    filled[s, way] = arrive
                    stamp[s, way] = now
                valid[s, way] |= 1 << sub
                fill[s, way, sub] = arrive
                if lru:
                    stamp[s, way] = now
        clock = t
        pos[wi] += 1
        ready[wi] = finish + 20.0
        if warp_id[wi] * 32 + (pos[wi] // trips) * threads >= nchunks:
            done[wi] = True
            left -= 1
    return fetched, read_B


def replay(chunk_B: int, bpl: int, grid_warps: int, total_B: int, policy: str, timed: bool) -> float:
    names = TIMED_POLICIES if timed else ORDER_POLICIES
    code = names.index(policy)
    fetched, read_B = _replay(grid_warps, chunk_B, bpl, total_B, code, timed)
    return fetched * 32 / read_B


def drift_points() -> dict[tuple[int, int, int, int], float]:
    """The H100 drift probe's refetch per point (mean of each point's launches)."""
    sizes = {"16MiB": 16 << 20, "64MiB": 64 << 20, "256MiB": 256 << 20, "1GiB": 1 << 30}
    out = {}
    for f in sorted((ROOT / "validation/experiments/drift_probe/runs/h100").glob("ncu_*.csv")):
        m = re.fullmatch(r"ncu_chunk(\d+)_bpl(\d+)_warps(\d+)_total(\w+)\.csv", f.name)
        text = "".join(r for r in f.read_text().splitlines(keepends=True) if r.startswith('"'))
        rows = list(csv.DictReader(io.StringIO(text)))[1:]
        got = [float(r["lts__t_sectors_srcunit_tex_aperture_sysmem_op_read.sum"].replace(",", ""))
               for r in rows]
        total = sizes[m.group(4)]
        out[(int(m.group(1)), int(m.group(2)), int(m.group(3)), total)] = np.mean(got) / (total / 32)
    return out


def main() -> None:
    points = [((c, b, w * SMS, 256 << 20), v) for (c, b, w), v in L1_PROBE.items()]
    points += list(drift_points().items())
    print(f"{len(points)} points (H200 l1_probe, H100 drift_probe): sectors per sector off")
    for timed, names in ((False, ORDER_POLICIES), (True, TIMED_POLICIES)):
        for name in names:
            err = np.array([replay(c, b, w, t, name, timed) - v for (c, b, w, t), v in points])
            print(f"  {'timed' if timed else 'issue order':11s} {name:22s} mean {np.mean(np.abs(err)):.3f}"
                  f"  largest {np.max(np.abs(err)):.3f}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
