"""The sector caches (hostlink.traces.cache) alone and behind the coalescer."""
from __future__ import annotations

import pytest

from hostlink.model.errors import ConfigError
from hostlink.model.workload import SPACE_DEVICE
from hostlink.traces.cache import CacheConfig, CacheState
from hostlink.traces.coalescer import coalesce
from hostlink.traces.schema import OP_ATOMIC, OP_STORE, KernelLaunch, Region

from test_coalescer import BASE, HOST, make_rows, warp_load

LINE = 128


def sector(line: int, k: int = 0) -> int:
    return (BASE + line * LINE + 32 * k) >> 5


def test_lru_within_a_set():
    # one set of two ways: lines A, B, A (hit), C (evicts B, the least recent), B (evicts A)
    state = CacheState(CacheConfig(l1_size_B=2 * LINE, l1_ways=2))
    a, b, c = sector(0), sector(1), sector(2)
    assert [state.load(0, s) for s in (a, b, a, c, b, a)] == [
        "miss", "miss", "l1", "miss", "miss", "miss"]


def test_sector_fill_within_a_line():
    state = CacheState(CacheConfig(l1_size_B=4 * LINE, l1_ways=4))
    assert [state.load(0, s) for s in (sector(0, 0), sector(0, 1), sector(0, 0), sector(0, 1))] \
        == ["miss", "miss", "l1", "l1"]


def test_set_index_by_line():
    # two sets of one way: lines 0 and 2 share set 0, line 1 lives in set 1
    state = CacheState(CacheConfig(l1_size_B=2 * LINE, l1_ways=1))
    assert [state.load(0, s) for s in (sector(0), sector(1), sector(2), sector(1), sector(0))] \
        == ["miss", "miss", "miss", "l1", "miss"]


def test_l2_behind_l1():
    state = CacheState(CacheConfig(l1_size_B=LINE, l1_ways=1, l2_size_B=16 * LINE, l2_ways=4))
    assert [state.load(0, s) for s in (sector(0), sector(1), sector(0))] == ["miss", "miss", "l2"]


@pytest.mark.parametrize("kw,what", [
    ({"l1_size_B": 100}, "l1_size_B"), ({"l2_size_B": LINE, "l2_ways": 2}, "l2_size_B"),
    ({"l1_ways": 0}, "l1_ways"), ({"sm_count": 0}, "sm_count")])
def test_bad_config(kw, what):
    with pytest.raises(ConfigError, match=what):
        CacheConfig(**kw)


def test_from_gpu_rounds_to_whole_sets():
    class Gpu:
        sm_count, l1_B, l2_B = 132, 262144, 52428800 + 100
    c = CacheConfig.from_gpu(Gpu)
    assert (c.l1_size_B, c.l2_size_B, c.sm_count) == (262144, 52428800, 132)
    c = CacheConfig.from_gpu(Gpu, l1_size_B=32 * 1024)
    assert (c.l1_size_B, c.l2_size_B) == (32768, 52428800)


def test_l1_per_sm_round_robin():
    launches = [KernelLaunch("k", (2, 1, 1), (32, 1, 1))]
    rows = make_rows([warp_load(BASE, cta=0), warp_load(BASE, cta=1)])
    one_sm = CacheConfig(l1_size_B=64 * LINE, sm_count=1)
    two_sm = CacheConfig(l1_size_B=64 * LINE, sm_count=2)
    assert len(coalesce(rows, HOST, launches=launches, cache=one_sm, cache_host=True)) == 1
    assert len(coalesce(rows, HOST, launches=launches, cache=two_sm, cache_host=True)) == 2


def test_l1_flushed_between_launches_l2_kept():
    launches = [KernelLaunch("a", (1, 1, 1), (32, 1, 1))] * 2
    rows = make_rows([warp_load(BASE, launch=0), warp_load(BASE, launch=1)])
    l1 = CacheConfig(l1_size_B=64 * LINE)
    l1_l2 = CacheConfig(l1_size_B=64 * LINE, l2_size_B=256 * LINE)
    assert coalesce(rows, HOST, launches=launches, cache=l1, cache_host=True).launch.tolist() \
        == [0, 1]
    assert coalesce(rows, HOST, launches=launches, cache=l1_l2, cache_host=True).launch.tolist() \
        == [0]


def test_stores_and_atomics_neither_hit_nor_allocate():
    rows = make_rows([warp_load(BASE, op=OP_STORE), warp_load(BASE), warp_load(BASE, op=OP_ATOMIC),
                      warp_load(BASE, op=OP_ATOMIC)])
    rs = coalesce(rows, HOST, cache=CacheConfig(l1_size_B=64 * LINE), cache_host=True)
    assert rs.inst.tolist() == [0, 1, 2, 3]  # the load misses after the store; atomics always go


def test_device_lines_compete_with_host_lines():
    # one line of L1: a device load between two host loads of another line evicts it
    regions = [*HOST, Region("dev", 0x900000, 4096, "device")]
    rows = make_rows([warp_load(BASE), warp_load(0x900000), warp_load(BASE)])
    tiny = CacheConfig(l1_size_B=LINE, l1_ways=1)
    rs = coalesce(rows, regions, cache=tiny, cache_host=True)
    assert rs.inst.tolist() == [0, 2] and len(rs) == 2  # device request not emitted
    rs = coalesce(rows, regions, cache=CacheConfig(l1_size_B=4 * LINE, l1_ways=4),
                  cache_host=True, include_device=True)
    # four ways: the host line survives; the device line is four 32 B sector requests
    assert rs.inst.tolist() == [0, 1, 1, 1, 1]
    assert rs.space.tolist()[1:] == [SPACE_DEVICE] * 4
