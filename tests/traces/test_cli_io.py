"""``hostlink trace stats`` and ``hostlink trace convert`` through the CLI entry point."""
from __future__ import annotations

import json

import pytest

from hostlink.model.cli.main import main

from test_accelsim import DATA


def test_stats_json(accelsim_data, capsys):
    assert main(["trace", "stats", str(accelsim_data / "vectoradd"), "--json",
                 "--memcpy-location", "host"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["format"] == "accelsim"
    assert s["requests_by_size_B"] == {"32": 2, "128": 6}
    assert s["warp_insts_by_op_space"]["load"]["global"] == 8
    assert s["useful_B"] == 800 and s["requested_B"] == 832 and s["sectors"]["total"] == 39


def test_stats_table_and_regions(tmp_path, capsys):
    regions = tmp_path / "r.toml"
    regions.write_text('[[region]]\nname = "a"\nstart = 0x10000000\nsize_B = "4 KiB"\n'
                       'location = "host"\n')
    assert main(["trace", "stats", str(DATA / "edge_v4"), "--regions", str(regions)]) == 0
    out = capsys.readouterr().out
    assert "edge_v4 (accelsim, 2 launches)" in out
    assert "Host-memory read requests" in out and "Warp instructions" in out
    # region a covers memcpy0 only: launch 1's LDG.E.128 stays in device memory
    assert main(["trace", "stats", str(DATA / "edge_v4"), "--regions", str(regions),
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["requests_by_size_B"] == {"32": 6, "128": 1}


def test_stats_with_cache_options(capsys):
    assert main(["trace", "stats", str(DATA / "edge_v4"), "--memcpy-location", "host",
                 "--l1-size", "32 KiB", "--sm-count", "2", "--cache-host", "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["cache"]["l1_size_B"] == 32768 and s["requests_by_size_B"] == {"32": 5, "128": 3}


def test_convert_both_ways(accelsim_data, tmp_path, capsys):
    src = accelsim_data / "lud"
    assert main(["trace", "convert", str(src), str(tmp_path / "store")]) == 0
    assert main(["trace", "stats", str(tmp_path / "store"), "--json"]) == 0
    assert '"format": "store"' in capsys.readouterr().out
    assert main(["trace", "convert", str(tmp_path / "store"), str(tmp_path / "back")]) == 0
    for name in ("kernelslist.g", "kernel-8.traceg"):
        assert (tmp_path / "back" / name).read_bytes() == (src / name).read_bytes()
    # a second conversion onto the same outputs needs --overwrite
    assert main(["trace", "convert", str(src), str(tmp_path / "store")]) == 2
    assert main(["trace", "convert", str(tmp_path / "store"), str(tmp_path / "back")]) == 2
    assert main(["trace", "convert", str(src), str(tmp_path / "store"), "--overwrite"]) == 0


@pytest.mark.parametrize("argv,what", [
    (["trace", "stats", "/nonexistent/trace"], "no such file or folder"),
    (["trace", "stats", str(DATA / "edge_v4"), "--regions", "/nonexistent.toml"],
     "no such regions file"),
    (["trace", "stats", str(DATA / "edge_v4"), "--cache-host"], "--cache-host needs a cache"),
    (["trace", "stats", str(DATA / "edge_v4"), "--l1-size", "3 GB/s"], "size '3 GB/s'"),
    (["trace", "stats", str(DATA / "edge_v4"), "--l1-size", "100 B"], "l1_size_B = 100"),
])
def test_errors_are_one_line(argv, what, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert what in err and err.count("\n") == 1 and "Traceback" not in err


def test_malformed_trace_through_cli(tmp_path, capsys):
    import shutil
    shutil.copytree(DATA / "edge_v4", tmp_path / "t")
    p = tmp_path / "t" / "kernel-2.traceg"
    p.write_text(p.read_text().replace("insts = 2", "insts = 3"))
    assert main(["trace", "stats", str(tmp_path / "t")]) == 2
    err = capsys.readouterr().err
    assert "kernel-2.traceg:24:" in err and err.count("\n") == 1
