"""Writes a traversal launch makes to one word that all its warps share.

Every traversal program (gpu_kernels/traversal/walk.cuh and each algorithm's
``visit``) writes two such words:

- the edge counter: at its end, lane 0 of each warp that walked an edge adds the
  warp's count to one 64-bit counter (``atomicAdd`` whose result is unused: a
  reduction);
- the run's ``changed`` flag: a visit stores it in every lane whose update took
  effect (BFS: the neighbour was unvisited; SSSP and CC: the ``atomicMin``
  lowered it). The lanes of one warp instruction store to one address, so the
  instruction sends one write.

The L2 serves writes to one word one after another (``gpu.shared_write_ns``,
validation/experiments/flag_writes): the engines serve them as the warps end
(:mod:`hostlink.model.des.events`), the analytic model adds them to the launch's
work (:func:`hostlink.model.predict.launch_floor`).

Assumptions: a warp reads its vertices' lists as the programs do (naive: a thread
per vertex, trip k reads element k of every lane's list; merged variants: a warp per
vertex, trips of 32 consecutive elements; chunked and balanced: a warp per 8
vertices, whose lists it reads in trips of 32 elements); the updates that take
effect are the launch's newly active vertices, one each (races that let two warps
find one vertex unvisited are left out), spread over the launch's elements at
random, so that a trip of n elements stores with probability 1 - (1 - p)^n where p
is the launch's new vertices over its elements read (SSSP and CC: a vertex lowered
more than once counts once); stores of one word that the SM combines where every
warp of a grid writes it (the ``flag_writes`` experiment) are counted each.
"""
from __future__ import annotations

import numpy as np

from hostlink.model.geometry import WARP_SIZE as WARP_LANES   # also a trip's elements


def _warp_of(vertices: np.ndarray, variant: str) -> np.ndarray:
    if variant == "naive":
        return vertices // WARP_LANES
    if variant in ("chunked", "balanced"):
        from hostlink.traces.emulator.emit import CHUNK_VERTICES
        return vertices // CHUNK_VERTICES
    return vertices


def _stores_in(n: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Probability that a trip of ``n`` elements holds at least one update, each
    element one with probability ``p`` (element-wise)."""
    p = np.minimum(np.asarray(p, dtype=np.float64), 1.0)
    with np.errstate(divide="ignore"):
        return np.where(p >= 1.0, (n > 0).astype(np.float64), -np.expm1(n * np.log1p(-p)))


def _flag_stores(degrees: np.ndarray, groups: np.ndarray, variant: str,
                 p: np.ndarray) -> np.ndarray:
    """Per vertex of ``degrees`` (> 0), its share of the expected trips that store the
    ``changed`` flag; ``groups``: the vertex's warp within its launch (one key per
    warp and launch), ``p``: its launch's chance that an element updates."""
    if variant != "naive":
        full, rest = degrees // WARP_LANES, degrees % WARP_LANES
        return full * _stores_in(np.full(len(p), WARP_LANES), p) + _stores_in(rest, p)
    # naive: trip k of a warp reads its lanes whose degree exceeds k; with the lanes'
    # degrees sorted down, trips d[j+1]..d[j]-1 read j + 1 lanes
    order = np.lexsort((-degrees, groups))
    d, w, pp = degrees[order], groups[order], p[order]
    first = np.ones(len(d), dtype=bool)
    first[1:] = w[1:] != w[:-1]
    at = np.arange(len(d))
    rank = at - np.maximum.accumulate(np.where(first, at, 0))
    last = np.ones(len(d), dtype=bool)
    last[:-1] = first[1:]
    nxt = np.zeros(len(d), dtype=np.int64)
    nxt[:-1] = np.where(last[:-1], 0, d[1:])
    out = np.empty(len(d))
    out[order] = (d - nxt) * _stores_in(rank + 1, pp)
    return out


