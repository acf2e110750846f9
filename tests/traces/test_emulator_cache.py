"""Emulated kernels through the caches: Emulation.requests(cache=...) and host_read_cache.

Facts: the default cache operator caches zero-copy loads on Hopper (H200,
validation/experiments/first_run/runs/h200/results.parquet: random 4 B loads over a 4 KiB
host region at 628 GB/s with ``cache=default`` against 2.6 GB/s with
``cache=cv``); the seed's naive kernel sent a new 32 B request only when a
thread crossed a 32 B boundary (emogi_vldb2020 §3.3). A BFS reads each
reached vertex's list once (KERNELS.md), so every edge byte is read once.
"""
from __future__ import annotations

import numpy as np
import pytest

from hostlink.model.config import load_system
from hostlink.model.errors import ConfigError
from hostlink.model.workload import REQUEST_DTYPES
from hostlink.traces.cache import CacheConfig, host_read_cache
from hostlink.traces.coalescer import coalesce
from hostlink.traces.emulator import emulate
from hostlink.traces.graphs import kron

VARIANTS = ("naive", "merged", "merged_aligned", "chunked", "balanced")
ID_B = 8
SECTOR_B = 32


@pytest.fixture(scope="module")
def graph():
    # 2**11 vertices, about 60k edges: 8 B ids take under 0.5 MiB, far below the L2s
    return kron(11, 16, seed=41)


@pytest.fixture(scope="module")
def h200():
    return load_system("h200-pcie5")


def src(g) -> int:
    return int(np.argmax(g.degrees()))


def same(a, b) -> bool:
    return len(a) == len(b) and all(np.array_equal(getattr(a, k), getattr(b, k))
                                    for k in REQUEST_DTYPES)


def lists_read(emu) -> tuple[int, set, int]:
    """(edge bytes read, distinct sectors of them, sum over lists of the sectors each spans)."""
    off = emu.csr.offsets.astype(np.int64)
    base = emu.address_map.base("edges")
    read_B, sectors, per_list = 0, set(), 0
    for active in emu.active:
        for v in active.tolist():
            lo, hi = base + off[v] * ID_B, base + off[v + 1] * ID_B
            if hi > lo:
                read_B += hi - lo
                first, last = lo // SECTOR_B, (hi - 1) // SECTOR_B
                sectors.update(range(first, last + 1))
                per_list += last - first + 1
    return read_B, sectors, per_list


def test_host_read_cache_follows_the_gpu(h200):
    # The L1 only: the H200's L2 does not keep host lines (traces/cache.py, measured).
    assert host_read_cache(h200.gpu) == CacheConfig.from_gpu(h200.gpu, l2=False)
    assert host_read_cache(h200.gpu).l2_size_B == 0
    assert host_read_cache(h200.gpu).l1_size_B > 0
    off = load_system("h200-pcie5", {"gpu.caches_host_reads": False})
    assert host_read_cache(off.gpu) is None


def test_without_a_cache_the_fast_path_equals_the_coalescer(graph):
    emu = emulate(graph, "bfs", "naive", source=src(graph), id_bytes=ID_B)
    fast = emu.requests(cache=None)
    assert same(fast, emu.requests())
    assert same(fast, coalesce(emu.trace()).host_reads())


@pytest.mark.parametrize("include_device", [False, True])
def test_with_a_cache_the_lane_trace_goes_through_it(graph, h200, include_device):
    cache = host_read_cache(h200.gpu)
    emu = emulate(graph, "bfs", "merged", source=src(graph), id_bytes=ID_B,
                  include_device=include_device)
    got = emu.requests(cache)
    assert same(got, coalesce(emu.trace(), cache=cache, cache_host=True).host_reads())
    # cache_host=False: only device sectors are cached; host requests are the uncached ones
    plain = emu.requests(cache, cache_host=False)
    assert plain.size_histogram() == emu.requests().size_histogram()
    assert len(got) < len(plain)


def test_cache_must_be_a_cache_config(graph, h200):
    emu = emulate(graph, "bfs", "naive", source=src(graph))
    with pytest.raises(ConfigError, match="CacheConfig"):
        emu.requests(cache=h200.gpu)


@pytest.mark.parametrize("variant", VARIANTS)
def test_useful_bytes_conserved_through_the_caches(graph, h200, variant):
    """Each edge byte is read once, so with caches too the useful bytes are the
    edge bytes read; the whole edge array fits in the L2, so each sector is
    requested once: requested bytes = 32 B x distinct sectors."""
    emu = emulate(graph, "bfs", variant, source=src(graph), id_bytes=ID_B)
    req = emu.requests(CacheConfig.from_gpu(h200.gpu))  # L1 and L2
    read_B, sectors, _ = lists_read(emu)
    assert int(req.useful_B.sum()) == read_B
    assert np.all(req.useful_B <= req.size_B)
    assert int(req.size_B.sum()) == SECTOR_B * len(sectors)
    assert int(emu.requests().useful_B.sum()) == read_B  # uncached: the same bytes


def test_naive_sends_a_request_per_32B_crossing(graph, h200):
    """The seed's rule, with an L1 per SM only: a thread's list costs at most one
    32 B sector fetch per sector it spans (fewer where neighbouring lists share a
    sector), so at most 1/4 of a request per 8 B id plus one per list; uncached,
    each id is a request of its own unless two lanes of an instruction share its
    sector (the brief's bound: cached at most half the uncached count)."""
    emu = emulate(graph, "bfs", "naive", source=src(graph), id_bytes=ID_B)
    read_B, sectors, per_list = lists_read(emu)
    n_lists = sum(int((emu.csr.degrees()[a] > 0).sum()) for a in emu.active)
    assert per_list <= read_B // SECTOR_B + n_lists
    l1_only = emu.requests(CacheConfig.from_gpu(h200.gpu, l2=False))
    plain = emu.requests()
    assert SECTOR_B * len(sectors) <= int(l1_only.size_B.sum()) <= SECTOR_B * per_list
    assert len(l1_only) <= per_list
    assert len(l1_only) <= 0.5 * len(plain)
    # every id read is credited to the request that fetched its sector
    assert int(l1_only.useful_B.sum()) == read_B
