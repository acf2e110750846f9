"""A compact stand-in for a walk's device accesses: one request per dependent step.

A twin of a large graph keeps only the edge list's requests: the kernel's
device-array accesses (:mod:`.program`: each vertex's test and offsets, each
trip's reads and updates of its neighbours' state) are about 14 times as many
requests, since a trip's neighbours sit at up to 32 random addresses. But what
those accesses cost a warp is mostly their latency, in a fixed order: the walk
(gpu_kernels/traversal/walk.cuh) tests its vertex and reads its offsets, then in
groups of ``load_ahead`` trips issues the group's host loads and visits the
trips one after another, each visit reading (and for SSSP and CC atomically
lowering) the neighbours' values before the next group is issued. A warp with
a long list (a hub of a Kronecker graph) runs that chain thousands of times in
one launch, alone.

:func:`with_visit_skeleton` adds that chain to a host-only request stream
with one device request per dependent step instead of one per lane:

- per active unit (a vertex; a warp of 32 vertices for ``naive``, of 8 for
  ``balanced``): one request
  for its test (the program's ``check`` instructions) and, where it has
  ``active`` instructions, one for them (its offsets: issued together);
- per trip: one request per device instruction of the trip that returns data
  (loads, and atomics that are not reductions), in program order; stores and
  reductions are left out (the warp does not wait for them).

Each request is one 32 B read of the instruction's array at the unit's vertex;
an atomic's (SSSP's and CC's ``atomicMin``) is marked in the stream's ``atomic``.
A visit's request stands for the lines its lanes read (the stream's ``lines``:
the distinct 128 B lines of the array at the trip's neighbours), which the SM's
issue stage charges (:mod:`hostlink.model.des.events`); the prologue's stand
for one line each.
The host loads keep their requests; their instruction numbers move to make
room, in the kernel's order at ``load_ahead``, and the result carries the
walk's dependences (:func:`hostlink.traces.emulator.issue_order.walk_waits`).

Assumptions: the steps are those of the device-inclusive twin with every lane
merged into one request, so a visit costs one device access latency whatever
its lanes (the neighbours' values of a trip are read by one instruction, and
the model's device requests queue only on the device's bandwidth, which the
dropped requests would barely load); a trip's atomic is counted whether or not
a lane attempts it; inactive vertices' tests (CTAs with no active vertex) are
left out, as in the host-only stream: their cost is the launch's CTA dispatch.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from hostlink.model.page_advice import release_freed_memory
from hostlink.model.workload import REQUEST_DTYPES, SPACE_DEVICE, RequestStream
from hostlink.model.geometry import LINE_B, SECTOR_B
from hostlink.traces.coalescer import REDUCTION_PREFIX
from hostlink.traces.emulator.emit import CHUNK_VERTICES, plan_launch
from hostlink.traces.emulator.program import full_program, program
from hostlink.traces.schema import OP_ATOMIC, OP_LOAD, WARP_SIZE


class SkeletonError(ValueError):
    """The host-only stream does not match the emulation's walk."""


def _steps(kernel: str, id_bytes: int):
    """(prologue instructions, visit instructions): one device request each, in program
    order."""
    full = full_program(kernel, id_bytes)
    pro = [full.check[0]] + ([full.active[0]] if full.active else [])
    visit = [i for i in full.trip if not i.is_host_array
             and (i.op == OP_LOAD or (i.op == OP_ATOMIC
                                       and not i.opcode.startswith(REDUCTION_PREFIX)))]
    return pro, visit


#: bits of an element index in a balanced window's search key (unit << shift | index)
_KEY_SHIFT = 36
#: edges of one batch of :func:`trip_lines` (bounds its working memory)
TRIP_LINES_BATCH_EDGES = 1 << 23
#: the most lines one request stands for (RequestStream.lines is u16)
LINES_MAX = np.iinfo(np.uint16).max


