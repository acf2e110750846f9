"""Runs on several GPUs and NUMA nodes: the [placement] table, the jobs it makes,
and a run of them with stand-in programs that wait at the start gate."""
from __future__ import annotations

import stat
import sys
from pathlib import Path

import pytest

from hostlink.model.errors import ConfigError
from hostlink.validation import runner
from hostlink.validation.manifest import load_manifest
from hostlink.validation.placement import alone_suffix, together_suffix
from hostlink.validation.results_io import parse_lines, read_results
from test_runner import FAKE_PROGRAM, PROGRAMS, tiny_graph

HEAD = """
[experiment]
name = "placed"
seed = 1

[graphs.tiny]
kind = "file"
path = "tiny"

[[micro]]
benchmark = "memcpy"
direction = ["h2d"]
size_B = [4096]
reps = 2

[[traversal]]
kernels = ["bfs"]
graphs = ["tiny"]
variants = ["merged_aligned"]
memory_modes = ["zerocopy"]
sources = 1
reps = 1
"""

# Waits at --start-gate as gpu_kernels/common/numa.hpp does (10 s at most, then
# exit 3), drops the placement flags, then runs the stand-in program.
GATED = r'''
import os, sys, time, runpy
from pathlib import Path
args = sys.argv[1:]
if "--host-node" in args:
    print('{"type":"host_binding","asked":"%s","node":0,"cpus":"0"}'
          % args[args.index("--host-node") + 1], flush=True)
gate = None
out = []
i = 0
while i < len(args):
    if args[i] in ("--device", "--host-node", "--start-gate"):
        if args[i] == "--start-gate":
            gate = Path(args[i + 1])
        i += 2
        continue
    out.append(args[i])
    i += 1
if gate is not None:
    (gate / f"ready.{os.getpid()}").touch()
    until = time.monotonic() + 10
    while not (gate / "go").exists():
        if time.monotonic() > until:
            sys.exit(3)
        time.sleep(0.01)
sys.argv = [FAKE] + out
runpy.run_path(FAKE, run_name="__main__")
'''


def gated_bin(tmp_path: Path) -> Path:
    b = tmp_path / "bin"
    b.mkdir()
    fake = tmp_path / "fake_program.py"
    fake.write_text(FAKE_PROGRAM)
    gated = tmp_path / "gated.py"
    gated.write_text(f"FAKE = {str(fake)!r}\n" + GATED)
    for p in PROGRAMS:
        f = b / p
        f.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{gated}" --as {p} "$@"\n')
        f.chmod(f.stat().st_mode | stat.S_IEXEC)
    return b


def _manifest(tmp_path, placement: str) -> Path:
    path = tmp_path / "m.toml"
    path.write_text(HEAD + placement)
    return path


def test_placement_is_checked(tmp_path):
    m = load_manifest(_manifest(tmp_path, '[placement]\ngpus = [0, 1]\nhost_nodes = ["local", 1]\n'))
    assert m.placement.gpus == (0, 1) and m.placement.host_nodes == ("local", "1")
    assert m.placement.together
    for bad, key in (('gpus = [0, 0]', "placement.gpus"), ('gpus = [-1]', "placement.gpus"),
                     ('host_nodes = ["far"]', "placement.host_nodes"),
                     ('host_nodes = [1, 1]', "placement.host_nodes"),
                     ('together = 1', "placement.together"), ('racks = 2', "placement.racks")):
        with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
            load_manifest(_manifest(tmp_path, f"[placement]\n{bad}\n"))


