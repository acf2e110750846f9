"""Compiled kernels of the UVM model: the tree prefetcher and the fault-batch loop.

The rules they implement, and where each comes from, are listed in
:mod:`hostlink.model.uvm.model`; this module holds only the Numba code.
Page numbers here are dense: VA block ``b`` of the touched blocks owns pages
``b * block_pages .. (b + 1) * block_pages - 1``.
"""
from __future__ import annotations

import math

import numba
import numpy as np

from hostlink.model.geometry import SECTOR_B, SECTOR_SHIFT

# Columns of the per-launch statistics array returned by :func:`simulate_faults`.
ST_FAULTS = 0          # fault entries the driver fetched (unique + duplicate)
ST_UNIQUE = 1          # distinct pages faulted on per batch, summed over batches
ST_DUP = 2             # duplicate fault entries
ST_BATCHES = 3
ST_H2D_PAGES = 4       # pages migrated host to device
ST_PREF_PAGES = 5      # of those, pages the prefetcher added
ST_D2H_PAGES = 6       # pages written back on eviction
ST_EVICT = 7           # chunks evicted
ST_THRASH = 8          # re-migrations of a chunk within the thrashing window of its eviction
ST_SERVICE_US = 9      # batch service time: base + transfers (both directions)
ST_H2D_US = 10         # of which host-to-device transfer time
ST_D2H_US = 11         # of which write-back transfer time
ST_UPGRADES = 12       # write faults on read-duplicated pages (no data moves)
ST_THRASH_CHUNKS = 13  # chunks newly marked thrashing
ST_BLOCK_SVC = 14      # VA-block services (a block with faulted pages, once per batch)
ST_DRIVER_US = 15      # of the service time: per-fault, first-fault, per-block, per-copied-page, per-moved-page and per-moved-run work
ST_RUNS = 16           # contiguous runs of pages migrated (one transfer each)
ST_MOVE_RUNS = 17      # contiguous runs of pages moved off the host (unmapped there)
ST_RAISED = 18         # faults the warps raised on a page no queued fault was pending for
N_STATS = 19


@numba.njit(cache=True, inline="always")
def _transfer_us(n_pages, page_B, linear, per_KB_us, a_GBps, k_per_KB):
    """Time of one contiguous transfer of ``n_pages`` pages, in us."""
    size_KB = n_pages * page_B / 1024.0
    if linear:
        return per_KB_us * size_KB
    bw_GBps = (2.0 * a_GBps / math.pi) * math.atan(k_per_KB * size_KB)
    return n_pages * page_B / (bw_GBps * 1e3)  # 1 GB/s = 1e3 B/us


