"""The load order of the five variants (walk_model.py, the yardstick for the
GPU's self-traces): KERNELS.md's definitions and the properties
gpu_kernels/traversal/README.md claims for balanced."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from walk_model import launch_loads, warp_loads

VARIANTS = ("naive", "merged", "merged_aligned", "chunked", "balanced")


@st.composite
def launch(draw):
    V = draw(st.integers(1, 40))
    deg = draw(st.lists(st.integers(0, 70), min_size=V, max_size=V))
    start = draw(st.integers(0, 100))  # lists need not start on a line boundary
    offsets = np.concatenate([[start], start + np.cumsum(deg)]).astype(np.int64)
    active = np.array(draw(st.lists(st.booleans(), min_size=V, max_size=V)))
    return offsets, active, draw(st.sampled_from([4, 8]))


def live_elements(offsets, active):
    return sorted(i for v in range(len(offsets) - 1) if active[v] for i in range(offsets[v], offsets[v + 1]))


@settings(max_examples=150, deadline=None)
@given(launch())
def test_every_variant_loads_each_active_element_once(case):
    offsets, active, idb = case
    want = live_elements(offsets, active)
    for var in VARIANTS:
        got = sorted(i for _, lanes in launch_loads(var, offsets, active, idb) for i in lanes)
        assert got == want, var


@settings(max_examples=150, deadline=None)
@given(launch())
def test_balanced_windows(case):
    offsets, active, idb = case
    A = 128 // idb
    for w in range((len(offsets) - 1 + 7) // 8):
        loads = warp_loads("balanced", w, offsets, active, idb)
        starts = []
        for lanes in loads:
            assert lanes, "a window with no element is never issued"
            # the window [b, b + 32) starts on an A boundary at or below its first element
            b = min(lanes) - min(lanes) % A
            assert all(b <= i < b + 32 for i in lanes)
            starts.append(min(lanes))
        assert starts == sorted(starts) and len(set(starts)) == len(starts)
        # never more load instructions than chunked
        chunked = warp_loads("chunked", w, offsets, active, idb)
        assert len(loads) <= len(chunked)


def test_balanced_reads_a_fully_active_chunk_as_one_list():
    # 8 short lists of 3 elements, from index 5: chunked needs 8 loads, balanced one per 32 elements
    offsets = np.arange(5, 5 + 3 * 9, 3)
    active = np.ones(8, dtype=bool)
    bal = warp_loads("balanced", 0, offsets, active, 4)
    assert [lanes for lanes in bal] == [list(range(5, 29))]
    assert len(warp_loads("chunked", 0, offsets, active, 4)) == 8
    # 8-byte ids: 24 elements from 5 span the 16-element lines [0,16) and [16,32): one window [0,32)
    assert warp_loads("balanced", 0, offsets, active, 8) == [list(range(5, 29))]


def test_kernels_md_examples():
    offsets = np.array([3, 40])  # one vertex, 37 elements from index 3
    active = np.array([True])
    # merged: [3, 35) then [35, 40)
    assert [len(x) for x in warp_loads("merged", 0, offsets, active, 4)] == [32, 5]
    # merged_aligned, 4 B ids (align 32): [0,32) masked from 3, then [32, 40)
    ma = warp_loads("merged_aligned", 0, offsets, active, 4)
    assert ma[0][0] == 3 and len(ma[0]) == 29 and ma[1] == list(range(32, 40))
    # 8 B ids (align 16): starts at 0 as well
    assert warp_loads("merged_aligned", 0, offsets, active, 8)[0][0] == 3
    # naive: one thread walks it, one element per trip
    assert warp_loads("naive", 0, offsets, active, 8) == [[i] for i in range(3, 40)]
