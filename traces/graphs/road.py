"""Road-like graphs: a sparse, connected subgraph of a 2-D grid.

``road((W, H), mean_degree=2.5)`` keeps part of the W x H lattice of
:mod:`hostlink.traces.graphs.grid` so that the average degree (directed
edges over vertices) is ``mean_degree``, as in road networks: the USA road
graph of the 9th DIMACS Implementation Challenge (shortest paths, 2006) has
23,947,347 vertices and 57,708,624 directed edges once duplicates are
dropped, an average degree of 2.41, and one connected component (SuiteSparse
Matrix Collection, ``GAP/GAP-road`` and ``DIMACS10/road_usa``; GAP's ``road``
input, Beamer, Asanovic and Patterson, "The GAP Benchmark Suite",
arXiv:1508.03619). The default 2.5 lies in the range of the challenge's
regional graphs.

How: a spanning tree first, then extra lattice edges. The tree is the
minimum spanning tree of the lattice under seeded uniform random weights
(:func:`scipy.sparse.csgraph.minimum_spanning_tree`); each lattice edge
outside it is then kept with the probability that brings the expected
average degree to ``mean_degree``. A spanning tree first, rather than random
edges and the largest component kept: every vertex is reached from every
BFS source, as in the one-component road graph above, and the vertex count
is exactly W * H, so a manifest's size is the graph's. The missing lattice
edges force detours: a BFS runs more levels than on the full grid (2000 x
2000 at 2.5, shuffled ids, from vertex 0: 3,132 levels against the grid's
2,865) and the mean distance from a corner is longer (200 x 150: 9% at 2.5).

Vertex ids: in locality order ``x + W * y`` (``shuffle=False``), or
relabelled by a seeded random permutation (``shuffle=True``, the default),
as :mod:`hostlink.traces.graphs.grid` does.

Assumptions: the graph is symmetric, with no self-loops or duplicate edges
and sorted neighbour lists (:func:`hostlink.traces.graphs.csr.from_edges`);
weights, when asked for, are :func:`hostlink.traces.graphs.generators.edge_weights`'
hash of the edge's ends. Random streams: NumPy's PCG64 seeded by
``SeedSequence(seed, spawn_key=(3,))`` (tree weights), ``(4,)`` (extra
edges) and ``(5,)`` (the permutation).
"""
from __future__ import annotations

import numpy as np

from hostlink.traces.graphs.csr import CSR, GraphError, from_edges
from hostlink.traces.graphs.generators import DEFAULT_SEED, edge_weights
from hostlink.traces.graphs.grid import _check, _lattice_edges

#: average degree of the USA road graph (57,708,624 directed edges / 23,947,347 vertices)
USA_ROAD_MEAN_DEGREE = 57_708_624 / 23_947_347
DEFAULT_MEAN_DEGREE = 2.5


def _rng(seed: int, key: int) -> np.random.Generator:
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(int(seed), spawn_key=(key,))))


def degree_range(dims) -> tuple[float, float]:
    """The average degrees a road graph of ``dims`` can have: its spanning tree's and
    the full lattice's."""
    W, H = dims
    V = W * H
    lattice = (W - 1) * H + W * (H - 1)
    return 2 * (V - 1) / V, 2 * lattice / V


def road(dims, *, mean_degree: float = DEFAULT_MEAN_DEGREE, shuffle: bool = True,
         seed: int = DEFAULT_SEED, weighted: bool = False, id_bytes: int = 4,
         name: str | None = None) -> CSR:
    """The road-like graph on the W x H lattice (see the module doc)."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import minimum_spanning_tree

    dims = _check(dims)
    if len(dims) != 2:
        raise GraphError(f"road dimensions {dims}: expected WxH (a road graph is 2-D)")
    if id_bytes not in (4, 8):
        raise GraphError(f"id_bytes must be 4 or 8, not {id_bytes}")
    V = dims[0] * dims[1]
    if V < 2:
        raise GraphError(f"road dimensions {dims}: a road graph needs 2 vertices or more")
    lo, hi = degree_range(dims)
    if not lo <= float(mean_degree) <= hi:
        raise GraphError(f"road mean_degree {mean_degree}: a {dims[0]}x{dims[1]} road graph "
                         f"has an average degree in [{lo:.3f}, {hi:.3f}]")
    src, dst = _lattice_edges(dims)
    up = src < dst                               # each lattice edge once
    s, d = src[up], dst[up]
    del src, dst, up
    L = len(s)
    weight = _rng(seed, 3).random(L) + 1e-3      # nonzero: scipy drops zero entries
    tree = minimum_spanning_tree(coo_matrix((weight, (s, d)), shape=(V, V)).tocsr()).tocoo()
    del weight
    r, c = tree.row.astype(np.int64), tree.col.astype(np.int64)
    tree_key = np.sort(np.minimum(r, c) * V + np.maximum(r, c))
    del r, c
    del tree
    key = s * V + d
    pos = np.minimum(np.searchsorted(tree_key, key), len(tree_key) - 1)
    in_tree = tree_key[pos] == key
    del key, pos, tree_key
    extra = L - (V - 1)
    p_keep = 0.0 if extra == 0 else (mean_degree * V / 2 - (V - 1)) / extra
    keep = in_tree | (_rng(seed, 4).random(L) < p_keep)
    s, d = s[keep], d[keep]
    del keep, in_tree
    if shuffle:
        perm = _rng(seed, 5).permutation(V)
        s, d = perm[s], perm[d]
        del perm
    label = f"road{dims[0]}x{dims[1]}{'' if shuffle else '_local'}"
    csr = from_edges(s, d, V, symmetrize=True, name=name or label, directed=False)
    if weighted:
        csr = CSR(csr.offsets, csr.dst, edge_weights(csr.offsets, csr.dst, int(seed)),
                  csr.name, directed=False)
    return csr.with_id_bytes(id_bytes)