@numba.njit(cache=True)
def prefetch_region_mask(tree, faulted_offsets, threshold, out):
    """The driver's bottom-up rule for one VA block.

    ``tree[k]`` is 1 where page ``k`` of the block counts as present (resident,
    faulted, or filled by fault-granularity growth). For each faulted page the
    subtrees containing it are visited from the leaf up to the whole block; the
    largest one whose present count exceeds ``threshold`` times its size is
    selected and all its pages are set in ``out``. A block of ``n`` pages that is
    not a power of two (a buffer's last block) has the levels of the next power of
    two, each subtree clipped to the block (``uvm_perf_prefetch.c``).
    """
    n = tree.shape[0]
    cs = np.zeros(n + 1, dtype=np.int64)
    for k in range(n):
        cs[k + 1] = cs[k] + tree[k]
    for f in faulted_offsets:
        best_lo = -1
        best_hi = -1
        size = 1
        while True:             # up to the first level that covers the block
            lo = (f // size) * size
            hi = lo + size
            if hi > n:
                hi = n
            cnt = cs[hi] - cs[lo]
            if cnt > threshold * (hi - lo):
                best_lo = lo
                best_hi = hi
            if size >= n:
                break
            size *= 2
        if best_lo >= 0:
            for k in range(best_lo, best_hi):
                out[k] = 1


@numba.njit(cache=True)
def covered_sectors_B(addr, size_B, lo, bits):
    """Bytes covered by the ranges [addr, addr + size_B), each of whole sectors
    (``SECTOR_B``), counted on ``bits``, a zeroed bitmap of the sectors from address
    ``lo`` (sector aligned) on, one bit each; -1 as soon as a range is not whole
    sectors."""
    total = 0
    for k in range(addr.shape[0]):
        a = addr[k]
        n = size_B[k]
        if (a | n) & (SECTOR_B - 1):
            return -1
        first = (a - lo) >> SECTOR_SHIFT
        for j in range(first, first + (n >> SECTOR_SHIFT)):
            word = j >> 6
            bit = np.uint64(1) << np.uint64(j & 63)
            if (bits[word] & bit) == 0:
                bits[word] |= bit
                total += SECTOR_B
    return total


@numba.njit(cache=True)
def covered_bytes(start, end):
    """Bytes covered by ranges [start, end) sorted by start."""
    total = 0
    reach = 0
    for k in range(start.shape[0]):
        s = start[k]
        e = end[k]
        if s < reach:
            s = reach
        if e > s:
            total += e - s
        if e > reach:
            reach = e
    return total


@numba.njit(cache=True)
def _lru_remove(c, prev, nxt, head_tail):
    a = prev[c]
    b = nxt[c]
    if a >= 0:
        nxt[a] = b
    else:
        head_tail[0] = b
    if b >= 0:
        prev[b] = a
    else:
        head_tail[1] = a
    prev[c] = -1
    nxt[c] = -1


@numba.njit(cache=True)
def _lru_push_tail(c, prev, nxt, head_tail):
    t = head_tail[1]
    prev[c] = t
    nxt[c] = -1
    if t >= 0:
        nxt[t] = c
    else:
        head_tail[0] = c
    head_tail[1] = c


@numba.njit(cache=True)
def _allocate(c, l, svc, now_us, n_alloc, capacity_chunks, chunk_pages, alloc, cstamp,
              cevict_us, cthr, thrashing, lprev, lnext, head_tail, resident, wb, stats,
              thrash_events, thrash_window_us, page_B, linear, per_KB_us, a_GBps, k_per_KB):
    """Give chunk ``c`` GPU memory, evicting least recently used chunks as needed.

    Chunks stamped ``svc`` belong to the VA block being serviced and stay. Returns
    the new allocated-chunk count and the write-back time in us.
    """
    d2h_us = 0.0
    while n_alloc >= capacity_chunks:
        v = head_tail[0]
        while v >= 0 and cstamp[v] == svc:
            v = lnext[v]
        if v < 0:
            break  # every chunk is in use by the block being serviced (capacity checked above)
        run = 0
        nwb = 0
        vb = v * chunk_pages
        for k in range(vb, vb + chunk_pages):
            if resident[k] == 1 and wb[k] == 1:
                run += 1
                nwb += 1
            elif run > 0:
                d2h_us += _transfer_us(run, page_B, linear, per_KB_us, a_GBps, k_per_KB)
                run = 0
            resident[k] = 0
            wb[k] = 0
        if run > 0:
            d2h_us += _transfer_us(run, page_B, linear, per_KB_us, a_GBps, k_per_KB)
        stats[l, ST_D2H_PAGES] += nwb
        stats[l, ST_EVICT] += 1
        alloc[v] = 0
        _lru_remove(v, lprev, lnext, head_tail)
        n_alloc -= 1
        cevict_us[v] = now_us + d2h_us
    alloc[c] = 1
    n_alloc += 1
    _lru_push_tail(c, lprev, lnext, head_tail)
    if cevict_us[c] >= 0.0:
        if now_us + d2h_us - cevict_us[c] <= thrash_window_us:
            cthr[c] += 1
            stats[l, ST_THRASH] += 1
            if cthr[c] >= thrash_events and thrashing[c] == 0:
                thrashing[c] = 1
                stats[l, ST_THRASH_CHUNKS] += 1
        else:
            cthr[c] = 0
    return n_alloc, d2h_us


@numba.njit(cache=True)
def _claim_chunk(c, l, svc, now_us, n_alloc, lru_on_migrate, mem):
    """Chunk ``c`` joins the VA block being serviced (stamped ``svc``): it gets GPU
    memory where it has none (:func:`_allocate`, whose state ``mem`` holds), else
    moves to the LRU tail where a migration counts as a use. Returns the
    allocated-chunk count and the write-back time in us."""
    (capacity_chunks, chunk_pages, alloc, cstamp, cevict_us, cthr, thrashing, lprev, lnext,
     head_tail, resident, wb, stats, thrash_events, thrash_window_us, page_B, linear,
     per_KB_us, a_GBps, k_per_KB) = mem
    add_us = 0.0
    if alloc[c] == 0:
        n_alloc, add_us = _allocate(c, l, svc, now_us, n_alloc, capacity_chunks, chunk_pages,
                                    alloc, cstamp, cevict_us, cthr, thrashing, lprev, lnext,
                                    head_tail, resident, wb, stats, thrash_events,
                                    thrash_window_us, page_B, linear, per_KB_us, a_GBps,
                                    k_per_KB)
    elif lru_on_migrate:
        _lru_remove(c, lprev, lnext, head_tail)
        _lru_push_tail(c, lprev, lnext, head_tail)
    cstamp[c] = svc
    return n_alloc, add_us


@numba.njit(cache=True)
def simulate_faults(acc_page, acc_write, inst_ptr, warp_ptr, launch_ptr,
                    n_pages, block_pages, big_pages, chunk_pages, capacity_chunks,
                    batch_size, unique_cap, dup_per_unique,
                    prefetch, threshold, read_mostly, lru_on_migrate,
                    linear, base_us, per_KB_us, page_B, a_GBps, k_per_KB,
                    thrash_events, thrash_window_us, resident_warps, shuffle_seed,
                    block_valid, block_us=0.0, move_page_us=0.0, move_run_us=0.0, fault_us=0.0,
                    first_fault_us=0.0, copy_page_us=0.0, raised_fault_us=0.0):
    """Replay the accesses warp by warp, servicing faults in batches.

    A batch's service time is ``base_us``, plus ``fault_us`` per distinct page
    it fetches a fault for, plus ``block_us`` per VA block it services, plus
    ``copy_page_us`` per page it copies to the GPU (migrated or read-duplicated),
    plus ``move_page_us`` per page and ``move_run_us`` per contiguous run of pages
    it moves off the host (migrated, not read-duplicated), plus
    ``raised_fault_us`` per fault the warps raised since the last batch on a page
    no queued fault was pending for, plus the transfers.
    The first batch of the whole replay also pays ``first_fault_us``.
    ``block_valid[b]``: the pages of dense VA block ``b`` that its managed buffer
    holds (a buffer's last block may hold fewer than ``block_pages``); the
    prefetch tree and the big pages a fault grows to span those alone.

    Returns ``(stats, touched)``: per-launch statistics (columns ``ST_*``) and
    a per-page flag of the pages any access touched.
    """
    n_launch = launch_ptr.shape[0] - 1
    n_warps = warp_ptr.shape[0] - 1
    n_acc = acc_page.shape[0]
    stats = np.zeros((n_launch, N_STATS), dtype=np.float64)
    n_chunks = n_pages // chunk_pages

    resident = np.zeros(n_pages, dtype=np.uint8)
    wb = np.zeros(n_pages, dtype=np.uint8)          # page must be written back on eviction
    bmark = np.full(n_pages, -1, dtype=np.int64)    # batch that holds a fault on the page
    amark = np.full(n_pages, -1, dtype=np.int64)    # instruction attempt that queued the page
    aentry = np.zeros(n_pages, dtype=np.int64)
    pwrite = np.zeros(n_pages, dtype=np.uint8)      # a write fault on the page in this batch
    qcount = np.zeros(n_pages, dtype=np.int64)      # queued fault entries on the page
    touched = np.zeros(n_pages, dtype=np.uint8)
    done = np.zeros(n_acc, dtype=np.uint8)

    alloc = np.zeros(n_chunks, dtype=np.uint8)
    cstamp = np.full(n_chunks, -1, dtype=np.int64)  # last block service that used the chunk
    cevict_us = np.full(n_chunks, -1.0, dtype=np.float64)
    cthr = np.zeros(n_chunks, dtype=np.int64)
    thrashing = np.zeros(n_chunks, dtype=np.uint8)
    lprev = np.full(n_chunks, -1, dtype=np.int64)
    lnext = np.full(n_chunks, -1, dtype=np.int64)
    head_tail = np.full(2, -1, dtype=np.int64)
    n_alloc = 0
    mem = (capacity_chunks, chunk_pages, alloc, cstamp, cevict_us, cthr, thrashing, lprev, lnext,
           head_tail, resident, wb, stats, thrash_events, thrash_window_us, page_B, linear,
           per_KB_us, a_GBps, k_per_KB)

    cur_inst = np.empty(n_warps, dtype=np.int64)
    for w in range(n_warps):
        cur_inst[w] = warp_ptr[w]
    pending = np.zeros(n_warps, dtype=np.int64)

    max_inst_acc = 1
    for i in range(inst_ptr.shape[0] - 1):
        d = inst_ptr[i + 1] - inst_ptr[i]
        if d > max_inst_acc:
            max_inst_acc = d
    max_nw = 1
    for l in range(n_launch):
        d = launch_ptr[l + 1] - launch_ptr[l]
        if d > max_nw:
            max_nw = d
    r_max = min(resident_warps, max_nw)
    qcap = r_max * max_inst_acc + 1
    q_page = np.empty(qcap, dtype=np.int64)
    q_warp = np.empty(qcap, dtype=np.int64)
    q_write = np.empty(qcap, dtype=np.uint8)
    run_list = np.empty(max_nw + r_max + 1, dtype=np.int64)
    ubuf = np.empty(batch_size, dtype=np.int64)
    tree = np.zeros(block_pages, dtype=np.uint8)
    mig = np.zeros(block_pages, dtype=np.uint8)
    foffs = np.empty(batch_size, dtype=np.int64)

    if shuffle_seed >= 0:
        np.random.seed(shuffle_seed)

    now_us = 0.0
    raised = 0          # faults raised on pages with none pending, since the last batch
    attempt = 0
    bid = 0
    svc = 0
    for l in range(n_launch):
        w_lo = launch_ptr[l]
        w_hi = launch_ptr[l + 1]
        r = min(resident_warps, w_hi - w_lo)
        rl_len = 0
        for w in range(w_lo, w_lo + r):
            run_list[rl_len] = w
            rl_len += 1
        next_w = w_lo + r
        qlen = 0
        while True:
            if shuffle_seed >= 0:
                for i in range(rl_len - 1, 0, -1):
                    j = np.random.randint(0, i + 1)
                    t = run_list[i]
                    run_list[i] = run_list[j]
                    run_list[j] = t
            # ---- run every runnable warp until it faults or ends
            i_run = 0
            while i_run < rl_len:
                w = run_list[i_run]
                i_run += 1
                w_end = warp_ptr[w + 1]
                while cur_inst[w] < w_end:
                    ins = cur_inst[w]
                    attempt += 1
                    nf = 0
                    for j in range(inst_ptr[ins], inst_ptr[ins + 1]):
                        if done[j]:
                            continue
                        p = acc_page[j]
                        touched[p] = 1
                        wr = acc_write[j]
                        if resident[p] == 1 and not (read_mostly and wr and wb[p] == 0):
                            done[j] = 1
                            continue
                        if amark[p] == attempt:
                            if wr:
                                q_write[aentry[p]] = 1
                            continue
                        amark[p] = attempt
                        aentry[p] = qlen
                        q_page[qlen] = p
                        q_warp[qlen] = w
                        q_write[qlen] = 1 if wr else 0
                        qlen += 1
                        nf += 1
                        if qcount[p] == 0:
                            stats[l, ST_RAISED] += 1
                            raised += 1
                        qcount[p] += 1
                    if nf > 0:
                        pending[w] = nf
                        break
                    cur_inst[w] += 1
                if cur_inst[w] >= w_end and next_w < w_hi:
                    run_list[rl_len] = next_w
                    rl_len += 1
                    next_w += 1
            rl_len = 0
            if qlen == 0:
                break
            # ---- fetch one batch of fault entries, oldest first
            bid += 1
            n_u = 0
            if unique_cap <= 0:
                take = min(batch_size, qlen)
                for e in range(take):
                    p = q_page[e]
                    if bmark[p] != bid:
                        bmark[p] = bid
                        ubuf[n_u] = p
                        n_u += 1
                    if q_write[e]:
                        pwrite[p] = 1
                stats[l, ST_FAULTS] += take
                stats[l, ST_UNIQUE] += n_u
                stats[l, ST_DUP] += take - n_u
            else:
                for e in range(qlen):
                    p = q_page[e]
                    if bmark[p] != bid:
                        if n_u >= unique_cap:
                            break
                        bmark[p] = bid
                        ubuf[n_u] = p
                        n_u += 1
                    if q_write[e]:
                        pwrite[p] = 1
                stats[l, ST_FAULTS] += n_u + n_u * dup_per_unique
                stats[l, ST_UNIQUE] += n_u
                stats[l, ST_DUP] += n_u * dup_per_unique
            stats[l, ST_BATCHES] += 1
            # ---- service the batch VA block by VA block, in address order
            ub = np.sort(ubuf[:n_u])
            t_us = base_us
            drv0 = fault_us * n_u + raised_fault_us * raised
            raised = 0
            if bid == 1:
                drv0 += first_fault_us
            t_us += drv0
            stats[l, ST_DRIVER_US] += drv0
            h2d_us = 0.0
            d2h_us = 0.0
            g = 0
            while g < n_u:
                blk = ub[g] // block_pages
                g_end = g
                while g_end < n_u and ub[g_end] // block_pages == blk:
                    g_end += 1
                base = blk * block_pages
                n_valid = block_valid[blk]
                svc += 1
                stats[l, ST_BLOCK_SVC] += 1
                drv = block_us
                nfo = 0
                for e in range(g, g_end):
                    p = ub[e]
                    if resident[p] == 1:
                        # write fault on a read-duplicated page: the copy becomes the only one
                        wb[p] = 1
                        stats[l, ST_UPGRADES] += 1
                    else:
                        foffs[nfo] = p - base
                        nfo += 1
                if nfo == 0:
                    for e in range(g, g_end):
                        pwrite[ub[e]] = 0
                    t_us += drv
                    stats[l, ST_DRIVER_US] += drv
                    g = g_end
                    continue
                for e in range(nfo):          # a faulted page lies in the buffer
                    if foffs[e] >= n_valid:
                        n_valid = foffs[e] + 1
                # ---- the faulted pages' chunks first: allocation, eviction, thrashing detection
                for e in range(nfo):
                    c = (base + foffs[e]) // chunk_pages
                    n_alloc, add_us = _claim_chunk(c, l, svc, now_us + t_us + h2d_us + d2h_us,
                                                   n_alloc, lru_on_migrate, mem)
                    d2h_us += add_us
                for k in range(block_pages):
                    mig[k] = 0
                if prefetch:
                    for k in range(block_pages):
                        tree[k] = resident[base + k]
                    for e in range(nfo):
                        tree[foffs[e]] = 1
                    # fault granularity grows to the whole big page, unless thrashing
                    for e in range(nfo):
                        off = foffs[e]
                        if thrashing[(base + off) // chunk_pages] == 0:
                            b0 = (off // big_pages) * big_pages
                            for k in range(b0, min(b0 + big_pages, n_valid)):
                                tree[k] = 1
                    nfp = 0
                    for e in range(nfo):
                        if thrashing[(base + foffs[e]) // chunk_pages] == 0:
                            foffs[nfp], foffs[e] = foffs[e], foffs[nfp]
                            nfp += 1
                    prefetch_region_mask(tree[:n_valid], foffs[:nfp], threshold, mig)
                    for k in range(block_pages):
                        if mig[k] == 1 and (resident[base + k] == 1
                                            or thrashing[(base + k) // chunk_pages] == 1):
                            mig[k] = 0
                for e in range(nfo):
                    mig[foffs[e]] = 1
                # ---- chunks receiving prefetched pages (when chunks are smaller than blocks)
                for c in range(base // chunk_pages, (base + block_pages) // chunk_pages):
                    k0 = c * chunk_pages - base
                    need = False
                    for k in range(k0, k0 + chunk_pages):
                        if mig[k] == 1:
                            need = True
                            break
                    if not need:
                        continue
                    n_alloc, add_us = _claim_chunk(c, l, svc, now_us + t_us + h2d_us + d2h_us,
                                                   n_alloc, lru_on_migrate, mem)
                    d2h_us += add_us
                # ---- migrate: contiguous runs move as one transfer each
                n_mig = 0
                n_move = 0
                n_move_runs = 0
                run = 0
                moving = False      # the previous page is a moved one (one unmapped run)
                for k in range(block_pages):
                    if mig[k] == 0:
                        moving = False
                        if run > 0:
                            h2d_us += _transfer_us(run, page_B, linear, per_KB_us, a_GBps,
                                                   k_per_KB)
                            stats[l, ST_RUNS] += 1
                            run = 0
                        continue
                    p = base + k
                    resident[p] = 1
                    wb[p] = 1 if (not read_mostly or pwrite[p] == 1) else 0
                    n_move += wb[p]
                    if wb[p] == 1 and not moving:
                        n_move_runs += 1
                    moving = wb[p] == 1
                    n_mig += 1
                    run += 1
                if run > 0:
                    h2d_us += _transfer_us(run, page_B, linear, per_KB_us, a_GBps, k_per_KB)
                    stats[l, ST_RUNS] += 1
                stats[l, ST_H2D_PAGES] += n_mig
                stats[l, ST_PREF_PAGES] += n_mig - nfo
                stats[l, ST_MOVE_RUNS] += n_move_runs
                drv += copy_page_us * n_mig + move_page_us * n_move + move_run_us * n_move_runs
                t_us += drv
                stats[l, ST_DRIVER_US] += drv
                for e in range(g, g_end):
                    pwrite[ub[e]] = 0
                g = g_end
            t_us += h2d_us + d2h_us
            stats[l, ST_SERVICE_US] += t_us
            stats[l, ST_H2D_US] += h2d_us
            stats[l, ST_D2H_US] += d2h_us
            now_us += t_us
            # ---- replay: entries whose page is now usable release their warps
            newlen = 0
            for e in range(qlen):
                p = q_page[e]
                w = q_warp[e]
                if resident[p] == 1 and not (read_mostly and q_write[e] == 1 and wb[p] == 0):
                    qcount[p] -= 1
                    ins = cur_inst[w]
                    for j in range(inst_ptr[ins], inst_ptr[ins + 1]):
                        if acc_page[j] == p:
                            done[j] = 1
                    pending[w] -= 1
                    if pending[w] == 0:
                        run_list[rl_len] = w
                        rl_len += 1
                else:
                    q_page[newlen] = p
                    q_warp[newlen] = w
                    q_write[newlen] = q_write[e]
                    newlen += 1
            qlen = newlen
    return stats, touched


# ------------------------------------------------------------------ preparation passes

@numba.njit(cache=True)
def scan_requests(addr, size, launch, warp, inst, page_shift):
    """One pass over the requests: address range, order check, 32 B alignment, page spans.

    Returns ``(addr_min, last_max, in_order, aligned32, n_spanning, max_span, n_inst,
    n_warp, n_launch)``; ``in_order`` is whether the rows are sorted by (launch, warp,
    inst); the counts of distinct consecutive instructions, warps and launches hold for
    the rows in their present order.
    """
    n = addr.shape[0]
    a_min = addr[0]
    last_max = addr[0]
    in_order = True
    aligned = True
    n_span = 0
    max_span = 0
    n_inst = 0
    n_warp = 0
    n_launch = 0
    for k in range(n):
        new_launch = k == 0 or launch[k] != launch[k - 1]
        new_warp = new_launch or warp[k] != warp[k - 1]
        if new_launch:
            n_launch += 1
        if new_warp:
            n_warp += 1
        if new_warp or inst[k] != inst[k - 1]:
            n_inst += 1
        a = addr[k]
        last = a + np.uint64(size[k]) - np.uint64(1)
        if a < a_min:
            a_min = a
        if last > last_max:
            last_max = last
        if (a & np.uint64(31)) != 0 or (size[k] & 31) != 0:
            aligned = False
        sp = (last >> np.uint64(page_shift)) - (a >> np.uint64(page_shift))
        if sp > 0:
            n_span += 1
            if sp > max_span:
                max_span = sp
        if k > 0 and in_order:
            if launch[k] < launch[k - 1]:
                in_order = False
            elif launch[k] == launch[k - 1]:
                if warp[k] < warp[k - 1]:
                    in_order = False
                elif warp[k] == warp[k - 1] and inst[k] < inst[k - 1]:
                    in_order = False
    return a_min, last_max, in_order, aligned, n_span, max_span, n_inst, n_warp, n_launch


@numba.njit(cache=True, inline="always")
def _popcount64(x):
    x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return np.int64((x * np.uint64(0x0101010101010101)) >> np.uint64(56))


@numba.njit(cache=True)
def mark_blocks(addr, size, block_shift, blk_lo, present):
    """Mark the VA blocks (relative to ``blk_lo``) holding each request's first and last byte."""
    for k in range(addr.shape[0]):
        a = addr[k]
        present[np.int64(a >> np.uint64(block_shift)) - blk_lo] = 1
        last = a + np.uint64(size[k]) - np.uint64(1)
        present[np.int64(last >> np.uint64(block_shift)) - blk_lo] = 1


@numba.njit(cache=True)
def build_accesses(addr, size, launch, warp, inst, is_write, page_shift, blocks_per,
                   blk_lo, rank, n_acc, n_inst_total, n_warp_total, n_launch_total, sector_words):
    """Dense page and write flag per access, and the instruction/warp/launch index arrays.

    ``rank[b - blk_lo]`` is the dense index of VA block ``b``. A request spanning two
    pages gives two accesses. When ``sector_words > 0`` a bitmap of the 32 B sectors the
    requests cover is filled as well (``sector_words`` 64-bit words per page).
    """
    n = addr.shape[0]
    block_pages = np.int64(1) << blocks_per
    dense = np.empty(n_acc, dtype=np.int64)
    wr = np.empty(n_acc, dtype=np.bool_)
    inst_ptr = np.empty(n_inst_total + 1, dtype=np.int64)
    warp_ptr = np.empty(n_warp_total + 1, dtype=np.int64)
    launch_ptr = np.empty(n_launch_total + 1, dtype=np.int64)
    launch_ids = np.empty(n_launch_total, dtype=np.int64)
    n_pages_total = 0
    for k in range(rank.shape[0]):
        if rank[k] + 1 > n_pages_total:
            n_pages_total = rank[k] + 1
    n_pages_total *= block_pages
    sectors = np.zeros(n_pages_total * sector_words if sector_words > 0 else 0, dtype=np.uint64)
    n_inst = 0
    n_warp = 0
    n_launch = 0
    j = 0
    spp_shift = page_shift - 5
    spp = np.int64(1) << spp_shift           # 32 B sectors per page
    for k in range(n):
        new_launch = k == 0 or launch[k] != launch[k - 1]
        new_warp = new_launch or warp[k] != warp[k - 1]
        new_inst = new_warp or inst[k] != inst[k - 1]
        if new_launch:
            launch_ptr[n_launch] = n_warp
            launch_ids[n_launch] = launch[k]
            n_launch += 1
        if new_warp:
            warp_ptr[n_warp] = n_inst
            n_warp += 1
        if new_inst:
            inst_ptr[n_inst] = j
            n_inst += 1
        a = addr[k]
        last = a + np.uint64(size[k]) - np.uint64(1)
        p_first = np.int64(a >> np.uint64(page_shift))
        p_last = np.int64(last >> np.uint64(page_shift))
        for p in range(p_first, p_last + 1):
            blk = p >> blocks_per
            dense[j] = rank[blk - blk_lo] * block_pages + (p & (block_pages - 1))
            wr[j] = is_write[k]
            j += 1
        if sector_words > 0:
            first_dense = rank[(p_first >> blocks_per) - blk_lo] * block_pages \
                + (p_first & (block_pages - 1))
            s0 = (first_dense << spp_shift) + np.int64((a >> np.uint64(5)) & np.uint64(spp - 1))
            for s in range(s0, s0 + (np.int64(size[k]) >> 5)):
                pg = s >> spp_shift
                within = s & (spp - 1)
                sectors[pg * sector_words + (within >> 6)] |= np.uint64(1) << np.uint64(within & 63)
    inst_ptr[n_inst] = j
    warp_ptr[n_warp] = n_inst
    launch_ptr[n_launch] = n_warp
    covered = 0
    for w in range(sectors.shape[0]):
        covered += _popcount64(sectors[w])
    return dense, wr, inst_ptr, warp_ptr, launch_ptr, launch_ids, n_pages_total, covered * 32
