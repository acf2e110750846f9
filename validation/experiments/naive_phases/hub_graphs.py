"""Write the naive_phases probe's graphs. ``hubs``: H hubs (ids 0 to H-1, so one warp
of the naive walk holds them all) joined to a source (the last id), each with L - 1
random leaves of 2**20 vertices, so each hub's list is L long. With L a multiple
of 4, every list of 8 B ids starts on a 32 B sector; with L = 4k + 1, hub h's
list starts h mod 4 elements into one, so the lanes cross sectors on different
trips of a group of four. ``pairs``: 256 warps with two such lists each (ids
32w and 32w + 1), as a narrow BFS level of a small graph has.

Usage: python3 hub_graphs.py OUT_DIR  (writes OUT_DIR/{hubsH,pairsW}_L.bel.*, prints a JSON
line per graph)
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from hostlink.traces.graphs.csr import from_edges
from hostlink.traces.graphs.writers import write_bel

#: vertices of every graph: the leaves' labels (8 MiB of 8 B ids) sit in the L2, as a
#: scale-20 graph's do
VERTICES = 1 << 20
#: GAP's default seed, as the validation manifests use it
SEED = 27491095
#: (hubs, list length): one hub; a warp of 24 and of 32 hubs, lists on one
#: phase (20,000) and on four (20,001)
GRAPHS = [(1, 20000), (24, 20000), (24, 20001), (32, 20000), (32, 20001)]
#: (warps, list length) of the pairs graphs: lists on one phase and on two
PAIRS = [(256, 64), (256, 65)]


def lists_graph(ids: np.ndarray, length: int, name: str, seed: int = SEED):
    """The CSR of vertices ``ids`` with lists of ``length`` each: the source (the last
    id) and ``length - 1`` random leaves above every id."""
    rng = np.random.default_rng(seed)
    source = VERTICES - 1
    first_leaf = int(ids.max()) + 1
    src, dst = [ids], [np.full(len(ids), source)]
    for v in ids:
        src.append(np.full(length - 1, v))
        dst.append(rng.choice(np.arange(first_leaf, source), length - 1, replace=False))
    s, d = np.concatenate(src), np.concatenate(dst)
    csr = from_edges(s, d, VERTICES, weights=np.ones(len(s), dtype=np.uint32),
                     symmetrize=True, name=name).with_id_bytes(8)
    assert all(int(csr.offsets[v + 1] - csr.offsets[v]) == length for v in ids)
    return csr


def hub_graph(hubs: int, length: int, seed: int = SEED):
    """The CSR of ``hubs`` hubs with lists of ``length`` (the source among them)."""
    return lists_graph(np.arange(hubs), length, f"hubs{hubs}_{length}", seed)


def pairs_graph(warps: int, length: int, seed: int = SEED):
    """The CSR of ``warps`` warps' first two vertices with lists of ``length``."""
    w = np.arange(warps) * 32
    return lists_graph(np.sort(np.concatenate([w, w + 1])), length,
                       f"pairs{warps}_{length}", seed)


def main(out: str) -> None:
    graphs = ([(hub_graph(h, n), h, 1, n) for h, n in GRAPHS]
              + [(pairs_graph(w, n), 2, w, n) for w, n in PAIRS])
    for csr, lanes, warps, length in graphs:
        prefix = Path(out) / csr.name
        write_bel(csr, prefix)
        print(json.dumps({"graph": csr.name, "lanes": lanes, "warps": warps,
                          "length": length, "source": VERTICES - 1,
                          "edges": int(csr.num_edges)}))


if __name__ == "__main__":
    main(sys.argv[1])
