"""The writes a traversal launch makes to its edge counter and ``changed`` flag
(hostlink.traces.shared_writes), and that every traversal twin's launches carry them."""
from __future__ import annotations

import numpy as np
import pytest

from hostlink.traces.shared_writes import shared_writes


def _offsets(degrees) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(degrees)]).astype(np.uint64)


def test_every_warp_that_walks_an_edge_adds_to_the_counter_once():
    # 64 vertices of degree 1 to 3; the last launch updates nothing, so only the counter
    deg = np.tile([1, 2, 3, 0], 16)
    off = _offsets(deg)
    active = [np.arange(64), np.zeros(0, np.int64)]
    walked = np.flatnonzero(deg > 0)
    assert shared_writes(off, "bfs", "naive", active)[0] == len(np.unique(walked // 32))
    assert shared_writes(off, "bfs", "merged_aligned", active)[0] == len(walked)
    assert shared_writes(off, "bfs", "chunked", active)[0] == len(np.unique(walked // 8))
    assert shared_writes(off, "bfs", "naive", [np.zeros(0, np.int64)])[0] == 0
    # active vertices out of order count their warps as in order
    shuffled = [np.random.default_rng(1).permutation(64), active[1]]
    for variant in ("naive", "merged_aligned", "chunked"):
        assert shared_writes(off, "bfs", variant, shuffled)[0] == \
            shared_writes(off, "bfs", variant, active)[0]


def test_where_every_element_updates_every_trip_stores_the_flag():
    # p = 1: each trip of the walk stores once: a naive warp's trips are its longest
    # list, a warp-per-list walk's are ceil(degree / 32) a list
    deg = np.array([1, 5, 3, 70, 40, 2])
    off = _offsets(np.concatenate([deg, np.zeros(994, np.int64)]))
    nxt = np.arange(6, 1000)                    # more updates than elements: p = 1
    active = [np.arange(6), nxt]
    naive = shared_writes(off, "bfs", "naive", active)[0]
    assert naive == 1 + 70                      # one warp, its longest list
    merged = shared_writes(off, "bfs", "merged", active)[0]
    assert merged == 6 + sum(-(-d // 32) for d in deg)
    # PageRank's visits add to distinct ranks: the counter alone
    assert shared_writes(off, "pagerank", "merged", active)[0] == 6


def test_a_trips_store_follows_the_chance_that_one_of_its_elements_updates():
    # one naive warp of 32 lanes of degree 2: two trips of 32 elements; a quarter of the
    # elements update, so each trip stores with probability 1 - 0.75^32
    off = _offsets(np.full(32, 2))
    active = [np.arange(32), np.arange(16)]     # 16 updates over 64 elements
    got = shared_writes(off, "bfs", "naive", active)[0]
    assert got == 1 + round(2 * (1 - 0.75 ** 32))
    # a naive warp with lanes of degree 1 and 3: trip 0 reads two lanes, trips 1-2 one
    off = _offsets([1, 3])
    active = [np.arange(2), np.arange(2)]       # p = 2 / 4
    expect = 1 + (1 - 0.5 ** 2) + 2 * 0.5
    assert shared_writes(off, "bfs", "naive", active)[0] == round(expect)


@pytest.mark.parametrize("variant", ["naive", "merged_aligned", "balanced"])
def test_a_traversal_twin_carries_its_launches_shared_writes(variant):
    from hostlink.model.config import load_system
    from hostlink.traces.emulator.algorithms import bfs
    from hostlink.traces.graphs.generators import generate
    from hostlink.traces.traversal import traversal_workload
    csr = generate("kron", scale=10, degree=8, seed=1)
    source = int(np.argmax(np.diff(csr.offsets.astype(np.int64))))
    work = traversal_workload(csr, "bfs", variant, load_system("h200-pcie5").gpu, source=source)
    got = [info.shared_writes for info in work.stream.launches]
    assert got == shared_writes(csr.offsets, "bfs", variant, bfs(csr, source).active).tolist()
    assert min(got[:-1]) > 0


@pytest.mark.parametrize("variant", ["naive", "merged", "chunked", "balanced"])
def test_a_bfs_by_its_levels_counts_as_by_its_launches(variant):
    from hostlink.traces.emulator.algorithms import bfs
    from hostlink.traces.graphs.generators import generate
    from hostlink.traces.sampled import bfs_levels
    from hostlink.traces.shared_writes import bfs_level_shared_writes
    csr = generate("kron", scale=11, degree=8, seed=2)
    source = int(np.argmax(np.diff(csr.offsets.astype(np.int64))))
    by_launch = shared_writes(csr.offsets, "bfs", variant, bfs(csr, source).active)
    for chunk in (64, 1 << 22):         # chunks of whole warps give the same counts
        by_level = bfs_level_shared_writes(csr.offsets, variant, bfs_levels(csr, source),
                                           chunk_vertices=chunk)
        assert by_level.tolist() == by_launch.tolist()