@njit(cache=True)
def _distinct_per_group(group, value, n_groups):
    """Distinct values of each group 0 .. n_groups - 1 (``group[i]`` the group of
    ``value[i]``): the rows bucketed by group (one counting pass), then each bucket,
    a trip's at most 32 lanes, sorted on its own. O(n) but for the small sorts,
    where one sort of (group, value) pairs is O(n log n)."""
    start = np.zeros(n_groups + 1, dtype=np.int64)
    for g in group:
        start[g + 1] += 1
    for g in range(n_groups):
        start[g + 1] += start[g]
    fill = start[:-1].copy()
    bucket = np.empty(len(value), dtype=value.dtype)
    for i in range(len(value)):
        g = group[i]
        bucket[fill[g]] = value[i]
        fill[g] += 1
    out = np.zeros(n_groups, dtype=np.int64)
    for g in range(n_groups):
        lo, hi = start[g], start[g + 1]
        if hi == lo:
            continue
        seg = np.sort(bucket[lo:hi])
        d = 1
        for j in range(1, hi - lo):
            if seg[j] != seg[j - 1]:
                d += 1
        out[g] = d
    return out


@njit(cache=True)
def _window_trip_lines(s, e, a, trip_off, dst, base_mod, width, counts):
    """:func:`trip_lines` of the warp-per-list variants, one pass: unit u's trip t
    reads the edges of window ``[a + 32 t, a + 32 t + 32)`` inside ``[s, e)``; its
    lines (``(base_mod + dst x width) // 128``) are sorted in a 32-entry buffer and
    the distinct ones counted."""
    buf = np.empty(WARP_SIZE, dtype=np.int64)
    for u in range(len(s)):
        lo, hi = s[u], e[u]
        t = trip_off[u]
        start = a[u]
        while start < hi:
            i0 = max(start, lo)
            i1 = min(start + WARP_SIZE, hi)
            n = 0
            for i in range(i0, i1):
                x = (base_mod + np.int64(dst[i]) * width) // LINE_B
                j = n                       # insertion into the sorted buffer
                while j > 0 and buf[j - 1] > x:
                    buf[j] = buf[j - 1]
                    j -= 1
                buf[j] = x
                n += 1
            d = 1 if n else 0
            for j in range(1, n):
                if buf[j] != buf[j - 1]:
                    d += 1
            counts[t] += d
            t += 1
            start += WARP_SIZE


