"""Fuzz the ``hostlink`` commands that read files, in-process: whatever the files and
option values, a command succeeds or prints one error line with status 2, and
writes nothing outside its output folder."""
from __future__ import annotations

import shutil

import pytest
from fuzz_inputs import REPO, fuzz_settings, inputs, run_cli
from hypothesis import given
from hypothesis import strategies as st
from test_fuzz_files import SASS
from test_fuzz_graphs import SEEDS as GRAPHS
from test_fuzz_toml import SEEDS as TOMLS

TRACE = REPO / "tests/traces/data/edge_v4"
numbers = st.sampled_from(["0", "-1", "1", "3", "128", "100000", "1e3", "nan", "x", "",
                           "99999999999999999999"])


@pytest.fixture
def work(tmp_path):
    """A folder to run in, with a copy of a small trace; the command writes only to out/."""
    w = tmp_path / "w"
    w.mkdir()
    shutil.copytree(TRACE, w / "trace")
    return w


def _file(work, name, raw):
    (work / name).write_bytes(raw)
    return name


@fuzz_settings(300)
@given(data=st.data())
def test_system_commands(work, data):
    sys_file = _file(work, "system.toml", data.draw(inputs(TOMLS["system"])))
    argv = data.draw(st.sampled_from([
        ["config", "show", sys_file],
        ["link", "--system", sys_file],
        ["link", "--system", sys_file, "--request-bytes", data.draw(numbers)],
        ["predict", "--system", sys_file, "--trace", "trace"],
        ["config", "show", "h100-pcie5", "--set", f"link.rtt_ns={data.draw(numbers)} us"],
    ]))
    run_cli(argv, work, work / "out")


@fuzz_settings(200)
@given(data=st.data())
def test_trace_commands(work, data):
    regions = _file(work, "regions.toml", data.draw(inputs(TOMLS["regions"])))
    kernel = work / "trace/kernel-1.traceg"
    if data.draw(st.booleans()):
        kernel.write_bytes(data.draw(inputs((TRACE / "kernel-1.traceg").read_bytes(), 2000)))
    argv = data.draw(st.sampled_from([
        ["trace", "stats", "trace", "--regions", regions],
        ["trace", "stats", "trace"],
        ["trace", "stats", "trace", "--memcpy-location", data.draw(st.sampled_from(
            ["host", "device", "x"]))],
        ["predict", "--system", "h100-pcie5", "--trace", "trace", "--regions", regions],
    ]))
    run_cli(argv, work, work / "out")


@fuzz_settings(300)
@given(data=st.data())
def test_sweep_manifest_sass_commands(work, data):
    kind = data.draw(st.sampled_from(["sweep", "manifest", "sass"]))
    if kind == "sweep":
        f = _file(work, "s.toml", data.draw(inputs(TOMLS["sweep"])))
        argv = ["sweep", f, "--out", "out", "--dry-run"]
    elif kind == "manifest":
        f = _file(work, "m.toml", data.draw(inputs(TOMLS["manifest"])))
        argv = ["validate", "run", f, "--out", "out", "--dry-run", "--no-build", "--quiet"]
    else:
        f = _file(work, "k.sass", data.draw(inputs(SASS, 600)))
        argv = ["validate", "sass", f] + data.draw(st.sampled_from([[], ["--match", "("],
                                                                     ["--match", "read"]]))
    run_cli(argv, work, work / "out")


@fuzz_settings(300)
@given(data=st.data())
def test_graph_commands(work, data):
    name = data.draw(st.sampled_from(sorted(GRAPHS)))
    f = _file(work, name, data.draw(inputs(GRAPHS[name])))
    pattern = data.draw(st.sampled_from([[], ["--pattern-only"]]))
    argv = data.draw(st.sampled_from([
        ["graph", "info", f],
        ["graph", "convert", f, "--out", "out/g"],
        ["trace", "gen", "--kernel", data.draw(st.sampled_from(["bfs", "sssp", "cc", "pagerank"])),
         "--variant", data.draw(st.sampled_from(["naive", "merged", "chunked"])),
         "--graph", f, "--out", "out/t", "--iterations", "2"],
        ["trace", "gen", "--kernel", "bfs", "--variant", "naive", "--graph", f,
         "--source", data.draw(numbers), "--out", "out/t"],
    ])) + pattern
    run_cli(argv, work, work / "out")
