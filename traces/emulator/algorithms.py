"""Functional runs of the traversal algorithms of gpu_kernels/KERNELS.md.

Each function returns the active vertex set of every launch (one launch per
iteration, in order) and the algorithm's result, computed with whole-array
NumPy operations over the edges of each launch, or for BFS's next frontier one
compiled pass over them (no Python loop per edge).

The schedule emulated (a choice; KERNELS.md leaves the interleaving of warps
open, and any legal interleaving gives the same final result):
- every warp reads its own vertex's value (``dist[v]``, ``comp[v]``,
  ``rank[v]``) at the start of the launch, before any update of that launch;
- updates to neighbours (BFS stores, atomicMin, atomicAdd) then take effect
  in program order (warp, instruction, lane).
Under it, BFS's active set of level L is the vertices at depth L (timing
cannot change it); SSSP's and CC's next active set is the vertices whose value
the launch lowered, i.e. those whose smallest candidate beats the value at
the start of the launch (a Bellman-Ford / Jacobi step).

With ``wave_vertices`` (SSSP and CC; BFS and PageRank are unaffected) the
launch instead runs in waves of that many vertex ids, in id order, as the
GPU starts CTAs in id order and holds only so many at once: a vertex's warp
reads its own value when its wave starts, so it sees every update the waves
before it made (a vertex lowered by an earlier wave of the same launch
propagates the lower value at once, as the GPU's label propagation does; the
measured CC and SSSP converge in fewer launches than the Jacobi step).
Within a wave the schedule above holds. The next active set is the vertices
the launch lowered, as before. The wave of a vertex is ``v // wave_vertices``
(the resident warps times the vertices a warp handles: see
:func:`wave_vertices_of`); in the chunked variant a warp's 8 vertices are
visited one after another, so a wave runs in 8 steps, step j the vertices
with ``v % 8 == j``; a balanced warp reads its 8 vertices' values at once,
before its walk. Warps of inactive vertices exit at once, which this
ignores: an H200 uses their slots again only in part
(validation/experiments/warp_slots/runs/h200), and packing the active warps alone
into the SMs' slots would bring SSSP's edges closer to the measured ones but
not its kernel time (that folder's waves_ab.py).

PageRank follows KERNELS.md: ``rank = 1/V``; each of ``iterations`` launches
has every vertex with degree > 0 active and adds ``0.85 * rank[v] / deg(v)``
(float32) to ``next[u]`` of each neighbour; then ``rank = 0.15 / V + next``
(float32, dangling mass ignored). The float32 additions are summed in CSR
order (the merged variants' program order); GPU atomics add in an order set
by timing, so the last bits may differ from a GPU run.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from hostlink.traces.graphs.csr import CSR, GraphError

INF_U32 = np.uint32(0xFFFFFFFF)
PR_DAMPING = 0.85
PR_DEFAULT_ITERATIONS = 10


@dataclass
class AlgorithmRun:
    """Active vertices of each launch (sorted int64 arrays) and the final result;
    ``read``: per launch, the value each active vertex's warp read (SSSP and CC in
    waves; None: the value at the start of the launch)."""
    kernel: str
    active: list[np.ndarray]
    result: np.ndarray
    read: list[np.ndarray] | None = None

    @property
    def launches(self) -> int:
        return len(self.active)


def edge_indices(offsets: np.ndarray, vertices: np.ndarray) -> np.ndarray:
    """Edge indices of the lists of ``vertices``, list after list."""
    s = offsets[vertices].astype(np.int64)
    deg = offsets[vertices + 1].astype(np.int64) - s
    idx = np.repeat(s - (np.cumsum(deg) - deg), deg)
    idx += np.arange(len(idx), dtype=np.int64)
    return idx


def gather_edges(offsets: np.ndarray, vertices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Edge indices of the lists of ``vertices`` (in order) and the position in
    ``vertices`` that owns each."""
    deg = (offsets[vertices + 1] - offsets[vertices]).astype(np.int64)
    owner = np.repeat(np.arange(len(vertices), dtype=np.int64), deg)
    return edge_indices(offsets, vertices), owner


def _distinct(found: np.ndarray, mark: np.ndarray) -> np.ndarray:
    """The distinct vertices of ``found``, sorted (``mark``: an all-False scratch array of V)."""
    if len(found) * 64 < len(mark):  # few: sort them; many: mark them
        return np.unique(found).astype(np.int64)
    mark[found] = True
    new = np.flatnonzero(mark)
    mark[new] = False
    return new.astype(np.int64)


