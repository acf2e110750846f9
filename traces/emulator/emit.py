"""Lane addresses of the emulated kernels, launch by launch, in bounded chunks.

A launch is planned as a sequence of *units* in program order: one vertex
for merged, merged_aligned and chunked (warp v, or warp v // 8 for chunked),
one warp for naive and balanced. A unit issues its prologue (device traces
only), then ``trips`` loop trips of ``len(program.trip)`` instructions each
(KERNELS.md "Variants"; balanced in gpu_kernels/traversal/README.md):
- merged: trips = ceil((e - s) / 32), trip k covers s + 32 k + lane;
- merged_aligned, chunked: a = s - s mod align_elems (align_elems = 128 /
  id_bytes), trips = ceil((e - a) / 32) when e > s, trip k covers
  a + 32 k + lane, lanes outside [s, e) masked off;
- naive: trips = the largest degree of the warp's active vertices; lane l
  (vertex 32 w + l) reads s + k in trip k while k < its degree;
- balanced: warp w owns vertices 8 w .. 8 w + 7; its trips are the windows of
  32 element indices that :func:`balanced_windows` walks over the lists of its
  live vertices (active, with a non-empty list), trip k covering
  ``win[k] + lane``; a lane loads when its index lies in a live list of the
  warp, for the vertex that owns that index (:func:`window_owners`). Its prologue
  (device traces) has one lane per vertex of the warp, as naive's has.
Rows are numbered unit after unit; a chunk is a row range cut at trip
boundaries, so at most ``chunk_rows`` rows (plus the tail of one trip) are
materialised at once, whatever the graph size. Instructions with no active
lane are not emitted.

Device traces model the outcome of each neighbour update under the schedule
of :mod:`hostlink.traces.emulator.algorithms`: prologue reads see the value at
the start of the launch; updates take effect in program order (a BFS store
happens in the lanes of the first instruction that finds ``label[u]`` unset;
an atomicMin "lowers" when its candidate beats every earlier one and the
value at the start). The emulator checks, launch by launch, that these
outcomes reproduce the functional run's next active set.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import numpy as np
from numba import njit

from hostlink.model.geometry import LINE_B
from hostlink.traces.emulator.algorithms import INF_U32, AlgorithmRun
from hostlink.traces.emulator.layout import AddressMap
from hostlink.traces.emulator.program import (LANES_ALL, LANES_ATTEMPT, LANES_FLAGGED,
                                              LANES_VALID, TARGET_EDGE, TARGET_FLAG, TARGET_NBR,
                                              TARGET_SELF, TARGET_SELF1, Program)
from hostlink.traces.graphs.csr import CSR
from hostlink.traces.schema import INST_DTYPES, SPACE_GLOBAL, WARP_SIZE, InstTable

VARIANTS = ("naive", "merged", "merged_aligned", "chunked", "balanced")
THREADS_PER_CTA = 256
WARPS_PER_CTA = THREADS_PER_CTA // WARP_SIZE
CHUNK_VERTICES = 8
_LANES = np.arange(WARP_SIZE, dtype=np.int64)


def threads_of(variant: str, V: int) -> int:
    if variant == "naive":
        return V
    if variant in ("merged", "merged_aligned"):
        return WARP_SIZE * V
    return WARP_SIZE * (-(-V // CHUNK_VERTICES))


def grid_of(variant: str, V: int) -> int:
    return max(1, -(-threads_of(variant, V) // THREADS_PER_CTA))


def align_elems(id_bytes: int) -> int:
    return LINE_B // id_bytes


@dataclass
class LaunchPlan:
    """Units of one launch in program order (see module doc)."""
    launch: int
    level: int
    warp: np.ndarray      # global warp id of each unit
    vertex: np.ndarray    # vertex of each unit (-1 for naive)
    active: np.ndarray    # bool: unit active (naive: any active lane)
    trips: np.ndarray
    pro: np.ndarray       # prologue rows of each unit
    s: np.ndarray         # list start (contiguous variants)
    e: np.ndarray
    a: np.ndarray         # first index of trip 0
    row_start: np.ndarray
    row_end: np.ndarray
    is_active_v: np.ndarray | None  # bool per vertex (naive with device arrays; balanced)
    win: np.ndarray | None = None   # balanced: every unit's window starts, unit after unit
    live_v: np.ndarray | None = None  # balanced: bool per vertex, active with a non-empty list
    lanes: np.ndarray | None = None   # naive, host arrays only: each unit's active lanes (bits)

    def lane_mask(self, units: np.ndarray | None = None) -> np.ndarray:
        """Bool (units, 32): the active lanes of ``units`` (default every unit) of a
        host-only naive plan, from its ``lanes`` bits."""
        bits = self.lanes if units is None else self.lanes[units]
        return ((bits[:, None] >> np.arange(WARP_SIZE, dtype=np.uint32)) & np.uint32(1)) == 1

    @property
    def total_rows(self) -> int:
        return int(self.row_end[-1]) if len(self.row_end) else 0

    @property
    def first_trip(self) -> np.ndarray:
        """Index of each unit's first trip among the launch's trips."""
        return np.cumsum(self.trips) - self.trips


#: no window (balanced_windows)
_NO_WINDOW = -1


@njit(cache=True)
def _walk_windows(offsets, live, warps, V, A, trips, win):
    """The balanced walk of each warp of ``warps`` (gpu_kernels/traversal/walk.cuh,
    ``next_window``): its window count into ``trips`` and, where ``win`` has room,
    the windows' starts into ``win``, warp after warp."""
    fill = len(win) > 0
    pos = 0
    for u in range(len(warps)):
        first = warps[u] * CHUNK_VERTICES
        n = min(CHUNK_VERTICES, V - first)
        b = _NO_WINDOW
        for j in range(n):
            v = first + j
            if live[v]:
                c = offsets[v] - offsets[v] % A
                if b == _NO_WINDOW or c < b:
                    b = c
        k = 0
        while b != _NO_WINDOW:
            if fill:
                win[pos] = b
            pos += 1
            k += 1
            after = b + WARP_SIZE
            nb = _NO_WINDOW
            for j in range(n):
                v = first + j
                if live[v] and offsets[v + 1] > after:
                    s = offsets[v]
                    c = after if s <= after else s - s % A
                    if nb == _NO_WINDOW or c < nb:
                        nb = c
            b = nb
        trips[u] = k