def test_jobs_on_each_gpu_alone_and_together(tmp_path):
    path = _manifest(tmp_path, '[placement]\ngpus = [0, 1]\nhost_nodes = ["local", 1]\n')
    tiny_graph(tmp_path / "tiny")
    meta = runner.run(path, tmp_path / "out", dry_run=True, progress=False, bin_dir=tmp_path)
    argvs = [j["argv"] for j in meta["jobs"]]
    # 2 jobs x 2 nodes x (2 alone + 2 together)
    assert len(argvs) == 16
    memcpy = [a for a in argvs if a[0].endswith("memcpy_bw")]
    placed = [(a[a.index("--device") + 1], a[a.index("--host-node") + 1], "--start-gate" in a)
              for a in memcpy]
    assert placed == [("0", "local", False), ("1", "local", False), ("0", "local", True),
                      ("1", "local", True), ("0", "1", False), ("1", "1", False),
                      ("0", "1", True), ("1", "1", True)]


def test_run_with_gate_names_cases_by_placement(tmp_path):
    path = _manifest(tmp_path, '[placement]\ngpus = [0, 1]\nhost_nodes = [0]\n')
    tiny_graph(tmp_path / "tiny")
    out = tmp_path / "out"
    meta = runner.run(path, out, bin_dir=gated_bin(tmp_path), progress=False)
    assert [j["status"] for j in meta["jobs"]] == ["finished"] * 8, meta["jobs"]
    assert meta["missing_cases"] == []
    cases = set(read_results(out / "results.csv")["case"])
    base = "micro/memcpy/direction=h2d,size_B=4096"
    assert {base + alone_suffix(0, "0"), base + alone_suffix(1, "0"),
            base + together_suffix((0, 1), "0", 0), base + together_suffix((0, 1), "0", 1)} <= cases
    placed = meta["cases"][base + together_suffix((0, 1), "0", 1)]
    assert (placed["gpu"], placed["host_node"], placed["together"]) == (1, "0", [0, 1])
    assert placed["direction"] == "h2d" and placed["benchmark"] == "memcpy"
    assert meta["cases"][base + alone_suffix(0, "0")]["together"] == []
    # where each job bound its host memory, as the programs printed it
    assert meta["host_placement"]["micro__0__memcpy__g1n0"][0]["asked"] == "0"
    # the gate opened once both programs were ready
    gate = out / "gates" / "micro__0__memcpy__all0+1n0"
    assert (gate / "go").exists() and len(list(gate.glob("ready.*"))) == 2


def test_host_lines_are_kept_apart_from_measurements():
    out = parse_lines([
        '{"type":"device","name":"G"}',
        '{"type":"host_binding","asked":"local","node":1,"cpus":"4,5","gpu_bus_id":"0000:17:00.0","gpu_node":1}',
        '{"type":"host_buffer","buffer":"host","asked_node":1,"page_node":1}',
        '{"type":"done","program":"memcpy_bw"}'])
    assert out.finished and not out.measurements
    assert [h["type"] for h in out.host] == ["host_binding", "host_buffer"]


def test_a_placed_run_is_predicted_case_by_case(tmp_path):
    # the stand-in run of a copy and a BFS, predicted on a two-GPU topology
    from hostlink.model.config import load_system
    from hostlink.validation.multigpu import compare
    path = _manifest(tmp_path, '[placement]\ngpus = [0, 1]\nhost_nodes = [0]\n')
    tiny_graph(tmp_path / "tiny")
    out = tmp_path / "out"
    meta = runner.run(path, out, bin_dir=gated_bin(tmp_path), progress=False)
    sysfile = tmp_path / "two.toml"
    sysfile.write_text('[system]\nname = "two"\nlink = "pcie/gen4_x16"\nhost = "host/ddr4_2933_4ch"\n'
                       'gpu = "gpu/a100_sxm4"\n[topology]\n'
                       'sockets = [{host = "host/ddr4_2933_4ch"}]\ngpus = [{}, {}]\n')
    table = compare(out, load_system(str(sysfile)), graph_dir=tmp_path)
    assert sorted(table["case"]) == sorted(c for c in meta["cases"] if "@" in c)
    assert set(table["kind"]) == {"memcpy", "traversal"}
    assert (table["predicted_ms"] > 0).all() and table["measured_ms"].notna().all()
    assert set(table["together"]) == {"0", "1", "0+1"}