def trip_lines(csr, plan, variant: str, base: int, width_B: int,
               active: np.ndarray | None = None) -> np.ndarray:
    """Distinct 128 B lines of an array (at ``base``, ``width_B`` per vertex) that each
    trip of ``plan`` reads at its neighbours, one count per trip in unit order (unit
    u's trips at ``cumsum(plan.trips) - plan.trips``); every lane that has an edge
    counts, attempted or not. A merged unit's trip t reads edges ``a + 32 t`` to
    ``a + 32 t + 31`` of ``[s, e)``; a naive warp's trip t the t-th edge of each of its
    active vertices; a balanced warp's trip t the elements of its live lists in its
    window t. ``active``: the launch's active vertices (sorted), where the caller has
    them (else read off the plan's ``lanes`` or ``is_active_v``, a pass over every
    vertex)."""
    T = plan.trips.astype(np.int64)
    trip_off = np.cumsum(T) - T
    counts = np.zeros(int(T.sum()), dtype=np.int64)
    if not len(T):
        return counts
    offsets = csr.offsets          # u64; only the units' entries are read (no copy of V)
    if variant in ("naive", "balanced"):
        # lanes: the active vertices of each unit's warp
        per_warp = WARP_SIZE if variant == "naive" else CHUNK_VERTICES
        if active is not None:
            v = np.asarray(active, dtype=np.int64)
        elif plan.lanes is not None:
            unit, lane = np.nonzero(plan.lane_mask())
            v = plan.warp[unit] * WARP_SIZE + lane
        else:
            v = np.flatnonzero(plan.is_active_v)
        unit_of = np.searchsorted(plan.warp, v // per_warp)
        keep = (unit_of < len(plan.warp)) & (plan.warp[np.minimum(unit_of, len(plan.warp) - 1)]
                                              == v // per_warp)
        v, unit_of = v[keep], unit_of[keep]
        lo, hi = offsets[v].astype(np.int64), offsets[v + 1].astype(np.int64)
        first_trip = trip_off[unit_of]
        if variant == "balanced":
            # a window's key: its unit, then its first element (windows ascend in both)
            win_unit = np.repeat(np.arange(len(T), dtype=np.int64), T)
            win_key = (win_unit << _KEY_SHIFT) | plan.win.astype(np.int64)
    else:
        _window_trip_lines(plan.s.astype(np.int64), plan.e.astype(np.int64),
                           plan.a.astype(np.int64), trip_off, csr.dst, int(base % LINE_B),
                           int(width_B), counts)
        return np.maximum(counts, 1)
    deg = hi - lo
    ends = np.cumsum(deg)
    start = 0
    while start < len(deg):
        stop = int(np.searchsorted(ends, (ends[start] - deg[start]) + TRIP_LINES_BATCH_EDGES,
                                   side="right"))
        # whole units per batch (a naive trip's lanes are several vertices)
        stop = int(np.searchsorted(unit_of, unit_of[max(stop, start + 1) - 1], side="right"))
        d = deg[start:stop]
        n = int(d.sum())
        if n:
            owner = np.repeat(np.arange(start, stop), d)
            k = np.arange(n) - np.repeat(np.cumsum(d) - d, d)          # edge index in its list
            idx = lo[owner] + k
            if variant == "naive":
                trip = first_trip[owner] + k
            else:
                trip = np.searchsorted(win_key, (unit_of[owner] << _KEY_SHIFT) | idx,
                                       side="right") - 1
            # lines counted from the array's first (< 2^34 for any array of < 2^41 B)
            line = ((np.uint64(base % LINE_B) + csr.dst[idx].astype(np.uint64)
                     * np.uint64(width_B)) // np.uint64(LINE_B))
            t0 = int(trip.min())
            span = int(trip.max()) - t0 + 1
            counts[t0:t0 + span] += _distinct_per_group(trip - t0, line, span)
        start = stop
    return np.maximum(counts, 1)


@njit(cache=True)
def _fill_steps(u0, u1, w_u, T, new_base, vtx, trip_off, npro, nvis, P, A, pro_base, pro_w,
                vis_base, vis_w, vis_atomic, counts, warp, inst, addr, useful_B, lines, atomic):
    """The device steps of units ``u0:u1`` into the columns given (module notes): per
    unit its ``npro`` prologue steps, then for each trip ``t`` its ``nvis`` visits,
    numbered after the host loads of the trip's group of ``A`` trips (``P`` a trip);
    a step reads a 32 B sector of its array at the unit's vertex ``vtx``; a visit
    stands for ``counts[s, trip_off[u] + t]`` lines (at most :data:`LINES_MAX`)."""
    r = 0
    sector = np.uint64(SECTOR_B)
    for u in range(u0, u1):
        base_u = new_base[u]
        for j in range(npro + T[u] * nvis):
            if j < npro:
                step = base_u + j
                base, width, n_lines, is_atomic = pro_base[j], pro_w[j], 1, False
            else:
                t, s = (j - npro) // nvis, (j - npro) % nvis
                g = t // A
                n_g = min(A, T[u] - g * A)
                step = base_u + npro + g * A * (P + nvis) + n_g * P + (t - g * A) * nvis + s
                base, width = vis_base[s], vis_w[s]
                n_lines, is_atomic = counts[s, trip_off[u] + t], vis_atomic[s]
            a = base + vtx[u] * width
            warp[r] = w_u[u]
            inst[r] = step
            addr[r] = a - a % sector
            useful_B[r] = width
            lines[r] = min(n_lines, LINES_MAX)
            atomic[r] = is_atomic
            r += 1


@njit(cache=True, inline="always")
def _row_less(la, wa, ia, aa, x, y):
    """Whether row ``x`` comes before row ``y`` in (launch, warp, inst, addr) order."""
    if la[x] != la[y]:
        return la[x] < la[y]
    if wa[x] != wa[y]:
        return wa[x] < wa[y]
    if ia[x] != ia[y]:
        return ia[x] < ia[y]
    return aa[x] < aa[y]


@njit(cache=True)
def _is_sorted(la, wa, ia, aa):
    """Whether the rows are in (launch, warp, inst, addr) order."""
    for r in range(1, len(la)):
        if _row_less(la, wa, ia, aa, r, r - 1):
            return False
    return True


@njit(cache=True)
def _merge_flags(la, wa, ia, aa, lb, wb, ib, ab):
    """Per row of the stable merge of sorted runs a and b (ties: a first): 1 where it
    comes from b."""
    na, nb = len(la), len(lb)
    flags = np.empty(na + nb, dtype=np.uint8)
    x, y = 0, 0
    for k in range(na + nb):
        take_b = False
        if y < nb:
            if x >= na:
                take_b = True
            elif la[x] != lb[y]:
                take_b = lb[y] < la[x]
            elif wa[x] != wb[y]:
                take_b = wb[y] < wa[x]
            elif ia[x] != ib[y]:
                take_b = ib[y] < ia[x]
            else:
                take_b = ab[y] < aa[x]
        if take_b:
            flags[k] = 1
            y += 1
        else:
            flags[k] = 0
            x += 1
    return flags


def _device_rows(la, wa, ia, aa, lb, wb, ib, ab) -> np.ndarray | None:
    """Where the stable (launch, warp, inst, addr) order of the host rows (a) and the
    device steps after them (b) takes a step (uint8 per row), if each is already in that
    order (as the coalescer and the steps' units leave them); else None."""
    if not (_is_sorted(la, wa, ia, aa) and _is_sorted(lb, wb, ib, ab)):
        return None
    return _merge_flags(la, wa, ia, aa, lb, wb, ib, ab)


@njit(cache=True)
def _merge_into(a, b, from_b, out):
    """``out[k]``: the next row of ``b`` where ``from_b[k]``, else the next of ``a``."""
    x, y = 0, 0
    for k in range(len(from_b)):
        if from_b[k]:
            out[k] = b[y]
            y += 1
        else:
            out[k] = a[x]
            x += 1


def _merged_column(a: np.ndarray, b: np.ndarray, from_b: np.ndarray) -> np.ndarray:
    """Column ``a`` (host rows) and ``b`` (steps) in the merged order ``from_b``."""
    out = np.empty(len(from_b), dtype=a.dtype)
    _merge_into(a, b.astype(a.dtype, copy=False), from_b, out)
    return out


#: device steps built at a time by :func:`with_visit_skeleton` (bounds its working memory)
SKELETON_BATCH_STEPS = 1 << 22
#: host rows renumbered at a time by :func:`_host_instructions`: about ten 8-byte
#: temporaries a row, so a batch's working memory is about 80 MB
HOST_BATCH_ROWS = 1 << 20


def _host_instructions(host: dict, plans: list, P: int, A: int, npro: int,
                       nvis: int) -> np.ndarray:
    """The host requests' instruction numbers in the kernel's order with the device
    steps in place (module notes), launch by launch; ``plans[launch]`` is None for a
    launch with no unit, else its units' (warp, trips, host base, new base)."""
    n_launch = len(plans)
    launch = host["launch"]
    if len(launch) and int(launch.max()) >= n_launch:
        r = int(np.argmax(launch >= n_launch))
        raise SkeletonError(f"request {r} (launch {int(launch[r])}) falls in no launch of "
                            "the emulated walk")
    new_inst = np.empty(len(launch), dtype=REQUEST_DTYPES["inst"])
    by_launch = np.argsort(launch, kind="stable")      # each launch's rows, found once
    ends = np.concatenate(([0], np.cumsum(np.bincount(launch, minlength=n_launch))))
    for li, plan in enumerate(plans):
        launch_rows = by_launch[ends[li]:ends[li + 1]]
        if not len(launch_rows):
            continue
        if plan is None:
            raise SkeletonError(f"request {int(launch_rows[0])} (launch {li}) falls in no "
                                "launch of the emulated walk")
        w_u, T, old_base, new_base = plan
        old_len = T * P
        key_u = (w_u << 32) | old_base
        for r0 in range(0, len(launch_rows), HOST_BATCH_ROWS):
            rows = launch_rows[r0:r0 + HOST_BATCH_ROWS]
            new_inst[rows] = _renumbered(host, rows, li, w_u, key_u, old_base, old_len,
                                         new_base, P, A, npro, nvis)
    return new_inst


def _renumbered(host: dict, rows: np.ndarray, li: int, w_u: np.ndarray,
                key_u: np.ndarray, old_base: np.ndarray, old_len: np.ndarray,
                new_base: np.ndarray, P: int, A: int, npro: int, nvis: int) -> np.ndarray:
    """:func:`_host_instructions` for ``rows`` of launch ``li`` (``key_u``: its units'
    (warp, host base) keys)."""
    warp = host["warp"][rows].astype(np.int64)
    inst = host["inst"][rows].astype(np.int64)
    u = np.searchsorted(key_u, (warp << 32) | inst, side="right") - 1
    uc = np.maximum(u, 0)
    k = inst - old_base[uc]
    bad = (u < 0) | (w_u[uc] != warp) | (k >= old_len[uc])
    if bad.any():
        r = int(np.flatnonzero(bad)[0])
        raise SkeletonError(f"launch {li}: warp {int(warp[r])} instruction {int(inst[r])} "
                            "is no trip of the emulated walk")
    t, p = k // P, k % P
    g = t // A
    return new_base[uc] + npro + g * A * (P + nvis) + (t - g * A) * P + p


def with_visit_skeleton(stream: RequestStream | list[RequestStream], emulation,
                        load_ahead: int) -> RequestStream:
    """``stream`` (the host-only requests of ``emulation``, in any row order) with the
    walk's dependent device steps added (module notes), waits marked. The steps are
    built ``SKELETON_BATCH_STEPS`` at a time in the stream's own column types, so a
    scale-24 walk's tens of millions of steps need little beyond the result. A list
    holding the stream hands it over: it is taken out of the list, and each of its
    columns is let go once the result's is built (the caller keeps no other
    reference), so the two streams are not held whole at once."""
    from hostlink.traces.emulator.issue_order import walk_waits

    if isinstance(stream, list):
        stream = stream.pop()
    host = {name: getattr(stream, name) for name in REQUEST_DTYPES}
    launches, n_host = stream.launches, len(stream)
    del stream

    csr, kernel, variant = emulation.csr, emulation.kernel, emulation.variant
    id_bytes = emulation.id_bytes
    amap = emulation.address_map
    host_prog = program(kernel, id_bytes, False)
    P = len(host_prog.trip)                 # host loads per trip (emit.py's P)
    A = max(1, int(load_ahead))             # trips per group
    pro, visit = _steps(kernel, id_bytes)
    npro, nvis = len(pro), len(visit)
    pro_base = np.array([amap.base(i.region) for i in pro], dtype=np.uint64)
    pro_w = np.array([i.width_B for i in pro], dtype=np.uint64)
    vis_base = np.array([amap.base(i.region) for i in visit], dtype=np.uint64)
    vis_w = np.array([i.width_B for i in visit], dtype=np.uint64)
    vis_atomic = np.array([i.op == OP_ATOMIC for i in visit], dtype=np.bool_)

    plans: list[tuple | None] = []
    dev_parts: list[dict[str, np.ndarray]] = []
    for li, active in enumerate(emulation.active):
        plan = plan_launch(csr, variant, host_prog, active, li, False, id_bytes)
        w_u = plan.warp.astype(np.int64)
        T = plan.trips.astype(np.int64)
        if not len(w_u):
            plans.append(None)
            continue
        # naive and balanced: the warp's first vertex
        vtx = np.where(plan.vertex >= 0, plan.vertex,
                       w_u * (CHUNK_VERTICES if variant == "balanced" else WARP_SIZE))
        first = np.ones(len(w_u), dtype=bool)
        first[1:] = w_u[1:] != w_u[:-1]
        seg = np.cumsum(first) - 1
        starts = np.flatnonzero(first)

        def base_of(lengths):
            c = np.cumsum(lengths) - lengths
            return c - c[starts][seg]
        new_base = base_of(npro + T * (P + nvis))
        plans.append((w_u, T, base_of(T * P), new_base))

        # device steps: the prologue, then each trip's visits after its group's host loads
        trip_off = np.cumsum(T) - T
        counts = (np.stack([trip_lines(csr, plan, variant, int(vis_base[k]), int(vis_w[k]),
                                       active) for k in range(nvis)]).astype(np.int64)
                  if nvis else np.zeros((0, 1), dtype=np.int64))
        vertex = vtx.astype(np.uint64)
        tot = npro + T * nvis
        cum = np.cumsum(tot)
        u0 = 0
        while u0 < len(w_u):
            u1 = int(np.searchsorted(cum, cum[u0] - tot[u0] + SKELETON_BATCH_STEPS, side="right"))
            u1 = max(u1, u0 + 1)
            n = int(cum[u1 - 1] - cum[u0] + tot[u0])
            part = {"warp": np.empty(n, dtype=REQUEST_DTYPES["warp"]),
                    "inst": np.empty(n, dtype=REQUEST_DTYPES["inst"]),
                    "addr": np.empty(n, dtype=REQUEST_DTYPES["addr"]),
                    "useful_B": np.empty(n, dtype=REQUEST_DTYPES["useful_B"]),
                    "lines": np.empty(n, dtype=np.uint16),
                    "atomic": np.empty(n, dtype=np.bool_)}
            _fill_steps(u0, u1, w_u, T, new_base, vertex, trip_off, npro, nvis,
                        P, A, pro_base, pro_w, vis_base, vis_w, vis_atomic, counts,
                        part["warp"], part["inst"], part["addr"], part["useful_B"],
                        part["lines"], part["atomic"])
            part.update({
                "launch": np.full(n, li, dtype=REQUEST_DTYPES["launch"]),
                "size_B": np.full(n, SECTOR_B, dtype=REQUEST_DTYPES["size_B"]),
                "space": np.full(n, SPACE_DEVICE, dtype=REQUEST_DTYPES["space"]),
                "is_write": np.zeros(n, dtype=REQUEST_DTYPES["is_write"])})
            dev_parts.append(part)
            u0 = u1
    host["inst"] = _host_instructions(host, plans, P, A, npro, nvis)   # in the new order

    def device_column(name, dtype):
        # the steps of every batch in turn; each batch's part is freed once joined
        parts = [d.pop(name) for d in dev_parts]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)

    def host_column(name):
        if name == "lines":
            return np.ones(n_host, dtype=np.uint16)
        if name == "atomic":
            return np.zeros(n_host, dtype=np.bool_)
        return host[name]

    names = list(REQUEST_DTYPES) + ["lines"] + (["atomic"] if vis_atomic.any() else [])
    dtypes = dict(REQUEST_DTYPES, lines=np.uint16, atomic=np.bool_)
    keys = ("launch", "warp", "inst", "addr")
    dev = {name: device_column(name, dtypes[name]) for name in keys}
    release_freed_memory()          # the steps' parts: many small arrays, now joined
    # both parts in program order: merged (a flag per row); else a stable sort of the
    # host rows, then the steps
    from_dev = _device_rows(*(host_column(k) for k in keys), *(dev[k] for k in keys))
    order = None if from_dev is not None else np.lexsort(
        tuple(np.concatenate([host_column(k), dev[k]]) for k in keys[::-1]))
    cols = {}
    for name in names:
        dev_col = dev.pop(name) if name in dev else device_column(name, dtypes[name])
        cols[name] = (_merged_column(host_column(name), dev_col, from_dev) if order is None
                      else np.concatenate([host_column(name), dev_col])[order])
        del dev_col
        host.pop(name, None)        # the host rows' column, now merged
    lines, atomic = cols.pop("lines"), cols.pop("atomic", None)
    out = RequestStream(**cols, launches=launches, lines=lines, atomic=atomic)
    return out.with_waits(walk_waits(out))
