"""Useful bytes with caches: a hit credits the request that brought its sector in.

The rule (traces/coalescer.py, traces/cache.py): a request's ``useful_B`` is
the bytes of the request that some lane read while the request's copy of the
sector was cached (the lanes of the missing instruction and of every later
hit on that copy), each byte once. The seed's naive kernel (emogi_vldb2020
§3.3, "Strided Access"): a thread walking its list sends a new 32 B request
only when it crosses a 32 B boundary, so one 32 B request serves four 8 B
ids, all 32 of its bytes used.
"""
from __future__ import annotations

from collections import OrderedDict

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hostlink.model.workload import SPACE_DEVICE, SPACE_HOST
from hostlink.traces.cache import (INVALID, REC_LINE, REC_MASK01, SEC01, TAG, CacheConfig,
                                   CacheState)
from hostlink.traces.coalescer import coalesce, iter_coalesced
from hostlink.traces.schema import OP_STORE, KernelLaunch, Region

from test_coalescer import BASE, HOST, make_rows, requests, warp_load

LINE = 128
L1 = CacheConfig(l1_size_B=128 * 1024, sm_count=1)


def walk(n: int, elem_B: int, start: int = BASE, **kw) -> list[dict]:
    """One thread (lane 0) reading n consecutive elements, one load each (the naive kernel)."""
    return [{"lanes": {0: start + elem_B * i}, "width_B": elem_B, **kw} for i in range(n)]


# ------------------------------------------------------------------ hand-derived cases

def test_naive_walk_of_8B_ids_one_full_request_per_sector():
    # 16 ids of 8 B = 128 B = 4 sectors: a request at loads 0, 4, 8, 12, each with
    # its 32 B read by the four loads of its sector
    rs = coalesce(make_rows(walk(16, 8)), HOST, cache=L1, cache_host=True)
    assert requests(rs) == [(0, 32, 32), (32, 32, 32), (64, 32, 32), (96, 32, 32)]
    assert rs.inst.tolist() == [0, 4, 8, 12]
    # uncached: one request per load, 8 B of it useful
    plain = coalesce(make_rows(walk(16, 8)), HOST)
    assert len(plain) == 16 and plain.useful_B.tolist() == [8] * 16


def test_partly_read_sector_credits_only_the_bytes_read():
    # three 8 B ids then a jump to the next line: 24 B of the first sector are read
    rows = walk(3, 8) + walk(1, 8, start=BASE + LINE)
    rs = coalesce(make_rows(rows), HOST, cache=L1, cache_host=True)
    assert requests(rs) == [(0, 32, 24), (LINE, 32, 8)]


def test_a_byte_read_twice_counts_once():
    # the same 8 B read three times, then its neighbour: 16 B used of one request
    rows = walk(1, 8) * 3 + walk(1, 8, start=BASE + 8)
    rs = coalesce(make_rows(rows), HOST, cache=L1, cache_host=True)
    assert requests(rs) == [(0, 32, 16)]


def test_eviction_between_uses_sends_a_second_request():
    # one L1 line: sector 0's line, then another line (evicts it), then sector 0 again
    tiny = CacheConfig(l1_size_B=LINE, l1_ways=1)
    rows = walk(1, 8) + walk(1, 8, start=BASE + LINE) + walk(1, 8, start=BASE + 8)
    rs = coalesce(make_rows(rows), HOST, cache=tiny, cache_host=True)
    # the second read of sector 0 is a new request and its bytes are its own
    assert requests(rs) == [(0, 32, 8), (LINE, 32, 8), (0, 32, 8)]
    assert rs.inst.tolist() == [0, 1, 2]


def test_hit_on_a_wide_request_credits_the_right_sector():
    # a warp reads 4 B every 16 B of one aligned line (one 128 B request, 32 B used:
    # bytes 0..3, 16..19, ..., 112..115), then a thread reads bytes 64..71 (64..67
    # already counted: 4 B more) and 120..127 (8 B more)
    rows = [warp_load(BASE, lanes=range(8), stride=16), *walk(1, 8, start=BASE + 64),
            *walk(1, 8, start=BASE + 120)]
    rs = coalesce(make_rows(rows), HOST, cache=L1, cache_host=True)
    assert requests(rs) == [(0, 128, 32 + 4 + 8)]
    assert int(rs.useful_B[0]) <= int(rs.size_B[0])


