"""The emulator's device state: which lanes' label stores a BFS chunk makes, against
the rule written out entry by entry (a label unset when the chunk starts is stored
by every lane of the first trip of the chunk that loads it)."""
from __future__ import annotations

import numpy as np
import pytest

from hostlink.traces.emulator.algorithms import INF_U32
from hostlink.traces.emulator.emit import DeviceState
from hostlink.traces.graphs.csr import CSR


def _state(V: int, set_ids: np.ndarray) -> DeviceState:
    csr = CSR(offsets=np.zeros(V + 1, dtype=np.int64), dst=np.zeros(0, dtype=np.int64))
    st = DeviceState(csr, "bfs", source=0)
    st.value[set_ids] = 3
    return st


def _by_rule(value: np.ndarray, level: int, u, row):
    first = {}
    for x, r in zip(u, row):
        first[x] = min(first.get(x, r), r)
    stored = np.array([value[x] == INF_U32 and r == first[x] for x, r in zip(u, row)])
    after = value.copy()
    after[u[stored]] = level + 1
    return stored, after


@pytest.mark.parametrize("seed", range(6))
def test_bfs_stores_follow_the_first_trip_that_loads_an_unset_label(seed):
    rng = np.random.default_rng(seed)
    V = 300
    st = _state(V, rng.integers(0, V, 80))
    n = 1500
    row = rng.integers(0, 40, n)
    lane = rng.integers(0, 32, n)
    u = rng.integers(0, V, n)
    want, after = _by_rule(st.value.copy(), 4, u, row)
    attempt, took = st.flags(4, u, np.zeros(n, dtype=np.int64), row, lane)
    assert (attempt == want).all() and (took == want).all()
    assert want.any() and not want.all()
    assert (st.value == after).all()
    # the scratch is left clear for the next chunk, which sees this chunk's stores
    again, _ = st.flags(5, u, np.zeros(n, dtype=np.int64), row, lane)
    assert not again.any()


def test_two_lanes_of_the_first_trip_both_store():
    st = _state(8, np.array([1]))
    u = np.array([2, 2, 2, 1])
    row = np.array([1, 1, 0, 0])
    lane = np.array([0, 5, 9, 3])
    attempt, _ = st.flags(0, u, np.zeros(4, dtype=np.int64), row, lane)
    assert attempt.tolist() == [False, False, True, False]
    st = _state(8, np.array([1]))
    attempt, _ = st.flags(0, u[:2], np.zeros(2, dtype=np.int64), row[:2], lane[:2])
    assert attempt.tolist() == [True, True]
    assert st.value[2] == 1
