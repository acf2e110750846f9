"""Graph generators and the CSR type (traces/graphs).

Sources of the numbers: GAP's generator parameters (sbeamer/gapbs
src/generator.h: R-MAT A=.57 B=.19 C=.19, weights in
[1, 255], N = 2**scale, N * degree sampled edges, default seed 27491095);
tolerances of statistical checks are a few binomial standard deviations,
derived next to each assertion.
"""
from __future__ import annotations

import numpy as np
import pytest

from hostlink.model.errors import HostlinkError
from hostlink.traces.graphs import (CSR, DEFAULT_SEED, GraphError, from_edges, generate, kron,
                                    urand)
from hostlink.traces.graphs import generators as gen


def _lists_clean(csr: CSR) -> bool:
    """Every list strictly increasing (sorted, no duplicates) and without self-loops."""
    src = csr.sources().astype(np.int64)
    dst = csr.dst.astype(np.int64)
    same_list = src[1:] == src[:-1]
    return bool(np.all(dst[1:][same_list] > dst[:-1][same_list]) and np.all(src != dst))


def test_default_seed_is_gaps():
    assert DEFAULT_SEED == 27491095


@pytest.mark.parametrize("kind", ["kron", "rmat", "urand"])
def test_generated_graph_is_clean_and_symmetric(kind):
    g = generate(kind, 10, 8, seed=3)
    assert g.num_vertices == 2**10
    assert g.offsets.dtype == np.uint64 and g.dst.dtype == np.uint32
    assert not g.directed
    assert _lists_clean(g)
    assert g.is_symmetric()
    # at most both directions of every sampled edge
    assert g.num_edges <= 2 * 2**10 * 8
    g.validate()


@pytest.mark.parametrize("kind", ["kron", "urand"])
def test_same_seed_same_graph_other_seed_other_graph(kind):
    a = generate(kind, 9, 4, seed=11)
    b = generate(kind, 9, 4, seed=11)
    c = generate(kind, 9, 4, seed=12)
    assert a.equals(b)
    assert not a.equals(c)


def test_weights_symmetric_and_in_gap_range():
    g = kron(11, 16, seed=5)
    w = g.weights
    assert w.dtype == np.uint32 and w.min() >= 1 and w.max() <= 255
    # both directions of an edge carry the same weight (is_symmetric compares weights too)
    assert g.is_symmetric()
    # uniform on [1, 255]: mean 128; edges come in pairs, so about E/2 independent
    # draws of standard deviation 73.6 -> std of the mean 73.6 / sqrt(E/2)
    std_mean = 73.6 / np.sqrt(g.num_edges / 2)
    assert abs(w.mean() - 128.0) < 5 * std_mean
    assert len(np.unique(w)) == 255


def test_rmat_quadrant_probabilities():
    # one 16-bit draw per bit and edge; P(src bit) = C + D = 0.24,
    # P(dst bit) = B + D = 0.24, P(both) = D = 0.05 (GAP's A, B, C; D = 1 - A - B - C)
    rng = gen._rng(1, 0, 0)
    n, scale = 1 << 16, 12
    src, dst = gen._rmat_block(rng, n, scale)
    bits = np.arange(scale, dtype=np.uint32)
    sb = (src[:, None] >> bits) & 1
    db = (dst[:, None] >> bits) & 1
    samples = n * scale
    tol = 5 * np.sqrt(0.25 * 0.75 / samples)  # 5 binomial standard deviations
    assert abs(sb.mean() - 0.24) < tol
    assert abs(db.mean() - 0.24) < tol
    assert abs((sb & db).mean() - 0.05) < 5 * np.sqrt(0.05 * 0.95 / samples)


def test_kron_is_skewed_and_urand_is_not():
    k = kron(12, 16, seed=2)
    u = urand(12, 16, seed=2)
    # urand: symmetric degree ~ Poisson around 2 * 16 = 32 (minus rare
    # duplicates), so P(degree 0) = e**-32 and P(degree >= 80) < 1e-10 per vertex;
    # kron: a heavy tail, and the R-MAT skew leaves a share of the ids unused
    # (18 % at scale 12 with this seed, 43 % at scale 22)
    assert 31.0 < u.degrees().mean() <= 32.0
    assert u.degrees().max() < 80 and u.degrees().min() > 0
    assert k.degrees().max() > 10 * k.degrees().mean()
    assert np.count_nonzero(k.degrees() == 0) > 0.1 * k.num_vertices


