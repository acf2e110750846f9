"""The compiled zero-copy discrete-event engine (Numba).

Same model as :mod:`hostlink.model.des.reference`; the model itself is stated
in :mod:`hostlink.model.des.events`. This engine is written for speed. It
needs no general event heap: every server is first come first served and a
request's path through the link, DRAM or device memory is fixed once it
starts, so its completion time is known then, and completions on one path
come in the order the path accepted them. The pending events therefore sit in
ten sorted queues (host reads, host reads delayed by an IOMMU walk, device
reads, page walks, host writes, device writes, host reads whose credits
have returned on their GPU-internal way back, ``host_path_ns``, which enter
it in time order at a fixed delay, device atomics that return, whose
latency is a read's plus a constant, device reads the L2 misses, likewise,
and warps whose writes to a launch's shared words one server serves in turn)
and the next event is the
earliest head; among equal times the one scheduled first (earliest
scheduling time, then sequence), as in SimPy. Each event costs O(1).

After each event the engine, in this order, grants freed credits to the
reads already waiting, starts CTAs into free slots, and lets the warps that
can issue do so round robin (one instruction per warp per round, warps in the
order they became ready, a new CTA's in id order); each request issued enters
its path at once (a read joins the credit queue and is granted if it is at
its head and the credits are free), so requests reach the link in issue order.
Where the SM's issue stage costs time (``issue_gap_ns``, ``sm_request_ns``),
every read passes an eleventh structure, a 4-ary heap ordered by (time,
sequence), twice: once reaching its SM's queue (then it takes the SM first
come first served) and once leaving it unless it leaves at once. An
instruction holds one entry for its reads' arrivals at a time (each takes the
last one's place), so the heap holds at most an entry per instruction in
flight and per read queued at an SM. Requests of different SMs leave out of
issue order, so a ring would not stay sorted. Costs O(log n) per event. An
instruction's first read, where it reaches its SM the moment the instruction
issues (the warp was free), waits in a ring instead, in issue order, at O(1).

A request's costs (service times and credit needs) are read from the cost
table through its class (``cid``, :class:`hostlink.model.des.events.CostTable`):
4 bytes a request where the columns would take 64.

The queues are rings in one flat array, each sized once from a bound it
cannot exceed (host reads holding credits <= tags; requests issued but not done <=
resident warps x loads in flight x requests per instruction), so the loop
never allocates.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from hostlink.model.des.events import (DEVICE_ATOMIC, DEVICE_READ, DEVICE_WRITE, HOST_READ,
                                       HOST_WRITE, L2_TURN, N_KINDS, STAT, STAT_NAMES,
                                       DesInputs, DesOutput)

_N_STATS = len(STAT_NAMES)
_S_UP, _S_DRAM = STAT["busy_up_ns"], STAT["busy_dram_ns"]
_S_DOWN, _S_DEV = STAT["busy_down_ns"], STAT["busy_dev_ns"]
_S_READS, _S_LAT = STAT["host_reads"], STAT["sum_lat_ns"]
_S_WAIT, _S_PEAK = STAT["sum_wait_ns"], STAT["peak_outstanding"]
_S_WALKS, _S_WALKWAIT = STAT["walks"], STAT["sum_walk_wait_ns"]

# Event queues, then the credit wait queue (same ring storage; time = ready time).
# _Q_RETURN: host reads whose credits have returned, on the GPU-internal path to the warp.
# _Q_ATOM: device atomics that return, whose latency exceeds a device read's by a constant.
# _Q_DRAM: device reads the L2 misses, whose latency exceeds a device read's by a constant.
# _Q_SHARED: warps whose writes to a launch's shared words the L2 serves (one server).
(_Q_HOST, _Q_IOMMU, _Q_DEV, _Q_WALK, _Q_HWRITE, _Q_DWRITE, _Q_RETURN, _Q_ATOM, _Q_DRAM,
 _Q_SHARED, _Q_WAIT) = range(11)
_NQ = 10
# Float state: current time and the times the servers become free.
_F_NOW, _F_UP, _F_DRAM, _F_DOWN, _F_DEV, _F_SHARED = 0, 1, 2, 3, 4, 5
# Integer state: free credits, reads holding tags, event sequence.
_I_TAGS, _I_HDRS, _I_DATA, _I_OUT, _I_SEQ, _I_WALKER = 0, 1, 2, 3, 4, 5
_S_ISSUE = STAT["sum_issue_ns"]


@njit(cache=True, inline="always")
def _span(k, j, n, issue_gap, spread):
    """Time from the arrival at its SM of line ``j`` of an instruction (a request of kind
    ``k``) to that of line ``j + n - 1``: ``n - 1`` gaps of its kind, or for a device
    atomic whose lines spread (``spread`` >= 0) ``spread * log2((j + n) / (j + 1))``."""
    if k == DEVICE_ATOMIC and spread >= 0.0:
        return spread * (np.log2(j + n) - np.log2(j + 1.0))
    return (n - 1) * issue_gap[k]


@njit(cache=True, inline="always")
def _line(r, kind, line_ix, spreads):
    """The lines of request ``r``'s instruction before it, where it is a device atomic
    whose lines spread (0 otherwise: :func:`_span` reads it only then)."""
    return line_ix[r] if spreads and kind[r] == DEVICE_ATOMIC else 0


@njit(cache=True, inline="always")
def _is_read(k):
    """Whether a request of kind ``k`` returns data to its warp (and passes the issue stage)."""
    return k == HOST_READ or k == DEVICE_READ or k == DEVICE_ATOMIC


@njit(cache=True, inline="always")
def _push(q, t, k, s, r, qt, qk, qs, qr, base, mask, head, cnt):
    """Append (time t, scheduled at k, sequence s, request r) to ring ``q``."""
    idx = base[q] + ((head[q] + cnt[q]) & mask[q])
    qt[idx] = t
    qk[idx] = k
    qs[idx] = s
    qr[idx] = r
    cnt[q] += 1


@njit(cache=True, inline="always")
def _grant(fs, st, qt, qk, qs, qr, base, mask, head, cnt, stats, grant_t, record,
           cid, need_tags, need_hdr, need_data, ser_up, ser_down, dram_ns, iommu_miss, iommu_lat,
           half_rtt):
    """Grant credits to waiting reads, first come first served, and start their round trips."""
    now = fs[_F_NOW]
    w = _Q_WAIT
    while cnt[w] > 0:
        h = base[w] + head[w]
        r = qr[h]
        c = cid[r]                     # the request's row of the cost table
        if st[_I_TAGS] < need_tags[c] or st[_I_HDRS] < need_hdr[c] or st[_I_DATA] < need_data[c]:
            break
        stats[_S_WAIT] += now - qt[h]
        head[w] = (head[w] + 1) & mask[w]
        cnt[w] -= 1
        st[_I_TAGS] -= need_tags[c]
        st[_I_HDRS] -= need_hdr[c]
        st[_I_DATA] -= need_data[c]
        st[_I_OUT] += 1
        if st[_I_OUT] > stats[_S_PEAK]:
            stats[_S_PEAK] = st[_I_OUT]
        t_up = max(now, fs[_F_UP]) + ser_up[c]
        fs[_F_UP] = t_up
        t_d = max(t_up + half_rtt, fs[_F_DRAM]) + dram_ns[c]
        fs[_F_DRAM] = t_d
        t_c = max(t_d, fs[_F_DOWN]) + ser_down[c]
        fs[_F_DOWN] = t_c
        fin = t_c + half_rtt
        sched = t_c
        stats[_S_UP] += ser_up[c]
        stats[_S_DRAM] += dram_ns[c]
        stats[_S_DOWN] += ser_down[c]
        q = _Q_HOST
        if iommu_miss[r] and iommu_lat > 0.0:
            sched = fin
            fin += iommu_lat
            q = _Q_IOMMU
        stats[_S_LAT] += fin - now
        _push(q, fin, sched, st[_I_SEQ], r, qt, qk, qs, qr, base, mask, head, cnt)
        st[_I_SEQ] += 1
        if record:
            grant_t[r] = now


@njit(cache=True, inline="always")
def _key_less(t1, k1, s1, t2, k2, s2):
    return t1 < t2 or (t1 == t2 and (k1 < k2 or (k1 == k2 and s1 < s2)))


# The issue stage's events live in a 4-ary min-heap ordered by (time t, sequence s),
# keys and payload apart: the heap's arrays hold t, s and a payload slot, the slot's
# arrays the scheduling time k, the request, its SM, the end of its instruction's
# requests and the warp's running issue time that gave t (t is k + (raw - k), as a
# SimPy timeout's). A sift moves three numbers a level, not seven, and compares keys
# that lie side by side; a slot is taken from a stack of free ones on a push and
# given back on a pop. Entries are ordered by (t, s) alone: every entry is pushed with
# k = now, and both now and the sequence only grow while the heap holds anything (it
# is empty between launches), so (t, s) orders them as (t, k, s) does.
# hn: [entries, free slots]
_HN_SIZE, _HN_FREE = 0, 1
# An instruction that issues once its warp is free has its first read reach its SM the
# moment it issues. Those arrivals wait in a ring (fn: [head, count]) instead of the
# heap: they come at one time in sequence order, and the ring empties before time moves
# on, so it stays sorted; the stage's next entry is the lesser of its head and the
# heap's root. The ring takes such a read in O(1), where the heap took a push and a pop.
_FN_HEAD, _FN_COUNT = 0, 1


@njit(cache=True, inline="always")
def _heap_sift_up(ht, hs, hp, i, t, s, p):
    """Put (t, s, p) at position ``i`` and move it up to its place."""
    while i > 0:
        q = (i - 1) >> 2
        tq = ht[q]
        if t > tq or (t == tq and s > hs[q]):
            break
        ht[i] = tq
        hs[i] = hs[q]
        hp[i] = hp[q]
        i = q
    ht[i] = t
    hs[i] = s
    hp[i] = p


@njit(cache=True, inline="always")
def _heap_sift_down(ht, hs, hp, n, t, s, p):
    """Put (t, s, p) at the root of the heap of ``n`` entries (the root's old entry is
    dropped) and move it down to its place."""
    i = 0
    while True:
        c = 4 * i + 1
        if c >= n:
            break
        # the least of up to four children
        m = c
        tm, sm_ = ht[c], hs[c]
        last = min(c + 4, n)
        for j in range(c + 1, last):
            tj = ht[j]
            if tj < tm or (tj == tm and hs[j] < sm_):
                m, tm, sm_ = j, tj, hs[j]
        if t < tm or (t == tm and s < sm_):
            break
        ht[i] = tm
        hs[i] = sm_
        hp[i] = hp[m]
        i = m
    ht[i] = t
    hs[i] = s
    hp[i] = p


@njit(cache=True, inline="always")
def _heap_push(ht, hs, hp, hn, pk, pr, psm, pend, praw, free, t, k, s, r, sm, end, raw):
    """Push (t, k, s, r, sm, end, raw) onto the heap."""
    hn[_HN_FREE] -= 1
    p = free[hn[_HN_FREE]]
    pk[p] = k
    pr[p] = r
    psm[p] = sm
    pend[p] = end
    praw[p] = raw
    n = hn[_HN_SIZE]
    _heap_sift_up(ht, hs, hp, n, t, s, p)
    hn[_HN_SIZE] = n + 1


@njit(cache=True, inline="always")
def _heap_pop(ht, hs, hp, hn, free):
    """Remove the least entry of the heap."""
    free[hn[_HN_FREE]] = hp[0]
    hn[_HN_FREE] += 1
    n = hn[_HN_SIZE] - 1
    hn[_HN_SIZE] = n
    _heap_sift_down(ht, hs, hp, n, ht[n], hs[n], hp[n])


@njit(cache=True, inline="always")
def _heap_replace_top(ht, hs, hp, hn, pk, pr, praw, t, k, s, r, raw):
    """Replace the least entry of the heap by (t, k, s, r, raw) with the root's SM and
    end; the size stays."""
    p = hp[0]
    pk[p] = k
    pr[p] = r
    praw[p] = raw
    _heap_sift_down(ht, hs, hp, hn[_HN_SIZE], t, s, p)


@njit(cache=True, inline="always")
def _enter(r, now, fs, st, qt, qk, qs, qr, base, mask, head, cnt, stats, grant_t, record,
           kind, cid, need_tags, need_hdr, need_data, ser_up, ser_down, dram_ns, dev_ns,
           iommu_miss, walk, miss, walker_free, lat):
    """Request ``r`` leaves its SM at ``now`` and enters its path. ``lat``: the walk,
    the device read's latency, half the round trip, an IOTLB miss, a device atomic's
    latency and a device read's that the L2 misses (``miss``), ns (one array:
    Python passes a call of more than 30 arguments as ``*args``, which Numba cannot
    inline)."""
    walk_ns, dev_lat, half_rtt, iommu_lat = lat[0], lat[1], lat[2], lat[3]
    atom_lat, miss_lat = lat[4], lat[5]
    kd = kind[r]
    if kd == HOST_READ:
        if walk[r]:
            wk = st[_I_WALKER]
            start = max(now, walker_free[wk])
            fin = start + walk_ns
            walker_free[wk] = fin
            st[_I_WALKER] = wk + 1 if wk + 1 < walker_free.shape[0] else 0
            stats[_S_WALKS] += 1.0
            stats[_S_WALKWAIT] += start - now
            _push(_Q_WALK, fin, start, st[_I_SEQ], r, qt, qk, qs, qr, base, mask, head, cnt)
            st[_I_SEQ] += 1
        else:
            _push(_Q_WAIT, now, now, 0, r, qt, qk, qs, qr, base, mask, head, cnt)
            _grant(fs, st, qt, qk, qs, qr, base, mask, head, cnt, stats, grant_t, record,
                   cid, need_tags, need_hdr, need_data, ser_up, ser_down, dram_ns, iommu_miss,
                   iommu_lat, half_rtt)
        return
    if record:
        grant_t[r] = now
    if kd == HOST_WRITE:
        # posted: done for the warp once its MWr has left the GPU
        sched = max(now, fs[_F_UP])
        fin = sched + ser_up[cid[r]]
        fs[_F_UP] = fin
        fs[_F_DRAM] = max(fin + half_rtt, fs[_F_DRAM]) + dram_ns[cid[r]]
        stats[_S_UP] += ser_up[cid[r]]
        stats[_S_DRAM] += dram_ns[cid[r]]
        q = _Q_HWRITE
    else:
        sched = max(now, fs[_F_DEV])
        fin = sched + dev_ns[cid[r]]
        fs[_F_DEV] = fin
        stats[_S_DEV] += dev_ns[cid[r]]
        if kd == DEVICE_READ:
            sched = fin
            if miss.shape[0] == kind.shape[0] and miss[r]:
                fin += miss_lat
                q = _Q_DRAM
            else:
                fin += dev_lat
                q = _Q_DEV
        elif kd == DEVICE_ATOMIC:
            sched = fin
            fin += atom_lat
            q = _Q_ATOM
        else:
            q = _Q_DWRITE
    _push(q, fin, sched, st[_I_SEQ], r, qt, qk, qs, qr, base, mask, head, cnt)
    st[_I_SEQ] += 1


@njit(cache=True)
def _simulate(inst_ptr, warp_ptr, cta_ptr, launch_ptr, launch_slots, cta_start, paced,
              inst_waits,
              kind, cid, size_B, ser_up, ser_down, dram_ns, dev_ns, need_tags, need_hdr, need_data,
              walk, iommu_miss, iommu_lat, tags, cpl_hdrs, cpl_data, rtt_ns, dev_lat, atom_lat,
              miss_lat, lif, walkers, walk_ns,
              launch_overhead_ns, level_sync_ns, host_path, sm_count, issue_gap, sm_turn,
              spread, line_ix, staged, leads, l2, miss, nlines, shared, caps, heap_cap, max_ready,
              nbins, keep, clock, stats, bins):
    n = kind.shape[0]
    n_inst = inst_ptr.shape[0] - 1
    n_warp = warp_ptr.shape[0] - 1
    n_cta = cta_ptr.shape[0] - 1
    n_launch = launch_slots.shape[0]
    half_rtt = rtt_ns * 0.5
    lat = np.array([walk_ns, dev_lat, half_rtt, iommu_lat, atom_lat, miss_lat])
    # staged (DesInputs.has_issue_stage, which sized the heap): reads pass the issue stage
    spreads = spread >= 0.0 and line_ix.shape[0] == n

    # request -> instruction -> warp -> CTA
    inst_of = np.empty(n, dtype=np.int32)     # 4 B a request
    inst_rem = np.empty(n_inst, dtype=np.int64)
    for i in range(n_inst):
        inst_rem[i] = inst_ptr[i + 1] - inst_ptr[i]
        for r in range(inst_ptr[i], inst_ptr[i + 1]):
            inst_of[r] = i
    warp_of = np.empty(n_inst, dtype=np.int64)
    for w in range(n_warp):
        for i in range(warp_ptr[w], warp_ptr[w + 1]):
            warp_of[i] = w
    cta_of = np.empty(n_warp, dtype=np.int64)
    cta_rem = np.empty(n_cta, dtype=np.int64)
    for c in range(n_cta):
        cta_rem[c] = cta_ptr[c + 1] - cta_ptr[c]
        for w in range(cta_ptr[c], cta_ptr[c + 1]):
            cta_of[w] = c
    warp_next = warp_ptr[:-1].copy()
    warp_busy = np.zeros(n_warp, dtype=np.int64)
    # the SM issue stage: a CTA runs on the SM of its slot (slot mod sm_count); a
    # warp's requests reach its SM issue_gap apart, and leave it sm_turn apart (by kind,
    # or the L2's turn for a line the L2 serves: l2).
    # Heap entries (_H_R): r, a request reaching its SM; -1 - r, one leaving it
    cta_slot = np.zeros(n_cta, dtype=np.int64)
    max_slots = 1
    for L in range(n_launch):
        max_slots = max(max_slots, launch_slots[L])
    slot_stack = np.empty(max_slots, dtype=np.int64)
    warp_free = np.zeros(n_warp, dtype=np.float64)
    sm_free = np.zeros(max(sm_count, 1), dtype=np.float64)
    sm_last = np.zeros(max(sm_count, 1), dtype=np.float64)   # when its last line left
    ht = np.empty(heap_cap, dtype=np.float64)
    hs = np.empty(heap_cap, dtype=np.int64)
    hp = np.empty(heap_cap, dtype=np.int64)
    pk = np.empty(heap_cap, dtype=np.float64)
    praw = np.empty(heap_cap, dtype=np.float64)
    pr = np.empty(heap_cap, dtype=np.int64)
    psm = np.empty(heap_cap, dtype=np.int64)
    pend = np.empty(heap_cap, dtype=np.int64)
    free = np.arange(heap_cap, dtype=np.int64)
    hn = np.array([0, heap_cap], dtype=np.int64)
    # arrivals at their SM at the moment their instruction issues, in issue order
    fcap = 1
    while fcap < heap_cap:
        fcap *= 2
    fmask = fcap - 1
    ft = np.empty(fcap, dtype=np.float64)
    fseq = np.empty(fcap, dtype=np.int64)
    fr = np.empty(fcap, dtype=np.int64)
    fsm = np.empty(fcap, dtype=np.int64)
    fend = np.empty(fcap, dtype=np.int64)
    fn = np.zeros(2, dtype=np.int64)

    # rings: queue q holds slots base[q] .. base[q] + caps[q] - 1 (caps powers of two)
    nq = caps.shape[0]
    base = np.zeros(nq, dtype=np.int64)
    mask = caps - 1
    for q in range(1, nq):
        base[q] = base[q - 1] + caps[q - 1]
    total = base[nq - 1] + caps[nq - 1]
    qt = np.empty(total, dtype=np.float64)
    qk = np.empty(total, dtype=np.float64)
    qs = np.empty(total, dtype=np.int64)
    qr = np.empty(total, dtype=np.int64)
    head = np.zeros(nq, dtype=np.int64)
    cnt = np.zeros(nq, dtype=np.int64)
    fs = np.zeros(6, dtype=np.float64)
    st = np.zeros(6, dtype=np.int64)
    walker_free = np.zeros(max(walkers, 1), dtype=np.float64)
    ready = np.empty(max_ready, dtype=np.int64)  # warps that may issue now

    kernel_ns = np.zeros(n_launch, dtype=np.float64)
    # keep: 0 no per-request times, 1 the ready times alone, 2 all three
    keep_ready = keep >= 1
    record = keep >= 2
    ready_t = np.full(n if keep_ready else 0, np.nan)
    grant_t = np.full(n if record else 0, np.nan)
    done_t = np.full(n if record else 0, np.nan)
    bin_ns = _launches(
        inst_ptr, warp_ptr, cta_ptr, launch_ptr, launch_slots, cta_start, paced, inst_waits,
        kind, cid, size_B,
        ser_up, ser_down, dram_ns, dev_ns, need_tags, need_hdr, need_data, walk, iommu_miss,
        iommu_lat, tags, cpl_hdrs, cpl_data, half_rtt, dev_lat, atom_lat, miss_lat, lif, walk_ns,
        launch_overhead_ns, level_sync_ns, host_path, sm_count, issue_gap, sm_turn, spread,
        line_ix, staged, leads, l2, miss, nlines, shared, nbins, record, keep_ready, lat, spreads,
        inst_of, inst_rem,
        warp_of, cta_of, cta_rem, warp_next, warp_busy, cta_slot, slot_stack, warp_free,
        sm_free, sm_last, ht, hs, hp, hn, pk, pr, psm, pend, praw, free, ft, fseq, fr, fsm,
        fend, fn, fmask, qt, qk, qs, qr,
        base, mask, head, cnt, fs, st, walker_free, ready, kernel_ns, stats, bins, ready_t,
        grant_t, done_t, clock)
    return kernel_ns, ready_t, grant_t, done_t


@njit(cache=True, _nrt=False)
def _launches(
        inst_ptr, warp_ptr, cta_ptr, launch_ptr, launch_slots, cta_start, paced, inst_waits,
        kind, cid, size_B,
        ser_up, ser_down, dram_ns, dev_ns, need_tags, need_hdr, need_data, walk, iommu_miss,
        iommu_lat, tags, cpl_hdrs, cpl_data, half_rtt, dev_lat, atom_lat, miss_lat, lif, walk_ns,
        launch_overhead_ns, level_sync_ns, host_path, sm_count, issue_gap, sm_turn, spread,
        line_ix, staged, leads, l2, miss, nlines, shared, nbins, record, keep_ready, lat, spreads,
        inst_of, inst_rem,
        warp_of, cta_of, cta_rem, warp_next, warp_busy, cta_slot, slot_stack, warp_free,
        sm_free, sm_last, ht, hs, hp, hn, pk, pr, psm, pend, praw, free, ft, fseq, fr, fsm,
        fend, fn, fmask, qt, qk, qs, qr,
        base, mask, head, cnt, fs, st, walker_free, ready, kernel_ns, stats, bins, ready_t,
        grant_t, done_t, clock):
    """The launches one after another (the event loop). ``clock`` carries the run's
    state from launches simulated before these (:class:`Carry`): [end of the last
    launch (ns), width of the bandwidth bins (ns), launches before these], updated
    here, as are ``stats`` and ``bins``. Every array is made by :func:`_simulate` or
    its caller: compiled without Numba's reference counting, the loop and the
    functions inlined in it pass arrays without the atomic count updates that
    otherwise took a quarter of its time (a pair per array at each call)."""
    n_launch = launch_slots.shape[0]
    g_end = clock[0]
    bin_ns = clock[1]
    l2_any = l2.shape[0] == kind.shape[0]     # some read lines are the L2's
    miss_any = miss.shape[0] == kind.shape[0]  # some device reads miss the L2
    shared_any = shared.shape[0] == warp_ptr.shape[0] - 1   # warps write shared words
    for L in range(n_launch):
        g_start = g_end + launch_overhead_ns + (level_sync_ns if L + clock[2] > 0 else 0.0)
        fs[:] = 0.0
        st[_I_TAGS] = tags
        st[_I_HDRS] = cpl_hdrs
        st[_I_DATA] = cpl_data
        st[_I_OUT] = 0
        st[_I_WALKER] = 0
        walker_free[:] = 0.0
        sm_free[:] = 0.0
        sm_last[:] = 0.0
        free_slots = launch_slots[L]
        for k in range(free_slots):        # popped from the top: slot 0 first
            slot_stack[k] = free_slots - 1 - k
        next_cta = launch_ptr[L]
        n_ready = 0
        dispatching = False        # the dispatcher's event: CTAs whose time is now start
        while True:
            now = fs[_F_NOW]
            _grant(fs, st, qt, qk, qs, qr, base, mask, head, cnt, stats, grant_t, record,
                   cid, need_tags, need_hdr, need_data, ser_up, ser_down, dram_ns, iommu_miss,
                   iommu_lat, half_rtt)
            while free_slots > 0 and next_cta < launch_ptr[L + 1]:
                if paced and not (cta_start[next_cta] < now
                                  or (dispatching and cta_start[next_cta] <= now)):
                    break
                c = next_cta
                next_cta += 1
                free_slots -= 1
                cta_slot[c] = slot_stack[free_slots]
                for w in range(cta_ptr[c], cta_ptr[c + 1]):
                    ready[n_ready] = w
                    n_ready += 1
            dispatching = False
            # issue round robin: each ready warp one instruction per round
            issued = True
            while issued:
                issued = False
                for j in range(n_ready):
                    w = ready[j]
                    if warp_busy[w] >= lif or warp_next[w] >= warp_ptr[w + 1]:
                        continue
                    if warp_busy[w] > 0 and inst_waits[warp_next[w]]:
                        continue
                    issued = True
                    i = warp_next[w]
                    warp_next[w] += 1
                    warp_busy[w] += 1
                    t = max(now, warp_free[w])
                    charged = -1
                    first_raw = 0.0
                    first_s = 0
                    for r in range(inst_ptr[i], inst_ptr[i + 1]):
                        if staged and _is_read(kind[r]):
                            # reaches its SM's queue when the warp has sent the ones
                            # before it (an event even when that is now: the SM takes
                            # its requests in the order they reach it). Only the
                            # instruction's first arrival enters the heap; the next
                            # takes its place when it is popped (below)
                            lj = _line(r, kind, line_ix, spreads)
                            if charged >= 0 and leads[r]:
                                t += _span(kind[r], lj - 1, 2, issue_gap, spread)
                            if charged < 0:
                                first_raw = t
                                first_s = st[_I_SEQ]
                            charged = r
                            stats[_S_ISSUE] += t - now
                            st[_I_SEQ] += 1
                            t += _span(kind[r], lj, nlines[r], issue_gap, spread)  # its other lines
                            continue
                        # enters its path now: _enter written out (a call here, inlined
                        # or not, makes the engine without the stage 2-2.5 times slower
                        # on bench_des's streams)
                        kd = kind[r]
                        if keep_ready:
                            ready_t[r] = now
                        if kd == HOST_READ:
                            if walk[r]:
                                wk = st[_I_WALKER]
                                start = max(now, walker_free[wk])
                                fin = start + walk_ns
                                walker_free[wk] = fin
                                st[_I_WALKER] = wk + 1 if wk + 1 < walker_free.shape[0] else 0
                                stats[_S_WALKS] += 1.0
                                stats[_S_WALKWAIT] += start - now
                                _push(_Q_WALK, fin, start, st[_I_SEQ], r,
                                      qt, qk, qs, qr, base, mask, head, cnt)
                                st[_I_SEQ] += 1
                            else:
                                _push(_Q_WAIT, now, now, 0, r, qt, qk, qs, qr, base, mask, head,
                                      cnt)
                                _grant(fs, st, qt, qk, qs, qr, base, mask, head, cnt, stats,
                                       grant_t, record, cid, need_tags, need_hdr, need_data,
                                       ser_up, ser_down, dram_ns, iommu_miss, iommu_lat,
                                       half_rtt)
                            continue
                        if record:
                            grant_t[r] = now
                        if kd == HOST_WRITE:
                            # posted: done for the warp once its MWr has left the GPU
                            sched = max(now, fs[_F_UP])
                            fin = sched + ser_up[cid[r]]
                            fs[_F_UP] = fin
                            fs[_F_DRAM] = max(fin + half_rtt, fs[_F_DRAM]) + dram_ns[cid[r]]
                            stats[_S_UP] += ser_up[cid[r]]
                            stats[_S_DRAM] += dram_ns[cid[r]]
                            q = _Q_HWRITE
                        else:
                            sched = max(now, fs[_F_DEV])
                            fin = sched + dev_ns[cid[r]]
                            fs[_F_DEV] = fin
                            stats[_S_DEV] += dev_ns[cid[r]]
                            if kd == DEVICE_READ:
                                sched = fin
                                if miss_any and miss[r]:
                                    fin += miss_lat
                                    q = _Q_DRAM
                                else:
                                    fin += dev_lat
                                    q = _Q_DEV
                            elif kd == DEVICE_ATOMIC:
                                sched = fin
                                fin += atom_lat
                                q = _Q_ATOM
                            else:
                                q = _Q_DWRITE
                        _push(q, fin, sched, st[_I_SEQ], r, qt, qk, qs, qr, base, mask, head,
                              cnt)
                        st[_I_SEQ] += 1
                    if charged >= 0:
                        lj = _line(charged, kind, line_ix, spreads) + nlines[charged] - 1
                        warp_free[w] = t + _span(kind[charged], lj, 2, issue_gap, spread)
                        r = inst_ptr[i]
                        while not _is_read(kind[r]):
                            r += 1
                        sm = cta_slot[cta_of[w]] % sm_count
                        if first_raw == now:    # reaches its SM now: behind the others
                            f = (fn[_FN_HEAD] + fn[_FN_COUNT]) & fmask
                            ft[f] = now
                            fseq[f] = first_s
                            fr[f] = r
                            fsm[f] = sm
                            fend[f] = inst_ptr[i + 1]
                            fn[_FN_COUNT] += 1
                        else:
                            _heap_push(ht, hs, hp, hn, pk, pr, psm, pend, praw, free,
                                       now + (first_raw - now), now, first_s, r, sm,
                                       inst_ptr[i + 1], first_raw)
            n_ready = 0

            # the next event: the earliest queue head; among equal times the one
            # scheduled first (earliest scheduling time, then sequence), as in SimPy
            best = -1
            bt = 0.0
            bk = 0.0
            bs = 0
            for q in range(_NQ):
                if cnt[q] > 0:
                    h = base[q] + head[q]
                    t = qt[h]
                    if best < 0 or _key_less(t, qk[h], qs[h], bt, bk, bs):
                        best, bt, bk, bs = q, t, qk[h], qs[h]
            # the dispatcher's next CTA, where a slot waits for it: it starts after
            # every other event up to its time
            t_cta = np.inf
            if paced and free_slots > 0 and next_cta < launch_ptr[L + 1]:
                t_cta = cta_start[next_cta]
            # the issue stage's events that come first. An arrival that has to queue at
            # its SM changes nothing but the stage: the next one is taken here at once
            # (the queues' heads, credits, slots and ready warps are as they were)
            entering = False
            while True:
                # the stage's least entry: the queue's head or the heap's root
                fifo = False
                if fn[_FN_COUNT] > 0:
                    fh = fn[_FN_HEAD]
                    fifo = hn[_HN_SIZE] == 0 or ft[fh] < ht[0] or (
                        ft[fh] == ht[0] and fseq[fh] < hs[0])
                if fifo:
                    top_t, top_k, top_s = ft[fh], ft[fh], fseq[fh]
                elif hn[_HN_SIZE] > 0:
                    top = hp[0]
                    top_t, top_k, top_s = ht[0], pk[top], hs[0]
                else:
                    break
                if top_t > t_cta or (best >= 0 and not _key_less(top_t, top_k, top_s,
                                                                 bt, bk, bs)):
                    break
                now = top_t
                fs[_F_NOW] = now
                if fifo:
                    r, sm, end, raw0 = fr[fh], fsm[fh], fend[fh], top_t
                else:
                    r = pr[top]
                    if r < 0:               # leaves its SM
                        r = -1 - r
                        _heap_pop(ht, hs, hp, hn, free)
                        entering = True
                        break
                    sm, end, raw0 = psm[top], pend[top], praw[top]
                # reaches its SM: leaves it first come first served
                # from its first line's arrival to its last's (k - 1 gaps, or an
                # atomic's spread)
                span_r = _span(kind[r], _line(r, kind, line_ix, spreads), nlines[r], issue_gap,
                               spread)
                if leads[r]:
                    # its last line reaches the SM (k - 1) gaps after its first and
                    # leaves after the SM's k turns; the SM is busy for those k turns
                    # only (between them it serves others: no idle time is held)
                    more = nlines[r] - 1
                    turn = max(now, sm_free[sm])
                    smt = sm_turn[L2_TURN] if l2_any and l2[r] else sm_turn[kind[r]]
                    t = max(now + span_r, turn + more * smt)
                    sm_free[sm] = turn + (more + 1) * smt
                    sm_last[sm] = t
                else:   # its line's first request reached the SM just before it
                    t = sm_last[sm]
                # the next staged request of its instruction (if any) arrives after
                # its lines, with the sequence number it was given at issue (each
                # write between them took one); it takes the entry's place
                r2 = r + 1
                while r2 < end and not _is_read(kind[r2]):
                    r2 += 1
                if r2 < end:
                    raw = raw0 + span_r
                    if leads[r2]:
                        lj = _line(r2, kind, line_ix, spreads)
                        raw += _span(kind[r2], lj - 1, 2, issue_gap, spread)
                    s2 = top_s + (r2 - r)
                    if not fifo:
                        _heap_replace_top(ht, hs, hp, hn, pk, pr, praw, top_k + (raw - top_k),
                                          top_k, s2, r2, raw)
                    elif raw == now:    # stays at the queue's head: its sequence is the least
                        fseq[fh] = s2
                        fr[fh] = r2
                    else:
                        fn[_FN_HEAD] = (fh + 1) & fmask
                        fn[_FN_COUNT] -= 1
                        _heap_push(ht, hs, hp, hn, pk, pr, psm, pend, praw, free,
                                   top_k + (raw - top_k), top_k, s2, r2, sm, end, raw)
                    if t > now:         # (now + delay: a timeout's time in SimPy)
                        _heap_push(ht, hs, hp, hn, pk, pr, psm, pend, praw, free,
                                   now + (t - now), now, st[_I_SEQ], -1 - r, sm, 0, 0.0)
                else:
                    if fifo:
                        fn[_FN_HEAD] = (fh + 1) & fmask
                        fn[_FN_COUNT] -= 1
                        if t > now:
                            _heap_push(ht, hs, hp, hn, pk, pr, psm, pend, praw, free,
                                       now + (t - now), now, st[_I_SEQ], -1 - r, sm, 0, 0.0)
                    elif t > now:       # its leave takes the root's place
                        _heap_replace_top(ht, hs, hp, hn, pk, pr, praw, now + (t - now), now,
                                          st[_I_SEQ], -1 - r, 0.0)
                    else:
                        _heap_pop(ht, hs, hp, hn, free)
                if t > now:
                    stats[_S_ISSUE] += t - now
                    st[_I_SEQ] += 1
                    continue
                entering = True
                break
            if entering:
                # leaves its SM: enters its path
                if keep_ready:
                    ready_t[r] = now
                _enter(r, now, fs, st, qt, qk, qs, qr, base, mask, head, cnt, stats, grant_t,
                       record, kind, cid, need_tags, need_hdr, need_data, ser_up, ser_down,
                       dram_ns, dev_ns, iommu_miss, walk, miss, walker_free, lat)
                continue
            if t_cta < np.inf and (best < 0 or t_cta < bt) and (
                    hn[_HN_SIZE] == 0 or t_cta < ht[0]) and (
                    fn[_FN_COUNT] == 0 or t_cta < ft[fn[_FN_HEAD]]):
                fs[_F_NOW] = t_cta
                dispatching = True
                continue
            if best < 0:
                break
            r = qr[base[best] + head[best]]
            head[best] = (head[best] + 1) & mask[best]
            cnt[best] -= 1
            fs[_F_NOW] = bt
            now = bt
            if best == _Q_SHARED:  # a warp's shared writes are served: it is done
                c = cta_of[r]
                cta_rem[c] -= 1
                if cta_rem[c] == 0:
                    slot_stack[free_slots] = cta_slot[c]
                    free_slots += 1
                continue
            if best == _Q_WALK:  # translated: now wait for credits
                if keep_ready:
                    ready_t[r] = now
                _push(_Q_WAIT, now, now, 0, r, qt, qk, qs, qr, base, mask, head, cnt)
                continue
            if best == _Q_HOST or best == _Q_IOMMU:
                st[_I_TAGS] += need_tags[cid[r]]
                st[_I_HDRS] += need_hdr[cid[r]]
                st[_I_DATA] += need_data[cid[r]]
                st[_I_OUT] -= 1
                stats[_S_READS] += 1.0
                # bandwidth over time, in bins that double their width as time grows
                tg = g_start + now
                b = int(tg / bin_ns)
                while b >= nbins:
                    for k in range(nbins // 2):
                        bins[k] = bins[2 * k] + bins[2 * k + 1]
                    bins[nbins // 2:] = 0.0
                    bin_ns *= 2.0
                    b = int(tg / bin_ns)
                bins[b] += size_B[cid[r]]
                if host_path > 0.0:  # the data's way back to the warp holds no credit
                    _push(_Q_RETURN, now + host_path, now, st[_I_SEQ], r,
                          qt, qk, qs, qr, base, mask, head, cnt)
                    st[_I_SEQ] += 1
                    continue
            if record:
                done_t[r] = now
            i = inst_of[r]
            inst_rem[i] -= 1
            if inst_rem[i] == 0:
                w = warp_of[i]
                warp_busy[w] -= 1
                if warp_next[w] < warp_ptr[w + 1]:
                    ready[0] = w
                    n_ready = 1
                elif warp_busy[w] == 0:
                    if shared_any and shared[w] > 0.0:
                        # its writes to the shared words, in turn: it holds its CTA's slot,
                        # and its SM's later reads wait behind them
                        fin = max(now, fs[_F_SHARED]) + shared[w]
                        fs[_F_SHARED] = fin
                        sm = cta_slot[cta_of[w]] % sm_count
                        sm_free[sm] = max(sm_free[sm], fin)
                        _push(_Q_SHARED, fin, now, st[_I_SEQ], w, qt, qk, qs, qr, base, mask,
                              head, cnt)
                        st[_I_SEQ] += 1
                        continue
                    c = cta_of[w]
                    cta_rem[c] -= 1
                    if cta_rem[c] == 0:
                        slot_stack[free_slots] = cta_slot[c]
                        free_slots += 1

        # the kernel ends with its last completion (a write's: leaving the GPU)
        kernel_ns[L] = fs[_F_NOW]
        g_end = g_start + fs[_F_NOW]

    clock[0] = g_end
    clock[1] = bin_ns
    clock[2] += n_launch


def _pow2_at_least(k: int) -> int:
    return 1 << max(int(k), 1).bit_length()


@njit(cache=True)
def _widest(ptr) -> int:
    """The most entries between consecutive offsets of ``ptr`` (at least two of them)."""
    most = 0
    for k in range(1, ptr.shape[0]):
        most = max(most, ptr[k] - ptr[k - 1])
    return most


def _resident_requests(x: DesInputs) -> tuple[int, int]:
    """Resident warps of the largest launch, and a bound on the requests issued and not
    done (resident warps x loads in flight x requests per instruction)."""
    warps_per_cta = int(_widest(x.cta_ptr)) if len(x.cta_ptr) > 1 else 1
    resident = int(x.launch_slots.max()) * warps_per_cta if len(x.launch_slots) else 1
    per_inst = int(_widest(x.inst_ptr)) if len(x.inst_ptr) > 1 else 1
    return resident, resident * int(x.loads_in_flight) * per_inst


def queue_capacities(x: DesInputs) -> tuple[np.ndarray, int]:
    """Ring sizes no queue can outgrow, and the most warps ready at once."""
    resident, in_flight = _resident_requests(x)
    counts = np.bincount(x.kind, minlength=N_KINDS)
    reads = int(counts[HOST_READ])
    walks = int(np.count_nonzero(x.walk))
    caps = [min(reads, int(x.tags)),                  # host reads holding tags
            min(reads, int(x.tags)),                  # the same, delayed by the IOMMU
            min(int(counts[DEVICE_READ]), in_flight),
            min(walks, in_flight),
            min(int(counts[HOST_WRITE]), in_flight),
            min(int(counts[DEVICE_WRITE]), in_flight),
            min(reads, in_flight),                    # on the GPU-internal path back
            min(int(counts[DEVICE_ATOMIC]), in_flight),
            min(int(counts[DEVICE_READ]), in_flight),  # device reads the L2 misses
            resident if x.warp_shared_ns is not None else 1,   # warps' shared writes
            min(reads, in_flight)]                    # waiting for credits
    return (np.array([_pow2_at_least(c) for c in caps], dtype=np.int64),
            max(resident, 1) + 1)


def heap_capacity(x: DesInputs) -> int:
    """Most reads waiting in the issue stage at once: every request issued and not done."""
    if not x.has_issue_stage:
        return 1
    return max(1, min(len(x.kind), _resident_requests(x)[1]))


class Carry:
    """What a run hands from one group of launches to the next: the end of its last
    launch, the launches done, the statistics and the bandwidth bins. The engine resets
    everything else at each launch (the GPU is idle between launches), so a run
    simulated group by group gives the same numbers as one simulated whole."""

    def __init__(self, nbins: int):
        if nbins < 2 or nbins & (nbins - 1):
            raise ValueError(f"nbins must be a power of two >= 2, not {nbins}")
        self.clock = np.array([0.0, 1.0, 0.0])      # end ns, bin width ns, launches
        self.stats = np.zeros(_N_STATS, dtype=np.float64)
        self.bins = np.zeros(nbins, dtype=np.float64)

    def output(self, kernel_ns: np.ndarray) -> DesOutput:
        """The run's output once every group has run (``kernel_ns``: all its launches)."""
        return DesOutput(kernel_ns=kernel_ns, stats=self.stats, bw_bins_B=self.bins,
                         bin_ns=float(self.clock[1]))


