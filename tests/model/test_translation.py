"""Address translation: LRU TLB misses, their cost, and the bound they put on bandwidth.

Expected values come from the LRU definition (a reference misses when its page
is not among the ``entries`` most recently used distinct pages) and from the
translation preset's assumed numbers (sim_configs/translation/gpu_default.toml:
2 MB pages, 2048 entries, 600 ns per walk, 8 walkers).
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hostlink.model.config import TranslationConfig, load_system
from hostlink.model.errors import ConfigError
from hostlink.model.translation import (issue_order, issue_permutation, lru_misses,
                                        managed_host_view, simulate_translation,
                                        stream_translation, translation_bound_GBps,
                                        translation_misses, warp_page_repeats)
from hostlink.model.workload import SPACE_DEVICE, SPACE_HOST, RequestStream


@pytest.fixture(scope="module")
def cfg() -> TranslationConfig:
    return load_system("v100-pcie3").translation


def brute_lru(keys, entries):
    """Reference: the stack distance definition, one reference at a time."""
    stack: list = []
    out = []
    for k in keys:
        if k in stack:
            depth = stack.index(k)
            out.append(depth >= entries)
            stack.pop(depth)
        else:
            out.append(True)
        stack.insert(0, k)
        del stack[entries:]
    return np.array(out, dtype=bool)


def test_lru_on_a_hand_sequence():
    # 3 entries: 1 2 3 miss; 1 hits (order 1 3 2); 4 evicts 2; 2 evicts 3; 5 evicts 1; 1 misses
    got = lru_misses(np.array([1, 2, 3, 1, 4, 2, 5, 1]), 3)
    assert got.tolist() == [True, True, True, False, True, True, True, True]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 12), max_size=200), st.integers(1, 8))
def test_lru_matches_the_stack_definition(keys, entries):
    assert np.array_equal(lru_misses(np.array(keys, dtype=np.int64), entries),
                          brute_lru(keys, entries))


def test_cyclic_sweeps_show_the_lru_cliff():
    # a loop over E pages fits: only first touches miss; over E + 1 pages every reference misses
    e = 16
    fits = np.tile(np.arange(e), 5)
    too_big = np.tile(np.arange(e + 1), 5)
    assert lru_misses(fits, e).sum() == e
    assert lru_misses(too_big, e).all()


def test_uniform_random_miss_rate(cfg):
    # independent uniform references over P pages: steady-state LRU miss rate 1 - E/P
    rng = np.random.default_rng(0)
    pages = 4 * cfg.tlb_entries
    keys = rng.integers(0, pages, 400_000)
    rate = lru_misses(keys, cfg.tlb_entries)[100_000:].mean()
    expected = 1 - cfg.tlb_entries / pages
    # binomial standard error over 300k references is under 0.001
    assert rate == pytest.approx(expected, abs=0.005)


def test_streaming_misses_once_per_page(cfg):
    addr = np.arange(0, 64 * cfg.page_B, 128, dtype=np.uint64)
    miss = translation_misses(addr // np.uint64(cfg.page_B), cfg)
    assert miss.sum() == 64
    assert np.flatnonzero(miss).tolist() == [k * cfg.page_B // 128 for k in range(64)]


def test_bound_by_hand():
    # every request misses: 8 walks of 600 ns in flight, 128 B each -> 128 * 8 / 600 B/ns
    assert translation_bound_GBps(1.0, 128, 600.0, 8) == pytest.approx(128 * 8 / 600)
    assert translation_bound_GBps(0.0, 128, 600.0, 8) == float("inf")
    assert translation_bound_GBps(0.5, 128, 600.0, 8) == pytest.approx(2 * 128 * 8 / 600)
    with pytest.raises(ValueError):
        translation_bound_GBps(1.5, 128, 600.0, 8)


def test_scattered_is_slower_than_streaming(cfg):
    rng = np.random.default_rng(1)
    n = 200_000
    span_B = 64 * 2**30                       # 64 GiB of host memory: 32768 pages of 2 MB
    stream_addr = np.arange(n, dtype=np.uint64) * np.uint64(128)
    scatter_addr = (rng.integers(0, span_B // 128, n) * 128).astype(np.uint64)
    size = np.full(n, 128)
    seq, _ = simulate_translation(stream_addr, size, cfg)
    rnd, extra = simulate_translation(scatter_addr, size, cfg)
    assert seq.tlb_misses == -(-n * 128 // cfg.page_B)
    assert rnd.tlb_miss_rate > 0.9            # 2048 of 32768 pages fit: 1 - 1/16
    assert rnd.bound_GBps < seq.bound_GBps
    # the bound is the walkers' throughput over the sequence's bytes
    assert rnd.bound_GBps == pytest.approx(n * 128 / (rnd.tlb_misses * cfg.miss_lat_ns / cfg.walkers))
    assert extra.mean() == pytest.approx(rnd.tlb_miss_rate * cfg.miss_lat_ns)
    assert rnd.extra_lat_ns_mean == pytest.approx(extra.mean())


def test_iommu_adds_its_own_misses(cfg):
    from dataclasses import replace
    io = replace(cfg, iommu=True)
    addr = np.arange(0, 2 * 2**20, 128, dtype=np.uint64)   # 2 MB streamed: one GPU page
    size = np.full(addr.shape[0], 128)
    res, extra = simulate_translation(addr, size, io)
    assert res.tlb_misses == 1
    assert res.iommu_misses == 2 * 2**20 // io.iommu_page_B  # 512 IOTLB misses of 4 KB pages
    assert res.both_misses == 1
    assert extra.sum() == pytest.approx(cfg.miss_lat_ns + 512 * io.iommu_miss_lat_ns)
    # the IOMMU's walks bind: 512 walks of 1000 ns, 8 at a time (iommu_walkers defaults to walkers)
    assert res.walk_busy_s == pytest.approx(512 * io.iommu_miss_lat_ns / io.walkers * 1e-9)
    one, _ = simulate_translation(addr, size, io, iommu_walkers=1)
    assert one.bound_GBps == pytest.approx(res.bound_GBps / io.walkers)
    with pytest.raises(ConfigError):
        simulate_translation(addr, size, io, iommu_walkers=0)


def test_disabled_translation_costs_nothing(cfg):
    from dataclasses import replace
    off = replace(cfg, enabled=False)
    addr = np.arange(1000, dtype=np.uint64) * np.uint64(cfg.page_B)
    res, extra = simulate_translation(addr, np.full(1000, 32), off)
    assert res.tlb_misses == 0 and res.bound_GBps == float("inf") and not extra.any()
    assert not translation_misses(addr // np.uint64(cfg.page_B), off).any()


def test_managed_memory_on_the_host_has_its_own_walkers():
    """uvm_accessedby is timed as zero-copy with translation.managed_walkers walks in
    flight: the same prediction where they equal the pinned walkers, a faster one for
    scattered lines over 64 GiB (2048 of 32768 pages fit) where they are more."""
    from dataclasses import replace

    from hostlink.model.predict import predict

    h100 = load_system("h100-pcie5")                  # measured: 65 walks against 8
    assert managed_host_view(h100).translation.walkers == 65
    base = replace(h100, translation=replace(h100.translation, managed_walkers=8))
    assert managed_host_view(base) is base
    rng = np.random.default_rng(3)
    n = 20_000
    addr = (rng.integers(0, (64 << 30) // 128, n) * 128).astype(np.uint64)
    warps = np.arange(n) % 4096
    s = make_stream(warps, np.arange(n) // 4096, addr)
    for fidelity in ("analytic", "des"):
        zc = predict(s, base, mode="zerocopy", fidelity=fidelity)
        same = predict(s, base, mode="uvm_accessedby", fidelity=fidelity)
        assert same.mode == "uvm_accessedby" and same.time_s == pytest.approx(zc.time_s)
        more = replace(base, translation=replace(base.translation, managed_walkers=64))
        view = managed_host_view(more)
        assert view.translation.walkers == 64 and more.translation.walkers == 8
        fast = predict(s, more, mode="uvm_accessedby", fidelity=fidelity)
        assert predict(s, more, mode="zerocopy", fidelity=fidelity).time_s == pytest.approx(zc.time_s)
        assert fast.time_s < zc.time_s / 3             # walker bound: 8 -> 64 walks at once


def make_stream(warps, insts, addr, space=None):
    n = len(addr)
    return RequestStream(launch=np.zeros(n), warp=warps, inst=insts,
                         addr=np.asarray(addr, dtype=np.uint64), size_B=np.full(n, 128),
                         useful_B=np.full(n, 128),
                         space=np.full(n, SPACE_HOST) if space is None else space,
                         is_write=np.zeros(n, bool))


def test_issue_order_round_robin_in_waves():
    # 3 warps of 2 instructions, 2 resident: wave 0 = warps 0, 1; wave 1 = warp 2
    warps = np.array([0, 0, 1, 1, 2, 2])
    insts = np.array([0, 1, 0, 1, 0, 1])
    s = make_stream(warps, insts, np.arange(6) * 128)
    order = issue_order(s, 2)
    assert list(zip(warps[order], insts[order])) == [(0, 0), (1, 0), (0, 1), (1, 1), (2, 0), (2, 1)]
    with pytest.raises(ValueError):
        issue_order(s, 0)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 40), st.integers(0, 6)),
                min_size=1, max_size=120),
       st.integers(1, 9), st.booleans(), st.booleans())
def test_issue_permutation_is_the_lexicographic_order(rows, resident, in_order, wide):
    # streams come sorted by launch and warp, which the counting sort within waves
    # uses; any other order takes the general sort: both are lexsort's order
    launch, warp, inst = (np.array(c, dtype=np.int64) for c in zip(*rows))
    if in_order:
        by = np.lexsort((warp, launch))
        launch, warp, inst = launch[by], warp[by], inst[by]
    if wide:    # instructions spanning far more values than rows: the merge sort
        inst = inst * 100_003
    expect = np.lexsort((warp, inst, warp // resident, launch))
    got = issue_permutation(launch.astype(np.uint32), warp, inst.astype(np.int32), resident)
    assert np.array_equal(got, expect)


def test_stream_translation_uses_host_requests_in_issue_order(cfg):
    # warps 0 and 1 each read page A, then page B. Warp by warp (A B A B) a one-entry
    # TLB misses every time; issued together (A A B B) the second warp hits each page.
    tiny = TranslationConfig(page_B=cfg.page_B, tlb_entries=1, miss_lat_ns=600.0, walkers=8)
    addr = np.array([0, 10 * cfg.page_B, 128, 10 * cfg.page_B + 128])
    warps = np.array([0, 0, 1, 1])
    insts = np.array([0, 1, 0, 1])
    s = make_stream(warps, insts, addr)
    assert stream_translation(s, tiny, resident_warps=1).tlb_misses == 4
    res = stream_translation(s, tiny, resident_warps=2)
    assert res.requests == 4 and res.tlb_misses == 2
    dev = make_stream(warps, insts, addr, np.full(4, SPACE_DEVICE))
    assert stream_translation(dev, tiny, resident_warps=2).requests == 0


def test_bad_entries_raise():
    with pytest.raises(ConfigError, match="entries"):
        lru_misses(np.arange(3), 0)


def test_sparse_and_dense_keys_agree():
    rng = np.random.default_rng(4)
    small = rng.integers(0, 300, 5000)
    spread = small.astype(np.uint64) * np.uint64(2**40) + np.uint64(7)   # same pattern, far apart
    assert np.array_equal(lru_misses(small, 64), lru_misses(spread, 64))
    assert np.array_equal(lru_misses(small, 64), brute_lru(small.tolist(), 64))


def test_a_warp_walks_once_for_the_lines_of_one_page(cfg):
    # three warps each read 32 lines of their own page, issued round robin: a
    # one-entry TLB sees a different page on every request, yet each warp's 31
    # repeats of its own page are served by the walk of its first (pending-miss
    # merging / first-level TLB; Power et al., HPCA 2014), so 3 walks, not 96
    tiny = TranslationConfig(page_B=cfg.page_B, tlb_entries=1, miss_lat_ns=600.0, walkers=8)
    warps = np.repeat(np.arange(3), 32)
    insts = np.tile(np.arange(32), 3)
    addr = warps * 7 * cfg.page_B + insts * 128
    s = make_stream(warps, insts, addr)
    assert stream_translation(s, tiny, resident_warps=3).tlb_misses == 3
    # a warp that leaves its page and comes back walks again
    back = np.array([0, 5 * cfg.page_B, 128])
    s2 = make_stream(np.zeros(3, int), np.arange(3), back)
    assert stream_translation(s2, tiny, resident_warps=1).tlb_misses == 3


def test_warp_page_repeats_follows_each_warp_in_order():
    pages = np.array([4, 9, 4, 4, 9, 1])
    keys = np.array([0, 1, 0, 2, 1, 0])
    assert warp_page_repeats(pages, keys).tolist() == [False, False, True, False, True, False]
    with pytest.raises(ValueError):
        warp_page_repeats(pages, keys[:3])


@pytest.mark.parametrize("seed", range(5))
def test_an_lru_carried_between_parts_flags_the_whole_sequence(seed):
    from hostlink.model.translation import LruCarry, lru_misses
    rng = np.random.default_rng(seed)
    keys = rng.integers(0, 40, 600).astype(np.uint64)
    whole = lru_misses(keys, 12)
    cuts = np.sort(rng.choice(np.arange(1, 600), 5, replace=False))
    carry = LruCarry()
    parts = [lru_misses(part, 12, carry) for part in np.split(keys, cuts)]
    np.testing.assert_array_equal(np.concatenate(parts), whole)
    # the carry holds the last 12 distinct keys, least recently used first
    last = []
    for k in keys[::-1].tolist():
        if k not in last:
            last.append(k)
    assert carry.keys.tolist() == last[:12][::-1]