def _distinct(keys: np.ndarray) -> int:
    """How many distinct values ``keys`` holds: by its steps where it ascends (a
    launch's active vertices come in order), else by sorting."""
    if len(keys) < 2:
        return len(keys)
    steps = np.diff(keys)
    if (steps >= 0).all():
        return 1 + int(np.count_nonzero(steps))
    return len(np.unique(keys))


#: the kernels whose visits store the ``changed`` flag (PageRank's add to distinct ranks)
FLAGGING_KERNELS = ("bfs", "sssp", "cc")


def shared_writes(offsets: np.ndarray, kernel: str, variant: str,
                  active: list[np.ndarray]) -> np.ndarray:
    """Per launch of ``kernel`` whose launches' active vertices are ``active`` (the
    next launch's are the ones this one updated): the writes to the edge counter and
    the ``changed`` flag (see the module docstring), rounded to whole writes."""
    out = np.zeros(len(active), dtype=np.int64)
    for k, verts in enumerate(active):
        verts = np.asarray(verts, dtype=np.int64)
        if not len(verts):
            continue
        deg = (offsets[verts + 1].astype(np.int64) - offsets[verts].astype(np.int64))
        walked = deg > 0
        if not walked.any():
            continue
        verts, deg = verts[walked], deg[walked]
        warps = _warp_of(verts, variant)
        reductions = _distinct(warps)
        updated = (len(active[k + 1]) if k + 1 < len(active) and kernel in FLAGGING_KERNELS
                   else 0)
        p = np.full(len(deg), updated / float(deg.sum()))
        stores = _flag_stores(deg, warps, variant, p).sum() if updated else 0.0
        out[k] = reductions + int(round(stores))
    return out


def bfs_level_shared_writes(offsets: np.ndarray, variant: str, level: np.ndarray,
                            chunk_vertices: int = 1 << 22) -> np.ndarray:
    """:func:`shared_writes` of a BFS given each vertex's level (``level``, -1 where
    unreached: one launch per level), a chunk of vertices at a time (whole warps),
    without listing any level's vertices."""
    levels = int(level.max()) + 1 if len(level) else 0
    if levels == 0:
        return np.zeros(0, dtype=np.int64)
    chunk = max(WARP_LANES, chunk_vertices - chunk_vertices % WARP_LANES)
    vertices = np.zeros(levels + 1)
    edges = np.zeros(levels)
    for c0 in range(0, len(level), chunk):
        lv = level[c0:c0 + chunk].astype(np.int64)
        deg = np.diff(offsets[c0:c0 + len(lv) + 1].astype(np.int64))
        on = lv >= 0
        vertices[:levels] += np.bincount(lv[on], minlength=levels)
        edges += np.bincount(lv[on], weights=deg[on], minlength=levels)
    p = np.where(edges > 0, vertices[1:] / np.maximum(edges, 1.0), 0.0)
    reductions = np.zeros(levels)
    stores = np.zeros(levels)
    for c0 in range(0, len(level), chunk):
        lv = level[c0:c0 + chunk].astype(np.int64)
        deg = np.diff(offsets[c0:c0 + len(lv) + 1].astype(np.int64))
        keep = (lv >= 0) & (deg > 0)
        v = np.flatnonzero(keep) + c0
        lv, deg = lv[keep], deg[keep]
        key = _warp_of(v, variant) * levels + lv          # a warp of one launch
        first = np.unique(key)
        reductions += np.bincount(first % levels, minlength=levels)
        stores += np.bincount(lv, weights=_flag_stores(deg, key, variant, p[lv]),
                              minlength=levels)
    return (reductions + np.round(stores)).astype(np.int64)


def with_shared_writes(stream, offsets: np.ndarray, kernel: str, variant: str,
                       active: list[np.ndarray]):
    """``stream`` with each launch record's ``shared_writes`` set (:func:`shared_writes`)."""
    from dataclasses import replace
    if not stream.launches:
        return stream
    counts = shared_writes(offsets, kernel, variant, active)
    return replace(stream, launches=tuple(
        replace(info, shared_writes=int(counts[k]) if k < len(counts) else 0)
        for k, info in enumerate(stream.launches)))