def _check_source(csr: CSR, source: int) -> int:
    V = csr.num_vertices
    if not isinstance(source, (int, np.integer)) or not 0 <= int(source) < V:
        raise GraphError(f"source vertex {source!r} is not in [0, {V}) of graph '{csr.name}'")
    return int(source)


@njit(cache=True)
def _unlabelled_neighbours(offsets, dst, frontier, label, mark):
    """The distinct vertices the lists of ``frontier`` hold whose ``label`` is INF, in
    the order first met (``mark``: an all-False scratch array of V, left so). One pass
    over the lists: neither their edge indices nor their vertices are materialised."""
    total = 0
    for v in frontier:
        total += int(offsets[v + 1]) - int(offsets[v])
    out = np.empty(min(total, mark.shape[0]), dtype=np.int64)
    n = 0
    for v in frontier:
        for e in range(int(offsets[v]), int(offsets[v + 1])):
            u = int(dst[e])
            if label[u] == INF_U32 and not mark[u]:
                mark[u] = True
                out[n] = u
                n += 1
    for k in range(n):
        mark[out[k]] = False
    return out[:n]


def bfs(csr: CSR, source: int) -> AlgorithmRun:
    """Level-synchronous BFS: ``label`` (u32, INF = 0xFFFFFFFF) is the depth."""
    source = _check_source(csr, source)
    label = np.full(csr.num_vertices, INF_U32, dtype=np.uint32)
    label[source] = 0
    frontier = np.array([source], dtype=np.int64)
    active = []
    level = 0
    mark = np.zeros(csr.num_vertices, dtype=bool)
    while len(frontier):
        active.append(frontier)
        new = np.sort(_unlabelled_neighbours(csr.offsets, csr.dst, frontier, label, mark))
        label[new] = level + 1
        frontier = new
        level += 1
    return AlgorithmRun("bfs", active, label)


CHUNK_VERTICES = 8          # vertices a chunked warp visits one after another (KERNELS.md)


def wave_vertices_of(variant: str, resident_warps: int) -> int:
    """Vertex ids a wave of ``resident_warps`` warps covers: a warp handles 32
    vertices in the naive variant (a thread each, at once), 8 in chunked (one
    after another) and balanced (at once: its lanes read the 8 values before the
    walk), 1 in the warp-per-vertex variants (gpu_kernels/KERNELS.md)."""
    per_warp = {"naive": 32, "chunked": CHUNK_VERTICES, "balanced": CHUNK_VERTICES}.get(variant, 1)
    return max(1, int(resident_warps) * per_warp)


def serial_steps_of(variant: str) -> int:
    """Vertices a warp visits one after another within a wave."""
    return CHUNK_VERTICES if variant == "chunked" else 1


