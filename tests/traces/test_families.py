"""Graph families beyond kron and urand (hostlink.traces.graphs.families): rmat, dense
urand, grid and road as built graphs, the carried datasets, compressed files and
``hostlink graph gen`` per kind."""
from __future__ import annotations

import gzip
import hashlib
import lzma
import math
import re
from pathlib import Path

import numpy as np
import pytest

from hostlink.model.cli.main import main
from hostlink.traces.emulator.algorithms import bfs
from hostlink.traces.graphs import generate, read_bel, read_graph
from hostlink.traces.graphs.csr import GraphError
from hostlink.traces.graphs.datasets import DATA_DIR, DATASETS, read_dataset
from hostlink.traces.graphs.families import GraphParamError, build_graph, graph_params
from hostlink.traces.graphs.generators import _rng
from hostlink.traces.graphs.road import road


def _clean(csr) -> None:
    """Symmetric, no self-loops, no duplicates, sorted neighbour lists."""
    deg = np.diff(csr.offsets.astype(np.int64))
    src = np.repeat(np.arange(csr.num_vertices), deg)
    dst = csr.dst.astype(np.int64)
    assert not np.any(src == dst)
    key = src * csr.num_vertices + dst
    assert np.all(np.diff(key) > 0)        # sorted within rows, no repeats
    assert csr.is_symmetric()


def _levels(csr, source: int) -> tuple[int, int]:
    """(BFS levels, vertices reached) from ``source``."""
    run = bfs(csr, source)
    return len(run.active), int(np.count_nonzero(run.result != np.uint32(0xFFFFFFFF)))


# ------------------------------------------------------------------------ rmat
def test_rmat_is_kron_before_gaps_permutation():
    """kron = rmat relabelled by the permutation kron draws (SeedSequence spawn_key (1,)):
    one sampler, the permutation only differs."""
    r = generate("rmat", 10, 8, 11, weighted=False)
    k = generate("kron", 10, 8, 11, weighted=False)
    perm = _rng(11, 1).permutation(1 << 10)
    src = np.repeat(np.arange(r.num_vertices), np.diff(r.offsets.astype(np.int64)))
    mapped = set(zip(perm[src].tolist(), perm[r.dst.astype(np.int64)].tolist()))
    ksrc = np.repeat(np.arange(k.num_vertices), np.diff(k.offsets.astype(np.int64)))
    assert mapped == set(zip(ksrc.tolist(), k.dst.astype(np.int64).tolist()))
    _clean(r)


def test_rmat_hubs_sit_at_low_ids_and_krons_are_spread():
    """R-MAT's quadrants A and B (C and A) put a source (destination) bit at 0 with
    p = .76, so the lowest ids get the most edges: vertex 0 is the largest hub, and the
    lowest 1/16 of the ids (top 4 bits 0) draws .76**4 = 33% of the sampled ends (fewer
    once the hubs' duplicate edges go: above 25%, four times its share). kron's
    permutation spreads them: its lowest 1/16 holds about 1/16."""
    r = generate("rmat", 14, 16, weighted=False)
    k = generate("kron", 14, 16, weighted=False)
    rd, kd = r.degrees().astype(np.int64), k.degrees().astype(np.int64)
    assert int(np.argmax(rd)) == 0
    low = (1 << 14) // 16
    assert rd[:low].sum() / rd.sum() > 0.25
    assert abs(kd[:low].sum() / kd.sum() - 1 / 16) < 0.03
    # the same degree multiset: the graphs differ by the labels only
    assert np.array_equal(np.sort(rd), np.sort(kd))


def test_rmat_same_seed_same_graph():
    a = build_graph("rmat", scale=9, degree=4, seed=3)
    b = build_graph("rmat", scale=9, degree=4, seed=3)
    c = build_graph("rmat", scale=9, degree=4, seed=4)
    assert a.equals(b) and not a.equals(c)


