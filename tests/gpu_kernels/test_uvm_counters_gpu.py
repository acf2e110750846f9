"""libuvm_counters.so injected into bfs on a real GPU (marked ``gpu``: skipped, visibly, without one).

bfs runs unmodified with managed edges (``--memory-mode uvm`` and
``uvm_readmostly``) under ``CUDA_INJECTION64_PATH``: the CSV it leaves holds
the walk's kernel launches and at least the edge array in host-to-device
migrations, and bfs itself prints what it prints without the library (its
result checks pass, the same edges read).
"""
from __future__ import annotations

import json
import os
import subprocess

import pytest

from hostlink.validation import uvm_counters as uc
from kernel_helpers import random_symmetric_graph, write_bel

pytestmark = pytest.mark.gpu

ID_BYTES = 8


@pytest.fixture(scope="module")
def bin_dir(kernels_dir):
    p = subprocess.run(["make", "-C", str(kernels_dir), "-j4", "bin/bfs", "bin/libuvm_counters.so"],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    return kernels_dir / "bin"


@pytest.fixture(scope="module")
def graph(tmp_path_factory):
    offsets, dst, w = random_symmetric_graph(3000, 20000, seed=11)
    return write_bel(tmp_path_factory.mktemp("g") / "g3000", offsets, dst, w), len(dst)


def run_bfs(bin_dir, graph, mode, env=None):
    args = [str(bin_dir / "bfs"), "--graph", str(graph), "--variant", "merged", "--memory-mode", mode,
            "--id-bytes", str(ID_BYTES), "--sources", "2", "--reps", "1"]
    p = subprocess.run(args, capture_output=True, text=True, timeout=300, env={**os.environ, **(env or {})})
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-2000:]
    return [json.loads(x) for x in p.stdout.splitlines() if x.strip()], p.stderr


def results(lines):
    """What a run computed, without its timings."""
    keep = ("iterations", "edges_read", "bytes_read_B", "check_pass", "mismatches", "source", "reached")
    return [(x["params"], {k: x["metrics"][k] for k in keep}) for x in lines if x["type"] == "measurement"]


@pytest.mark.parametrize("mode", ["uvm", "uvm_readmostly"])
def test_bfs_under_the_injection_library(bin_dir, graph, tmp_path, mode):
    prefix, n_edges = graph
    plain, _ = run_bfs(bin_dir, prefix, mode)
    csv_path = tmp_path / "uvm.csv"
    lines, stderr = run_bfs(bin_dir, prefix, mode, env={
        "CUDA_INJECTION64_PATH": str((bin_dir / "libuvm_counters.so").resolve()),
        "HOSTLINK_UVM_COUNTERS_OUT": str(csv_path)})
    # bfs is unchanged: its checks pass and it computes what it computes without the library
    assert lines[-1] == {"type": "done", "program": "bfs", "check_failures": 0}
    assert results(lines) == results(plain) and len(results(lines)) == 2
    assert all(m["check_pass"] == 1 for _, m in results(lines))
    # the library loaded and recorded
    assert csv_path.is_file(), f"no CSV: the library was not loaded? stderr: {stderr[-2000:]}"
    counters = uc.read_uvm_counters(csv_path)
    assert not [n for n in counters.notes if n.startswith("not recorded: htod") or "gpu_fault" in n], counters.notes
    kernels = counters.kernels
    assert len(kernels) > 0 and kernels["name"].str.contains("walk").any()
    t = uc.totals(counters).iloc[0]
    # managed edges start on the host: the walk migrates at least the edge array
    assert t["htod_B"] >= n_edges * ID_BYTES
    assert t["htod_transfers"] > 0 and t["htod_ns"] > 0
    if mode == "uvm":
        assert t["fault_groups"] > 0 and t["faults"] >= t["fault_groups"]
    per_launch = uc.per_launch(counters)
    assert per_launch[per_launch["launch"] >= 0]["htod_B"].sum() > 0
