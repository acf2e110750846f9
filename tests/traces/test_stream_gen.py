"""The out-of-core generator (hostlink.traces.graphs.stream_gen) against the in-memory builder.

The reference is :func:`hostlink.traces.graphs.from_edges` of the same sampled
edge list with ``symmetrize=True`` and :func:`edge_weights` of its CSR: the
generator must give exactly that graph whatever its block and bucket sizes.
The quadrant table's shares are the thresholds round(65536 * (A, A + B,
A + B + C)) of GAP's R-MAT probabilities (A = .57, B = C = .19).
"""
from __future__ import annotations

import json
import os
from collections import namedtuple

import numpy as np
import pytest

from hostlink.model.cli.main import main
from hostlink.traces.graphs import edge_weights, from_edges, read_bel, read_graph
from hostlink.traces.graphs import stream_gen as sg
from hostlink.traces.graphs.csr import GraphError


@pytest.fixture
def small_pieces(monkeypatch):
    """Many blocks and buckets at a small scale, so the spills and the reverse rows run."""
    monkeypatch.setattr(sg, "SAMPLE_BLOCK", 1 << 11)
    monkeypatch.setattr(sg, "BUCKET_KEYS", 1 << 10)


@pytest.mark.parametrize("kind", ["kron", "rmat", "urand"])
def test_stream_graph_is_the_sampled_edge_list_symmetrised(tmp_path, small_pieces, kind):
    info = sg.stream_generate(kind, 11, 8, 5, prefix=tmp_path / kind)
    assert info["buckets"] == 16
    lo, hi = sg.sample_edges(kind, 11, 8, 5)
    assert len(lo) == (1 << 11) * 8
    ref = from_edges(lo, hi, 1 << 11, symmetrize=True)
    got = read_bel(tmp_path / kind, id_bytes=8)
    assert got.num_edges == ref.num_edges == info["edges"]
    assert np.array_equal(got.offsets, ref.offsets)
    assert np.array_equal(got.dst, ref.dst.astype(np.uint64))
    assert np.array_equal(got.weights, edge_weights(ref.offsets, ref.dst, 5))
    assert info["degree_max"] == int(np.diff(ref.offsets).max())


def test_stream_graph_does_not_depend_on_block_and_bucket_sizes(tmp_path, monkeypatch):
    sg.stream_generate("kron", 10, 4, 3, prefix=tmp_path / "a", weighted=False)
    monkeypatch.setattr(sg, "SAMPLE_BLOCK", 1000)
    monkeypatch.setattr(sg, "BUCKET_KEYS", 300)
    sg.stream_generate("kron", 10, 4, 3, prefix=tmp_path / "b", weighted=False)
    assert read_bel(tmp_path / "a").equals(read_bel(tmp_path / "b"))
    assert not (tmp_path / "a.bel.val").exists()


def test_quadrant_table_shares_are_gaps_rmat_thresholds():
    shares = np.bincount(sg.quadrant_table(1), minlength=4)
    cuts = [0, round(.57 * 65536), round(.76 * 65536), round(.95 * 65536), 65536]
    assert shares.tolist() == np.diff(cuts).tolist()
    # three levels: the source bit of level 0 is set with probability C + D = .24
    t3 = sg.quadrant_table(3)
    assert abs(np.mean((t3 >> 3) & 1) - .24) < 1e-3
    assert abs(np.mean((t3 >> 5) & 1) - .24) < 1e-3


def test_kron_is_skewed_and_urand_is_not(tmp_path):
    k = sg.stream_generate("kron", 12, 16, 1, prefix=tmp_path / "k", weighted=False)
    u = sg.stream_generate("urand", 12, 16, 1, prefix=tmp_path / "u", weighted=False)
    # urand degrees are about Poisson(32): no vertex beyond 100; kron's hubs are far above
    assert u["degree_max"] < 100 < k["degree_max"]
    assert k["zero_degree_vertices"] > 100 > u["zero_degree_vertices"]


def test_failed_build_leaves_no_complete_looking_file(tmp_path, small_pieces, monkeypatch):
    sg.stream_generate("urand", 10, 4, 1, prefix=tmp_path / "g")
    before = read_bel(tmp_path / "g")

    def broken(*args):
        raise OSError(28, "No space left on device", "spill")
    monkeypatch.setattr(sg, "_emit", broken)
    with pytest.raises(GraphError, match="No space left"):
        sg.stream_generate("kron", 10, 4, 2, prefix=tmp_path / "g")
    assert sorted(os.listdir(tmp_path)) == ["g.bel.col", "g.bel.dst", "g.bel.val"]
    assert read_bel(tmp_path / "g").equals(before)          # the old graph is untouched


def test_too_little_disk_is_one_clear_line(tmp_path, monkeypatch, capsys):
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(sg.shutil, "disk_usage", lambda p: usage(10**9, 0, 10**6))
    rc = main(["graph", "gen", "kron", "--scale", "12", "--stream", "--out",
               str(tmp_path / "k")])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1
    assert str(tmp_path) in err and "GB free" in err
    assert os.listdir(tmp_path) == []


def test_cli_stream_gen_writes_what_the_readers_read(tmp_path, capsys):
    rc = main(["graph", "gen", "urand", "--scale", "10", "--degree", "4", "--seed", "9",
               "--stream", "--out", str(tmp_path / "u"), "--json"])
    info = json.loads(capsys.readouterr().out)
    assert rc == 0 and info["seed"] == 9
    g = read_graph(str(tmp_path / "u"))
    assert g.num_edges == info["edges"] and g.is_symmetric()
    lo, hi = sg.sample_edges("urand", 10, 4, 9)
    ref = from_edges(lo, hi, 1 << 10, symmetrize=True)
    assert np.array_equal(g.offsets, ref.offsets) and np.array_equal(g.dst, ref.dst)
    assert np.array_equal(g.weights, edge_weights(ref.offsets, ref.dst, 9))