# ---------------------------------------------------------------- dense urand
def test_urand_degree_128_has_the_balls_in_bins_average_degree():
    """M = N * 128 uniform pairs over P = N(N - 1) / 2 unordered pairs (plus M / N
    self-loops, dropped): E[distinct pairs] = P (1 - exp(-M' / P)) with M' the non-loop
    draws; the CSR holds each twice. At N = 4096 that is about 253 of the 256."""
    N, D = 1 << 12, 128
    g = build_graph("urand", scale=12, degree=D, weighted=False)
    M = N * D
    loops = M / N
    P = N * (N - 1) / 2
    expected = 2 * P * (1 - math.exp(-(M - loops) / P)) / N
    assert g.num_edges / N == pytest.approx(expected, rel=2e-3)
    assert g.degrees().min() > 0
    _clean(g)


# ------------------------------------------------------------------ grid, road
def test_grid_kind_local_ids_and_corner_depth():
    g = build_graph("grid", dims="40x25", ids="local", weighted=False)
    levels, reached = _levels(g, 0)
    assert levels == 40 + 25 - 1 and reached == 1000     # diameter W + H - 2, plus the source
    s = build_graph("grid", dims=[40, 25], weighted=False)
    assert np.array_equal(np.sort(s.degrees()), np.sort(g.degrees()))
    assert not s.equals(g)


@pytest.mark.parametrize("target", [2.5, 2.8])
def test_road_mean_degree_connected_and_deep(target):
    W, H = 200, 150
    g = road((W, H), mean_degree=target, shuffle=False)
    _clean(g)
    assert g.num_vertices == W * H
    # extra edges are Binomial(~W*H, p): sd of the mean degree ~ 0.005 here
    assert g.num_edges / g.num_vertices == pytest.approx(target, abs=0.03)
    assert g.degrees().min() >= 1 and g.degrees().max() <= 4
    # every edge joins lattice neighbours (locality ids x + W * y)
    src = np.repeat(np.arange(g.num_vertices), np.diff(g.offsets.astype(np.int64)))
    gap = np.abs(src - g.dst.astype(np.int64))
    assert set(np.unique(gap).tolist()) <= {1, W}
    assert not np.any((gap == 1) & (np.minimum(src, g.dst) % W == W - 1))
    run = bfs(g, 0)
    depth = run.result.astype(np.int64)
    assert np.all(depth < 0xFFFFFFFF)             # the spanning tree reaches every vertex
    # a subgraph of the lattice: no vertex nearer the corner than on the full grid, whose
    # mean distance from the corner is (W - 1) / 2 + (H - 1) / 2; the missing edges
    # force detours, so the mean is longer (measured: 9% at 2.5, 3.5% at 2.8)
    assert depth.max() >= W + H - 2
    assert depth.mean() > 1.02 * ((W - 1) / 2 + (H - 1) / 2)


def test_road_ids_and_seed():
    a = build_graph("road", dims="60x40", weighted=False)
    b = build_graph("road", dims="60x40", weighted=False)
    c = build_graph("road", dims="60x40", seed=5, weighted=False)
    loc = build_graph("road", dims="60x40", ids="local", weighted=False)
    assert a.equals(b) and not a.equals(c)
    assert a.num_edges == loc.num_edges          # the same graph relabelled
    assert np.array_equal(np.sort(a.degrees()), np.sort(loc.degrees()))
    w = build_graph("road", dims="60x40", weighted=True)
    assert w.weights is not None and 1 <= int(w.weights.min()) and int(w.weights.max()) <= 255


@pytest.mark.parametrize("kind,params,key", [
    ("road", {"dims": "30x30", "mean_degree": 3.9}, "mean_degree"),
    ("road", {"dims": "3x3x3"}, "dims"),
    ("grid", {"dims": "7by7"}, "dims"),
    ("grid", {"dims": "7x7", "ids": "near"}, "ids"),
    ("dataset", {"name": "nope"}, "name"),
    ("rmat", {}, "scale"),
    ("ring", {}, "kind"),
])
def test_bad_family_parameters_name_their_key(kind, params, key):
    with pytest.raises(GraphParamError) as err:
        graph_params(kind, **params)
    assert err.value.key == key


