"""predict() coalesces traces through the GPU's host-read caches by default.

Facts: Hopper caches zero-copy loads with the default cache operator (H200,
validation/experiments/first_run/runs/h200/results.parquet: random 4 B loads over a 4 KiB
host region, 628 GB/s with ``cache=default`` against 2.6 GB/s with
``cache=cv``); the seed's naive kernel sends a new 32 B request only when a
thread crosses a 32 B boundary (emogi_vldb2020 §3.3) and its requests are
nearly all 32 B (§5.3.1, Figure 5). GpuConfig.caches_host_reads says whether
a GPU does (model/config/schema.py).
"""
from __future__ import annotations

import numpy as np
import pytest

from hostlink.model.config import load_system
from hostlink.model.predict import coalesce_defaults, predict
from hostlink.traces.cache import host_read_cache
from hostlink.traces.coalescer import coalesce
from hostlink.traces.emulator import emulate
from hostlink.traces.graphs import kron

ID_B = 8
SECTOR_B = 32
UNCACHED = {"cache": None}


@pytest.fixture(scope="module")
def graph():
    # 2**11 vertices, about 60k edges: the 8 B edge list (under 0.5 MiB) fits in the L2
    return kron(11, 16, seed=43)


@pytest.fixture(scope="module")
def h200():
    return load_system("h200-pcie5", {"translation.enabled": False})


@pytest.fixture(scope="module")
def traces(graph):
    """BFS traces with the device arrays (they compete for the same caches)."""
    src = int(np.argmax(graph.degrees()))
    return {v: emulate(graph, "bfs", v, source=src, id_bytes=ID_B, include_device=True)
            for v in ("naive", "merged_aligned")}


def per_list_sectors(emu) -> tuple[int, int]:
    """(sum over the lists read of the 32 B sectors each spans, lists read)."""
    off = emu.csr.offsets.astype(np.int64)
    base = emu.address_map.base("edges")
    total, lists = 0, 0
    for active in emu.active:
        lo = base + off[active] * ID_B
        hi = base + off[active + 1] * ID_B
        some = hi > lo
        total += int(((hi[some] - 1) // SECTOR_B - lo[some] // SECTOR_B + 1).sum())
        lists += int(some.sum())
    return total, lists


def test_defaults_follow_the_gpu(h200):
    cache = host_read_cache(h200.gpu)
    assert cache is not None
    assert coalesce_defaults(h200.gpu) == {"include_device": True, "cache": cache,
                                           "cache_host": True}
    # options that name the caches are the caller's choice
    assert coalesce_defaults(h200.gpu, {"cache_host": False}) == {"include_device": True,
                                                                  "cache_host": False}
    assert coalesce_defaults(h200.gpu, UNCACHED) == {"include_device": True, "cache": None}
    assert coalesce_defaults(h200.gpu, {"include_device": False})["cache"] == cache
    off = load_system("h200-pcie5", {"gpu.caches_host_reads": False})
    assert coalesce_defaults(off.gpu)["cache"] is None
    assert coalesce_defaults(None) == {"include_device": True}


def test_trace_is_coalesced_through_the_caches(traces, h200):
    trace = traces["naive"].trace()
    pred = predict(trace, h200)
    want = coalesce(trace, cache=host_read_cache(h200.gpu), cache_host=True,
                    include_device=True).host_reads()
    assert pred.requests == len(want)
    assert pred.useful_B == int(want.useful_B.sum())
    assert pred.requests_by_size_B == want.size_histogram()


def test_a_gpu_that_does_not_cache_host_reads(traces, h200):
    trace = traces["naive"].trace()
    off = load_system("h200-pcie5", {"gpu.caches_host_reads": False,
                                     "translation.enabled": False})
    a = predict(trace, off)
    b = predict(trace, h200, coalesce_options=UNCACHED)
    assert (a.requests, a.requests_by_size_B, a.time_s) == (b.requests, b.requests_by_size_B,
                                                           b.time_s)


def test_a_ready_stream_is_used_as_it_is(traces, h200):
    stream = traces["naive"].requests()
    off = load_system("h200-pcie5", {"gpu.caches_host_reads": False,
                                     "translation.enabled": False})
    a, b = predict(stream, h200), predict(stream, off)
    assert a.requests == b.requests == len(stream)
    assert a.time_s == b.time_s


def test_naive_bfs_needs_a_quarter_of_the_requests(traces, h200):
    """8 B ids, 4 per sector: with caches a thread's list costs one request per
    32 B sector it spans at most (the seed's rule), at most half the uncached
    count; the requests stay nearly all 32 B; the useful bytes are the bytes
    read either way, so the bandwidth rises with the time saved."""
    emu = traces["naive"]
    trace = emu.trace()
    cached = predict(trace, h200)
    plain = predict(trace, h200, coalesce_options=UNCACHED)
    spans, _ = per_list_sectors(emu)
    assert cached.requests <= 0.5 * plain.requests
    assert cached.requested_B <= SECTOR_B * spans
    for p in (cached, plain):
        assert p.requests_by_size_B.get(32, 0) / p.requests > 0.9
    read_B = ID_B * sum(int(emu.csr.degrees()[a].sum()) for a in emu.active)
    assert cached.useful_B == plain.useful_B == read_B
    assert cached.time_s < plain.time_s and cached.bw_GBps > plain.bw_GBps
    assert cached.read_amplification < plain.read_amplification


def test_merged_aligned_barely_changes(traces, h200):
    """A merged_aligned warp reads a whole list, so a cached line can only be one
    a neighbouring list shares: at most one request saved per list read, and
    never an extra one; naive gains far more."""
    emu = traces["merged_aligned"]
    trace = emu.trace()
    cached = predict(trace, h200)
    plain = predict(trace, h200, coalesce_options=UNCACHED)
    _, lists = per_list_sectors(emu)
    assert 0 <= plain.requests - cached.requests <= lists
    assert cached.useful_B == plain.useful_B
    gain = cached.bw_GBps / plain.bw_GBps
    naive = traces["naive"].trace()
    naive_gain = (predict(naive, h200).bw_GBps
                  / predict(naive, h200, coalesce_options=UNCACHED).bw_GBps)
    assert 1.0 <= gain < naive_gain


def test_des_sees_the_cached_naive_stream(traces, h200):
    trace = traces["naive"].trace()
    cached = predict(trace, h200, fidelity="des")
    plain = predict(trace, h200, fidelity="des", coalesce_options=UNCACHED)
    assert cached.requests < plain.requests
    assert cached.bw_GBps > plain.bw_GBps
