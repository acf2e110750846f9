"""The requests' kinds and cost classes (hostlink.model.des.inputs.request_classes): the
compiled pass over a dense (kind, offset, size) table numbers the classes as the sort
of each kind's keys does, on any rows; long streams take the table, short ones and
requests too large for it the sort."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hostlink.model.des import inputs
from hostlink.model.errors import HostlinkError
from hostlink.model.workload import SPACE_DEVICE, SPACE_HOST, RequestStream


def stream(rng, n: int, sizes, atomic: bool) -> RequestStream:
    space = np.where(rng.random(n) < 0.6, SPACE_HOST, SPACE_DEVICE).astype(np.uint8)
    size = rng.choice(np.asarray(sizes), n).astype(np.uint32)
    s = RequestStream(launch=np.zeros(n, np.uint32), warp=rng.integers(0, 8, n).astype(np.uint32),
                      inst=np.arange(n, dtype=np.uint32),
                      addr=rng.integers(0, 1 << 24, n).astype(np.uint64), size_B=size,
                      useful_B=size, space=space, is_write=rng.random(n) < 0.2)
    return s.with_atomic(rng.random(n) < 0.3) if atomic else s


def assert_same(a: dict, b: dict) -> None:
    assert np.array_equal(a["kind"], b["kind"])
    assert a["cost_id"].dtype == b["cost_id"].dtype == np.int32
    assert np.array_equal(a["cost_id"], b["cost_id"])
    assert [k for k, _, _ in a["kinds"]] == [k for k, _, _ in b["kinds"]]
    for (_, key_a, n_a), (_, key_b, n_b) in zip(a["kinds"], b["kinds"]):
        assert np.array_equal(key_a, key_b) and np.array_equal(n_a, n_b)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**31), n=st.integers(1, 400), atomic=st.booleans(),
       subset=st.booleans())
def test_the_dense_table_numbers_the_classes_as_the_sort_does(seed, n, atomic, subset):
    rng = np.random.default_rng(seed)
    s = stream(rng, n, [4, 8, 32, 64, 96, 128], atomic)
    row = rng.permutation(n)[: max(1, n // 2)] if subset else np.arange(n)
    found = inputs._dense_request_classes(s, row, int(s.size_B[row].max()) + 1)
    assert_same(found, inputs._sorted_request_classes(s, row))
    # every request's class holds its size
    keys = np.concatenate([key for _, key, _ in found["kinds"]])
    assert np.array_equal(keys[found["cost_id"]] & 0xFFFFFFFF, s.size_B[row])


def counting_dense(monkeypatch) -> list:
    calls = []
    dense = inputs._dense_request_classes

    def counted(*args):
        calls.append(len(args[1]))
        return dense(*args)
    monkeypatch.setattr(inputs, "_dense_request_classes", counted)
    return calls


def test_a_long_stream_is_classed_on_the_dense_table_a_short_one_sorted(monkeypatch):
    calls = counting_dense(monkeypatch)
    rng = np.random.default_rng(3)
    long = stream(rng, 200_000, [32, 64, 96, 128], atomic=True)
    assert_same(inputs.request_classes(long, np.arange(200_000)),
                inputs._sorted_request_classes(long, np.arange(200_000)))
    assert calls == [200_000]
    short = stream(rng, 1000, [32, 64, 96, 128], atomic=True)
    inputs.request_classes(short, np.arange(1000))
    assert calls == [200_000]


def test_requests_too_large_for_the_table_are_sorted(monkeypatch):
    calls = counting_dense(monkeypatch)
    rng = np.random.default_rng(1)
    s = stream(rng, 300_000, [64, 4096], atomic=False)
    width = int(s.size_B.max()) + 1
    assert inputs.N_KINDS * 4096 * width > inputs.DENSE_CLASS_CELLS
    assert_same(inputs.request_classes(s, np.arange(300_000)),
                inputs._sorted_request_classes(s, np.arange(300_000)))
    assert calls == []


def test_a_request_of_no_bytes_is_named_by_its_row():
    rng = np.random.default_rng(2)
    s = stream(rng, 50, [32, 64], atomic=False)
    s.size_B[17] = 0
    with pytest.raises(HostlinkError, match="row 17 has size_B = 0"):
        inputs.request_classes(s, np.arange(50))