def balanced_windows(offsets: np.ndarray, live: np.ndarray, warps: np.ndarray,
                     id_bytes: int) -> tuple[np.ndarray, np.ndarray]:
    """(windows per warp, every window's first element index, warp after warp) of the
    balanced walk (gpu_kernels/traversal/README.md): a warp's first window starts at
    the 128 B-aligned start of its first live list; after a window [b, b + 32) the
    next starts at b + 32 where a live list runs on across it, else at the aligned
    start of the next live list that ends beyond b + 32; a warp with no live vertex
    has none. ``live``: bool per vertex (active, with a non-empty list)."""
    off = np.ascontiguousarray(offsets).view(np.int64)
    warps = np.ascontiguousarray(warps, dtype=np.int64)
    V = len(off) - 1
    A = align_elems(id_bytes)
    trips = np.zeros(len(warps), dtype=np.int64)
    _walk_windows(off, live, warps, V, A, trips, np.zeros(0, dtype=np.int64))
    win = np.empty(int(trips.sum()), dtype=np.int64)
    if len(win):
        _walk_windows(off, live, warps, V, A, trips, win)
    return trips, win


@njit(cache=True)
def _window_owners(offsets, first, hint, out):
    """The owner of each element ``first[i] + lane`` (lanes 0..31) into ``out[i, lane]``:
    the last vertex whose list starts at or before it (the balanced kernel's owner
    lane), clipped to [0, V). The first lane's is found by a search that gallops out
    from ``hint[i]`` (the row's warp's first vertex, near its windows), the others by
    a walk up the lists (the owner grows with the element)."""
    V = len(offsets) - 1
    top = max(0, V - 1)
    for i in range(len(first)):
        x = first[i]
        # bracket the answer: offsets[lo] <= x < offsets[hi], with offsets[-1] = -inf
        # and offsets[V + 1] = +inf
        h = min(max(hint[i], 0), V)
        step = 1
        if offsets[h] <= x:
            lo = h
            hi = h + 1
            while hi <= V and offsets[hi] <= x:
                lo = hi
                hi = min(hi + step, V + 1)
                step *= 2
        else:
            hi = h
            lo = h - 1
            while lo >= 0 and offsets[lo] > x:
                hi = lo
                lo = max(lo - step, -1)
                step *= 2
        while hi - lo > 1:
            mid = (lo + hi) >> 1
            if offsets[mid] <= x:
                lo = mid
            else:
                hi = mid
        v = lo
        for lane in range(out.shape[1]):
            while v < V and offsets[v + 1] <= x + lane:
                v += 1
            out[i, lane] = min(max(v, 0), top)


def window_owners(offsets: np.ndarray, first: np.ndarray, hint: np.ndarray) -> np.ndarray:
    """The owners (:func:`_window_owners`) of ``first[:, None] + range(32)``, a warp's
    window per row, each row's search starting at its ``hint`` vertex."""
    out = np.empty((len(first), WARP_SIZE), dtype=np.int64)
    _window_owners(np.ascontiguousarray(offsets).view(np.int64),
                   np.ascontiguousarray(first, dtype=np.int64),
                   np.ascontiguousarray(hint, dtype=np.int64), out)
    return out


