"""Host-memory read requests of an emulated run, computed without lane addresses.

The fast path of :meth:`Emulation.requests`: it applies the coalescing rule
of the trace coalescer (no caches) to the byte ranges the host loads cover,
instead of materialising 32 lane addresses per instruction:
- every lane access [addr, addr + width) touches the 32 B sectors it overlaps;
- per warp instruction, the touched sectors are grouped by 128 B line, and
  each run of contiguous sectors within a line is one request of 32, 64, 96
  or 128 B (emogi_vldb2020.txt §3.3, Figure 3: a line with sectors 0 and 2
  gives two 32 B requests);
- ``useful_B`` is the bytes of the request some lane asked for.
A merged / merged_aligned / chunked trip reads one contiguous index range, so
its requests follow from the range alone (closed form per line); a balanced
trip (one window) reads the pieces of its warp's live lists that fall in the
window, a few ranges; a naive trip reads one element per lane, so its sectors
are sorted per instruction.

Requests come out grouped by launch, warp, instruction (``inst`` numbers the
warp's host loads in program order) and address, as in
:class:`~hostlink.model.workload.RequestStream`. Rows are processed in
batches of at most ``batch`` trips or lane accesses, so memory stays bounded.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from hostlink.model.geometry import LINE_B, SECTOR_B
from hostlink.model.workload import REQUEST_DTYPES, SPACE_HOST, LaunchInfo, RequestStream
from hostlink.traces.emulator.emit import CHUNK_VERTICES, WARP_SIZE, LaunchPlan
from hostlink.traces.schema import LOCATION_HOST

SECTORS_PER_LINE = LINE_B // SECTOR_B
DEFAULT_BATCH = 1 << 22


@njit(cache=True)
def _presorted_requests(row, lo, hi):
    """:func:`coalesce_ranges` of presorted ranges in one pass: each range's sectors in
    turn, a sector equal to the one before (same row) adding its bytes to it, one
    right after it in the same row and 128 B line extending its request."""
    total = 0
    for i in range(len(lo)):
        total += max(0, (hi[i] - 1) // SECTOR_B - lo[i] // SECTOR_B + 1)
    out_r = np.empty(total, dtype=np.int64)
    out_addr = np.empty(total, dtype=np.int64)
    out_size = np.empty(total, dtype=np.int64)
    out_useful = np.empty(total, dtype=np.int64)
    n = 0
    last_r = 0
    last_s = 0
    for i in range(len(lo)):
        r = row[i]
        s0 = lo[i] // SECTOR_B
        for sec in range(s0, (hi[i] - 1) // SECTOR_B + 1):
            u = min(hi[i], (sec + 1) * SECTOR_B) - max(lo[i], sec * SECTOR_B)
            if n and r == last_r and sec == last_s:
                out_useful[n - 1] += u                  # the same sector again
            elif (n and r == last_r and sec == last_s + 1
                  and sec // SECTORS_PER_LINE == last_s // SECTORS_PER_LINE):
                out_size[n - 1] += SECTOR_B             # the next sector of the line
                out_useful[n - 1] += u
            else:
                out_r[n] = r
                out_addr[n] = sec * SECTOR_B
                out_size[n] = SECTOR_B
                out_useful[n] = u
                n += 1
            last_r = r
            last_s = sec
    return out_r[:n], out_addr[:n], out_size[:n], out_useful[:n]


def coalesce_ranges(row: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                    presorted: bool) -> tuple[np.ndarray, ...]:
    """Requests of byte ranges [lo, hi), each belonging to instruction ``row``.

    ``presorted``: ranges already ascend by (row, address) and do not share
    sectors except with their neighbour in the same row. Returns (row, addr,
    size_B, useful_B) per request, ordered by row then address.
    """
    lo = lo.astype(np.int64)
    hi = hi.astype(np.int64)
    if presorted:
        return _presorted_requests(np.asarray(row, dtype=np.int64), lo, hi)
    s0 = lo // SECTOR_B
    ns = (hi - 1) // SECTOR_B - s0 + 1
    rep = np.repeat(np.arange(len(lo), dtype=np.int64), ns)
    within = np.arange(len(rep), dtype=np.int64) - np.repeat(np.cumsum(ns) - ns, ns)
    sec = s0[rep] + within
    useful = np.minimum(hi[rep], (sec + 1) * SECTOR_B) - np.maximum(lo[rep], sec * SECTOR_B)
    r = row[rep]
    if not presorted:
        order = np.lexsort((sec, r))
        sec, useful, r = sec[order], useful[order], r[order]
    if not len(sec):
        z = np.zeros(0, dtype=np.int64)
        return z, z, z, z
    # one entry per (row, sector)
    new_sec = np.ones(len(sec), dtype=bool)
    new_sec[1:] = (r[1:] != r[:-1]) | (sec[1:] != sec[:-1])
    starts = np.flatnonzero(new_sec)
    sec, r = sec[starts], r[starts]
    useful = np.add.reduceat(useful, starts)
    # runs of contiguous sectors within one line of one row
    new_req = np.ones(len(sec), dtype=bool)
    new_req[1:] = ((r[1:] != r[:-1]) | (sec[1:] != sec[:-1] + 1)
                   | (sec[1:] // SECTORS_PER_LINE != sec[:-1] // SECTORS_PER_LINE))
    rs = np.flatnonzero(new_req)
    counts = np.diff(np.append(rs, len(sec)))
    return (r[rs], sec[rs] * SECTOR_B, counts * SECTOR_B, np.add.reduceat(useful, rs))


def _contiguous(plan: LaunchPlan, slots: list[tuple[int, int]], batch: int):
    """(warp, inst, addr, size, useful) of a merged / aligned / chunked launch."""
    P = len(slots)
    trips = plan.trips
    total = int(trips.sum())
    unit_first_trip = np.cumsum(trips) - trips
    # host-instruction count of earlier units of the same warp
    warp_new = np.ones(len(plan.warp), dtype=bool)
    warp_new[1:] = plan.warp[1:] != plan.warp[:-1]
    group = np.cumsum(warp_new) - 1
    warp_first_trip = unit_first_trip[warp_new][group]
    out = []
    unit_end_trip = np.cumsum(trips)
    for t0 in range(0, total, batch):
        t1 = min(total, t0 + batch)
        g = np.arange(t0, t1, dtype=np.int64)
        unit = np.searchsorted(unit_end_trip, g, side="right")
        k = g - unit_first_trip[unit]
        start = plan.a[unit] + WARP_SIZE * k
        lo_i = np.maximum(plan.s[unit], start)
        hi_i = np.minimum(plan.e[unit], start + WARP_SIZE)
        inst_trip = g - warp_first_trip[unit]
        n = len(g)
        rows_lo = np.empty((n, P), dtype=np.int64)
        rows_hi = np.empty((n, P), dtype=np.int64)
        for j, (base, width) in enumerate(slots):
            rows_lo[:, j] = base + lo_i * width
            rows_hi[:, j] = base + hi_i * width
        row = np.arange(n * P, dtype=np.int64)
        rr, addr, size, useful = coalesce_ranges(row, rows_lo.reshape(-1), rows_hi.reshape(-1),
                                                 presorted=True)
        trip_of = rr // P
        out.append((plan.warp[unit][trip_of], inst_trip[trip_of] * P + rr % P, addr, size, useful))
    return out


@njit(cache=True)
def _window_pieces(offsets, live, warps, trips, win, u0, t, t0, t1, trip, lo, hi):
    """The pieces of windows ``t0 .. t1 - 1`` of a balanced launch (``trips`` per unit
    ``warps``, ``win`` the window starts; unit ``u0``, whose first window is ``t``,
    holds window ``t0``): per window and live list of its warp, the part of the list
    in the window, ascending. Fills ``trip``, ``lo``, ``hi`` where they have room;
    returns the piece count."""
    V = len(offsets) - 1
    fill = len(trip) > 0
    pos = 0
    for u in range(u0, len(warps)):
        if t >= t1:
            break
        first = warps[u] * CHUNK_VERTICES
        n = min(CHUNK_VERTICES, V - first)
        for k in range(trips[u]):
            g = t + k
            if g < t0 or g >= t1:
                continue
            b = win[g]
            for j in range(n):
                v = first + j
                if not live[v]:
                    continue
                a = max(offsets[v], b)
                z = min(offsets[v + 1], b + WARP_SIZE)
                if a < z:
                    if fill:
                        trip[pos] = g
                        lo[pos] = a
                        hi[pos] = z
                    pos += 1
        t += trips[u]
    return pos


def _balanced(plan: LaunchPlan, offsets: np.ndarray, slots: list[tuple[int, int]],
              batch: int):
    """(warp, inst, addr, size, useful) of a balanced launch: each window's pieces."""
    P = len(slots)
    off = np.ascontiguousarray(offsets).view(np.int64)
    trips = plan.trips.astype(np.int64)
    first_trip = plan.first_trip
    total = int(trips.sum())
    unit_end_trip = np.cumsum(trips)
    out = []
    step = max(1, batch // WARP_SIZE)
    empty = np.zeros(0, dtype=np.int64)
    for t0 in range(0, total, step):
        t1 = min(total, t0 + step)
        u0 = int(np.searchsorted(unit_end_trip, t0, side="right"))
        at = (off, plan.live_v, plan.warp, trips, plan.win, u0, int(first_trip[u0]), t0, t1)
        n = _window_pieces(*at, empty, empty, empty)
        trip = np.empty(n, dtype=np.int64)
        lo = np.empty(n, dtype=np.int64)
        hi = np.empty(n, dtype=np.int64)
        _window_pieces(*at, trip, lo, hi)
        rows_lo = np.empty((n, P), dtype=np.int64)
        rows_hi = np.empty((n, P), dtype=np.int64)
        for j, (base, width) in enumerate(slots):
            rows_lo[:, j] = base + lo * width
            rows_hi[:, j] = base + hi * width
        # row = (trip, slot); a trip's pieces ascend, so a stable sort by row keeps them so
        row = (trip[:, None] * P + np.arange(P)[None, :]).reshape(-1)
        order = np.argsort(row, kind="stable")
        rr, addr, size, useful = coalesce_ranges(row[order], rows_lo.reshape(-1)[order],
                                                 rows_hi.reshape(-1)[order], presorted=True)
        trip_of = rr // P
        u_of = np.searchsorted(unit_end_trip, trip_of, side="right")
        out.append((plan.warp[u_of], (trip_of - first_trip[u_of]) * P + rr % P, addr, size,
                    useful))
    return out


def _naive(plan: LaunchPlan, offsets: np.ndarray, active: np.ndarray,
           slots: list[tuple[int, int]], batch: int):
    """(warp, inst, addr, size, useful) of a naive launch."""
    P = len(slots)
    deg = (offsets[active + 1] - offsets[active]).astype(np.int64)
    keep = deg > 0
    v, deg = active[keep], deg[keep]
    s = offsets[v].astype(np.int64)
    w = v // WARP_SIZE
    unit_of_v = np.searchsorted(plan.warp, w)
    unit_first_trip = np.cumsum(plan.trips) - plan.trips
    out = []
    cum = np.cumsum(deg)
    a = 0
    while a < len(v):
        # whole warps per batch, about ``batch`` lane accesses
        b = int(np.searchsorted(cum, (cum[a - 1] if a else 0) + batch, side="right"))
        b = max(b, a + 1)
        if b < len(v):
            b = int(np.searchsorted(w, w[b - 1], side="right"))
        vv, dd, ss = v[a:b], deg[a:b], s[a:b]
        rep = np.repeat(np.arange(len(vv), dtype=np.int64), dd)
        k = np.arange(len(rep), dtype=np.int64) - np.repeat(np.cumsum(dd) - dd, dd)
        trip = unit_first_trip[unit_of_v[a:b]][rep] + k
        idx = ss[rep] + k
        lo = np.empty((len(rep), P), dtype=np.int64)
        for j, (base, width) in enumerate(slots):
            lo[:, j] = base + idx * width
        width_row = np.array([wd for _, wd in slots], dtype=np.int64)
        row = (trip[:, None] * P + np.arange(P)[None, :]).reshape(-1)
        lo = lo.reshape(-1)
        hi = lo + np.tile(width_row, len(rep))
        rr, addr, size, useful = coalesce_ranges(row, lo, hi, presorted=False)
        trip_r = rr // P
        unit = np.searchsorted(unit_first_trip, trip_r, side="right") - 1
        k_r = trip_r - unit_first_trip[unit]
        out.append((plan.warp[unit], k_r * P + rr % P, addr, size, useful))
        a = b
    return out


def host_requests(plans, actives: list[np.ndarray], offsets: np.ndarray,
                  variant: str, slots_regions: list[tuple[int, int, str]],
                  launches: list[LaunchInfo], batch: int = DEFAULT_BATCH) -> RequestStream:
    """The host read requests of every launch (see module doc).

    ``slots_regions``: per host load of a trip, (base address, width in B,
    location of its region); loads of device-resident regions make no host
    requests.
    """
    host_slots = [(b, w) for b, w, loc in slots_regions if loc == LOCATION_HOST]
    dtypes = REQUEST_DTYPES
    if not host_slots:
        return RequestStream(**{k: np.zeros(0, dtype=v) for k, v in dtypes.items()},
                             launches=tuple(launches))
    if len(host_slots) != len(slots_regions):
        raise ValueError("edges and weights must live in the same memory")
    cols = {k: [] for k in ("launch", "warp", "inst", "addr", "size_B", "useful_B")}
    for plan, active in zip(plans, actives):
        if variant == "naive":
            parts = _naive(plan, offsets, active, host_slots, batch)
        elif variant == "balanced":
            parts = _balanced(plan, offsets, host_slots, batch)
        else:
            parts = _contiguous(plan, host_slots, batch)
        for warp, inst, addr, size, useful in parts:
            cols["launch"].append(np.full(len(addr), plan.launch, dtype=np.uint32))
            cols["warp"].append(warp)
            cols["inst"].append(inst)
            cols["addr"].append(addr)
            cols["size_B"].append(size)
            cols["useful_B"].append(useful)
    arrays = {k: (np.concatenate(v).astype(dtypes[k]) if v else np.zeros(0, dtype=dtypes[k]))
              for k, v in cols.items()}
    n = len(arrays["addr"])
    return RequestStream(**arrays, space=np.full(n, SPACE_HOST, dtype=np.uint8),
                         is_write=np.zeros(n, dtype=bool), launches=tuple(launches))
