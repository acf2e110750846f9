"""The compiled UVM model against a plain-Python reference of the same rules.

The reference below is written for reading, not speed: dictionaries and sets,
one warp and one batch at a time, following the rules listed in
hostlink.model.uvm.model. On small random patterns both must agree exactly.
"""
from __future__ import annotations

import math
from collections import OrderedDict

import numpy as np
import pytest

from hostlink.model.config import load_system, system_with
from hostlink.model.uvm import simulate_uvm
from hostlink.model.workload import RequestStream

BLOCK = 2 * 1024 * 1024
BASE = 0x7F0000000000


def transfer_us(pages, page_B, uvm, service, peak):
    size_KB = pages * page_B / 1024
    if service == "linear":
        return uvm.migrate_per_KB_us * size_KB
    bw = 2 * peak / math.pi * math.atan(uvm.transfer_shape_per_KB * size_KB)
    return pages * page_B / (bw * 1e3)


def runs(sorted_pages):
    """Lengths of the runs of consecutive numbers in a sorted list."""
    out, run, prev = [], 0, None
    for p in sorted_pages:
        if prev is not None and p == prev + 1:
            run += 1
        else:
            if run:
                out.append(run)
            run = 1
        prev = p
    if run:
        out.append(run)
    return out


def largest_region(present, off, n, threshold):
    best = None
    size = 1
    while size <= n:
        lo = off // size * size
        if sum(present[lo:lo + size]) > threshold * size:
            best = (lo, lo + size)
        size *= 2
    return best


