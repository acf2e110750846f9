"""Memory of the graph-to-prediction path grows with the work, not with the launches.

A BFS on a path graph from one end runs one launch per vertex, each with one
active vertex: the work (edges read, requests) grows linearly with the path, the
launches too. A path eight times longer must then cost about eight times the
requests, and each launch may add only its few records to the memory
(tracemalloc's peak over ``traversal_workload`` and the discrete-event
``predict``, past the fixed costs of the caches and queues), not the square
of the length: state per launch that is the size of the graph (every vertex's warp
tested in every launch, a per-warp counter kept for the whole run) makes both
grow with vertices x launches. Both paths are past ``max_device_tests`` (here
SHORT: a graph of thousands of levels, as the grids of
:mod:`hostlink.traces.graphs.grid`), where the walk's dependent steps stand in
for the device accesses.
"""
from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from hostlink.model.config import load_system
from hostlink.model.predict import predict
from hostlink.traces.graphs.csr import CSR
from hostlink.traces.traversal import traversal_workload

SHORT, LONG = 1 << 7, 1 << 10        # vertices (= BFS launches from an end)
#: the device tests of every vertex in every launch (or any state of the graph's
#: size kept per launch) would be (LONG / SHORT)^2 = 64 times the short path's
#: requests (measured 52 times, 2635 -> 135803); linear growth is 8 times (527 -> 4223)
GROWTH_BOUND = 1.5 * LONG / SHORT
#: bytes a launch may add to the peak: its records (a LaunchInfo, its frontier, its
#: kernel time) are a few hundred bytes of Python objects; measured 2.1 kB a launch
#: here, and 11.4 kB with every vertex's test kept per launch
BYTES_PER_LAUNCH = 4096


def _path(n: int) -> CSR:
    """The undirected path 0 - 1 - ... - n-1."""
    deg = np.full(n, 2, dtype=np.uint64)
    deg[[0, -1]] = 1
    offsets = np.zeros(n + 1, dtype=np.uint64)
    np.cumsum(deg, out=offsets[1:])
    dst = np.empty(int(offsets[-1]), dtype=np.uint32)
    v = np.arange(n, dtype=np.int64)
    left = offsets[:-1].astype(np.int64)
    has_left = v > 0
    dst[left[has_left]] = v[has_left] - 1
    right = offsets[1:].astype(np.int64) - 1
    has_right = v < n - 1
    dst[right[has_right]] = v[has_right] + 1
    return CSR(offsets, dst, None, f"path{n}", directed=False)


def _run(csr, system) -> tuple[int, int, int]:
    """(tracemalloc peak B, requests, launches) of one BFS from vertex 0, predicted."""
    tracemalloc.start()
    try:
        work = traversal_workload(csr, "bfs", "merged_aligned", system.gpu, source=0,
                                  id_bytes=8, max_device_tests=SHORT)
        predict(work, system, mode="zerocopy", fidelity="des")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return peak, len(work.stream), work.iterations


@pytest.fixture(scope="module")
def system():
    return load_system("h200-pcie5")


def test_memory_and_requests_grow_with_the_work_not_the_launches(system):
    short, long_ = _path(SHORT), _path(LONG)
    _run(short, system)                       # compiles the engines outside the count
    peak_s, req_s, launches_s = _run(short, system)
    peak_l, req_l, launches_l = _run(long_, system)
    assert (launches_s, launches_l) == (SHORT, LONG)
    assert req_l / req_s <= GROWTH_BOUND, (req_s, req_l)
    assert (peak_l - peak_s) / (LONG - SHORT) <= BYTES_PER_LAUNCH, (peak_s, peak_l)
