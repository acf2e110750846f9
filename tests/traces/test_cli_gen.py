"""``hostlink graph gen|info|convert`` and ``hostlink trace gen``, run through the CLI entry point.

File sizes follow the EMOGI binary CSR layout (16 B header + u64 offsets,
u64 ids, u32 weights; illinois-impact/EMOGI bfs.cu); the request counts a
written trace gives back are those the emulator's fast path computes on the
same run, so the written file is checked against an independent reading.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

from hostlink.model.cli.main import main
from hostlink.traces.emulator import emulate
from hostlink.traces.graphs import generate, read_bel


def _run(capsys, *argv):
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def test_graph_gen_writes_binary_csr(tmp_path, capsys):
    prefix = tmp_path / "g" / "k9"
    rc, out, _ = _run(capsys, "graph", "gen", "kron", "--scale", "9", "--degree", "8",
                      "--seed", "7", "--out", str(prefix), "--json")
    assert rc == 0
    info = json.loads(out)
    g = generate("kron", 9, 8, 7)
    assert info["vertices"] == 512 and info["edges"] == g.num_edges and info["seed"] == 7
    V, E = g.num_vertices, g.num_edges
    assert (tmp_path / "g" / "k9.bel.col").stat().st_size == 16 + 8 * (V + 1)
    assert (tmp_path / "g" / "k9.bel.dst").stat().st_size == 16 + 8 * E
    assert (tmp_path / "g" / "k9.bel.val").stat().st_size == 16 + 4 * E
    assert read_bel(prefix).equals(g)


def test_graph_gen_default_seed_and_no_weights(tmp_path, capsys):
    rc, out, _ = _run(capsys, "graph", "gen", "urand", "--scale", "7", "--degree", "4",
                      "--no-weights", "--out", str(tmp_path / "u7"), "--json")
    assert rc == 0 and json.loads(out)["seed"] == 27491095
    assert not (tmp_path / "u7.bel.val").exists()
    assert read_bel(tmp_path / "u7").equals(generate("urand", 7, 4, weighted=False))


def test_graph_info_and_convert(tmp_path, capsys):
    el = tmp_path / "g.el"
    el.write_text("0 1\n1 2\n2 0\n")
    rc, out, _ = _run(capsys, "graph", "convert", str(el), "--out", str(tmp_path / "c"),
                      "--symmetrize", "--json")
    assert rc == 0 and json.loads(out)["edges"] == 6
    rc, out, _ = _run(capsys, "graph", "info", str(tmp_path / "c"), "--symmetric", "--json")
    info = json.loads(out)
    assert rc == 0 and info["vertices"] == 3 and info["edges"] == 6 and info["symmetric"]
    assert info["degree_max"] == 2 and info["zero_degree_vertices"] == 0
    rc, out, _ = _run(capsys, "graph", "info", str(el))
    assert rc == 0 and "vertices" in out


def test_graph_errors_are_one_line(tmp_path, capsys):
    rc, out, err = _run(capsys, "graph", "gen", "kron", "--scale", "0", "--out", str(tmp_path / "x"))
    assert rc == 2 and err.count("\n") == 1 and "scale" in err and "Traceback" not in err
    rc, _, err = _run(capsys, "graph", "info", str(tmp_path / "missing"))
    assert rc == 2 and "no such graph" in err and err.count("\n") == 1
    bad = tmp_path / "b.el"
    bad.write_text("0 1\n1 q\n")
    rc, _, err = _run(capsys, "graph", "info", str(bad))
    assert rc == 2 and f"{bad}:2:" in err


@pytest.fixture(scope="module")
def graph_prefix(tmp_path_factory):
    from hostlink.traces.graphs import write_bel
    d = tmp_path_factory.mktemp("g")
    write_bel(generate("kron", 9, 8, 3), d / "k9")
    return d / "k9"


@pytest.mark.parametrize("fmt", ["store", "accelsim"])
def test_trace_gen_written_trace_reads_back(tmp_path, capsys, graph_prefix, fmt):
    from hostlink.traces.coalescer import coalesce
    from hostlink.traces.store import load_regions, open_trace
    out = tmp_path / "t"
    rc, text, _ = _run(capsys, "trace", "gen", "--kernel", "sssp", "--variant", "merged_aligned",
                       "--graph", str(graph_prefix), "--source", "5", "--id-bytes", "8",
                       "--format", fmt, "--out", str(out), "--json")
    assert rc == 0
    summary = json.loads(text)
    emu = emulate(read_bel(graph_prefix), "sssp", "merged_aligned", source=5, id_bytes=8)
    want = emu.request_histogram()
    assert summary["requests_by_size_B"] == {str(k): v for k, v in want.items()}
    assert summary["launches"] == len(emu.launches)
    regions = load_regions(out / "regions.toml") if fmt == "accelsim" else None
    trace = open_trace(out, regions=regions)
    assert [r.name for r in trace.regions if r.location == "host"] == ["edges", "weights"]
    assert coalesce(trace).host_reads().size_histogram() == want


def test_trace_gen_default_source_and_errors(tmp_path, capsys, graph_prefix):
    rc, text, _ = _run(capsys, "trace", "gen", "--kernel", "bfs", "--variant", "naive",
                       "--graph", str(graph_prefix), "--out", str(tmp_path / "t"), "--json")
    deg = read_bel(graph_prefix).degrees()
    assert rc == 0 and json.loads(text)["source"] == int(np.flatnonzero(deg > 0)[0])
    # a second run into the same store needs --overwrite
    rc, _, err = _run(capsys, "trace", "gen", "--kernel", "bfs", "--variant", "naive",
                      "--graph", str(graph_prefix), "--out", str(tmp_path / "t"))
    assert rc == 2 and err.count("\n") == 1
    rc, _, _ = _run(capsys, "trace", "gen", "--kernel", "bfs", "--variant", "naive", "--overwrite",
                    "--graph", str(graph_prefix), "--out", str(tmp_path / "t"))
    assert rc == 0
    rc, _, err = _run(capsys, "trace", "gen", "--kernel", "bfs", "--variant", "naive",
                      "--graph", str(graph_prefix), "--source", "100000", "--out", str(tmp_path / "u"))
    assert rc == 2 and "source vertex 100000" in err
    rc, _, err = _run(capsys, "trace", "gen", "--kernel", "bfs", "--variant", "naive",
                      "--graph", str(graph_prefix), "--memory", "nvme", "--out", str(tmp_path / "v"))
    assert rc == 2 and "memory mode" in err
    with pytest.raises(SystemExit):
        main(["trace", "gen", "--kernel", "bfs", "--variant", "warp_centric", "--graph", "x",
              "--out", "y"])
