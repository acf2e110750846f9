"""``hostlink advise``: its table and ranking, its JSON and files, and its one-line errors."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from hostlink.traces.graphs import kron, write_bel


def _hostlink(*args):
    return subprocess.run([sys.executable, "-m", "hostlink.model.cli.main", *map(str, args)],
                          capture_output=True, text=True)


@pytest.fixture(scope="module")
def graph(tmp_path_factory):
    prefix = tmp_path_factory.mktemp("advise") / "kron10"
    write_bel(kron(10, 16), prefix)
    return prefix


@pytest.fixture(scope="module")
def advised(graph, tmp_path_factory):
    out = tmp_path_factory.mktemp("advice")
    proc = _hostlink("advise", "--graph", graph, "--system", "h200-pcie5", "--fidelity",
                     "analytic", "--variants", "naive", "merged_aligned", "--json",
                     "--out", out)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout), out


def test_json_holds_every_option_ranked(advised):
    data, _ = advised
    assert {"graph", "kernel", "system", "fidelity", "source", "id_bytes", "vertices", "edges",
            "footprint_B", "device_capacity_B", "device_fits", "winner", "options",
            "skipped"} <= set(data)
    assert (data["kernel"], data["system"], data["fidelity"]) == ("bfs", "h200-pcie5", "analytic")
    names = [(o["variant"], o["mode"]) for o in data["options"]]
    assert sorted(names) == sorted((v, m) for v in ("naive", "merged_aligned")
                                   for m in ("zerocopy", "uvm_accessedby", "uvm",
                                             "uvm_readmostly", "device"))
    times = [o["time_s"] for o in data["options"]]
    assert times == sorted(times)
    assert data["winner"] == data["options"][0] and data["winner"]["slowdown"] == 1.0
    for o in data["options"]:
        assert o["slowdown"] == pytest.approx(o["time_s"] / times[0])
        assert o["bw_GBps"] > 0 and o["bound"]


def test_out_writes_the_advice_and_its_rows(advised):
    data, out = advised
    assert json.loads((out / "advice.json").read_text()) == data
    import pandas as pd
    rows = pd.read_csv(out / "advice.csv")
    assert list(rows["variant"] + "/" + rows["mode"]) == \
        [f"{o['variant']}/{o['mode']}" for o in data["options"]]


def test_text_output_has_table_winner_and_slowdowns(graph):
    proc = _hostlink("advise", "--graph", graph, "--system", "h200-pcie5", "--fidelity",
                     "analytic", "--variants", "naive", "merged_aligned", "--modes",
                     "zerocopy", "device")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "time in ms / useful GB/s" in out
    winner = next(line for line in out.splitlines() if line.startswith("winner: "))
    assert "/device" in winner and "bound: " in winner
    assert "naive/zerocopy" in out and "x slower" in out
    assert "device memory holds them" in out
    assert proc.stderr == ""      # no progress off a terminal


@pytest.mark.parametrize("args, message", [
    (("--graph", "{missing}", "--system", "h200-pcie5"), "no such graph file"),
    (("--graph", "{graph}", "--system", "no-such-system"), "no system preset"),
    (("--graph", "{graph}", "--system", "h200-pcie5", "--modes", "pinned"), "invalid choice"),
    (("--graph", "{graph}", "--system", "h200-pcie5", "--source", "1000000"), "source 1000000"),
    (("--graph", "{graph}", "--system", "h200-pcie5", "--jobs", "0"), "less than 1"),
])
def test_bad_input_is_one_line_and_status_2(graph, tmp_path, args, message):
    args = [a.format(graph=graph, missing=tmp_path / "none.el") for a in args]
    proc = _hostlink("advise", *args)
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0] and "Traceback" not in proc.stderr


def test_device_is_left_out_with_its_reason_when_the_graph_does_not_fit(graph):
    # kron10's BFS arrays take 181 kB at 8 B ids (footprint_B); 0.0001 GiB is 107 kB
    proc = _hostlink("advise", "--graph", graph, "--system", "h200-pcie5", "--set",
                     "gpu.memory_GiB=0.0001", "--fidelity", "analytic", "--variants",
                     "merged_aligned", "--modes", "zerocopy", "device", "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["device_fits"] is False
    assert [o["mode"] for o in data["options"]] == ["zerocopy"]
    assert "more than the 0.0001 GiB" in data["skipped"]["device"]
