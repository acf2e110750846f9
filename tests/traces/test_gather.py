"""The gather kernel's emulation: its warp loads, requests and row ids."""
import numpy as np
import pytest

from hostlink.model.config import load_any_system
from hostlink.traces.gather import (TABLE_BASE, GatherError, GatherSpec, gather_workload,
                                    host_request_counts, ids_function, iter_requests,
                                    merge_unrolled, sampled_vertices, stream_of, table_pages,
                                    uniform_ids, vertex_rows)
from hostlink.traces.graphs import generate

GPU = load_any_system("h200-pcie5").gpu


def _second_row(variant, row_B=480, lane_B=4):
    spec = GatherSpec(row_B, 16, 1, variant, lane_B)
    return stream_of(spec, lambda start, n: np.array([1]), GPU, include_device=False)


def test_480_B_rows_take_8_requests_naive_and_5_aligned():
    # min_dissertation_2022 ch. 3.3.2: "we want to access the second node feature ...
    # each node feature size is 480 B. Without the optimization, each warp starts reading
    # from misaligned locations and ends up generating 8 PCIe requests ... the total
    # number of PCIe read requests is reduced to 5."
    assert len(_second_row("naive")) == 8
    assert len(_second_row("aligned")) == 5


def test_requests_stay_inside_the_row():
    for variant in ("naive", "aligned"):
        s = _second_row(variant)
        lo = (s.addr - np.uint64(TABLE_BASE)).astype(np.int64)
        assert lo.min() >= 480 and (lo + s.size_B).max() <= 960
        assert int(s.useful_B.sum()) == 480 == int(s.size_B.sum())


@pytest.mark.parametrize("row_B", [128, 512, 1024])
def test_rows_on_lines_are_the_same_either_way(row_B):
    a, b = _second_row("naive", row_B), _second_row("aligned", row_B)
    assert a.size_histogram() == b.size_histogram() == {128: row_B // 128}


def test_16_B_lanes_cover_512_B_per_instruction():
    s = _second_row("aligned", 480, 16)
    assert len(np.unique(s.inst)) == 2          # loads of 384..895 and 896..959
    assert sorted(s.size_histogram().items()) == [(32, 1), (64, 1), (128, 3)]


def test_bad_rows_are_refused():
    with pytest.raises(GatherError, match="multiple of 4"):
        GatherSpec(482, 10, 1)
    with pytest.raises(GatherError, match="lane_B"):
        GatherSpec(1000, 10, 1, "naive", 16)
    with pytest.raises(GatherError, match="variant"):
        GatherSpec(480, 10, 1, "shifted")


def test_uniform_ids_are_reproducible_and_in_range():
    a = uniform_ids(1000, 777, seed=3)
    assert np.array_equal(a, uniform_ids(1000, 777, seed=3))
    assert np.array_equal(a[500:], uniform_ids(500, 777, seed=3, start=500))
    assert a.min() >= 0 and a.max() < 777 and len(np.unique(a)) > 400


def test_sampled_ids_carry_the_graphs_skew():
    csr = generate("kron", 12, 8)
    v = sampled_vertices(csr, 20000, (10, 25), batch=64, seed=1)
    assert len(v) == 20000 and v.max() < csr.num_vertices
    counts = np.bincount(v, minlength=csr.num_vertices)
    deg = csr.degrees().astype(np.int64)
    # hubs are gathered more often than the vertices of median degree or less (uniform
    # ids would gather both alike; a hub comes once per minibatch at most)
    hubs = counts[deg >= np.quantile(deg, 0.99)].mean()
    assert hubs > 2 * counts[(deg > 0) & (deg <= np.quantile(deg[deg > 0], 0.5))].mean()
    rows = vertex_rows(v, csr.num_vertices, 4 * csr.num_vertices)
    assert np.array_equal(rows, v * 4)


def test_streamed_counts_equal_one_stream():
    spec = GatherSpec(1000, 1 << 16, 30000, "naive", 4)
    ids_of = ids_function("uniform", spec, seed=2)
    whole = stream_of(spec, ids_of, GPU, include_device=False)
    parts = list(iter_requests(spec, ids_of, GPU, include_device=False))
    assert len(parts) > 1
    assert host_request_counts(spec, ids_of, GPU) == whole.size_histogram()
    assert sum(len(p) for p in parts) == len(whole)


def test_workload_counts_pages_and_samples():
    spec = GatherSpec(4096, 1 << 14, 50000, "aligned", 16)
    w = gather_workload(spec, "uniform", GPU, sample_rounds=1)
    ctas_warps = w.sample_rows
    assert ctas_warps == min(spec.rows, 132 * 64)          # the H200's 132 SMs x 64 warps
    assert dict(w.requests_by_size_B) == {128: 50000 * 32}
    # a 4 KiB row on 4 KiB boundaries touches one page
    ids = uniform_ids(50000, 1 << 14, 1)
    assert w.pages == len(np.unique(ids)) == table_pages(spec, ids_function("uniform", spec), 4096)


def test_a_warps_unrolled_loads_are_one_instruction():
    # 480 B aligned rows at 4 B lanes: 5 loads a row, in groups of 4 and 1 (gather.cu's
    # UNROLL), each group before its stores; the id load and the stores keep their own
    spec = GatherSpec(480, 1000, 2, "aligned", 4)
    s = stream_of(spec, lambda start, n: np.array([1, 5])[start:start + n], GPU)
    m = merge_unrolled(s)
    reads = (s.space == 0) & ~s.is_write
    assert len(np.unique(s.inst[reads & (s.warp == 0)])) == 5
    assert len(np.unique(m.inst[reads & (m.warp == 0)])) == 2
    assert np.array_equal(m.addr, s.addr) and (np.diff(m.inst[m.warp == 0].astype(int)) >= 0).all()
