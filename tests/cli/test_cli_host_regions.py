"""A trace folder's regions.toml is used; a trace that reads nothing from the host says so."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from hostlink.model.cli.main import main

# the shared Accel-Sim sample traces (tests/conftest.py's ACCELSIM_DATA)
ACCELSIM_DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "accelsim"

LUD = ACCELSIM_DATA / "lud"          # one lud_perimeter launch; its kernelslist copies nothing in
needs_lud = pytest.mark.skipif(not LUD.is_dir(), reason=f"shared trace {LUD} not found")
SWEEP = """[sweep]
name = "t"
system = "h100-pcie5"
fidelity = "analytic"
[workload]
kind = "trace"
path = "{path}"
[[axis]]
key = "link.gen"
values = [4, 5]
"""


@pytest.fixture(scope="module")
def gen_folder(tmp_path_factory):
    """BFS on a scale-5 kron graph as an Accel-Sim folder with its regions.toml."""
    tmp = tmp_path_factory.mktemp("gen")
    assert main(["graph", "gen", "kron", "--scale", "5", "--out", str(tmp / "k")]) == 0
    assert main(["trace", "gen", "--kernel", "bfs", "--variant", "naive", "--graph",
                 str(tmp / "k"), "--out", str(tmp / "t"), "--format", "accelsim", "--json"]) == 0
    assert (tmp / "t" / "regions.toml").is_file()
    return tmp / "t"


def _predict(capsys, argv):
    assert main(["predict", "--system", "h100-pcie5", "--json", *argv]) == 0
    captured = capsys.readouterr()
    return json.loads(captured.out), captured.err


def test_predict_takes_the_folders_regions(gen_folder, capsys):
    capsys.readouterr()
    found, err = _predict(capsys, ["--trace", str(gen_folder)])
    given, _ = _predict(capsys, ["--trace", str(gen_folder),
                                 "--regions", str(gen_folder / "regions.toml")])
    assert found["requests"] > 0 and found["bw_GBps"] > 0
    assert found["requests"] == given["requests"] and found["time_s"] == given["time_s"]
    assert err == ""


def test_stats_and_sweep_take_the_folders_regions(gen_folder, tmp_path, capsys):
    capsys.readouterr()
    assert main(["trace", "stats", str(gen_folder), "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["host_read_requests"] > 0
    sweep = tmp_path / "s.toml"
    sweep.write_text(SWEEP.format(path=gen_folder), encoding="utf-8")
    assert main(["sweep", str(sweep), "--out", str(tmp_path / "r"), "--jobs", "1", "--quiet",
                 "--csv", str(tmp_path / "r.csv")]) == 0
    assert "warning" not in capsys.readouterr().err
    assert (pd.read_csv(tmp_path / "r.csv")["bw_GBps"] > 0).all()


@needs_lud
def test_a_trace_without_host_memory_warns(capsys):
    pred, err = _predict(capsys, ["--trace", str(LUD), "--memcpy-location", "host"])
    assert pred["requests"] == 0
    assert err.count("\n") == 1 and err.startswith("hostlink: warning: ")
    assert "copies nothing in with MemcpyHtoD" in err and "nothing is read from the host" in err
    _, err = _predict(capsys, ["--trace", str(LUD), "--mode", "device"])
    assert err == ""                                  # device mode reads no host by design


@needs_lud
def test_host_regions_that_no_access_touches_warn(tmp_path, capsys):
    regions = tmp_path / "r.toml"
    regions.write_text('[[region]]\nname = "x"\nstart = 16\nsize_B = 16\nlocation = "host"\n',
                       encoding="utf-8")
    _, err = _predict(capsys, ["--trace", str(LUD), "--regions", str(regions)])
    assert "no access of the trace falls in its host regions" in err


@needs_lud
def test_a_sweep_of_a_trace_without_host_memory_warns(tmp_path, capsys):
    sweep = tmp_path / "s.toml"
    sweep.write_text(SWEEP.format(path=LUD), encoding="utf-8")
    assert main(["sweep", str(sweep), "--out", str(tmp_path / "r"), "--jobs", "1",
                 "--quiet"]) == 0
    err = capsys.readouterr().err
    assert err.count("hostlink: warning: ") == 1 and "predict 0 GB/s" in err