def reference(s: RequestStream, system, *, capacity_B, read_mostly=False, resident_warps=5120,
              lru="populate", service="curve"):
    uvm = system.uvm
    page_B = uvm.page_B
    per_block = uvm.va_block_B // page_B
    per_big = uvm.prefetch_block_B // page_B
    per_chunk = uvm.evict_chunk_B // page_B
    cap = int(capacity_B // uvm.evict_chunk_B)
    peak = uvm.transfer_peak_GBps  # the tests use PCIe 3.0 x16, the curve's own link
    # program: launch -> warp -> list of instructions, each a list of [page, is_write, done]
    program: dict[int, dict[int, dict[int, list]]] = {}
    for k in range(len(s)):
        first = int(s.addr[k]) // page_B
        last = (int(s.addr[k]) + int(s.size_B[k]) - 1) // page_B
        inst = program.setdefault(int(s.launch[k]), {}).setdefault(int(s.warp[k]), {}) \
            .setdefault(int(s.inst[k]), [])
        for p in range(first, last + 1):
            inst.append([p, bool(s.is_write[k]), False])
    resident: set[int] = set()
    dirty: set[int] = set()            # pages to write back on eviction
    chunks: OrderedDict[int, None] = OrderedDict()   # allocated chunks, LRU first
    evicted_at: dict[int, float] = {}
    thr_count: dict[int, int] = {}
    thrashing: set[int] = set()
    tot = dict(faults=0, unique=0, batches=0, h2d=0, pref=0, d2h=0, evict=0, thrash=0,
               service_us=0.0, upgrades=0)
    now = 0.0

    def needs_fault(p, w):
        return p not in resident or (read_mostly and w and p not in dirty)

    def allocate(c, pinned, clock):
        d2h_us = 0.0
        while len(chunks) >= cap:
            victim = next((v for v in chunks if v not in pinned), None)
            if victim is None:
                break
            back = sorted(p for p in range(victim * per_chunk, (victim + 1) * per_chunk)
                          if p in resident and p in dirty)
            for r in runs(back):
                d2h_us += transfer_us(r, page_B, uvm, service, peak)
            tot["d2h"] += len(back)
            tot["evict"] += 1
            for p in range(victim * per_chunk, (victim + 1) * per_chunk):
                resident.discard(p)
                dirty.discard(p)
            del chunks[victim]
            evicted_at[victim] = clock + d2h_us
        chunks[c] = None
        if c in evicted_at:
            if clock + d2h_us - evicted_at[c] <= uvm.thrash_window_us:
                thr_count[c] = thr_count.get(c, 0) + 1
                tot["thrash"] += 1
                if thr_count[c] >= uvm.thrash_events:
                    thrashing.add(c)
            else:
                thr_count[c] = 0
        return d2h_us

    def touch(c, pinned, clock):
        if c not in chunks:
            return allocate(c, pinned, clock)
        if lru == "migrate":
            chunks.move_to_end(c)
        return 0.0

    for launch in sorted(program):
        warps = program[launch]
        order = sorted(warps)
        pointer = {w: 0 for w in order}
        insts = {w: [warps[w][i] for i in sorted(warps[w])] for w in order}
        runnable = order[:resident_warps]
        waiting = order[resident_warps:]
        queue: list[tuple[int, int, bool]] = []        # (page, warp, write)
        pending: dict[int, int] = {}
        while True:
            for w in runnable:
                while pointer[w] < len(insts[w]):
                    acc = insts[w][pointer[w]]
                    mine: dict[int, int] = {}
                    for a in acc:
                        if a[2]:
                            continue
                        if not needs_fault(a[0], a[1]):
                            a[2] = True
                            continue
                        if a[0] in mine:
                            if a[1]:
                                queue[mine[a[0]]] = (a[0], w, True)
                            continue
                        mine[a[0]] = len(queue)
                        queue.append((a[0], w, a[1]))
                    if mine:
                        pending[w] = len(mine)
                        break
                    pointer[w] += 1
                if pointer[w] == len(insts[w]) and waiting:
                    runnable.append(waiting.pop(0))
            runnable = []
            if not queue:
                break
            batch = queue[:uvm.fault_batch_size]
            pages = list(dict.fromkeys(p for p, _, _ in batch))
            writes = {p for p, _, wr in batch if wr}
            tot["faults"] += len(batch)
            tot["unique"] += len(pages)
            tot["batches"] += 1
            t_us, h2d_us, d2h_us = uvm.batch_base_us, 0.0, 0.0
            for blk in sorted({p // per_block for p in pages}):
                base = blk * per_block
                mine = sorted(p for p in pages if p // per_block == blk)
                faulted = []
                for p in mine:
                    if p in resident:
                        dirty.add(p)
                        tot["upgrades"] += 1
                    else:
                        faulted.append(p)
                if not faulted:
                    continue
                pinned: set[int] = set()
                for p in faulted:
                    c = p // per_chunk
                    pinned.add(c)
                    d2h_us += touch(c, pinned, now + t_us + h2d_us + d2h_us)
                move = set(faulted)
                if uvm.prefetch:
                    present = [1 if (base + k) in resident else 0 for k in range(per_block)]
                    for p in faulted:
                        present[p - base] = 1
                    for p in faulted:
                        if p // per_chunk not in thrashing:
                            b0 = (p - base) // per_big * per_big
                            for k in range(b0, b0 + per_big):
                                present[k] = 1
                    for p in faulted:
                        if p // per_chunk in thrashing:
                            continue
                        region = largest_region(present, p - base, per_block,
                                                uvm.prefetch_threshold)
                        if region:
                            for k in range(*region):
                                q = base + k
                                if q not in resident and q // per_chunk not in thrashing:
                                    move.add(q)
                for c in sorted({q // per_chunk for q in move}):
                    if c not in pinned:
                        pinned.add(c)
                        d2h_us += touch(c, pinned, now + t_us + h2d_us + d2h_us)
                for q in move:
                    resident.add(q)
                    if not read_mostly or q in writes:
                        dirty.add(q)
                for r in runs(sorted(move)):
                    h2d_us += transfer_us(r, page_B, uvm, service, peak)
                tot["h2d"] += len(move)
                tot["pref"] += len(move) - len(faulted)
            t_us += h2d_us + d2h_us
            tot["service_us"] += t_us
            now += t_us
            left = []
            for p, w, wr in queue:
                if not needs_fault(p, wr):
                    for a in insts[w][pointer[w]]:
                        if a[0] == p:
                            a[2] = True
                    pending[w] -= 1
                    if pending[w] == 0:
                        runnable.append(w)
                else:
                    left.append((p, w, wr))
            queue = left
    return tot


def random_stream(seed, n, span_blocks, per_warp, write_frac):
    rng = np.random.default_rng(seed)
    sectors = rng.integers(0, span_blocks * BLOCK // 32, n)
    sizes = 32 * rng.integers(1, 5, n)
    # a few launches, warps with several instructions, some requests crossing pages
    launch = np.sort(rng.integers(0, 3, n))
    return RequestStream(launch=launch, warp=np.arange(n) // per_warp, inst=np.arange(n) % per_warp,
                         addr=(BASE + sectors * 32).astype(np.uint64), size_B=sizes,
                         useful_B=sizes, space=np.zeros(n), is_write=rng.random(n) < write_frac)


CASES = [
    # seed, requests, span in blocks, requests per warp, resident warps, capacity (blocks)
    (1, 300, 3, 1, 5120, 8),
    (2, 600, 5, 3, 64, 2),
    (3, 900, 6, 4, 8, 3),
    (4, 400, 2, 2, 1, 1),
    (5, 1200, 8, 5, 256, 4),
    (6, 800, 12, 2, 32, 5),
]


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("read_mostly", [False, True])
@pytest.mark.parametrize("lru", ["populate", "migrate"])
@pytest.mark.parametrize("prefetch", [True, False])
def test_compiled_model_matches_reference(case, read_mostly, lru, prefetch):
    seed, n, span, per_warp, warps, cap_blocks = case
    system = system_with(load_system("v100-pcie3"), {"uvm.prefetch": prefetch,
                                                      "uvm.thrash_window_us": 5000.0})
    s = random_stream(seed, n, span, per_warp, 0.2)
    service = "linear" if seed % 2 else "curve"
    got = simulate_uvm(s, system, capacity_B=cap_blocks * BLOCK, read_mostly=read_mostly,
                       resident_warps=warps, lru=lru, service=service)
    ref = reference(s, system, capacity_B=cap_blocks * BLOCK, read_mostly=read_mostly,
                    resident_warps=warps, lru=lru, service=service)
    page = system.uvm.page_B
    assert got.faults == ref["faults"]
    assert got.faults_unique == ref["unique"]
    assert got.batches == ref["batches"]
    assert got.h2d_B == ref["h2d"] * page
    assert got.prefetched_B == ref["pref"] * page
    assert got.d2h_B == ref["d2h"] * page
    assert got.evictions == ref["evict"]
    assert got.thrashing_events == ref["thrash"]
    assert got.write_upgrades == ref["upgrades"]
    assert got.service_time_s == pytest.approx(ref["service_us"] * 1e-6, rel=1e-9)
