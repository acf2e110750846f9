"""UVM model: hand-worked fault, batch, prefetch and eviction counts, and properties.

Expected values are derived in each test from the driver rules the model
documents (hostlink.model.uvm.model) and from the system preset's numbers
(sim_configs/uvm/driver_default.toml: 4 KB pages, 256-entry batches, 64 KB
big pages in 2 MB VA blocks, the 51% rule, 50 us per batch, 1 us per KB in
the linear fit, a = 12 GB/s and k = 0.07292 in the transfer curve).
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hostlink.model.config import load_system, system_with
from hostlink.model.errors import ConfigError, HostlinkError
from hostlink.model.uvm import (UvmResult, prefetch_pages, remote_requests, simulate_uvm,
                                transfer_bw_GBps, unique_bytes)
from hostlink.model.workload import SPACE_DEVICE, SPACE_HOST, RequestStream

PAGE = 4096
BLOCK = 2 * 1024 * 1024
BASE = 0x7F0000000000          # a 2 MB aligned managed allocation


@pytest.fixture(scope="module")
def v100():
    return load_system("v100-pcie3")


def no_prefetch(system):
    return system_with(system, {"uvm.prefetch": False})


def stream(addr, warp, inst, *, launch=None, size=128, write=None, space=None) -> RequestStream:
    addr = np.asarray(addr, dtype=np.uint64)
    n = addr.shape[0]
    size_arr = np.broadcast_to(np.asarray(size), (n,))
    return RequestStream(
        launch=np.zeros(n) if launch is None else np.asarray(launch),
        warp=np.asarray(warp), inst=np.asarray(inst), addr=addr,
        size_B=size_arr, useful_B=size_arr,
        space=np.full(n, SPACE_HOST) if space is None else np.asarray(space),
        is_write=np.zeros(n, bool) if write is None else np.asarray(write, bool))


def one_warp_pages(pages, *, launch=0) -> RequestStream:
    """One warp reading the first 128 B of each page in turn, one instruction per page."""
    pages = np.asarray(pages, dtype=np.int64)
    n = pages.shape[0]
    return stream(BASE + pages * PAGE, np.zeros(n), np.arange(n), launch=np.full(n, launch))


def launches(*parts: RequestStream) -> RequestStream:
    """Concatenate streams as consecutive launches 0, 1, 2, ..."""
    renumbered = [RequestStream(**{k: getattr(p, k) for k in ("warp", "inst", "addr", "size_B",
                                                               "useful_B", "space", "is_write")},
                                launch=np.full(len(p), k)) for k, p in enumerate(parts)]
    return RequestStream.concat(renumbered)


def curve_us(pages, system) -> float:
    """One contiguous transfer of ``pages`` pages on the UVMSmart curve (a scaled to the link)."""
    a = system.uvm.transfer_peak_GBps  # v100-pcie3 is PCIe 3.0 x16, the curve's own link
    size_KB = pages * PAGE / 1024
    bw_GBps = 2 * a / math.pi * math.atan(system.uvm.transfer_shape_per_KB * size_KB)
    return pages * PAGE / (bw_GBps * 1e3)


# ---------------------------------------------------------------- sequential sweeps

def test_sequential_sweep_without_prefetch_faults_every_page(v100):
    system = no_prefetch(v100)
    n = 64
    r = simulate_uvm(one_warp_pages(range(n)), system, resident_warps=1)
    # one warp: each fault is alone in its batch, every page moves alone
    assert (r.faults, r.faults_unique, r.faults_duplicate, r.batches) == (n, n, 0, n)
    assert r.h2d_B == n * PAGE and r.prefetched_B == 0 and r.d2h_B == 0 and r.evictions == 0
    assert r.unique_B == n * 128
    assert r.read_amplification == pytest.approx(PAGE / 128)
    expected_us = n * (system.uvm.batch_base_us + curve_us(1, system))
    assert r.service_time_s == pytest.approx(expected_us * 1e-6, rel=1e-9)
    lin = simulate_uvm(one_warp_pages(range(n)), system, resident_warps=1, service="linear")
    lin_us = n * (system.uvm.batch_base_us + system.uvm.migrate_per_KB_us * PAGE / 1024)
    assert lin.service_time_s == pytest.approx(lin_us * 1e-6, rel=1e-9)


def test_sequential_sweep_with_prefetch_doubles_per_block(v100):
    # One warp reads page 0, 1, 2, ... of two VA blocks. Worked by hand from the rule:
    # fault at 0: big page 0-15 present (16 of 32 in 0-31 is not > 51%) -> 16 pages;
    # fault at 16: 0-31 full -> 16 more; fault at 32: 48 of 0-63 -> pages 32-63;
    # fault at 64: 80 of 0-127 (> 65.28) -> 64-127; fault at 128: 144 of 256 -> 128 pages;
    # fault at 256: 272 of 512 (> 261.12) -> the other 256 pages.
    per_block = [16, 16, 32, 64, 128, 256]
    assert sum(per_block) == 512
    r = simulate_uvm(one_warp_pages(range(1024)), v100, resident_warps=1)
    assert r.batches == 2 * len(per_block) and r.faults == r.batches
    assert r.h2d_B == 1024 * PAGE
    assert r.prefetched_B == (1024 - r.batches) * PAGE
    expected_us = 2 * sum(v100.uvm.batch_base_us + curve_us(p, v100) for p in per_block)
    assert r.service_time_s == pytest.approx(expected_us * 1e-6, rel=1e-9)
    assert r.read_amplification == pytest.approx(PAGE / 128)


def test_many_warps_per_page_are_duplicate_faults(v100):
    # 64 pages x 32 lines, one warp per 128 B line: 2048 warps, all resident, each faults once.
    # A batch takes 256 entries = 8 pages x 32 warps: 8 unique faults and 248 duplicates.
    n_pages = 64
    lines = np.arange(n_pages * 32)
    s = stream(BASE + lines * 128, lines, np.zeros_like(lines))
    r = simulate_uvm(s, no_prefetch(v100))
    assert r.batches == n_pages * 32 // 256
    assert (r.faults, r.faults_unique, r.faults_duplicate) == (n_pages * 32, n_pages, n_pages * 31)
    assert r.duplicate_fraction == pytest.approx(31 / 32)
    assert r.h2d_B == r.unique_B == n_pages * PAGE
    assert r.read_amplification == pytest.approx(1.0)


def test_published_duplicate_model_imposes_the_fraction(v100):
    lines = np.arange(64 * 32)
    s = stream(BASE + lines * 128, lines, np.zeros_like(lines))
    r = simulate_uvm(s, no_prefetch(v100), duplicates="published")
    f = v100.uvm.duplicate_fault_fraction
    per_batch = math.ceil(256 * (1 - f))           # 39 distinct pages per batch
    assert r.batches == math.ceil(64 / per_batch)
    assert r.faults_unique == 64
    assert r.duplicate_fraction == pytest.approx(f)


def test_random_touch_pattern_counts(v100):
    rng = np.random.default_rng(7)
    n = 3000
    lines = rng.integers(0, 2 * BLOCK // 128, n)   # one random line of a 4 MB range per warp
    s = stream(BASE + lines * 128, np.arange(n), np.zeros(n))
    pages = np.unique(lines * 128 // PAGE)
    r = simulate_uvm(s, no_prefetch(v100))
    # Reference: all 3000 warps are resident and fault once, in warp order. A batch fetches the
    # 256 oldest entries; the buffer is then flushed and the warps replay, so warps whose page
    # that batch brought never show up again (the driver's default batch_flush replay policy).
    queue = list(lines * 128 // PAGE)
    resident: set[int] = set()
    faults = batches = unique = 0
    while queue:
        batch = queue[:256]
        faults += len(batch)
        unique += len(set(batch))
        batches += 1
        resident.update(batch)
        queue = [p for p in queue if p not in resident]
    assert (r.faults, r.faults_unique, r.batches) == (faults, unique, batches)
    assert r.h2d_B == pages.shape[0] * PAGE
    assert r.unique_B == np.unique(lines).shape[0] * 128
    with_pf = simulate_uvm(s, v100)
    assert r.h2d_B <= with_pf.h2d_B <= 2 * BLOCK
    big = np.unique(lines * 128 // 65536)
    assert with_pf.h2d_B >= big.shape[0] * 65536   # every faulted big page moves whole


# ---------------------------------------------------------------- the prefetch rule

def test_prefetch_rule_on_a_hand_made_pattern():
    resident = np.zeros(512, bool)
    faulted = np.zeros(512, bool)
    faulted[100] = True
    resident[:48] = True
    # present: 0-47 and the big page 96-111 of the fault. 96-127: 16/32 = 50%, not more;
    # 0-127: 64/128 = 50%, not more -> only the big page moves.
    got = prefetch_pages(resident, faulted)
    assert np.array_equal(np.flatnonzero(got), np.arange(96, 112))
    # two more resident pages: 0-127 holds 66 > 0.51 * 128 = 65.28 -> the rest of 0-127 moves,
    # although its half 64-127 (16/64) alone would not qualify: the rule keeps the largest.
    resident[:50] = True
    got = prefetch_pages(resident, faulted)
    assert np.array_equal(np.flatnonzero(got), np.arange(50, 128))
    # a threshold of 100% is never exceeded: only the faulted page
    got = prefetch_pages(resident, faulted, threshold=1.0)
    assert np.array_equal(np.flatnonzero(got), [100])


def test_prefetch_rule_two_faults_in_one_batch():
    resident = np.zeros(512, bool)
    faulted = np.zeros(512, bool)
    faulted[[3, 20]] = True
    # big pages 0-15 and 16-31 present: 0-31 is full, 0-63 is 32/64 = 50% -> pages 0-31
    got = prefetch_pages(resident, faulted)
    assert np.array_equal(np.flatnonzero(got), np.arange(32))
    faulted[40] = True
    # 48 of 0-63 present (75%); 0-127: 48/128 -> pages 0-63
    got = prefetch_pages(resident, faulted)
    assert np.array_equal(np.flatnonzero(got), np.arange(64))


def test_prefetch_rule_inside_the_simulation(v100):
    # launch 0 reads pages 0-49; launch 1 faults on page 100 of the same block
    s = launches(*[one_warp_pages(range(50)), one_warp_pages([100])])
    off = simulate_uvm(s, no_prefetch(v100), resident_warps=1)
    assert off.h2d_B == 51 * PAGE and off.batches == 51
    # prefetching, launch 0 takes 16 + 16 + 32 pages (faults at 0, 16, 32) and leaves 0-63
    # resident; then 0-63 plus the big page 96-111 make 80 of 0-127 (> 65.28): 64-127 move
    on = simulate_uvm(s, v100, resident_warps=1)
    assert [x.batches for x in on.per_launch] == [3, 1]
    assert [x.h2d_B for x in on.per_launch] == [64 * PAGE, 64 * PAGE]
    assert on.per_launch[1].prefetched_B == 63 * PAGE


# ---------------------------------------------------------------- capacity and eviction

def three_blocks_twice() -> RequestStream:
    pages = np.arange(3 * 512)
    return launches(*[one_warp_pages(pages), one_warp_pages(pages)])


def test_oversubscription_1_5_evicts_lru_chunks(v100):
    # working set 3 VA blocks (6 MB), capacity 2 chunks (4 MB): oversubscription 1.5.
    # Launch 0: A, B fill the GPU, C evicts A. Launch 1: A evicts B, B evicts C, C evicts A:
    # a cyclic sweep larger than the memory misses every time under LRU.
    r = simulate_uvm(three_blocks_twice(), v100, capacity_B=2 * BLOCK, resident_warps=1,
                     service="linear")
    assert r.oversubscription == pytest.approx(1.5)
    assert [x.evictions for x in r.per_launch] == [1, 3]
    assert r.evictions == 4
    assert r.d2h_B == 4 * BLOCK                 # every evicted page was migrated, so written back
    assert r.h2d_B == 6 * BLOCK
    assert r.batches == 6 * 6                    # six doubling batches per block migration
    lin = v100.uvm.migrate_per_KB_us
    expected_us = 36 * v100.uvm.batch_base_us + lin * (r.h2d_B + r.d2h_B) / 1024
    assert r.service_time_s == pytest.approx(expected_us * 1e-6, rel=1e-9)
    assert r.d2h_time_s == pytest.approx(lin * r.d2h_B / 1024 * 1e-6, rel=1e-9)
    # linear service: 6 batches of 50 us + 2048 us per block, far beyond the 500 us window
    assert r.thrashing_events == 0
    # with room for all three blocks nothing is evicted
    roomy = simulate_uvm(three_blocks_twice(), v100, capacity_B=3 * BLOCK, resident_warps=1)
    assert roomy.evictions == 0 and roomy.h2d_B == 3 * BLOCK and roomy.per_launch[1].batches == 0


def test_lru_order_follows_population_not_hits(v100):
    # Launch 0 makes A then B resident; launch 1 re-reads A (a hit the driver never sees);
    # launch 2 needs room for C. The driver's list moves a chunk only when it becomes
    # resident, so A, the older, goes, and launch 3's read of A faults again.
    s = launches(*[one_warp_pages([0, 512]), one_warp_pages([0]),
                              one_warp_pages([1024]), one_warp_pages([0])])
    r = simulate_uvm(s, no_prefetch(v100), capacity_B=2 * BLOCK, resident_warps=1)
    assert [x.faults for x in r.per_launch] == [2, 0, 1, 1]
    assert [x.evictions for x in r.per_launch] == [0, 0, 1, 1]
    # launch 1 faulting on page 1 of A instead: under lru="migrate" that refreshes A, so B
    # is the victim and launch 3's read of page 512 faults; under "populate" B stays.
    s2 = launches(*[one_warp_pages([0, 512]), one_warp_pages([1]),
                               one_warp_pages([1024]), one_warp_pages([512])])
    mig = simulate_uvm(s2, no_prefetch(v100), capacity_B=2 * BLOCK, resident_warps=1,
                       lru="migrate")
    pop = simulate_uvm(s2, no_prefetch(v100), capacity_B=2 * BLOCK, resident_warps=1)
    assert [x.faults for x in mig.per_launch] == [2, 1, 1, 1]
    assert [x.faults for x in pop.per_launch] == [2, 1, 1, 0]


def test_thrashing_marks_chunks_and_stops_prefetch(v100):
    # Pages 0-63 of three blocks A, B, C swept five times through two chunks of memory, with
    # a window wide enough to catch every re-migration. Launch 0: A, B, then C evicts A;
    # each later launch re-migrates all three (A evicts B, B evicts C, C evicts A): 3 events.
    system = system_with(v100, {"uvm.thrash_window_us": 1e12})
    pages = np.concatenate([np.arange(64) + 512 * b for b in range(3)])
    s = launches(*[one_warp_pages(pages) for _ in range(5)])
    r = simulate_uvm(s, system, capacity_B=2 * BLOCK, resident_warps=1)
    assert [x.thrashing_events for x in r.per_launch] == [0, 3, 3, 3, 3]
    # a chunk's third event (launch 3) marks it thrashing: all three
    assert r.thrashing_chunks == 3
    # before: faults at 0, 16, 32 move 16 + 16 + 32 pages, 3 batches per block;
    # once thrashing, no growth and no prefetch: 64 single-page batches per block
    assert [x.batches for x in r.per_launch] == [9, 9, 9, 192, 192]
    assert [x.prefetched_B for x in r.per_launch] == [3 * 61 * PAGE] * 3 + [0, 0]
    assert [x.evictions for x in r.per_launch] == [1, 3, 3, 3, 3]


# ---------------------------------------------------------------- memory advice

def test_read_mostly_evicts_for_free(v100):
    plain = simulate_uvm(three_blocks_twice(), v100, capacity_B=2 * BLOCK, resident_warps=1)
    rm = simulate_uvm(three_blocks_twice(), v100, capacity_B=2 * BLOCK, resident_warps=1,
                      read_mostly=True)
    assert rm.mode == "read_mostly"
    assert rm.evictions == plain.evictions == 4
    assert rm.h2d_B == plain.h2d_B
    assert plain.d2h_B == 4 * BLOCK and rm.d2h_B == 0 and rm.d2h_time_s == 0
    assert rm.service_time_s < plain.service_time_s


def test_read_mostly_write_upgrades_and_writes_back(v100):
    system = no_prefetch(v100)
    read = one_warp_pages([0])
    write = stream([BASE + 128], [0], [0], launch=[1], write=[True])
    other = one_warp_pages([512], launch=2)       # another block: evicts the first
    s = launches(*[read, write, other])
    r = simulate_uvm(s, system, capacity_B=BLOCK, resident_warps=1, read_mostly=True)
    assert r.write_upgrades == 1
    assert [x.batches for x in r.per_launch] == [1, 1, 1]
    assert r.h2d_B == 2 * PAGE                   # the upgrade moves no data
    assert r.d2h_B == PAGE                       # the written page goes back on eviction
    plain = simulate_uvm(s, system, capacity_B=BLOCK, resident_warps=1)
    assert plain.write_upgrades == 0 and plain.batches == 2 and plain.d2h_B == PAGE


def test_accessed_by_returns_remote_requests(v100):
    n = 100
    host = stream(BASE + np.arange(n) * 4096, np.arange(n), np.zeros(n))
    dev = stream(np.arange(10) * 128, np.arange(10), np.ones(10), space=np.full(10, SPACE_DEVICE))
    s = launches(*[host, dev])
    s = RequestStream(**{k: getattr(s, k) for k in ("launch", "warp", "inst", "addr", "size_B",
                                                     "useful_B", "space", "is_write")})
    r = simulate_uvm(s, v100, accessed_by=True)
    assert r.mode == "accessed_by"
    assert r.faults == 0 and r.h2d_B == 0 and r.batches == 0 and r.service_time_s == 0
    assert r.remote is not None and len(r.remote) == n
    assert np.array_equal(r.remote.addr, host.addr)
    assert r.device_time_s == pytest.approx(10 * 128 / (v100.gpu.device_bw_GBps * 1e9))
    assert len(remote_requests(s)) == n
    both = simulate_uvm(s, v100, accessed_by=True, read_mostly=True)
    assert both.mode == "read_mostly" and both.remote is None and both.faults > 0


# ---------------------------------------------------------------- published figures

def test_sparse_lines_amplify_by_page_over_line(v100):
    # one 128 B line per 4 KB page, prefetch off: every page moves for one line (4096/128 = 32)
    rng = np.random.default_rng(3)
    pages = rng.permutation(4096)[:1000]
    s = stream(BASE + pages * PAGE + 640, np.arange(1000), np.zeros(1000))
    r = simulate_uvm(s, no_prefetch(v100))
    assert r.read_amplification == pytest.approx(PAGE / 128)
    # with the prefetcher on, whole 64 KB big pages move: amplification rises further
    on = simulate_uvm(s, v100)
    assert on.read_amplification > r.read_amplification


# ---------------------------------------------------------------- accounting and errors

def test_per_launch_rows_add_up(v100):
    rng = np.random.default_rng(11)
    parts = []
    for launch in range(4):
        n = 500
        lines = rng.integers(0, 6 * BLOCK // 128, n)
        parts.append(stream(BASE + lines * 128, np.arange(n) // 4, np.arange(n) % 4,
                            launch=np.full(n, launch)))
    s = RequestStream.concat(parts)
    r = simulate_uvm(s, v100, capacity_B=4 * BLOCK)
    assert len(r.per_launch) == 4
    for name in ("faults", "batches", "h2d_B", "d2h_B", "evictions", "prefetched_B"):
        assert sum(getattr(x, name) for x in r.per_launch) == pytest.approx(getattr(r, name))
    assert sum(x.time_s for x in r.per_launch) == pytest.approx(r.time_s)
    d = r.to_dict()
    assert d["read_amplification"] == r.read_amplification and len(d["per_launch"]) == 4


def test_unique_bytes_merges_overlaps():
    addr = np.array([0, 64, 32, 1000, 4096], dtype=np.uint64)
    size = np.array([128, 32, 32, 32, 128])
    # [0,128) covers the 2nd and 3rd; plus 32 and 128
    assert unique_bytes(addr, size) == 128 + 32 + 128
    assert unique_bytes(np.zeros(0, np.uint64), np.zeros(0)) == 0


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4096), st.integers(1, 200)), min_size=1, max_size=40),
       st.booleans(), st.integers(0, 1 << 40))
def test_unique_bytes_counts_each_byte_once(ranges, whole_sectors, base):
    # whole 32 B sectors (a coalesced stream's) are counted on a bitmap, any other
    # range by a sort; both against the set of bytes itself
    if whole_sectors:
        ranges = [(a * 32, -(-n // 32) * 32) for a, n in ranges]
    base &= ~31
    addr = np.array([base + a for a, _ in ranges], dtype=np.uint64)
    size = np.array([n for _, n in ranges])
    covered = set()
    for a, n in ranges:
        covered.update(range(a, a + n))
    assert unique_bytes(addr, size) == len(covered)


def test_unique_bytes_of_whole_sectors_takes_no_sort(monkeypatch):
    from hostlink.model.uvm import core
    monkeypatch.setattr(core, "covered_bytes", lambda *a: pytest.fail("sorted"))
    addr = np.array([1 << 33, (1 << 33) + 64, (1 << 33) + 32, (1 << 33) + 4096], np.uint64)
    assert unique_bytes(addr, np.array([128, 32, 64, 32])) == 128 + 32


def test_unique_bytes_far_apart_are_sorted_not_mapped():
    # a bitmap of the sectors between them would take 512 MB: the sort takes two keys
    addr = np.array([0, 1 << 37, 32], dtype=np.uint64)
    assert unique_bytes(addr, np.array([64, 32, 32])) == 96


def test_transfer_curve_limits():
    assert transfer_bw_GBps(1e12, 12.0, 0.07292) == pytest.approx(12.0, rel=1e-6)
    # 4 KB: (24/pi) atan(0.29168) = 2.1685 GB/s
    assert transfer_bw_GBps(4096, 12.0, 0.07292) == pytest.approx(24 / math.pi * math.atan(0.29168))


def test_faster_link_migrates_faster():
    pages = np.arange(4096)
    s = stream(BASE + pages * PAGE, pages, np.zeros_like(pages))
    gen3 = simulate_uvm(s, load_system("a100-pcie3"))
    gen4 = simulate_uvm(s, load_system("a100-pcie4"))
    assert gen4.h2d_B == gen3.h2d_B and gen4.batches == gen3.batches
    assert gen4.h2d_time_s == pytest.approx(gen3.h2d_time_s / 2, rel=1e-6)
    assert gen4.service_time_s > gen3.service_time_s / 2  # the per-batch cost does not scale


def test_bad_options_raise_one_clear_error(v100):
    s = one_warp_pages([0])
    with pytest.raises(ConfigError, match="service"):
        simulate_uvm(s, v100, service="fast")
    with pytest.raises(ConfigError, match="duplicates"):
        simulate_uvm(s, v100, duplicates="guess")
    with pytest.raises(ConfigError, match="capacity"):
        simulate_uvm(s, v100, capacity_B=1024)
    with pytest.raises(HostlinkError):
        simulate_uvm(s, v100, resident_warps=0)


def test_empty_and_device_only_streams(v100):
    r = simulate_uvm(RequestStream.empty(), v100)
    assert isinstance(r, UvmResult) and r.faults == 0 and r.time_s == 0
    dev = stream(np.arange(8) * 128, np.arange(8), np.zeros(8), space=np.full(8, SPACE_DEVICE))
    r = simulate_uvm(dev, v100)
    assert r.faults == 0 and r.h2d_B == 0 and r.device_time_s > 0


def test_unsorted_stream_gives_the_same_result(v100):
    rng = np.random.default_rng(5)
    n = 2000
    lines = rng.integers(0, 4 * BLOCK // 128, n)
    s = stream(BASE + lines * 128, np.arange(n) // 8, np.arange(n) % 8)
    shuffled = s.select(rng.permutation(n))
    assert simulate_uvm(s, v100).to_dict() == simulate_uvm(shuffled, v100).to_dict()


# ---------------------------------------------------------------- properties

patterns = st.builds(
    lambda seed, n, span_blocks, per_warp: (seed, n, span_blocks, per_warp),
    st.integers(0, 2**31 - 1), st.integers(1, 400), st.integers(1, 6), st.integers(1, 8))


def random_stream(seed, n, span_blocks, per_warp) -> RequestStream:
    rng = np.random.default_rng(seed)
    sectors = rng.integers(0, span_blocks * BLOCK // 32, n)
    sizes = 32 * rng.integers(1, 5, n)
    addr = BASE + sectors * 32
    return stream(addr, np.arange(n) // per_warp, np.arange(n) % per_warp, size=sizes,
                  write=rng.random(n) < 0.1)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(patterns, st.booleans())
def test_migrated_bytes_cover_what_is_needed(v100, pattern, prefetch):
    system = v100 if prefetch else no_prefetch(v100)
    r = simulate_uvm(random_stream(*pattern), system)
    assert r.evictions == 0
    assert r.h2d_B >= r.unique_B
    if prefetch:
        assert r.h2d_B >= r.touched_B
    else:
        assert r.h2d_B == r.touched_B
    assert r.faults == r.faults_unique + r.faults_duplicate


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(2, 6), st.integers(1, 512), st.integers(1, 4), st.integers(1, 7),
       st.sampled_from(["populate", "migrate"]), st.booleans())
def test_more_capacity_never_more_evictions(v100, blocks, pages, sweeps, chunks, lru, prefetch):
    # A warp sweeping ``blocks`` VA blocks (``pages`` pages each) ``sweeps`` times: with room
    # for every block nothing is evicted after the first sweep; with less, each block is the
    # oldest when it is needed again, so every block misses on every sweep after the first
    # (the LRU loop). Evictions: blocks * sweeps - capacity, falling as capacity grows.
    system = v100 if prefetch else no_prefetch(v100)
    one = np.concatenate([np.arange(pages) + 512 * b for b in range(blocks)])
    s = launches(*[one_warp_pages(one) for _ in range(sweeps)])
    ev = [simulate_uvm(s, system, capacity_B=c * BLOCK, lru=lru, resident_warps=1).evictions
          for c in (chunks, chunks + 1)]
    for c, e in zip((chunks, chunks + 1), ev):
        assert e == (0 if c >= blocks else blocks * sweeps - c)
    assert ev[1] <= ev[0]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(patterns, st.integers(1, 8), st.sampled_from(["populate", "migrate"]))
def test_capacity_bounds_evictions(v100, pattern, chunks, lru):
    # Whatever the pattern: with room for every touched VA block nothing is evicted, and with
    # less, at least (touched blocks - capacity) evictions happen (pigeonhole). Strict
    # monotonicity in capacity does not hold for arbitrary patterns: the driver's list orders
    # chunks by when they became resident (hits are invisible to it), a FIFO-like order that
    # admits Belady's anomaly, and batching changes with residency.
    s = random_stream(*pattern)
    # a request near a block's end reaches into the next block, which it touches too
    last = (s.addr + s.size_B.astype(s.addr.dtype) - 1) // BLOCK
    blocks = np.unique(np.concatenate([s.addr // BLOCK, last])).shape[0]
    r = simulate_uvm(s, v100, capacity_B=chunks * BLOCK, lru=lru)
    if chunks >= blocks:
        assert r.evictions == 0
    else:
        assert r.evictions >= blocks - chunks


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(patterns, st.integers(0, 1000))
def test_same_seed_same_result(v100, pattern, seed):
    s = random_stream(*pattern)
    a = simulate_uvm(s, v100, capacity_B=2 * BLOCK, seed=seed).to_dict()
    b = simulate_uvm(s, v100, capacity_B=2 * BLOCK, seed=seed).to_dict()
    assert a == b
    # the run order changes which faults share a batch, never which pages are needed
    c = simulate_uvm(s, no_prefetch(v100), seed=seed)
    d = simulate_uvm(s, no_prefetch(v100), seed=seed + 1)
    assert c.h2d_B == d.h2d_B == c.touched_B


def test_sparse_address_space_and_unaligned_requests(v100):
    # the same pattern in one place, and split between two allocations 64 TB apart
    rng = np.random.default_rng(9)
    n = 1500
    lines = rng.integers(0, 4 * BLOCK // 128, n)
    near = stream(BASE + lines * 128, np.arange(n) // 3, np.arange(n) % 3)
    far_addr = BASE + lines * 128 + np.where(lines * 128 >= 2 * BLOCK, 2**46 - 2 * BLOCK, 0)
    far = stream(far_addr, np.arange(n) // 3, np.arange(n) % 3)
    a, b = simulate_uvm(near, v100), simulate_uvm(far, v100)
    assert a.to_dict() == b.to_dict()
    # requests off the 32 B sector grid still count their exact bytes
    odd = stream(BASE + np.array([0, 4, 4096 - 8]), [0, 1, 2], [0, 0, 0], size=np.array([8, 8, 16]))
    r = simulate_uvm(odd, no_prefetch(v100))
    assert r.unique_B == 4 + 8 + 16          # [0, 8) and [4, 12) overlap; the third spans a page
    assert r.h2d_B == 2 * PAGE and r.faults_unique == 2
