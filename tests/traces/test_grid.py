"""Grid graphs (hostlink.traces.graphs.grid) and ``hostlink graph gen grid``."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from hostlink.traces.emulator.algorithms import bfs
from hostlink.traces.graphs.csr import GraphError
from hostlink.traces.graphs.grid import grid, parse_dims
from hostlink.traces.graphs.readers import read_bel


def _edges(csr) -> set[tuple[int, int]]:
    src = np.repeat(np.arange(csr.num_vertices), np.diff(csr.offsets).astype(np.int64))
    return set(zip(src.tolist(), csr.dst.astype(np.int64).tolist()))


@pytest.mark.parametrize("dims", [(5, 3), (4, 3, 2)])
def test_locality_order_joins_each_vertex_to_its_lattice_neighbours(dims):
    csr = grid(dims, shuffle=False)
    V = int(np.prod(dims))
    expected = set()
    coords = np.array(np.unravel_index(np.arange(V), dims[::-1])).T[:, ::-1]   # (x, y[, z])
    for v, c in enumerate(coords):
        for axis in range(len(dims)):
            for step in (-1, 1):
                n = c.copy()
                n[axis] += step
                if 0 <= n[axis] < dims[axis]:
                    expected.add((v, int(np.ravel_multi_index(n[::-1], dims[::-1]))))
    assert csr.num_vertices == V
    assert _edges(csr) == expected
    # edges of a lattice: each axis has (d - 1) x (the other sizes) pairs, both ways
    pairs = sum((d - 1) * V // d for d in dims)
    assert csr.num_edges == 2 * pairs


def test_shuffled_ids_relabel_the_same_graph_and_keep_lists_sorted():
    local, shuffled = grid((30, 20), shuffle=False), grid((30, 20), seed=7)
    assert shuffled.num_edges == local.num_edges
    assert sorted(np.diff(shuffled.offsets).tolist()) == sorted(np.diff(local.offsets).tolist())
    assert _edges(shuffled) == {(b, a) for a, b in _edges(shuffled)}          # symmetric
    for v in range(shuffled.num_vertices):
        lst = shuffled.dst[int(shuffled.offsets[v]):int(shuffled.offsets[v + 1])]
        assert np.all(np.diff(lst.astype(np.int64)) > 0)
    assert not np.array_equal(shuffled.dst, local.dst)
    assert np.array_equal(grid((30, 20), seed=7).dst, shuffled.dst)            # seeded
    assert not np.array_equal(grid((30, 20), seed=8).dst, shuffled.dst)


def test_bfs_from_a_corner_runs_one_level_per_step_of_the_diameter():
    csr = grid((40, 25), seed=3)
    corner = int(np.flatnonzero(np.diff(csr.offsets) == 2)[0])
    assert len(bfs(csr, corner).active) == 40 + 25 - 1


def test_weights_are_symmetric_and_in_range():
    csr = grid((6, 6), weighted=True)
    w = {}
    src = np.repeat(np.arange(csr.num_vertices), np.diff(csr.offsets).astype(np.int64))
    for a, b, x in zip(src.tolist(), csr.dst.tolist(), csr.weights.tolist()):
        w[(a, b)] = x
    assert all(w[(a, b)] == w[(b, a)] for a, b in w)
    assert 1 <= min(w.values()) and max(w.values()) <= 255


@pytest.mark.parametrize("text", ["10", "3x0", "axb", "1x2x3x4"])
def test_bad_dimensions_are_refused(text):
    with pytest.raises(GraphError, match="grid dimensions"):
        parse_dims(text)


def test_cli_writes_a_grid_and_refuses_missing_dims(tmp_path):
    prefix = tmp_path / "g"
    cmd = [sys.executable, "-m", "hostlink.model.cli.main", "graph", "gen", "grid"]
    done = subprocess.run([*cmd, "--dims", "8x4", "--out", str(prefix)], capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr
    csr = read_bel(prefix, id_bytes=4)
    assert np.array_equal(csr.dst, grid((8, 4), weighted=True).dst)
    bad = subprocess.run([*cmd, "--out", str(prefix)], capture_output=True, text=True)
    assert bad.returncode == 2
    assert bad.stderr.strip().count("\n") == 0 and "--dims" in bad.stderr