def plan_launch(csr: CSR, variant: str, prog: Program, active: np.ndarray, launch: int,
                include_device: bool, id_bytes: int) -> LaunchPlan:
    V = csr.num_vertices
    offsets = csr.offsets
    P = len(prog.trip)
    n_check, n_active = len(prog.check), len(prog.active)
    win = live = lanes = None
    if variant == "balanced":
        is_active_v = np.zeros(V, dtype=bool)
        is_active_v[active] = True
        deg = (offsets[active + 1] - offsets[active]).astype(np.int64)
        live = np.zeros(V, dtype=bool)
        live[active[deg > 0]] = True
        if include_device:
            warps = np.arange(-(-V // CHUNK_VERTICES), dtype=np.int64)
            unit_active = np.zeros(len(warps), dtype=bool)
            unit_active[active // CHUNK_VERTICES] = True
        else:
            warps = np.unique(active[deg > 0] // CHUNK_VERTICES).astype(np.int64)
            unit_active = np.ones(len(warps), dtype=bool)
        trips, win = balanced_windows(offsets, live, warps, id_bytes)
        vertex = np.full(len(warps), -1, dtype=np.int64)
        s = offsets[warps * CHUNK_VERTICES].astype(np.int64)
        e = offsets[np.minimum(warps * CHUNK_VERTICES + CHUNK_VERTICES, V)].astype(np.int64)
        # s, e: the span of the warp's lists; a: its first window
        a = s.copy()
        has = trips > 0
        a[has] = win[(np.cumsum(trips) - trips)[has]]
    elif variant == "naive":
        deg_act = (offsets[active + 1] - offsets[active]).astype(np.int64)
        w_act = active // WARP_SIZE
        if include_device:
            warps = np.arange(-(-V // WARP_SIZE), dtype=np.int64)
            trips = np.zeros(len(warps), dtype=np.int64)
            np.maximum.at(trips, w_act, deg_act)
            unit_active = np.zeros(len(warps), dtype=bool)
            unit_active[w_act] = True
            is_active_v = np.zeros(V, dtype=bool)
            is_active_v[active] = True
        else:
            # the active lanes of each warp as a bit mask: no pass over every vertex
            warps, first = np.unique(w_act, return_index=True)
            trips = np.maximum.reduceat(deg_act, first) if len(first) else np.zeros(0, np.int64)
            bits = np.left_shift(np.uint32(1), (active % WARP_SIZE).astype(np.uint32))
            lanes = (np.bitwise_or.reduceat(bits, first) if len(first)
                     else np.zeros(0, np.uint32))
            keep = trips > 0
            warps, trips, lanes = warps[keep], trips[keep], lanes[keep]
            unit_active = np.ones(len(warps), dtype=bool)
            is_active_v = None
        vertex = np.full(len(warps), -1, dtype=np.int64)
        zeros = np.zeros(len(warps), dtype=np.int64)
        s = e = a = zeros
    else:
        if include_device:
            vertex = np.arange(V, dtype=np.int64)
            unit_active = np.zeros(V, dtype=bool)
            unit_active[active] = True
        else:
            vertex = active
            unit_active = np.ones(len(active), dtype=bool)
        s = offsets[vertex].astype(np.int64)
        e = offsets[vertex + 1].astype(np.int64)
        a = s if variant == "merged" else s - s % align_elems(id_bytes)
        trips = np.where(unit_active & (e > s), -(-(e - a) // WARP_SIZE), 0)
        if not include_device:
            keep = trips > 0
            vertex, unit_active, s, e, a, trips = (x[keep] for x in
                                                   (vertex, unit_active, s, e, a, trips))
        warps = vertex // CHUNK_VERTICES if variant == "chunked" else vertex
        is_active_v = None
    pro = np.where(unit_active, n_check + n_active, n_check).astype(np.int64)
    rows = pro + trips * P
    row_end = np.cumsum(rows)
    return LaunchPlan(launch, launch, warps.astype(np.int64), vertex, unit_active, trips, pro,
                      s, e, a, row_end - rows, row_end, is_active_v, win, live, lanes)


def chunk_bounds(plan: LaunchPlan, P: int, chunk_rows: int) -> Iterator[tuple[int, int]]:
    """Row ranges of at most ``chunk_rows`` rows (more only to finish one trip),
    cut at prologue or trip boundaries."""
    total = plan.total_rows
    r0 = 0
    while r0 < total:
        r1 = min(r0 + chunk_rows, total)
        if r1 < total:
            u = int(np.searchsorted(plan.row_end, r1, side="right"))
            q = r1 - int(plan.row_start[u])
            pro = int(plan.pro[u])
            if q > pro:
                q = pro + ((q - pro) // P) * P
            r1c = int(plan.row_start[u]) + q
            if r1c <= r0:  # one trip longer than the chunk: finish it
                r1c = int(plan.row_start[u]) + pro + (-(-(r1 - int(plan.row_start[u]) - pro) // P)) * P
            r1 = r1c
        yield r0, r1
        r0 = r1


@njit(cache=True)
def _bfs_attempts(u, row, value, next_level, first):
    """BFS's updates of one chunk's trips: a lane stores its neighbour's label when
    the label was unset at the chunk's start and the lane's trip is the first of
    the chunk to load it (every lane of that trip that holds the neighbour does).
    Sets those labels to ``next_level`` and returns the lanes that stored.
    ``first``: one entry per vertex, -1 on entry and on return."""
    n = u.shape[0]
    for i in range(n):
        x = u[i]
        if first[x] < 0 or row[i] < first[x]:
            first[x] = np.int32(row[i])
    stored = np.empty(n, dtype=np.bool_)
    for i in range(n):
        x = u[i]
        stored[i] = value[x] == INF_U32 and row[i] == first[x]
    for i in range(n):
        x = u[i]
        first[x] = -1
        if stored[i]:
            value[x] = next_level
    return stored


class DeviceState:
    """Values of the updated device array during a launch (BFS labels,
    SSSP distances, CC components), to decide which lanes' updates took effect."""

    def __init__(self, csr: CSR, kernel: str, source: int):
        V = csr.num_vertices
        self.kernel = kernel
        if kernel == "bfs":
            self.value = np.full(V, INF_U32, dtype=np.uint32)
            self.value[source] = 0
        elif kernel == "sssp":
            self.value = np.full(V, INF_U32, dtype=np.uint32)
            self.value[source] = 0
        elif kernel == "cc":
            self.value = np.arange(V, dtype=np.uint32)
        else:
            self.value = None
        self.start = None
        self.read = None
        self._first = None

    def _first_row(self) -> np.ndarray:
        """Scratch of one entry per vertex, -1 between calls (:func:`_bfs_attempts`; a
        chunk's trips are numbered well within 32 bits)."""
        if self._first is None:
            self._first = np.full(len(self.value), -1, dtype=np.int32)
        return self._first

    def begin(self, active: np.ndarray | None = None, read: np.ndarray | None = None) -> None:
        """A launch starts; ``read``: the value each of the ``active`` vertices' warps
        reads (waves, see :mod:`.algorithms`), else the value at the start."""
        if self.value is not None:
            self.start = self.value.copy()
            self.read = self.start
            if read is not None and active is not None:
                self.read = self.start.copy()
                self.read[active] = read

    def flags(self, level: int, u: np.ndarray, cand: np.ndarray, row: np.ndarray,
              lane: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Outcome of the updates of one chunk's trips, in program order.

        ``u``: targets, ``cand``: candidates, ``row``/``lane``: position (trip
        order within the chunk, lane). All lanes of a trip load before any of
        them updates; atomics of one instruction apply in lane order. Returns
        (attempt, took): the lanes whose candidate beat the value they loaded
        (BFS: found the label unset) and the lanes whose update took effect.
        """
        n = len(u)
        if not n:
            z = np.zeros(0, dtype=bool)
            return z, z
        if self.kernel == "bfs":
            attempt = _bfs_attempts(np.asarray(u, dtype=np.int64),
                                    np.asarray(row, dtype=np.int64), self.value,
                                    np.uint32(level + 1), self._first_row())
            return attempt, attempt
        srt = np.lexsort((lane, row, u))
        us, rs = u[srt], row[srt]
        head = np.ones(n, dtype=bool)
        head[1:] = us[1:] != us[:-1]
        group = np.ones(n, dtype=bool)  # first entry of each (u, row)
        group[1:] = head[1:] | (rs[1:] != rs[:-1])
        start_val = self.value[us].astype(np.int64)
        # SSSP and CC: the least candidate wins
        cs = cand[srt].astype(np.int64)
        big = np.int64(1) << np.int64(34)
        useg = np.cumsum(head) - 1
        # running minimum over (row, lane) positions before each entry
        run_all = np.minimum.accumulate(cs - useg * big) + useg * big
        before = np.empty(n, dtype=np.int64)
        before[1:] = run_all[:-1]
        before[head] = np.iinfo(np.int64).max
        took_s = cs < np.minimum(before, start_val)
        # minimum over the earlier rows only (what a lane's load sees)
        gstart = np.flatnonzero(group)
        gmin = np.minimum.reduceat(cs, gstart)
        gseg = useg[gstart]
        run_g = np.minimum.accumulate(gmin - gseg * big) + gseg * big
        before_g = np.empty(len(gstart), dtype=np.int64)
        before_g[1:] = run_g[:-1]
        before_g[head[gstart]] = np.iinfo(np.int64).max
        seen = np.minimum(before_g[np.cumsum(group) - 1], start_val)
        attempt_s = cs < seen
        np.minimum.at(self.value, us[took_s], cs[took_s].astype(self.value.dtype))
        attempt = np.empty(n, dtype=bool)
        took = np.empty(n, dtype=bool)
        attempt[srt] = attempt_s
        took[srt] = took_s
        return attempt, took


#: how :func:`_host_lanes` finds a trip's lanes: one index range per trip (merged,
#: merged_aligned, chunked), a vertex per lane (naive) or a window over the warp's lists
_LANES_RANGE, _LANES_NAIVE, _LANES_WINDOW = 0, 1, 2


@njit(cache=True)
def _host_lanes(how, u, is_trip, k, first, warp_g, base, width, a, s, e, offsets, deg,
                lanes, live_v, own, addr, mask):
    """The lanes of rows whose instructions all read host arrays (element indices into
    the row's array): ``addr[i, lane]`` (0 where the lane reads nothing) and the row's
    lane mask, as :meth:`Materialiser.rows` computes them lane array by lane array.
    A prologue row reads nothing; a trip row's lane reads element ``idx`` where:
    ``_LANES_RANGE``, idx = a[u] + 32 k + lane within [s[u], e[u]); ``_LANES_NAIVE``,
    its vertex v = 32 warp + lane is active (bit ``lane`` of ``lanes[u]``) with more
    than k neighbours, idx = offsets[v] + k; ``_LANES_WINDOW``, idx = first[i] + lane
    within [s[u], e[u]) and in the list of a live vertex (``own``: each lane's owner)."""
    V = len(offsets) - 1
    for i in range(len(u)):
        m = 0
        w = u[i]
        for lane in range(WARP_SIZE):
            idx = 0
            ok = False
            if is_trip[i]:
                if how == _LANES_RANGE:
                    idx = a[w] + WARP_SIZE * k[i] + lane
                    ok = s[w] <= idx < e[w]
                elif how == _LANES_NAIVE:
                    v = warp_g[i] * WARP_SIZE + lane
                    if v < V and (lanes[w] >> lane) & 1 and k[i] < deg[v]:
                        idx = offsets[v] + k[i]
                        ok = True
                else:
                    idx = first[i] + lane
                    ok = s[w] <= idx < e[w] and live_v[own[i, lane]]
            if ok:
                addr[i, lane] = base[i] + idx * width[i]
                m |= 1 << lane
            else:
                addr[i, lane] = 0
        mask[i] = m


@njit(cache=True, inline="always")
def _lane_address(rule, target, base, width, valid, flagged, attempt, in_range, act, idx, v,
                  dst):
    """(whether the lane reads, its address) for an instruction's ``rule`` (``LANES_*``:
    valid, valid and flagged or attempting, every lane with a vertex, the active ones)
    and ``target`` (``TARGET_*``: the element ``idx``, its neighbour ``dst[idx]``, the
    lane's vertex ``v`` or the next, the flag at the base)."""
    if rule == LANES_VALID:
        on = valid
    elif rule == LANES_FLAGGED:
        on = valid and flagged
    elif rule == LANES_ATTEMPT:
        on = valid and attempt
    elif rule == LANES_ALL:
        on = in_range
    else:
        on = act
    if not on:
        return False, np.int64(0)
    e = np.int64(0)
    if target == TARGET_EDGE:
        e = idx
    elif target == TARGET_NBR:
        if valid:
            e = np.int64(dst[idx])
    elif target == TARGET_SELF:
        e = v
    elif target == TARGET_SELF1:
        e = v + 1
    return True, base + (0 if target == TARGET_FLAG else e * width)


@njit(cache=True)
def _device_lanes(rule, target, base, width, valid, flagged, attempt, in_range, act, idx,
                  vl, dst, addr, mask):
    """The lanes of rows that read device arrays too (:func:`_lane_address` of each from
    its lane arrays); ``addr[i, lane]`` is 0 and bit ``lane`` of ``mask[i]`` clear where
    the lane reads nothing."""
    for i in range(rule.shape[0]):
        m = 0
        for lane in range(WARP_SIZE):
            on, a = _lane_address(rule[i], target[i], base[i], width[i], valid[i, lane],
                                  flagged[i, lane], attempt[i, lane], in_range[i, lane],
                                  act[i, lane], idx[i, lane], vl[i, lane], dst)
            addr[i, lane] = a
            if on:
                m |= 1 << lane
        mask[i] = m


@njit(cache=True)
def _naive_head_lanes(heads, warp_g, k, V, active_v, offsets, deg, r, lane_of, idx, v_of):
    """The lanes of the naive walk's trip heads ``heads`` (rows) that hold a neighbour,
    in row then lane order, as ``np.nonzero`` gives them: the head's place in ``heads``,
    the lane, the neighbour's element index and the lane's vertex. Returns their count."""
    c = 0
    for h in range(heads.shape[0]):
        i = heads[h]
        ki = k[i]
        for lane in range(WARP_SIZE):
            v = warp_g[i] * WARP_SIZE + lane
            if v < V and active_v[v] and ki < deg[v]:
                r[c] = h
                lane_of[c] = lane
                idx[c] = np.int64(offsets[v]) + ki
                v_of[c] = v
                c += 1
    return c


@njit(cache=True)
def _naive_rows(rule, target, base, width, warp_g, k, is_trip, trip_of_row, V, active_v,
                offsets, deg, dst, head_att, head_tk, addr, mask):
    """:func:`_device_lanes` of the naive walk in one pass, its lanes computed in place:
    lane ``lane`` of row ``i`` holds vertex ``v = 32 warp_g[i] + lane`` (in range where a
    vertex has that id), active where ``active_v[v]``, valid on a trip row where it has
    more than ``k[i]`` neighbours (its ``k[i]``-th is element ``idx``); a trip row's
    lanes attempt and took their update as its trip's head (``trip_of_row``) did."""
    for i in range(rule.shape[0]):
        m = 0
        r = rule[i]
        ki = k[i]
        trip = is_trip[i]
        t = trip_of_row[i]
        if t < 0:       # no head before it in the chunk: the last one's, as numpy indexes
            t = head_att.shape[0] - 1
        # the heads' flags, where the rule reads them
        flags = (r == LANES_FLAGGED or r == LANES_ATTEMPT) and trip and t >= 0
        for lane in range(WARP_SIZE):
            v = warp_g[i] * WARP_SIZE + lane
            in_range = v < V
            act = in_range and active_v[v]
            valid = act and trip and ki < deg[v]
            on, a = _lane_address(r, target[i], base[i], width[i], valid,
                                  flags and head_tk[t, lane], flags and head_att[t, lane],
                                  in_range, act,
                                  np.int64(offsets[v]) + ki if valid else np.int64(0), v, dst)
            addr[i, lane] = a
            if on:
                m |= 1 << lane
        mask[i] = m


class Materialiser:
    """Turns row ranges of a launch plan into InstTable chunks."""

    def __init__(self, csr: CSR, kernel: str, variant: str, prog: Program, amap: AddressMap,
                 opcodes: list[str], state: DeviceState | None):
        self.csr = csr
        self.kernel = kernel
        self.variant = variant
        self.prog = prog
        self.amap = amap
        self.state = state
        instrs = prog.prologue + prog.trip
        self.n_pro = len(prog.prologue)
        self.P = len(prog.trip)
        self.i_op = np.array([i.op for i in instrs], dtype=np.uint8)
        self.i_width = np.array([i.width_B for i in instrs], dtype=np.int64)
        self.i_opcode = np.array([opcodes.index(i.opcode) for i in instrs], dtype=np.uint16)
        self.i_pc = np.array([i.pc for i in instrs], dtype=np.uint64)
        self.i_target = np.array([i.target for i in instrs], dtype=np.int8)
        self.i_lanes = np.array([i.lanes for i in instrs], dtype=np.int8)
        self.i_base = np.array([amap.base(i.region) for i in instrs], dtype=np.int64)
        self.device = any(not i.is_host_array for i in instrs)
        self.deg = csr.degrees() if variant == "naive" else None

    def rows(self, plan: LaunchPlan, r0: int, r1: int) -> InstTable:
        rows = np.arange(r0, r1, dtype=np.int64)
        u = np.searchsorted(plan.row_end, rows, side="right")
        q = rows - plan.row_start[u]
        pro = plan.pro[u]
        is_trip = q >= pro
        t = np.where(is_trip, q - pro, 0)
        k = t // self.P
        j = t % self.P
        instr = np.where(is_trip, self.n_pro + j, q)
        warp_g = plan.warp[u]
        n = len(rows)
        csr = self.csr
        V = csr.num_vertices
        naive = self.variant == "naive"
        if not self.device:
            addr, mask = self._host_only_lanes(plan, u, is_trip, k, instr, warp_g)
            return self._table(plan, instr, warp_g, addr, mask)

        # lanes: vertex of each lane (naive) and the element index of trip rows
        if self.variant == "balanced":
            # prologue rows: lane j holds vertex 8 w + j; trip rows: each lane its
            # window's element, for the vertex that owns it
            vp = (warp_g * CHUNK_VERTICES)[:, None] + _LANES[None, :]
            in_range = (_LANES[None, :] < CHUNK_VERTICES) & (vp < V)
            vpc = np.where(in_range, vp, 0)
            act = in_range & plan.is_active_v[vpc]
            b = np.zeros(n, dtype=np.int64)
            b[is_trip] = plan.win[plan.first_trip[u[is_trip]] + k[is_trip]]
            idx = b[:, None] + _LANES[None, :]
            own = window_owners(csr.offsets, b, warp_g * CHUNK_VERTICES)
            valid = (is_trip[:, None] & (idx >= plan.s[u][:, None]) & (idx < plan.e[u][:, None])
                     & plan.live_v[own])
            vl = np.where(is_trip[:, None], own, vpc)
        elif naive and plan.is_active_v is not None:
            return self._naive_rows(plan, is_trip, j, k, instr, warp_g)
        elif naive:
            vl = warp_g[:, None] * WARP_SIZE + _LANES[None, :]
            in_range = vl < V
            vlc = np.where(in_range, vl, 0)
            act = in_range & plan.lane_mask(u)      # a host-only plan: its units' lane bits
            idx = csr.offsets[vlc].astype(np.int64) + k[:, None]
            valid = act & (k[:, None] < self.deg[vlc]) & is_trip[:, None]
        else:
            v = plan.vertex[u]
            vl = np.broadcast_to(v[:, None], (n, WARP_SIZE))
            in_range = np.ones((n, WARP_SIZE), dtype=bool)
            act = in_range
            idx = (plan.a[u] + WARP_SIZE * k)[:, None] + _LANES[None, :]
            valid = (idx >= plan.s[u][:, None]) & (idx < plan.e[u][:, None]) & is_trip[:, None]
        idx_c = np.where(valid, idx, 0)

        target = self.i_target[instr]
        lanes_rule = self.i_lanes[instr]
        width = self.i_width[instr]
        base = self.i_base[instr]
        attempt, flagged = self._flags(plan, is_trip, j, valid, idx_c, vl, n)
        addr = np.empty((n, WARP_SIZE), dtype=np.uint64)
        mask = np.empty(n, dtype=np.uint32)
        _device_lanes(lanes_rule, target, base, width, valid, flagged, attempt, in_range, act,
                      idx_c, np.asarray(vl, dtype=np.int64), csr.dst, addr.view(np.int64), mask)
        return self._table(plan, instr, warp_g, addr, mask)

    def _host_only_lanes(self, plan: LaunchPlan, u, is_trip, k, instr, warp_g):
        """(addr, mask) of rows whose instructions all read host arrays
        (:func:`_host_lanes`, one compiled pass instead of lane arrays)."""
        n = len(u)
        offsets = np.ascontiguousarray(self.csr.offsets).view(np.int64)
        none_b, none_i = np.zeros(0, dtype=np.bool_), np.zeros(0, dtype=np.int64)
        first, own = none_i, np.zeros((0, WARP_SIZE), dtype=np.int64)
        live_v = none_b
        lanes = np.zeros(0, dtype=np.uint32)
        deg = none_i
        if self.variant == "balanced":
            how = _LANES_WINDOW
            first = np.zeros(n, dtype=np.int64)
            trip = np.flatnonzero(is_trip)
            first[trip] = plan.win[plan.first_trip[u[trip]] + k[trip]]
            own = window_owners(self.csr.offsets, first, warp_g * CHUNK_VERTICES)
            live_v = plan.live_v
        elif self.variant == "naive":
            how = _LANES_NAIVE
            lanes, deg = plan.lanes, self.deg
        else:
            how = _LANES_RANGE
        addr = np.empty((n, WARP_SIZE), dtype=np.uint64)
        mask = np.empty(n, dtype=np.uint32)
        _host_lanes(how, u.astype(np.int64), is_trip, k.astype(np.int64), first,
                    warp_g.astype(np.int64), self.i_base[instr], self.i_width[instr],
                    plan.a, plan.s, plan.e, offsets, deg, lanes, live_v, own,
                    addr.view(np.int64), mask)
        return addr, mask

    def _table(self, plan: LaunchPlan, instr, warp_g, addr, mask) -> InstTable:
        """The rows' InstTable: those with a lane that reads (``mask``) and their lane
        addresses ``addr``."""
        n = len(instr)
        keep = mask != 0
        cols = {
            "launch": np.full(n, plan.launch, dtype=INST_DTYPES["launch"]),
            "cta": (warp_g // WARPS_PER_CTA).astype(INST_DTYPES["cta"]),
            "warp": (warp_g % WARPS_PER_CTA).astype(INST_DTYPES["warp"]),
            "pc": self.i_pc[instr],
            "opcode": self.i_opcode[instr],
            "op": self.i_op[instr],
            "space": np.full(n, SPACE_GLOBAL, dtype=np.uint8),
            "width_B": self.i_width[instr].astype(np.uint8),
            "mask": mask,
        }
        if not keep.all():
            cols = {name: col[keep] for name, col in cols.items()}
            addr = addr[keep]
        return InstTable(**cols, addrs=addr)

    def _naive_rows(self, plan: LaunchPlan, is_trip, j, k, instr, warp_g) -> InstTable:
        """The rows of a naive walk that reads device arrays (:func:`_naive_rows`), its
        lanes computed where they are used instead of as lane arrays."""
        csr = self.csr
        n = len(instr)
        warp_g = np.asarray(warp_g, dtype=np.int64)
        k = np.asarray(k, dtype=np.int64)
        head = is_trip & (j == 0)
        heads = np.flatnonzero(head)
        most = len(heads) * WARP_SIZE
        r, lane = np.empty(most, dtype=np.int64), np.empty(most, dtype=np.int64)
        idx, v = np.empty(most, dtype=np.int64), np.empty(most, dtype=np.int64)
        found = _naive_head_lanes(heads, warp_g, k, int(csr.num_vertices), plan.is_active_v,
                                  csr.offsets, self.deg, r, lane, idx, v)
        head_att, head_tk = self._head_flags(plan, len(heads), r[:found], lane[:found],
                                             idx[:found], v[:found])
        addr = np.empty((n, WARP_SIZE), dtype=np.uint64)
        mask = np.empty(n, dtype=np.uint32)
        _naive_rows(self.i_lanes[instr], self.i_target[instr], self.i_base[instr],
                    self.i_width[instr], warp_g, k, np.asarray(is_trip, dtype=bool),
                    np.cumsum(head) - 1, int(csr.num_vertices), plan.is_active_v,
                    csr.offsets, self.deg, csr.dst, head_att, head_tk, addr.view(np.int64),
                    mask)
        return self._table(plan, instr, warp_g, addr, mask)

    def _head_flags(self, plan, n_heads, r, l, ii, vv) -> tuple[np.ndarray, np.ndarray]:
        """Per (trip head, lane): (attempt, took) of the trip's neighbour update, from the
        heads' lanes that hold a neighbour (head ``r``, lane ``l``, element ``ii``,
        the lane's vertex ``vv``; in head then lane order)."""
        head_att = np.zeros((n_heads, WARP_SIZE), dtype=bool)
        head_tk = np.zeros((n_heads, WARP_SIZE), dtype=bool)
        st = self.state
        if st is None or st.value is None or not n_heads:
            return head_att, head_tk
        uu = self.csr.dst[ii].astype(np.int64)
        if self.kernel == "sssp":
            cand = np.minimum(st.read[vv].astype(np.int64) + self.csr.weights[ii], int(INF_U32))
        elif self.kernel == "cc":
            cand = st.read[vv].astype(np.int64)
        else:
            cand = np.zeros(len(uu), dtype=np.int64)
        att, tk = st.flags(plan.level, uu, cand, r.astype(np.int64), l.astype(np.int64))
        head_att[r, l] = att
        head_tk[r, l] = tk
        return head_att, head_tk

    def _flags(self, plan, is_trip, j, valid, idx_c, vl, n) -> tuple[np.ndarray, np.ndarray]:
        """Per (row, lane): (attempt, took) of the trip's neighbour update."""
        attempt = np.zeros((n, WARP_SIZE), dtype=bool)
        took = np.zeros((n, WARP_SIZE), dtype=bool)
        st = self.state
        if st is None or st.value is None:
            return attempt, took
        heads = np.flatnonzero(is_trip & (j == 0))
        if not len(heads):
            return attempt, took
        r, l = np.nonzero(valid[heads])
        head_att, head_tk = self._head_flags(plan, len(heads), r, l, idx_c[heads][r, l],
                                             vl[heads][r, l])
        trip_of_row = np.cumsum(is_trip & (j == 0)) - 1
        attempt[is_trip] = head_att[trip_of_row[is_trip]]
        took[is_trip] = head_tk[trip_of_row[is_trip]]
        return attempt, took


def launch_chunks(csr: CSR, kernel: str, variant: str, prog: Program, amap: AddressMap,
                  opcodes: list[str], run: AlgorithmRun, source: int, include_device: bool,
                  chunk_rows: int) -> Iterator[InstTable]:
    """Every launch's InstTable chunks, in order."""
    id_bytes = amap.id_bytes
    state = DeviceState(csr, kernel, source) if include_device else None
    mat = Materialiser(csr, kernel, variant, prog, amap, opcodes, state)
    P = len(prog.trip)
    for launch, active in enumerate(run.active):
        plan = plan_launch(csr, variant, prog, active, launch, include_device, id_bytes)
        if state is not None:
            state.begin(active, run.read[launch] if run.read is not None else None)
        for r0, r1 in chunk_bounds(plan, P, chunk_rows):
            table = mat.rows(plan, r0, r1)
            if len(table):
                yield table
        if state is not None and state.value is not None:
            _check_launch(state, run, launch, kernel)


def _check_launch(state: DeviceState, run: AlgorithmRun, launch: int, kernel: str) -> None:
    if kernel == "bfs":
        changed = np.flatnonzero(state.value == launch + 1)
    else:
        changed = np.flatnonzero(state.value < state.start)
    expected = run.active[launch + 1] if launch + 1 < len(run.active) else np.zeros(0, np.int64)
    if not np.array_equal(changed, expected):
        raise RuntimeError(f"{kernel} launch {launch}: the device updates reach "
                           f"{len(changed)} vertices, the functional run {len(expected)}")
