"""The CSR graph type shared by the generators, the readers, the writer and the emulator.

A graph is ``offsets`` (u64, V + 1 entries, ``offsets[0] == 0``, non-decreasing,
``offsets[V] == E``), ``dst`` (neighbour ids, u32 or u64: the id width the
kernels read, ``id_bytes``), optional ``weights`` (u32, one per edge), a name
and a ``directed`` flag. Each neighbour list is sorted by id, without
self-loops or duplicates, when the graph comes from :func:`from_edges` (every
generator and reader goes through it).

Assumptions:
- when duplicate edges carry different weights, the smallest weight is kept
  (so a symmetrised weighted graph stays symmetric); this is a choice, GAP's
  builder keeps one of them too but its order is not specified here;
- vertex ids fit in 32 bits for the key packing of :func:`from_edges`
  (V < 2**32), which holds for every graph this project runs (GAP's largest,
  scale 27, has 2**27 vertices).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hostlink.model.errors import HostlinkError

_LOW32 = np.uint64(0xFFFFFFFF)
_SHIFT32 = np.uint64(32)


class GraphError(HostlinkError):
    """A graph file or graph argument that cannot be used; names the file and line."""


@dataclass(frozen=True, eq=False)
class CSR:
    """Compressed sparse rows: ``offsets`` u64[V+1], ``dst`` u32/u64[E], ``weights`` u32[E] or None."""
    offsets: np.ndarray
    dst: np.ndarray
    weights: np.ndarray | None = None
    name: str = "graph"
    directed: bool = False

    def __post_init__(self) -> None:
        offsets = np.ascontiguousarray(self.offsets, dtype=np.uint64)
        if offsets.ndim != 1 or len(offsets) < 1:
            raise GraphError(f"graph '{self.name}': offsets must be a 1-D array of V + 1 entries")
        dst = np.ascontiguousarray(self.dst)
        if dst.dtype not in (np.uint32, np.uint64):
            if dst.size and (dst.min() < 0):
                raise GraphError(f"graph '{self.name}': negative neighbour id")
            dst = dst.astype(np.uint64)
        if dst.ndim != 1:
            raise GraphError(f"graph '{self.name}': dst must be 1-D")
        if int(offsets[-1]) != len(dst) or int(offsets[0]) != 0:
            raise GraphError(f"graph '{self.name}': offsets run from {int(offsets[0])} to "
                             f"{int(offsets[-1])}, expected 0 to the edge count {len(dst)}")
        object.__setattr__(self, "offsets", offsets)
        object.__setattr__(self, "dst", dst)
        if self.weights is not None:
            w = np.ascontiguousarray(self.weights)
            if w.dtype != np.uint32:
                if w.size and (w.min() < 0 or w.max() > 0xFFFFFFFF):
                    raise GraphError(f"graph '{self.name}': weights must fit in u32")
                w = w.astype(np.uint32)
            if w.shape != dst.shape:
                raise GraphError(f"graph '{self.name}': {len(w)} weights for {len(dst)} edges")
            object.__setattr__(self, "weights", w)

    # ------------------------------------------------------------------ sizes
    @property
    def num_vertices(self) -> int:
        return len(self.offsets) - 1

    @property
    def num_edges(self) -> int:
        return len(self.dst)

    @property
    def id_bytes(self) -> int:
        return self.dst.dtype.itemsize

    def degrees(self) -> np.ndarray:
        """Out-degree of every vertex (int64)."""
        return np.diff(self.offsets).astype(np.int64)

    def neighbours(self, v: int) -> np.ndarray:
        return self.dst[int(self.offsets[v]):int(self.offsets[v + 1])]

    # ------------------------------------------------------------ conversions
    def with_id_bytes(self, id_bytes: int) -> "CSR":
        """The same graph with 4 B (u32) or 8 B (u64) neighbour ids."""
        if id_bytes not in (4, 8):
            raise GraphError(f"id_bytes must be 4 or 8, not {id_bytes}")
        dtype = np.uint32 if id_bytes == 4 else np.uint64
        if self.dst.dtype == dtype:
            return self
        if id_bytes == 4 and self.num_vertices > 0xFFFFFFFF:
            raise GraphError(f"graph '{self.name}' has {self.num_vertices} vertices: ids need 8 B")
        return CSR(self.offsets, self.dst.astype(dtype), self.weights, self.name, self.directed)

    def without_weights(self) -> "CSR":
        return CSR(self.offsets, self.dst, None, self.name, self.directed)

    def sources(self) -> np.ndarray:
        """The source vertex of every edge (u32 when V < 2**32)."""
        dtype = np.uint32 if self.num_vertices <= 0xFFFFFFFF else np.uint64
        return np.repeat(np.arange(self.num_vertices, dtype=dtype), self.degrees())

    def symmetrized(self) -> "CSR":
        """Both directions of every edge (the weight of a pair is the smaller of the two)."""
        return from_edges(self.sources(), self.dst, self.num_vertices, self.weights,
                          symmetrize=True, name=self.name)

    def is_symmetric(self) -> bool:
        """True when every edge (u, v) has its reverse (v, u) with the same weight."""
        src = self.sources().astype(np.uint64)
        d = self.dst.astype(np.uint64)
        fwd = (src << _SHIFT32) | d
        rev = (d << _SHIFT32) | src
        if self.weights is None:
            fwd.sort()
            rev.sort()
            return bool(np.array_equal(fwd, rev))
        of = np.lexsort((self.weights, fwd))
        orv = np.lexsort((self.weights, rev))
        return bool(np.array_equal(fwd[of], rev[orv])
                    and np.array_equal(self.weights[of], self.weights[orv]))

    def validate(self) -> "CSR":
        """Full structural check: non-decreasing offsets, ids below V. Returns self."""
        if len(self.offsets) > 1 and np.any(self.offsets[1:] < self.offsets[:-1]):
            bad = int(np.argmax(self.offsets[1:] < self.offsets[:-1]))
            raise GraphError(f"graph '{self.name}': offsets decrease at vertex {bad}")
        if self.num_edges and int(self.dst.max()) >= self.num_vertices:
            bad = int(np.argmax(self.dst >= self.num_vertices))
            raise GraphError(f"graph '{self.name}': edge {bad} points to vertex "
                             f"{int(self.dst[bad])}, but V = {self.num_vertices}")
        return self

    def equals(self, other: "CSR") -> bool:
        """Same structure, ids and weights (the id width and the name may differ)."""
        if self.num_vertices != other.num_vertices or self.num_edges != other.num_edges:
            return False
        if not np.array_equal(self.offsets, other.offsets):
            return False
        if not np.array_equal(self.dst.astype(np.uint64), other.dst.astype(np.uint64)):
            return False
        if (self.weights is None) != (other.weights is None):
            return False
        return self.weights is None or bool(np.array_equal(self.weights, other.weights))

    def degree_stats(self) -> dict:
        """V, E, degree min / mean / median / max, zero-degree vertices, bytes of each array."""
        deg = self.degrees()
        V = self.num_vertices
        stats = {"name": self.name, "vertices": V, "edges": self.num_edges,
                 "directed": self.directed, "id_bytes": self.id_bytes,
                 "weighted": self.weights is not None}
        if V:
            stats.update(degree_min=int(deg.min()), degree_mean=float(deg.mean()),
                         degree_median=float(np.median(deg)), degree_max=int(deg.max()),
                         zero_degree_vertices=int(np.count_nonzero(deg == 0)))
        stats.update(offsets_size_B=int(self.offsets.nbytes), edges_size_B=int(self.dst.nbytes),
                     weights_size_B=int(self.weights.nbytes) if self.weights is not None else 0)
        return stats


# ---------------------------------------------------------------------- build
def _pack(src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    return (src.astype(np.uint64) << _SHIFT32) | dst.astype(np.uint64)


def offsets_from_sorted_keys(keys: np.ndarray, num_vertices: int) -> np.ndarray:
    """Row offsets of keys ``src << 32 | dst`` sorted ascending."""
    bounds = np.arange(num_vertices + 1, dtype=np.uint64) << _SHIFT32
    return np.searchsorted(keys, bounds, side="left").astype(np.uint64)


def from_edges(src, dst, num_vertices: int | None = None, weights=None, *,
               symmetrize: bool = False, name: str = "graph",
               directed: bool | None = None) -> CSR:
    """Build a CSR from edge endpoint arrays.

    Self-loops and duplicate edges are removed; with ``symmetrize`` every edge
    is added in both directions first. Neighbour lists come out sorted. The
    id width is 4 B when V < 2**32 (convert with :meth:`CSR.with_id_bytes`).
    """
    src = np.asarray(src)
    dst = np.asarray(dst)
    if src.shape != dst.shape or src.ndim != 1:
        raise GraphError(f"graph '{name}': src and dst must be 1-D arrays of equal length")
    for arr, what in ((src, "source"), (dst, "destination")):
        if arr.size and arr.dtype.kind == "i" and arr.min() < 0:
            raise GraphError(f"graph '{name}': negative {what} vertex id")
    max_id = int(max(src.max(initial=0), dst.max(initial=0))) if src.size else -1
    V = max_id + 1 if num_vertices is None else int(num_vertices)
    if max_id >= V:
        raise GraphError(f"graph '{name}': vertex id {max_id} is not below the vertex count {V}")
    if V > 0xFFFFFFFF:
        raise GraphError(f"graph '{name}': {V} vertices exceed the 32-bit key packing")
    w = None if weights is None else np.asarray(weights)
    if w is not None:
        if w.shape != src.shape:
            raise GraphError(f"graph '{name}': {len(w)} weights for {len(src)} edges")
        if w.size and (w.min() < 0 or w.max() > 0xFFFFFFFF):
            raise GraphError(f"graph '{name}': weights must be integers in [0, 2**32)")
        w = w.astype(np.uint32)
    keep = src != dst
    s = src[keep].astype(np.uint32)
    d = dst[keep].astype(np.uint32)
    if w is not None:
        w = w[keep]
    if symmetrize:
        s, d = np.concatenate([s, d]), np.concatenate([d, s])
        if w is not None:
            w = np.concatenate([w, w])
    keys = _pack(s, d)
    del s, d
    if w is None:
        keys.sort()
    else:
        order = np.lexsort((w, keys))
        keys = keys[order]
        w = w[order]
    first = np.ones(len(keys), dtype=bool)
    if len(keys) > 1:
        np.not_equal(keys[1:], keys[:-1], out=first[1:])
    keys = keys[first]
    if w is not None:
        w = w[first]
    offsets = offsets_from_sorted_keys(keys, V)
    out_dst = (keys & _LOW32).astype(np.uint32)
    if directed is None:
        directed = not symmetrize
    return CSR(offsets, out_dst, w, name, bool(directed))
