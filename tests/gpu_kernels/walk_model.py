"""A plain-Python model of the edge walk of gpu_kernels/traversal/walk.cuh.

For one launch it lists, per warp in program order, the warp's edge-load
instructions as (global warp id, mask, element indices of the active
lanes), following gpu_kernels/KERNELS.md for naive, merged, merged_aligned
and chunked and gpu_kernels/traversal/README.md for balanced. Small graphs
only (a Python loop per warp); it is the yardstick the GPU's self-trace is
compared with.
"""
from __future__ import annotations

import numpy as np

BLOCK = 256
CHUNK = 8


def align_elems(id_bytes: int) -> int:
    return 128 // id_bytes


def n_warps(variant: str, V: int) -> int:
    threads = {"naive": V, "merged": 32 * V, "merged_aligned": 32 * V}.get(variant, 32 * -(-V // CHUNK))
    blocks = -(-threads // BLOCK)
    return blocks * BLOCK // 32


def _aligned(s: int, e: int, A: int):
    a = s - s % A
    for base in range(a, e, 32):
        lanes = [base + l for l in range(32) if s <= base + l < e]
        if lanes:
            yield lanes


def warp_loads(variant: str, w: int, offsets: np.ndarray, active: np.ndarray, id_bytes: int):
    """Lists of element indices (lane order), one per load instruction of warp ``w``."""
    V = len(offsets) - 1
    A = align_elems(id_bytes)
    out = []
    if variant == "naive":
        vs = [v for v in range(32 * w, 32 * w + 32)]
        live = [(v, int(offsets[v]), int(offsets[v + 1] - offsets[v])) for v in vs if v < V and active[v]]
        trips = max((d for _, _, d in live), default=0)
        for k in range(trips):
            lanes = [(v - 32 * w, s + k) for v, s, d in live if k < d]
            out.append([i for _, i in sorted(lanes)])
    elif variant in ("merged", "merged_aligned"):
        v = w
        if v < V and active[v]:
            s, e = int(offsets[v]), int(offsets[v + 1])
            if variant == "merged":
                out += [[i for i in range(base, min(base + 32, e))] for base in range(s, e, 32)]
            else:
                out += list(_aligned(s, e, A))
    elif variant == "chunked":
        for v in range(CHUNK * w, CHUNK * w + CHUNK):
            if v < V and active[v]:
                out += list(_aligned(int(offsets[v]), int(offsets[v + 1]), A))
    elif variant == "balanced":
        first = CHUNK * w
        if first >= V:
            return out
        n = min(CHUNK, V - first)
        s = [int(offsets[first + j]) for j in range(n)]
        e = [int(offsets[first + j + 1]) for j in range(n)]
        live = [j for j in range(n) if active[first + j] and e[j] > s[j]]
        if not live:
            return out
        b = min(s[j] - s[j] % A for j in live)
        while True:
            lanes = []
            for l in range(32):
                i = b + l
                owner = max(j for j in range(n) if j == 0 or s[j] <= i)
                if s[0] <= i < e[n - 1] and owner in live:
                    lanes.append(i)
            out.append(lanes)
            after = b + 32
            cands = [after if s[j] <= after else s[j] - s[j] % A for j in live if e[j] > after]
            if not cands:
                break
            b = min(cands)
    else:
        raise ValueError(variant)
    return out


def launch_loads(variant: str, offsets: np.ndarray, active: np.ndarray, id_bytes: int):
    """[(global warp, [element indices])] for one launch, warps in order."""
    out = []
    for w in range(n_warps(variant, len(offsets) - 1)):
        for lanes in warp_loads(variant, w, offsets, active, id_bytes):
            out.append((w, lanes))
    return out


def bfs_levels(offsets: np.ndarray, edges: np.ndarray, source: int) -> np.ndarray:
    """BFS depths (-1 unreached)."""
    V = len(offsets) - 1
    depth = np.full(V, -1, dtype=np.int64)
    depth[source] = 0
    frontier = [source]
    level = 0
    while frontier:
        nxt = []
        for v in frontier:
            for u in edges[offsets[v]:offsets[v + 1]]:
                if depth[u] < 0:
                    depth[u] = level + 1
                    nxt.append(int(u))
        frontier = nxt
        level += 1
    return depth


def bfs_launches(variant: str, offsets: np.ndarray, edges: np.ndarray, source: int, id_bytes: int):
    """Per BFS level (one launch each, the last one finding nothing new), its loads."""
    depth = bfs_levels(offsets, edges, source)
    # one launch per level 0 .. max depth; the last one finds nothing new and stops the search
    return [launch_loads(variant, offsets, depth == lvl, id_bytes) for lvl in range(int(depth.max()) + 1)]