def test_l1_copy_from_l2_credits_the_filling_request():
    # SM 0 brings the sector into L1 and L2; SM 1 misses its L1, hits the L2: its
    # bytes go to SM 0's request, and the byte range read by both counts once
    launches = [KernelLaunch("k", (2, 1, 1), (32, 1, 1))]
    two = CacheConfig(l1_size_B=64 * LINE, l2_size_B=256 * LINE, sm_count=2)
    rows = [*walk(1, 8, cta=0), *walk(2, 8, cta=1), *walk(1, 8, start=BASE + 24, cta=1)]
    rs = coalesce(make_rows(rows), HOST, launches=launches, cache=two, cache_host=True)
    assert requests(rs) == [(0, 32, 8 + 8 + 8)]
    assert rs.warp.tolist() == [0]


def test_l2_hit_after_the_l1_flush_of_a_new_launch():
    launches = [KernelLaunch("a", (1, 1, 1), (32, 1, 1))] * 2
    cfg = CacheConfig(l1_size_B=64 * LINE, l2_size_B=256 * LINE)
    rows = walk(1, 8, launch=0) + walk(1, 8, start=BASE + 8, launch=1)
    rs = coalesce(make_rows(rows), HOST, launches=launches, cache=cfg, cache_host=True)
    assert requests(rs) == [(0, 32, 16)] and rs.launch.tolist() == [0]


def test_hits_credit_requests_of_earlier_chunks():
    """A chunk's hits on sectors an earlier chunk requested come as late credits;
    coalesce() adds them to the right requests (the global index)."""
    table = make_rows(walk(16, 8))
    chunks = [table.select(slice(i, i + 3)) for i in range(0, 16, 3)]
    whole = coalesce(table, HOST, cache=L1, cache_host=True)
    split = coalesce(chunks, HOST, cache=L1, cache_host=True)
    assert requests(split) == requests(whole)
    parts = list(iter_coalesced(chunks, HOST, cache=L1, cache_host=True))
    # chunk 1 holds loads 3..5: load 3 hits request 0 (chunk 0), load 4 is request 1
    assert parts[1].first_request == 1
    assert parts[1].late_index.tolist() == [0] and parts[1].late_useful_B.tolist() == [8]
    assert parts[1].late_space.tolist() == [SPACE_HOST]
    yielded = sum(int(p.requests.useful_B.sum()) + int(p.late_useful_B.sum()) for p in parts)
    assert yielded == int(whole.useful_B.sum()) == 128


def test_device_requests_are_credited_too():
    regions = [*HOST, Region("dev", 0x900000, 4096, "device")]
    rows = walk(4, 8, start=0x900000)
    rs = coalesce(make_rows(rows), regions, cache=L1, include_device=True)
    assert rs.space.tolist() == [SPACE_DEVICE] and rs.useful_B.tolist() == [32]
    # not emitted: nothing to credit, and host requests stay their own
    assert len(coalesce(make_rows(rows), regions, cache=L1)) == 0


def test_stores_do_not_credit():
    rows = walk(1, 8) + walk(1, 8, start=BASE + 8, op=OP_STORE)
    rs = coalesce(make_rows(rows), HOST, cache=L1, cache_host=True)
    assert requests(rs) == [(0, 32, 8), (0, 32, 8)]
    assert rs.is_write.tolist() == [False, True]


def sector_states(lines: np.ndarray, sub: int) -> np.ndarray:
    """State of sector ``sub`` of every way (INVALID, NO_RECORD or a record index)."""
    word = lines[..., SEC01 + (sub >> 1)]
    v = (word >> (32 * (sub & 1))) & 0xFFFFFFFF
    return np.where(v >= 2**31, v - 2**32, v)


def record_invariants(state: CacheState) -> None:
    """Sectors of absent lines are invalid; a sector's record is in the pool, is the
    record of a request on the sector's line, and counts the filling lanes' bytes."""
    used = int(state.rec_used[0])
    for use, lines in ((state.use_l1, state.l1_lines), (state.use_l2, state.l2_lines)):
        if not use:
            continue
        tag = lines[..., TAG]
        for sub in range(4):
            v = sector_states(lines, sub)
            assert np.all(v[tag < 0] == INVALID)
            rec = v[(tag >= 0) & (v >= 0)]
            assert np.all(rec < used)
            assert np.array_equal(state.recs[rec, REC_LINE], tag[(tag >= 0) & (v >= 0)])
            mask = (state.recs[rec, REC_MASK01 + (sub >> 1)] >> (32 * (sub & 1))) & 0xFFFFFFFF
            assert np.all(mask != 0)


