"""Manifest graph kinds beyond kron and urand: rmat, dense urand, grid, road and dataset
are parsed, checked with errors naming the key, and built by the runner's command."""
from __future__ import annotations

import subprocess
import textwrap
from pathlib import Path

import numpy as np
import pytest

from hostlink.model.errors import ConfigError
from hostlink.traces.graphs.families import build_graph
from hostlink.traces.graphs.readers import read_bel
from hostlink.validation import runner
from hostlink.validation.cli import main as validate_main
from hostlink.validation.manifest import load_manifest

GRAPHS = """
[experiment]
name = "families"

[graphs.rmat9]
kind = "rmat"
scale = 9
degree = 4

[graphs.dense]
kind = "urand"
scale = 7
degree = 128

[graphs.grid]
kind = "grid"
dims = [20, 10]
ids = "local"

[graphs.grid3]
kind = "grid"
dims = "6x5x4"

[graphs.road]
kind = "road"
dims = "30x20"
mean_degree = 2.6
seed = 5

[graphs.web]
kind = "dataset"
name = "web-edu"

[[traversal]]
kernels = ["bfs"]
graphs = ["rmat9", "dense", "grid", "grid3", "road", "web"]
variants = ["merged"]
memory_modes = ["zerocopy"]
"""

WANT = {
    "rmat9": ("rmat", {"seed": 27491095, "scale": 9, "degree": 4}),
    "dense": ("urand", {"seed": 27491095, "scale": 7, "degree": 128}),
    "grid": ("grid", {"seed": 27491095, "dims": "20x10", "ids": "local"}),
    "grid3": ("grid", {"seed": 27491095, "dims": "6x5x4", "ids": "shuffled"}),
    "road": ("road", {"seed": 5, "dims": "30x20", "ids": "shuffled", "mean_degree": 2.6}),
    "web": ("dataset", {"seed": 27491095, "name": "web-edu"}),
}


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "m.toml"
    path.write_text(textwrap.dedent(text))
    return path


def test_each_kind_parses_to_its_build_parameters(tmp_path):
    m = load_manifest(write(tmp_path, GRAPHS))
    assert {n: (g.kind, g.params()) for n, g in m.graphs.items()} == WANT
    assert m.graphs_used() == list(WANT)
    assert len(m.traversal_cases()) == len(WANT)


def test_runner_command_builds_each_kind(tmp_path):
    m = load_manifest(write(tmp_path, GRAPHS))
    for name, spec in m.graphs.items():
        prefix = spec.prefix(tmp_path / "graphs")
        prefix.parent.mkdir(exist_ok=True)
        cmd = runner.graph_gen_command(spec.kind, spec.scale, spec.degree, spec.seed, prefix,
                                       spec.params())
        done = subprocess.run(cmd, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        assert all(p.exists() for p in runner.graph_files(prefix))
        got = read_bel(prefix, id_bytes=4)
        kind, params = WANT[name]
        want = build_graph(kind, weighted=True, **params)
        assert np.array_equal(got.offsets, want.offsets) and np.array_equal(got.dst, want.dst)
        assert np.array_equal(got.weights, want.weights)


@pytest.mark.parametrize("table,key", [
    ('kind = "grid"\ndims = "20x10"\nshape = "x"\n', "graphs.g.shape"),
    ('kind = "grid"\ndims = "20by10"\n', "graphs.g.dims"),
    ('kind = "grid"\ndims = "20x10"\nids = "nearby"\n', "graphs.g.ids"),
    ('kind = "road"\ndims = "30x20"\nmean_degree = 3.95\n', "graphs.g.mean_degree"),
    ('kind = "road"\ndims = [3, 3, 3]\n', "graphs.g.dims"),
    ('kind = "dataset"\nname = "nope"\n', "graphs.g.name"),
    ('kind = "rmat"\ndegree = 4\n', "graphs.g.scale"),
    ('kind = "ring"\n', "graphs.g.kind"),
])
def test_bad_graph_keys_name_the_file_and_key(tmp_path, table, key):
    text = ('[experiment]\nname = "bad"\n[graphs.g]\n' + table +
            '[[traversal]]\nkernels = ["bfs"]\ngraphs = ["g"]\n')
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as err:
        load_manifest(path)
    assert str(path) in str(err.value) and f"'{key}" in str(err.value)


def test_bad_graph_key_is_one_line_and_exit_2(tmp_path, capsys):
    path = write(tmp_path, '[experiment]\nname = "bad"\n[graphs.g]\nkind = "road"\n'
                           'dims = "30x20"\nmean_degree = 3.95\n'
                           '[[traversal]]\nkernels = ["bfs"]\ngraphs = ["g"]\n')
    rc = validate_main(["run", str(path), "--out", str(tmp_path / "o"), "--no-build",
                        "--dry-run", "--quiet"])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1 and "Traceback" not in err
    assert "'graphs.g.mean_degree'" in err and str(path) in err


@pytest.mark.parametrize("name", ["grid", "road", "web", "rmat9"])
def test_twins_build_a_graph_the_run_did_not_keep(tmp_path, monkeypatch, name):
    """A run without the graph's .bel files: the twins build it from the manifest."""
    from types import SimpleNamespace

    from hostlink.validation.twin_traversal import GraphSource
    monkeypatch.setenv("HOSTLINK_GRAPH_CACHE", str(tmp_path / "cache"))
    (tmp_path / "manifest.toml").write_text(GRAPHS)
    run = SimpleNamespace(path=tmp_path, metadata={}, cases={})
    got = GraphSource(run).get(name)
    kind, params = WANT[name]
    want = build_graph(kind, weighted=False, **params)
    assert got.weights is None
    assert np.array_equal(got.offsets, want.offsets) and np.array_equal(got.dst, want.dst)
