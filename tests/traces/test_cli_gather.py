"""``hostlink trace gen --kernel gather`` and ``hostlink predict`` on its folder."""
from __future__ import annotations

import json

from hostlink.model.cli.main import main
from hostlink.traces.graphs import generate, write_bel
from hostlink.traces.store import open_trace


def _run(capsys, *argv):
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def _gen(capsys, out, *extra):
    return _run(capsys, "trace", "gen", "--kernel", "gather", "--variant", "aligned",
                "--row-bytes", "480", "--rows", "3000", "--out", str(out), "--json", *extra)


def test_gather_trace_counts_what_its_requests_hold(tmp_path, capsys):
    rc, out, _ = _gen(capsys, tmp_path / "g", "--table-bytes", "64 MiB")
    assert rc == 0
    summary = json.loads(out)
    assert summary["table_B"] == (64 << 20) // 480 * 480 and summary["rows"] == 3000
    # the written trace, coalesced without caches, sends the requests the summary counts
    from hostlink.traces.coalescer import coalesce
    stream = coalesce(open_trace(tmp_path / "g"))
    assert summary["host_requested_B"] == 3000 * 480 == int(stream.host_reads().size_B.sum())
    assert summary["host_requests"] == len(stream.host_reads())


def test_predict_times_the_folder_as_its_gather(tmp_path, capsys):
    assert _gen(capsys, tmp_path / "g", "--table-rows", "100000")[0] == 0
    for mode in ("zerocopy", "cpu_gather", "uvm_warm"):
        rc, out, err = _run(capsys, "predict", "--system", "h200-pcie5", "--trace",
                            str(tmp_path / "g"), "--mode", mode, "--fidelity", "analytic",
                            "--json")
        assert rc == 0, err
        data = json.loads(out)
        assert data["mode"] == mode and data["useful_B"] == 3000 * 480
        assert data["extra"]["bound_class"]


def test_sampled_ids_read_their_graph(tmp_path, capsys):
    write_bel(generate("kron", 10, 8), tmp_path / "k10")
    rc, out, err = _gen(capsys, tmp_path / "s", "--ids", "sampled", "--graph",
                        str(tmp_path / "k10"), "--fanouts", "5,5", "--batch", "16")
    assert rc == 0, err
    assert json.loads(out)["table_B"] == 1024 * 480        # one row per vertex


def test_bad_gather_parameters_give_one_line(tmp_path, capsys):
    rc, _, err = _gen(capsys, tmp_path / "b", "--table-bytes", "1 GiB", "--lane-bytes", "16",
                      "--row-bytes", "1000")
    assert rc == 2 and err.strip().count("\n") == 0 and "lane_B" in err
    rc, _, err = _gen(capsys, tmp_path / "c", "--ids", "sampled")
    assert rc == 2 and "--graph" in err
    rc, _, err = _run(capsys, "trace", "gen", "--kernel", "bfs", "--variant", "naive",
                      "--out", str(tmp_path / "d"))
    assert rc == 2 and "needs --graph" in err