def _keep(record: bool | str) -> int:
    """The engine's ``keep`` for a ``record`` argument (see :func:`run`)."""
    if record == "ready":
        return 1
    if record in (True, False):
        return 2 if record else 0
    raise ValueError(f"record must be True, False or 'ready', not {record!r}")


def run(inputs: DesInputs, *, record: bool | str = False, nbins: int = 1024,
        carry: Carry | None = None) -> DesOutput:
    """Simulate ``inputs``; ``record`` keeps per-request times (24 B per request; "ready":
    the times the requests were issued alone, 8 B).
    ``carry``: the state of the launches run before these (:class:`Carry`), which
    this run updates; its output then holds these launches' times and the run's
    statistics so far."""
    carry = Carry(nbins) if carry is None else carry
    nbins = len(carry.bins)
    x = inputs
    c = x.costs
    caps, max_ready = queue_capacities(x)
    kernel_ns, ready, grant, done = _simulate(
        x.inst_ptr, x.warp_ptr, x.cta_ptr, x.launch_ptr, x.launch_slots,
        np.zeros(1) if x.cta_start_ns is None else np.asarray(x.cta_start_ns, dtype=np.float64),
        x.cta_start_ns is not None, x.waits_per_inst(),
        x.kind, np.asarray(x.cost_id, dtype=np.int32), c.size_B, c.ser_up_ns, c.ser_down_ns,
        c.dram_ns, c.dev_ns, c.need_tags, c.need_hdr, c.need_data_B, x.walk,
        np.asarray(x.iommu_miss, dtype=np.bool_), float(x.iommu_miss_ns), int(x.tags),
        int(x.cpl_hdrs),
        int(x.cpl_data_B), float(x.rtt_ns), float(x.device_lat_ns),
        float(x.device_lat_ns) + float(x.atomic_extra_ns),
        float(x.device_lat_ns) + float(x.dram_extra_ns), int(x.loads_in_flight),
        int(x.walkers), float(x.walk_ns), float(x.launch_overhead_ns), float(x.level_sync_ns),
        float(x.host_path_ns), int(x.sm_count), np.asarray(x.issue_gap_ns, dtype=np.float64),
        x.sm_turn_ns(), float(x.atomic_spread_ns), x.line_index_per_request(),
        bool(x.has_issue_stage), x.leads_per_request(), x.l2_per_request(),
        x.misses_per_request(), x.lines_per_request(), x.shared_per_warp(), caps,
        heap_capacity(x), int(max_ready), int(nbins),
        _keep(record), carry.clock, carry.stats, carry.bins)
    out = carry.output(kernel_ns)
    if record == "ready":
        out.ready_ns = ready
    elif record:
        out.ready_ns, out.granted_ns, out.done_ns = ready, grant, done
    return out
