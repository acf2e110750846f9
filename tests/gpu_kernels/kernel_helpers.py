"""Helpers for the gpu_kernels tests: EMOGI binary CSR files of small graphs."""
from __future__ import annotations

from pathlib import Path

import numpy as np


def write_bel(prefix: Path, offsets, dst, weights=None) -> Path:
    for ext, arr, dt in (("col", offsets, np.uint64), ("dst", dst, np.uint64), ("val", weights, np.uint32)):
        if arr is None:
            continue
        a = np.asarray(arr, dtype=dt)
        with open(f"{prefix}.bel.{ext}", "wb") as f:
            np.array([len(a), 0], dtype=np.uint64).tofile(f)
            a.tofile(f)
    return prefix


def random_symmetric_graph(V: int, E_undirected: int, seed: int, max_w: int = 255):
    """CSR (offsets, dst, weights) of a random symmetric graph without self-loops or duplicates."""
    rng = np.random.default_rng(seed)
    u = rng.integers(0, V, E_undirected)
    v = rng.integers(0, V, E_undirected)
    keep = u != v
    a = np.concatenate([u[keep], v[keep]])
    b = np.concatenate([v[keep], u[keep]])
    key = np.unique(a.astype(np.int64) * V + b)
    a, b = key // V, key % V
    offsets = np.zeros(V + 1, dtype=np.int64)
    np.add.at(offsets, a + 1, 1)
    offsets = np.cumsum(offsets)
    # weights symmetric: from the unordered pair
    w = (np.minimum(a, b) * 7919 + np.maximum(a, b) * 104729) % max_w + 1
    return offsets, b, w


def read_bel_graph(prefix: Path) -> tuple[np.ndarray, np.ndarray]:
    """(offsets, dst) of an EMOGI binary CSR graph."""
    off = np.fromfile(f"{prefix}.bel.col", dtype=np.uint64)[2:].astype(np.int64)
    dst = np.fromfile(f"{prefix}.bel.dst", dtype=np.uint64)[2:].astype(np.int64)
    return off, dst


def traced_edge_loads(trace_dir: Path, id_bytes: int) -> list[list[tuple[int, list[int]]]]:
    """Per launch, the (global warp, element indices) of every edge load in a self-trace."""
    import json

    from hostlink.traces.accelsim import read_accelsim
    from hostlink.traces.schema import InstTable

    regions = {r["name"]: r for r in json.loads((Path(trace_dir) / "regions.json").read_text())["regions"]}
    start, size = regions["edges"]["start"], regions["edges"]["size_B"]
    trace = read_accelsim(trace_dir)
    tab = InstTable.concat(list(trace.chunks))
    warps_per_cta = [lc.warps_per_cta for lc in trace.launches]
    out: list[list[tuple[int, list[int]]]] = [[] for _ in trace.launches]
    for r in range(len(tab)):
        lanes = [lane for lane in range(32) if tab.mask[r] >> lane & 1]
        addrs = tab.addrs[r, lanes].astype(np.int64)
        if not ((addrs >= start) & (addrs < start + size)).all():
            continue  # a weight load (SSSP): not in the edges region
        launch = int(tab.launch[r])
        w = int(tab.cta[r]) * warps_per_cta[launch] + int(tab.warp[r])
        out[launch].append((w, ((addrs - start) // id_bytes).tolist()))
    return out