def capture_state(monkeypatch) -> list:
    """The CacheState the coalescer makes, kept for inspection."""
    import hostlink.traces.coalescer as co
    made = []

    class Kept(CacheState):
        def __init__(self, config):
            super().__init__(config)
            made.append(self)
    monkeypatch.setattr(co, "CacheState", Kept)
    return made


def test_records_are_dropped_with_their_copies(monkeypatch):
    # 3000 lines, each read twice in a row, through a 2-line L1 and a 4-line L2: the
    # pool keeps its first size, compacted as lines leave the caches
    made = capture_state(monkeypatch)
    cfg = CacheConfig(l1_size_B=2 * LINE, l1_ways=2, l2_size_B=4 * LINE, l2_ways=2)
    rows = [warp_load(BASE + LINE * (i // 2), lanes=range(32), stride=4) for i in range(6000)]
    rs = coalesce(make_rows(rows), HOST, cache=cfg, cache_host=True)
    assert len(rs) == 3000 and rs.useful_B.tolist() == [128] * 3000
    state = made[0]
    assert len(state.recs) == 1024
    record_invariants(state)
    # one record per 128 B request: those of the four lines the L2 still holds
    # (the L1's two lines are among them)
    assert state.live_records() == 4
    record_invariants(state)


def test_record_pool_grows_when_every_record_is_live(monkeypatch):
    # an L1 of 512 lines (128 sets x 4 ways) filled sector by sector: 2048 requests, all
    # cached at once (more than the pool's 1024 records), then every sector read again
    made = capture_state(monkeypatch)
    cfg = CacheConfig(l1_size_B=512 * LINE, l1_ways=4)
    first = [{"lanes": {0: BASE + 32 * i}} for i in range(2048)]
    again = [{"lanes": {0: BASE + 32 * i + 4}} for i in range(2048)]
    rs = coalesce(make_rows(first + again), HOST, cache=cfg, cache_host=True)
    assert len(rs) == 2048 and rs.useful_B.tolist() == [8] * 2048
    state = made[0]
    assert len(state.recs) > 1024 and state.live_records() == 2048
    record_invariants(state)


# ------------------------------------------------------------------ against a plain model

class _Level:
    """A set-associative sector cache, LRU over lines (the model of traces/cache.py),
    where each valid sector holds the id of the fill it came from."""

    def __init__(self, units: int, size_B: int, ways: int):
        self.sets = max(size_B // (LINE * ways), 1)
        self.ways = ways
        self.lines = [[OrderedDict() for _ in range(self.sets)] for _ in range(units)]

    def lookup(self, unit: int, sector: int):
        """(hit, fill id of the hit copy, the line's sector dict)."""
        line = sector >> 2
        s = self.lines[unit][line % self.sets]
        if line in s:
            s.move_to_end(line)
            sectors = s[line]
            return (sector in sectors), sectors.get(sector), sectors
        if len(s) == self.ways:
            s.popitem(last=False)
        s[line] = {}
        return False, None, s[line]

    def flush(self):
        for unit in self.lines:
            for s in unit:
                s.clear()


def plain_model(rows: list[dict], cfg: CacheConfig, launches) -> list[tuple]:
    """(launch, warp, inst, addr, size, useful) of each host read request, one row
    at a time; ``useful`` = the distinct bytes credited to each fill id."""
    l1 = _Level(cfg.sm_count, cfg.l1_size_B, cfg.l1_ways) if cfg.l1_size_B else None
    l2 = _Level(1, cfg.l2_size_B, cfg.l2_ways) if cfg.l2_size_B else None
    credited: list[set] = []     # per request: bytes (absolute addresses) used
    out: list[list] = []
    counters: dict = {}
    launch_now = -1
    for r in rows:
        launch = r.get("launch", 0)
        if launch != launch_now:
            launch_now = launch
            counters = {}
            if l1:
                l1.flush()
        info = launches[launch]
        gw = r.get("cta", 0) * info.warps_per_cta + r.get("warp", 0)
        inst = counters.get(gw, 0)
        counters[gw] = inst + 1
        width = r.get("width_B", 4)
        by_sector: dict[int, set] = {}
        for a in r["lanes"].values():
            for byte in range(a, a + width):
                by_sector.setdefault(byte >> 5, set()).add(byte)
        missing = []
        for sec in sorted(by_sector):
            hit, fill, where = False, None, []
            sm = r.get("cta", 0) % cfg.sm_count
            if l1:
                hit, fill, sectors = l1.lookup(sm, sec)
                if not hit:
                    where.append(sectors)
            if not hit and l2:
                hit, fill, sectors = l2.lookup(0, sec)
                if hit:
                    for s in where:
                        s[sec] = fill     # the L1 copy comes from the L2 copy
                    where = []
                else:
                    where.append(sectors)
            if hit:
                credited[fill] |= by_sector[sec]
            else:
                missing.append((sec, where))
        # runs of contiguous missing sectors within a line: one request each
        i = 0
        while i < len(missing):
            j = i
            while (j + 1 < len(missing) and missing[j + 1][0] == missing[j][0] + 1
                   and missing[j + 1][0] >> 2 == missing[i][0] >> 2):
                j += 1
            rid = len(out)
            credited.append(set())
            for sec, where in missing[i:j + 1]:
                credited[rid] |= by_sector[sec]
                for s in where:
                    s[sec] = rid
            out.append([launch, gw, inst, missing[i][0] * 32, (j - i + 1) * 32])
            i = j + 1
    return sorted((*o, len(credited[k])) for k, o in enumerate(out))


@st.composite
def cached_rows(draw):
    """Loads of 4 or 8 B by warps of 2 CTAs over 2 launches, on few lines (to reuse),
    through small caches (to evict)."""
    n = draw(st.integers(1, 40))
    nlines = draw(st.integers(1, 12))
    rows = []
    launch = 0
    for _ in range(n):
        launch = min(1, launch + draw(st.integers(0, 1)) * draw(st.booleans()))
        width = draw(st.sampled_from([4, 8]))
        nl = draw(st.integers(1, 4))
        lanes = draw(st.lists(st.integers(0, 31), min_size=nl, max_size=nl, unique=True))
        addrs = draw(st.lists(st.integers(0, nlines * LINE // width - 1), min_size=nl,
                              max_size=nl))
        rows.append({"lanes": {l: BASE + width * a for l, a in zip(lanes, addrs)},
                     "width_B": width, "launch": launch, "cta": draw(st.integers(0, 1)),
                     "warp": draw(st.integers(0, 1))})
    l1_ways = draw(st.sampled_from([1, 2]))
    l1 = draw(st.sampled_from([0, 1, 2, 4])) * LINE * l1_ways
    l2 = draw(st.sampled_from([0, 4, 8])) * LINE
    if l1 == l2 == 0:
        l1 = LINE * l1_ways
    cfg = CacheConfig(l1_size_B=l1, l1_ways=l1_ways, l2_size_B=l2, l2_ways=2 if l2 else 16,
                      sm_count=draw(st.integers(1, 2)))
    return rows, cfg, draw(st.integers(1, 8))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cached_rows())
def test_useful_bytes_against_plain_model(case):
    rows, cfg, chunk = case
    import hostlink.traces.coalescer as co
    made = []

    class Kept(CacheState):
        def __init__(self, config):
            super().__init__(config)
            made.append(self)
    launches = [KernelLaunch("k", (2, 1, 1), (64, 1, 1))] * 2
    table = make_rows(rows)
    chunks = [table.select(slice(i, i + chunk)) for i in range(0, len(rows), chunk)]
    original = co.CacheState
    co.CacheState = Kept  # hypothesis does not mix with the function-scoped monkeypatch
    try:
        rs = coalesce(chunks, HOST, launches=launches, cache=cfg, cache_host=True)
    finally:
        co.CacheState = original
    record_invariants(made[0])
    got = sorted(zip(rs.launch.tolist(), rs.warp.tolist(), rs.inst.tolist(),
                     rs.addr.tolist(), rs.size_B.tolist(), rs.useful_B.tolist()))
    want = plain_model(rows, cfg, launches)
    assert got == want
    # properties: never more useful bytes than requested; no byte counted twice
    assert np.all(rs.useful_B <= rs.size_B)
    assert int(rs.useful_B.sum()) == sum(w[-1] for w in want)
    # every byte a lane read was credited to some request (at least once)
    read = {b for r in rows for a in r["lanes"].values() for b in range(a, a + r["width_B"])}
    assert int(rs.useful_B.sum()) >= len(read)
    # streaming: yielded useful bytes plus late credits give the same total
    parts = list(iter_coalesced(chunks, HOST, launches=launches, cache=cfg, cache_host=True))
    assert sum(int(p.requests.useful_B.sum()) + int(p.late_useful_B.sum()) for p in parts) \
        == int(rs.useful_B.sum())