def _relax_waves(csr: CSR, value: np.ndarray, first_active: np.ndarray, kernel: str,
                 weighted: bool, wave: int, serial: int = 1) -> AlgorithmRun:
    return relax_in_steps(csr, value, first_active, kernel, weighted,
                          lambda frontier: (frontier // wave) * serial + frontier % serial)


def relax_in_steps(csr: CSR, value: np.ndarray, first_active: np.ndarray, kernel: str,
                   weighted: bool, steps_of) -> AlgorithmRun:
    """SSSP or CC launches from ``first_active``: ``steps_of(frontier)`` gives the step in
    which each active vertex's warp reads its value (the frontier sorted), later steps
    seeing the updates of earlier ones; a launch's next frontier is the vertices it
    lowered. Returns the active vertices and the values read, launch by launch."""
    active, reads = [], []
    frontier = first_active
    w = csr.weights
    while len(frontier):
        active.append(frontier)
        start = value.copy()
        read = np.empty(len(frontier), dtype=value.dtype)
        step = np.asarray(steps_of(frontier))
        order = np.argsort(step, kind="stable")
        ordered = frontier[order]
        step = step[order]
        cuts = np.concatenate(([0], np.flatnonzero(np.diff(step)) + 1, [len(frontier)]))
        for a, b in zip(cuts[:-1], cuts[1:]):
            fv = ordered[a:b]
            read[order[a:b]] = value[fv]
            idx, owner = gather_edges(csr.offsets, fv)
            u = csr.dst[idx].astype(np.int64)
            cand = value[fv][owner].astype(np.int64)
            if weighted:
                cand = cand + w[idx]
            np.minimum.at(value, u, np.minimum(cand, int(INF_U32)).astype(value.dtype))
        reads.append(read)
        frontier = np.flatnonzero(value < start).astype(np.int64)
    return AlgorithmRun(kernel, active, value, reads)


def _relax_loop(csr: CSR, value: np.ndarray, first_active: np.ndarray, kernel: str,
                weighted: bool, wave: int | None = None, serial: int = 1) -> AlgorithmRun:
    if wave is not None:
        if int(wave) < 1:
            raise GraphError(f"wave_vertices must be >= 1, not {wave!r}")
        return _relax_waves(csr, value, first_active, kernel, weighted, int(wave), int(serial))
    active = []
    frontier = first_active
    w = csr.weights
    mark = np.zeros(len(value), dtype=bool)
    while len(frontier):
        active.append(frontier)
        idx, owner = gather_edges(csr.offsets, frontier)
        u = csr.dst[idx].astype(np.int64)
        cand = value[frontier][owner].astype(np.int64)
        if weighted:
            cand = cand + w[idx]
        del idx, owner
        before = value[u]
        np.minimum.at(value, u, np.minimum(cand, int(INF_U32)).astype(value.dtype))
        frontier = _distinct(u[value[u] < before], mark)
    return AlgorithmRun(kernel, active, value)


def sssp(csr: CSR, source: int, wave_vertices: int | None = None,
         serial_steps: int = 1) -> AlgorithmRun:
    """Bellman-Ford style SSSP with active flags: ``dist`` (u32, INF = 0xFFFFFFFF)."""
    source = _check_source(csr, source)
    if csr.weights is None:
        raise GraphError(f"SSSP needs edge weights; graph '{csr.name}' has none")
    dist = np.full(csr.num_vertices, INF_U32, dtype=np.uint32)
    dist[source] = 0
    return _relax_loop(csr, dist, np.array([source], dtype=np.int64), "sssp", True,
                       wave_vertices, serial_steps)


def cc(csr: CSR, wave_vertices: int | None = None, serial_steps: int = 1) -> AlgorithmRun:
    """Label propagation: ``comp[v] = v``; the result is the smallest id reachable."""
    V = csr.num_vertices
    comp = np.arange(V, dtype=np.uint32)
    return _relax_loop(csr, comp, np.arange(V, dtype=np.int64), "cc", False, wave_vertices,
                       serial_steps)


def pagerank(csr: CSR, iterations: int = PR_DEFAULT_ITERATIONS) -> AlgorithmRun:
    """Push PageRank in float32 (see module doc)."""
    if not isinstance(iterations, (int, np.integer)) or iterations < 1:
        raise GraphError(f"PageRank iterations must be a positive integer, not {iterations!r}")
    V = csr.num_vertices
    deg = csr.degrees()
    active_set = np.flatnonzero(deg > 0).astype(np.int64)
    rank = np.full(V, np.float32(1.0) / np.float32(V), dtype=np.float32)
    src = csr.sources()
    inv_deg = np.zeros(V, dtype=np.float32)
    inv_deg[active_set] = deg[active_set].astype(np.float32)
    base = np.float32(0.15) / np.float32(V)
    active = []
    for _ in range(int(iterations)):
        active.append(active_set)
        contrib = np.zeros(V, dtype=np.float32)
        contrib[active_set] = np.float32(PR_DAMPING) * rank[active_set] / inv_deg[active_set]
        nxt = np.zeros(V, dtype=np.float32)
        np.add.at(nxt, csr.dst, contrib[src])
        rank = base + nxt
    return AlgorithmRun("pagerank", active, rank)


def run(csr: CSR, kernel: str, *, source: int = 0,
        iterations: int = PR_DEFAULT_ITERATIONS, wave_vertices: int | None = None,
        serial_steps: int = 1) -> AlgorithmRun:
    if kernel == "bfs":
        return bfs(csr, source)
    if kernel == "sssp":
        return sssp(csr, source, wave_vertices, serial_steps)
    if kernel == "cc":
        return cc(csr, wave_vertices, serial_steps)
    if kernel == "pagerank":
        return pagerank(csr, iterations)
    raise GraphError(f"unknown kernel '{kernel}' (expected bfs, sssp, cc or pagerank)")