@pytest.mark.parametrize("kind", ["kron", "urand"])
def test_piecewise_csr_build_equals_generic_builder(kind, monkeypatch):
    """The memory-lean builder (blockwise dedup and degree counts, lists filled in one
    pass over the keys) gives what the generic from_edges builds from the very same
    sampled edges."""
    monkeypatch.setattr(gen, "_WORK_BLOCK", 1000)
    monkeypatch.setattr(gen, "BLOCK_EDGES", 4096)
    scale, degree, seed = 10, 6, 9
    g = generate(kind, scale, degree, seed, weighted=False)
    N, M = 1 << scale, (1 << scale) * degree
    perm = gen._rng(seed, 1).permutation(N).astype(np.uint32)
    s_all, d_all = [], []
    for block, start in enumerate(range(0, M, 4096)):
        m = min(4096, M - start)
        rng = gen._rng(seed, 0, block)
        if kind == "kron":
            s, d = gen._rmat_block(rng, m, scale)
            s, d = perm[s], perm[d]
        else:
            s = rng.integers(0, N, m, dtype=np.uint32)
            d = rng.integers(0, N, m, dtype=np.uint32)
        s_all.append(s)
        d_all.append(d)
    ref = from_edges(np.concatenate(s_all), np.concatenate(d_all), N, symmetrize=True)
    assert g.equals(ref)


def test_id_bytes_8():
    g = kron(8, 4, seed=1, id_bytes=8)
    assert g.dst.dtype == np.uint64 and g.id_bytes == 8
    assert g.equals(kron(8, 4, seed=1))


@pytest.mark.parametrize("kw", [dict(scale=0, degree=4), dict(scale=32, degree=4),
                                dict(scale=8, degree=0), dict(scale=8, degree=4, id_bytes=2)])
def test_bad_generator_arguments(kw):
    with pytest.raises(GraphError):
        generate("kron", **kw)
    assert issubclass(GraphError, HostlinkError)


def test_unknown_generator():
    with pytest.raises(GraphError, match="unknown generator"):
        generate("rmat2", 8, 4)


# ------------------------------------------------------------------ CSR type
def test_from_edges_cleans_and_keeps_smallest_duplicate_weight():
    src = [0, 0, 1, 2, 2, 2, 3]
    dst = [1, 1, 1, 0, 3, 3, 3]
    w = [5, 3, 9, 4, 8, 2, 1]
    g = from_edges(src, dst, 4, w)
    # self-loops (1,1) and (3,3) go; (0,1) twice keeps 3; (2,3) twice keeps 2
    assert g.offsets.tolist() == [0, 1, 1, 3, 3]
    assert g.dst.tolist() == [1, 0, 3]
    assert g.weights.tolist() == [3, 4, 2]
    assert g.directed


def test_from_edges_symmetrize():
    g = from_edges([0, 1], [1, 2], 3, [7, 9], symmetrize=True)
    assert g.offsets.tolist() == [0, 1, 3, 4]
    assert g.dst.tolist() == [1, 0, 2, 1]
    assert g.weights.tolist() == [7, 7, 9, 9]
    assert not g.directed and g.is_symmetric()


def test_csr_checks():
    with pytest.raises(GraphError, match="offsets run"):
        CSR(np.array([0, 2], dtype=np.uint64), np.array([1], dtype=np.uint32))
    bad = CSR(np.array([0, 1, 1], dtype=np.uint64), np.array([5], dtype=np.uint32))
    with pytest.raises(GraphError, match="points to vertex 5"):
        bad.validate()
    with pytest.raises(GraphError, match="weights"):
        CSR(np.array([0, 1], dtype=np.uint64), np.array([0], dtype=np.uint32),
            np.array([1, 2], dtype=np.uint32))
    with pytest.raises(GraphError, match="not below"):
        from_edges([0, 5], [1, 1], 3)
    with pytest.raises(GraphError, match="negative"):
        from_edges(np.array([-1]), np.array([0]))


def test_degree_stats():
    g = from_edges([0, 0, 1], [1, 2, 2], 4, symmetrize=True)
    st = g.degree_stats()
    assert st["vertices"] == 4 and st["edges"] == 6
    assert st["degree_max"] == 2 and st["degree_min"] == 0
    assert st["zero_degree_vertices"] == 1
    assert st["edges_size_B"] == 6 * 4
