"""2-D and 3-D grid graphs: a road-like graph of many BFS levels.

``grid((W, H))`` is the W x H lattice with each vertex joined to its four
neighbours (six in 3-D, ``grid((X, Y, Z))``); no wrap-around. Its diameter is
``sum(dims) - len(dims)`` edges, so a BFS from a corner runs that many levels
plus one, and from the centre about half as many: thousands of levels at a few
million vertices, where a GAP kron or urand graph of the same size has a
dozen. Road networks are the measured graphs of this shape (DIMACS USA-road
has a BFS depth in the thousands; GAP's ``road`` input, Beamer, Asanovic and
Patterson, "The GAP Benchmark Suite", arXiv:1508.03619, 2015).

Vertex ids: in locality order ``x + W * (y + H * z)`` (``shuffle=False``), or
relabelled by a seeded random permutation (``shuffle=True``, the default, as
GAP's kron generator shuffles its ids), so that neighbours sit at random
addresses of the edge list, as in a real road graph's file order.

Assumptions: the graph is symmetric and has no self-loops or duplicate edges;
each neighbour list is sorted by id; the weights, when asked for, are those of
:func:`hostlink.traces.graphs.generators.edge_weights` (a hash of the edge's
ends, symmetric); the permutation is NumPy's PCG64 seeded by
``SeedSequence(seed, spawn_key=(2,))``.
"""
from __future__ import annotations

import numpy as np

from hostlink.traces.graphs.csr import CSR, GraphError
from hostlink.traces.graphs.generators import DEFAULT_SEED, edge_weights

#: the most vertices a grid may have (ids fit in u32, as the .bel files' offsets allow more)
MAX_VERTICES = 1 << 32


def parse_dims(text: str) -> tuple[int, ...]:
    """``"2000x2000"`` or ``"100x100x100"`` as a tuple of ints (GraphError if malformed)."""
    try:
        dims = tuple(int(p) for p in str(text).lower().split("x"))
    except ValueError:
        dims = ()
    if len(dims) not in (2, 3) or min(dims) < 1:
        raise GraphError(f"grid dimensions '{text}': expected WxH or XxYxZ of positive integers")
    return dims


def _check(dims) -> tuple[int, ...]:
    dims = tuple(int(d) for d in dims)
    if len(dims) not in (2, 3) or min(dims) < 1:
        raise GraphError(f"grid dimensions {dims}: expected 2 or 3 positive integers")
    if int(np.prod(dims, dtype=np.int64)) > MAX_VERTICES:
        raise GraphError(f"grid dimensions {dims}: more than {MAX_VERTICES} vertices")
    return dims


def _lattice_edges(dims: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """(src, dst) of every directed edge of the lattice, in locality-order ids (int64)."""
    V = int(np.prod(dims, dtype=np.int64))
    v = np.arange(V, dtype=np.int64)
    srcs, dsts = [], []
    stride = 1
    for d in dims:
        coord = (v // stride) % d
        up = np.flatnonzero(coord < d - 1)        # a neighbour at +stride
        srcs += [up, up + stride]
        dsts += [up + stride, up]
        stride *= d
        del coord, up
    return np.concatenate(srcs), np.concatenate(dsts)


def grid(dims, *, shuffle: bool = True, seed: int = DEFAULT_SEED, weighted: bool = False,
         id_bytes: int = 4, name: str | None = None) -> CSR:
    """The grid of ``dims`` (2 or 3 sizes) as a symmetric CSR (see the module doc)."""
    dims = _check(dims)
    if id_bytes not in (4, 8):
        raise GraphError(f"id_bytes must be 4 or 8, not {id_bytes}")
    V = int(np.prod(dims, dtype=np.int64))
    src, dst = _lattice_edges(dims)
    if shuffle:
        perm = np.random.Generator(np.random.PCG64(
            np.random.SeedSequence(int(seed), spawn_key=(2,)))).permutation(V)
        src, dst = perm[src], perm[dst]
        del perm
    key = (src.astype(np.uint64) << np.uint64(32)) | dst.astype(np.uint64)
    del src, dst
    key.sort()
    offsets = np.zeros(V + 1, dtype=np.uint64)
    np.cumsum(np.bincount((key >> np.uint64(32)).astype(np.int64), minlength=V),
              out=offsets[1:])
    col = (key & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    del key
    weights = edge_weights(offsets, col, int(seed)) if weighted else None
    label = "x".join(map(str, dims))
    csr = CSR(offsets, col, weights, name or f"grid{label}{'' if shuffle else '_local'}",
              directed=False)
    return csr.with_id_bytes(id_bytes)
