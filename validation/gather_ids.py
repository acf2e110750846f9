"""The sampled row ids of a manifest's gather groups: one file per group, shared by
the CUDA program and its twin.

A ``[[micro]]`` group of ``benchmark = "gather"`` with ``ids = "sampled"`` gathers the
vertices that neighbour sampling (:func:`hostlink.traces.gather.sampled_vertices`)
draws on a kron graph of ``graph_scale`` (degree 16, GAP's seed: the generator of
:mod:`hostlink.traces.graphs`), with the group's ``fanouts``, ``batch``, ``seed`` and
``rows``. The runner writes them to ``OUT/ids/gather_<group>.u64`` (u64 vertex count,
u64 id count, then the ids; gpu_kernels/micro/gather.cu reads it); the twin draws the
same ids from :func:`graph_of` (:func:`hostlink.traces.gather.gather_workload`).
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import numpy as np

#: edges sampled per vertex of the kron graph (GAP's default degree)
GRAPH_DEGREE = 16


def gather_ids_path(out_dir: Path, group: int) -> Path:
    return Path(out_dir) / "ids" / f"gather_{group}.u64"


@lru_cache(maxsize=2)
def graph_of(scale: int):
    """The kron graph of ``scale`` the sampled ids are drawn on."""
    from hostlink.traces.graphs import DEFAULT_SEED, generate
    return generate("kron", scale, GRAPH_DEGREE, DEFAULT_SEED, weighted=False,
                    name=f"kron{scale}")


@lru_cache(maxsize=8)
def sampled_ids(scale: int, fanouts: str, batch: int, seed: int, rows: int) -> np.ndarray:
    """The vertex ids a group gathers (read-only)."""
    from hostlink.traces.gather import sampled_vertices
    ids = sampled_vertices(graph_of(scale), rows, tuple(int(f) for f in fanouts.split(",")),
                           batch, seed)
    ids.flags.writeable = False
    return ids


def group_ids(settings: dict) -> np.ndarray:
    return sampled_ids(int(settings["graph_scale"]), str(settings["fanouts"]),
                       int(settings["batch"]), int(settings["seed"]), int(settings["rows"]))


def write_gather_ids(m, out_dir: Path) -> list[Path]:
    """Write the ids file of every gather group with sampled ids (unless it exists)."""
    written = []
    for i, g in enumerate(m.micro):
        if g.benchmark != "gather" or "sampled" not in g.lists.get("ids", ()):
            continue
        path = gather_ids_path(out_dir, i)
        if path.exists():
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        ids = group_ids(g.settings)
        head = np.array([1 << int(g.settings["graph_scale"]), len(ids)], dtype=np.uint64)
        tmp = path.with_suffix(".tmp")
        with open(tmp, "wb") as f:
            f.write(head.tobytes())
            f.write(ids.astype(np.uint64).tobytes())
        tmp.replace(path)
        written.append(path)
    return written