# -------------------------------------------------------------------- datasets
def _readme_rows() -> dict[str, dict]:
    rows = {}
    for line in (DATA_DIR / "README.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 7 and re.fullmatch(r"[0-9a-f]{64}", cells[-1].strip("`")):
            rows[cells[0].strip("`")] = {
                "family": cells[1], "vertices": int(cells[2].replace(",", "")),
                "edges": int(cells[3].replace(",", "")), "sha256": cells[-1].strip("`")}
    return rows


def test_carried_datasets_match_their_readme():
    rows = _readme_rows()
    assert set(rows) == set(DATASETS)
    total = 0
    for name, ds in DATASETS.items():
        path = DATA_DIR / ds.file
        total += path.stat().st_size
        assert hashlib.sha256(path.read_bytes()).hexdigest() == rows[name]["sha256"]
        g = read_dataset(name)
        assert (g.num_vertices, g.num_edges) == (rows[name]["vertices"], rows[name]["edges"])
        assert (ds.vertices, ds.edges, ds.family) == (g.num_vertices, g.num_edges,
                                                      rows[name]["family"])
        assert not g.directed
        _clean(g)
    assert total < 12 * 2**20


def test_compressed_files_read_as_the_plain_file(tmp_path):
    text = "# edges\n0 1\n1 2\n2 0\n3 1\n"
    (tmp_path / "g.txt").write_text(text)
    with lzma.open(tmp_path / "g.txt.xz", "wt") as f:
        f.write(text)
    with gzip.open(tmp_path / "g.txt.gz", "wt") as f:
        f.write(text)
    plain = read_graph(tmp_path / "g.txt")
    for name in ("g.txt.xz", "g.txt.gz"):
        got = read_graph(tmp_path / name)
        assert got.equals(plain) and got.name == "g"
    with lzma.open(tmp_path / "bad.mtx.xz", "wt") as f:
        f.write("%%MatrixMarket matrix coordinate pattern general\n3 3 1\n1 x\n")
    with pytest.raises(GraphError) as err:
        read_graph(tmp_path / "bad.mtx.xz")
    assert str(tmp_path / "bad.mtx.xz") in str(err.value)
    (tmp_path / "junk.el.xz").write_bytes(b"not xz at all")
    with pytest.raises(GraphError, match="junk.el.xz: cannot decompress"):
        read_graph(tmp_path / "junk.el.xz")


# ------------------------------------------------------------------ graph gen
def test_graph_gen_offers_every_family():
    from hostlink.traces import cli_gen
    from hostlink.traces.graphs import families
    assert cli_gen.GRAPH_KINDS == families.KINDS


@pytest.mark.parametrize("args,vertices", [
    (["rmat", "--scale", "8", "--degree", "4"], 256),
    (["urand", "--scale", "7", "--degree", "128"], 128),
    (["grid", "--dims", "12x9", "--ids", "local"], 108),
    (["road", "--dims", "30x20", "--mean-degree", "2.6"], 600),
    (["dataset", "--name", "web-edu"], DATASETS["web-edu"].vertices),
])
def test_graph_gen_each_kind(tmp_path, capsys, args, vertices):
    assert main(["graph", "gen", *args, "--out", str(tmp_path / "g"), "--json"]) == 0
    g = read_bel(tmp_path / "g", id_bytes=8)
    assert g.num_vertices == vertices and g.is_symmetric() and g.weights is not None
    kind = args[0]
    params = {"rmat": {"scale": 8, "degree": 4}, "urand": {"scale": 7, "degree": 128},
              "grid": {"dims": "12x9", "ids": "local"},
              "road": {"dims": "30x20", "mean_degree": 2.6},
              "dataset": {"name": "web-edu"}}[kind]
    want = build_graph(kind, weighted=True, **params)
    assert np.array_equal(g.offsets, want.offsets) and np.array_equal(g.dst, want.dst)


@pytest.mark.parametrize("args,message", [
    (["road", "--dims", "30x30", "--mean-degree", "3.95"], "--mean-degree: road mean_degree"),
    (["dataset"], "--name is required"),
    (["road"], "--dims WxH is required"),
])
def test_graph_gen_bad_arguments_one_line_exit_2(tmp_path, capsys, args, message):
    assert main(["graph", "gen", *args, "--out", str(tmp_path / "g")]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1 and "Traceback" not in err
