"""The coalescer: patterns from the seed, hand-derived cases, and properties
checked against a plain-Python model of the same rules (hypothesis)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hostlink.model.errors import TraceError
from hostlink.model.workload import SPACE_DEVICE, SPACE_HOST
from hostlink.traces.accelsim import read_accelsim
from hostlink.traces.coalescer import coalesce, iter_coalesced
from hostlink.traces.schema import (OP_ATOMIC, OP_LOAD, OP_OTHER, OP_STORE, SPACE_GLOBAL,
                                    SPACE_LOCAL, SPACE_NONE, SPACE_SHARED, InstTable,
                                    KernelLaunch, Region)

DATA = Path(__file__).parent / "data"
HOST = [Region("host", 0x100000, 1 << 20, "host")]
BASE = 0x100000  # 4 KiB aligned, like the pinned allocations of gpu_kernels/KERNELS.md


def make_rows(rows: list[dict]) -> InstTable:
    """rows: dicts with lanes {lane: addr} and optional launch/cta/warp/op/space/width_B."""
    n = len(rows)
    addrs = np.zeros((n, 32), dtype=np.uint64)
    mask = np.zeros(n, dtype=np.uint32)
    for i, r in enumerate(rows):
        for lane, a in r["lanes"].items():
            addrs[i, lane] = a
            mask[i] |= np.uint32(1 << lane)
    col = lambda k, d: [r.get(k, d) for r in rows]  # noqa: E731
    return InstTable(launch=col("launch", 0), cta=col("cta", 0), warp=col("warp", 0),
                     pc=np.zeros(n), opcode=np.zeros(n), op=col("op", OP_LOAD),
                     space=col("space", SPACE_GLOBAL), width_B=col("width_B", 4), mask=mask,
                     addrs=addrs)


def warp_load(base: int, lanes=range(32), stride=4, **kw) -> dict:
    return {"lanes": {l: base + stride * i for i, l in enumerate(lanes)}, **kw}


def requests(rs) -> list[tuple[int, int, int]]:
    return list(zip((rs.addr - BASE).tolist(), rs.size_B.tolist(), rs.useful_B.tolist()))


# --------------------------------------------------------------------------- the seed's patterns

def test_seed_figure3_patterns():
    """emogi_vldb2020 Figure 3 (4 B per access): (a) each thread in its own
    128 B block -> 32 B requests; (b) a warp on one aligned 128 B line -> one
    128 B request; (c) a warp off by 32 B from the boundary -> 96 B + 32 B."""
    strided = warp_load(BASE, stride=128)
    merged = warp_load(BASE)
    misaligned = warp_load(BASE + 32)
    rs = coalesce(make_rows([strided]), HOST)
    assert rs.size_histogram() == {32: 32}
    assert requests(coalesce(make_rows([merged]), HOST)) == [(0, 128, 128)]
    assert requests(coalesce(make_rows([misaligned]), HOST)) == [(32, 96, 96), (128, 32, 32)]


def test_sectors_0_and_2_make_two_requests():
    rows = [{"lanes": {0: BASE, 1: BASE + 64}}]
    assert requests(coalesce(make_rows(rows), HOST)) == [(0, 32, 4), (64, 32, 4)]


def test_naive_thread_walk_with_and_without_caching():
    """One thread walks 16 consecutive 4 B elements, one load each (the naive
    kernel). emogi_vldb2020 §3: it sends a new 32 B request each time it
    crosses a 32 B boundary (one request serves up to 8 accesses): that is
    the cached behaviour; uncached, every access is a request."""
    from hostlink.traces.cache import CacheConfig
    rows = make_rows([{"lanes": {0: BASE + 4 * i}} for i in range(16)])
    assert coalesce(rows, HOST).size_histogram() == {32: 16}
    l1 = CacheConfig(l1_size_B=128 * 1024, sm_count=1)
    assert coalesce(rows, HOST, cache=l1).size_histogram() == {32: 16}  # host bypasses
    cached = coalesce(rows, HOST, cache=l1, cache_host=True)
    # Each request is credited with the bytes later hits read from it while cached.
    assert requests(cached) == [(0, 32, 32), (32, 32, 32)]
    assert cached.inst.tolist() == [0, 8]


def test_crossing_access_touches_next_sector():
    rows = [{"lanes": {0: BASE + 30}, "width_B": 4},       # bytes 30..33
            {"lanes": {0: BASE + 126}, "width_B": 4},      # crosses the 128 B line
            {"lanes": {0: BASE + 16}, "width_B": 16}]      # aligned 16 B: one sector
    rs = coalesce(make_rows(rows), HOST)
    assert requests(rs) == [(0, 64, 4), (96, 32, 2), (128, 32, 2), (0, 32, 16)]
    assert rs.inst.tolist() == [0, 1, 1, 2]


def test_broadcast_counts_each_byte_once():
    rows = [{"lanes": {l: BASE + 8 for l in range(32)}}]
    assert requests(coalesce(make_rows(rows), HOST)) == [(0, 32, 4)]


def test_spaces_and_kinds():
    rows = [warp_load(BASE, op=OP_STORE),
            warp_load(BASE, op=OP_ATOMIC),
            warp_load(BASE, space=SPACE_SHARED),
            warp_load(BASE, space=SPACE_LOCAL),                     # local: device memory
            warp_load(0x900000),                                    # in no region: device
            {"lanes": {}, "op": OP_LOAD},                           # mask 0: nothing
            {"lanes": {0: BASE}, "op": OP_OTHER, "space": SPACE_NONE, "width_B": 0}]
    rs = coalesce(make_rows(rows), HOST)
    assert rs.is_write.tolist() == [True, False]
    assert rs.space.tolist() == [SPACE_HOST, SPACE_HOST]
    rs = coalesce(make_rows(rows), HOST, include_device=True)
    assert rs.space.tolist() == [SPACE_HOST, SPACE_HOST] + [SPACE_DEVICE] * 8
    assert set(rs.size_B[rs.space == SPACE_DEVICE].tolist()) == {32}
    # inst counts global and local memory instructions; shared ones and non-memory ones do not
    assert rs.inst.tolist() == [0, 1] + [2] * 4 + [3] * 4


def test_region_boundary_inside_a_line():
    regions = [Region("a", BASE, 64, "host"), Region("b", BASE + 64, 64, "device")]
    rs = coalesce(make_rows([warp_load(BASE)]), regions, include_device=True)
    assert list(zip(rs.space.tolist(), (rs.addr - BASE).tolist(), rs.size_B.tolist())) == [
        (SPACE_HOST, 0, 64), (SPACE_DEVICE, 64, 32), (SPACE_DEVICE, 96, 32)]


def test_overlapping_regions_are_an_error():
    regions = [Region("a", BASE, 64, "host"), Region("b", BASE + 32, 64, "device")]
    with pytest.raises(TraceError, match="regions 'a' .* and 'b' .* overlap"):
        coalesce(make_rows([warp_load(BASE)]), regions)


def test_order_and_inst_across_chunks_and_warps():
    launches = [KernelLaunch("k", (2, 1, 1), (64, 1, 1)), KernelLaunch("k2", (1, 1, 1), (32, 1, 1))]
    rows = [warp_load(BASE + 0x000, cta=1, warp=1),
            warp_load(BASE + 0x100, cta=0, warp=0),
            warp_load(BASE + 0x200, cta=1, warp=1),
            warp_load(BASE + 0x300, cta=0, warp=0),
            warp_load(BASE + 0x400, launch=1)]
    t = make_rows(rows)
    chunks = [t.select(slice(0, 3)), t.select(slice(3, 5))]
    rs = coalesce(chunks, HOST, launches=launches)
    assert rs.launch.tolist() == [0, 0, 0, 0, 1]
    assert rs.warp.tolist() == [0, 0, 3, 3, 0]  # cta * 2 + warp
    assert rs.inst.tolist() == [0, 1, 0, 1, 0]
    assert (rs.addr - BASE).tolist() == [0x100, 0x300, 0x000, 0x200, 0x400]
    assert [l.name for l in rs.launches] == ["k", "k2"]
    # without launches, warps per CTA and CTAs are inferred from the rows
    inferred = coalesce(chunks, HOST)
    assert inferred.warp.tolist() == rs.warp.tolist()


def test_launch_order_is_required():
    launches = [KernelLaunch("k", (1, 1, 1), (32, 1, 1))] * 2
    t = make_rows([warp_load(BASE, launch=1), warp_load(BASE, launch=0)])
    with pytest.raises(TraceError, match="not in launch order"):
        coalesce(t, HOST, launches=launches)
    with pytest.raises(TraceError, match="launch 0 come after rows of launch 1"):
        coalesce([t.select(slice(0, 1)), t.select(slice(1, 2))], HOST, launches=launches)


def test_row_outside_its_launch_is_an_error():
    t = make_rows([warp_load(BASE, cta=5)])
    with pytest.raises(TraceError, match="CTA 5"):
        coalesce(t, HOST, launches=[KernelLaunch("k", (2, 1, 1), (32, 1, 1))])


def test_edge_v4_trace_requests():
    """tests/traces/data/edge_v4 with its MemcpyHtoD ranges in host memory
    (memcpy0 = [0x10000000, +4096), memcpy1 = [0x10001000, +256)); derivation:
    - LDG.E full warp, base 0x10000000 stride 4: one 128 B request;
    - LDG.E.64 lanes at 0x200, 0x300, 0x208, 0x400: sectors 0x200 (16 useful
      bytes), 0x300 and 0x400 (8 each): three 32 B requests;
    - LDG.E lanes 0 and 31 at 0x10 and 0x00: one 32 B request, 8 useful;
    - STG.E mask 0: none; LD.E (shared) none; ST.E (local): device, not emitted;
    - ATOM.E.ADD one lane at 0x20: 32 B read, 4 useful;
    - RED.E.ADD 16 lanes on 0x100: 32 B read, 4 useful;
    - launch 1, LDG.E.128 32 x 16 B from 0x10001000: 512 B; the first 256 B
      are memcpy1 (host): two 128 B requests; the rest is device memory."""
    trace = read_accelsim(DATA / "edge_v4", memcpy_location="host")
    rs = coalesce(trace)
    got = list(zip(rs.launch.tolist(), rs.warp.tolist(), rs.inst.tolist(),
                   [a - 0x10000000 for a in rs.addr.tolist()], rs.size_B.tolist(),
                   rs.useful_B.tolist()))
    assert got == [(0, 0, 0, 0x000, 128, 128),
                   (0, 0, 1, 0x200, 32, 16), (0, 0, 1, 0x300, 32, 8), (0, 0, 1, 0x400, 32, 8),
                   (0, 0, 2, 0x000, 32, 8),
                   (0, 1, 1, 0x020, 32, 4),
                   (0, 2, 0, 0x100, 32, 4),
                   (1, 0, 0, 0x1000, 128, 128), (1, 0, 0, 0x1080, 128, 128)]
    assert rs.size_histogram() == {32: 6, 128: 3}
    device = coalesce(trace, include_device=True)
    assert int(np.sum(device.space == SPACE_DEVICE)) == 1 + 8  # ST.E local + 256 B of LDG.E.128


def test_vectoradd_sample_requests(accelsim_data):
    """vectoradd (n = 100 floats, SOURCE.md): warps 0-2 read 128 B of each
    input array, warp 3 the last 16 B (mask 0000000f); the output likewise.
    With the MemcpyHtoD buffers in host memory: reads 6 x 128 B + 2 x 32 B,
    writes 3 x 128 B + 1 x 32 B; 800 useful bytes read."""
    trace = read_accelsim(accelsim_data / "vectoradd", memcpy_location="host")
    rs = coalesce(trace)
    assert rs.size_histogram() == {32: 2, 128: 6}
    assert rs.size_histogram(writes=True) == {32: 1, 128: 3}
    reads = rs.host_reads()
    assert int(reads.useful_B.sum()) == 800 and int(reads.size_B.sum()) == 6 * 128 + 2 * 32


# --------------------------------------------------------------------------- properties

def oracle(table: InstTable, host: list[tuple[int, int]], include_device: bool):
    """Per row: the requests, by the rules in the coalescer's docstring, in plain Python."""
    out = []
    for i in range(len(table)):
        op, space, w = int(table.op[i]), int(table.space[i]), int(table.width_B[i])
        if op not in (OP_LOAD, OP_STORE, OP_ATOMIC) or space not in (SPACE_GLOBAL, SPACE_LOCAL) \
                or w == 0:
            continue
        sectors: dict[int, set[int]] = {}
        is_host: dict[int, bool] = {}
        for lane in range(32):
            if not int(table.mask[i]) >> lane & 1:
                continue
            a = int(table.addrs[i, lane])
            h = space == SPACE_GLOBAL and any(s <= a < e for s, e in host)
            for b in range(a, a + w):
                sectors.setdefault(b // 32, set()).add(b)
                is_host.setdefault(b // 32, h)
        reqs = []
        for s in sorted(sectors):
            if is_host[s]:
                if reqs and reqs[-1][3] and reqs[-1][0] + reqs[-1][1] == 32 * s \
                        and reqs[-1][0] // 128 == s // 4:
                    a0, size, useful, _ = reqs[-1]
                    reqs[-1] = (a0, size + 32, useful + len(sectors[s]), True)
                    continue
                reqs.append((32 * s, 32, len(sectors[s]), True))
            elif include_device:
                reqs.append((32 * s, 32, len(sectors[s]), False))
        out.append((i, reqs, {b for bs in sectors.values() for b in bs}))
    return out


@st.composite
def tables(draw):
    n = draw(st.integers(1, 12))
    rows = []
    for _ in range(n):
        width = draw(st.sampled_from([1, 2, 4, 8, 16, 40]))
        base = draw(st.integers(0, 1024)) + BASE - 256
        lanes = draw(st.lists(st.integers(0, 31), max_size=32, unique=True))
        spread = draw(st.sampled_from([0, 64, 512]))
        lane_addr = {l: base + draw(st.integers(0, spread)) for l in lanes}
        rows.append({"lanes": lane_addr, "width_B": width,
                     "op": draw(st.sampled_from([OP_LOAD, OP_STORE, OP_ATOMIC, OP_OTHER])),
                     "space": draw(st.sampled_from([SPACE_GLOBAL, SPACE_GLOBAL, SPACE_LOCAL,
                                                    SPACE_SHARED]))})
    return make_rows(rows)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(t=tables(), cut=st.integers(0, 700), include_device=st.booleans())
def test_properties_against_plain_model(t, cut, include_device):
    regions = [Region("h", BASE, cut, "host"), Region("d", BASE + cut, 4096, "device")]
    rs = coalesce(t, regions, include_device=include_device)
    expected = oracle(t, [(BASE, BASE + cut)], include_device)
    # same requests, row by row (rows are in one warp: inst follows row order)
    mem_rows = [i for i, _, _ in expected]
    flat = [(mem_rows.index(i), a, s, u, h) for i, reqs, _ in expected for a, s, u, h in reqs]
    got = list(zip(rs.inst.tolist(), rs.addr.tolist(), rs.size_B.tolist(), rs.useful_B.tolist(),
                   (rs.space == SPACE_HOST).tolist()))
    assert got == flat
    # sizes, alignment, lines, overlap and bytes
    host = rs.space == SPACE_HOST
    assert set(rs.size_B[host].tolist()) <= {32, 64, 96, 128}
    assert set(rs.size_B[~host].tolist()) <= {32}
    assert np.all(rs.addr % 32 == 0)
    assert np.all(rs.addr // 128 == (rs.addr + rs.size_B.astype(np.uint64) - 1) // 128)
    assert np.all(rs.useful_B <= rs.size_B) and np.all(rs.useful_B > 0)
    for k, (i, reqs, lane_bytes) in enumerate(expected):
        sel = rs.inst == k
        starts, sizes = rs.addr[sel].astype(np.int64), rs.size_B[sel].astype(np.int64)
        assert np.all(starts[1:] >= starts[:-1] + sizes[:-1])  # no overlap within an instruction
        if include_device:
            # every byte a lane asked for lies in exactly one request, and is counted once
            assert int(rs.useful_B[sel].sum()) == len(lane_bytes)
            for b in lane_bytes:
                assert int(np.sum((starts <= b) & (b < starts + sizes))) == 1


def test_chunked_equals_whole():
    rng = np.random.default_rng(7)
    n = 500
    base = BASE + rng.integers(0, 4096, n) * 4
    rows = [{"lanes": {l: int(b) + 4 * l * int(rng.integers(1, 3)) for l in range(32)
                       if rng.random() < 0.8}, "cta": int(i % 3), "warp": int(i % 2)}
            for i, b in enumerate(base)]
    t = make_rows(rows)
    launches = [KernelLaunch("k", (3, 1, 1), (64, 1, 1))]
    whole = coalesce(t, HOST, launches=launches)
    parts = coalesce([t.select(slice(i, i + 37)) for i in range(0, n, 37)], HOST,
                     launches=launches)
    for k in ("launch", "warp", "inst", "addr", "size_B", "useful_B", "space", "is_write"):
        np.testing.assert_array_equal(getattr(whole, k), getattr(parts, k))
    # the per-chunk iterator reports the sectors it saw
    total = sum(c.sectors_host for c in iter_coalesced(t, HOST, launches=launches))
    assert total == int(whole.size_B.sum()) // 32


def test_address_beyond_range_is_an_error():
    with pytest.raises(TraceError, match="2\\*\\*62"):
        coalesce(make_rows([{"lanes": {0: 1 << 63}}]), HOST)


def test_reductions_are_writes_other_atomics_reads():
    # RED (PageRank's atomicAdd, result unused) is fire and forget; ATOMG returns a value
    from hostlink.traces.coalescer import posted_opcodes
    from hostlink.traces.emulator import emulate
    from hostlink.traces.graphs import kron
    g = kron(8, 8, seed=3)
    tr = emulate(g, "pagerank", "merged", include_device=True, iterations=1).trace()
    pr = coalesce(tr, include_device=True)
    dev = pr.space == SPACE_DEVICE
    # PageRank's only device writes are its reductions on next_rank
    assert pr.is_write[dev].sum() > 0 and not pr.is_write[~dev].any()
    # without the opcode names (bare chunks) an atomic is a read, as before
    bare = coalesce(list(tr.iter_chunks()), tr.regions, launches=tr.launches, include_device=True)
    assert not bare.is_write.any()
    assert np.array_equal(bare.addr, pr.addr) and np.array_equal(bare.size_B, pr.size_B)
    assert posted_opcodes(["LDG.E", "RED.E.ADD.F32.FTZ.RN.STRONG.GPU",
                           "ATOMG.E.MIN.STRONG.GPU"]).tolist() == [False, True, False]
    assert posted_opcodes(None) is None


def test_atomics_that_return_are_marked_and_reductions_and_loads_are_not():
    # SSSP's atomicMin (ATOMG) returns the old value the warp waits for; PageRank's
    # atomicAdd (RED) does not, nor does a load: the stream's ``atomic`` marks the first
    # alone, on every request of its instruction, whether streamed in chunks or not
    from hostlink.traces.emulator import emulate
    from hostlink.traces.graphs import kron
    from hostlink.traces.schema import OP_ATOMIC
    g = kron(8, 8, seed=3)
    pr = coalesce(emulate(g, "pagerank", "merged", include_device=True, iterations=1).trace(),
                  include_device=True)
    assert pr.atomic is None
    tr = emulate(g, "sssp", "merged", include_device=True).trace()
    s = coalesce(tr, include_device=True)
    assert s.atomic is not None and s.atomic.any() and not s.is_write[s.atomic].any()
    assert (s.space[s.atomic] == SPACE_DEVICE).all()
    key = (s.launch.astype(np.int64) << 40) | (s.warp.astype(np.int64) << 20) | s.inst
    marked = set(key[s.atomic].tolist())
    assert not (set(key[~s.atomic].tolist()) & marked)       # whole instructions
    # as many instructions as the trace has atomics that touch memory
    atoms = sum(int(((c.op == OP_ATOMIC) & (c.mask != 0)).sum()) for c in tr.iter_chunks())
    assert len(marked) == atoms
    chunks = list(tr.iter_chunks())
    split = coalesce([c.select(slice(i, i + 50)) for c in chunks for i in range(0, len(c), 50)],
                     tr.regions, launches=tr.launches, include_device=True)
    np.testing.assert_array_equal(split.atomic, s.atomic)
    # the marks travel with the stream's own operations
    assert s.select(s.atomic).atomic.all()
    assert s.with_waits(None).atomic is s.atomic
    both = type(s).concat([pr, s])
    assert not both.atomic[:len(pr)].any() and np.array_equal(both.atomic[len(pr):], s.atomic)
    with pytest.raises(ValueError, match="atomic"):
        s.with_atomic(np.ones(3, dtype=bool))
