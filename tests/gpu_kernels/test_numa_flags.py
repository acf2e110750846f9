"""The programs' host NUMA flags on the CPU (gpu_kernels/common/numa.hpp through
host_check, sysfs faked under $HOSTLINK_SYSFS): CPU lists, --host-node and
--start-gate checks, the node `local` resolves to. Binding itself needs the
node to exist and is left to the GPU runs."""
from __future__ import annotations

import json
import os
import subprocess

import pytest


def _sysfs(tmp_path):
    root = tmp_path / "sys"
    for n, cpus in ((0, "0-3"), (1, "4-5,9")):
        d = root / "devices" / "system" / "node" / f"node{n}"
        d.mkdir(parents=True)
        (d / "cpulist").write_text(cpus + "\n")
    dev = root / "bus" / "pci" / "devices" / "0000:17:00.0"
    dev.mkdir(parents=True)
    (dev / "numa_node").write_text("1\n")
    lone = root / "bus" / "pci" / "devices" / "0000:18:00.0"
    lone.mkdir(parents=True)
    (lone / "numa_node").write_text("-1\n")
    return root


def _run(host_check, root, *args):
    env = dict(os.environ, HOSTLINK_SYSFS=str(root))
    return subprocess.run([str(host_check), *args], capture_output=True, text=True, env=env,
                          timeout=30)


@pytest.mark.parametrize("text, cpus", [("0-3,8", [0, 1, 2, 3, 8]), ("7", [7]),
                                        ("0-1,4-5", [0, 1, 4, 5])])
def test_cpulist(host_check, tmp_path, text, cpus):
    p = _run(host_check, tmp_path, "cpulist", text)
    assert p.returncode == 0 and [int(x) for x in p.stdout.split()] == cpus


@pytest.mark.parametrize("text", ["3-1", "1,", "a", "1--2", ""])
def test_bad_cpulist_is_one_usage_line(host_check, tmp_path, text):
    p = _run(host_check, tmp_path, "cpulist", text)
    assert p.returncode == 2 and json.loads(p.stdout)["kind"] == "usage"


def test_local_is_the_gpus_node(host_check, tmp_path):
    root = _sysfs(tmp_path)
    p = _run(host_check, root, "numa", "0000:17:00.0", "--host-node", "local")
    line = json.loads(p.stdout)
    assert p.returncode == 0 and line["type"] == "host_binding"
    assert (line["node"], line["cpus"], line["gpu_node"]) == (1, "4,5,9", 1)


def test_local_on_a_host_of_one_node(host_check, tmp_path):
    # a virtual machine: sysfs gives the GPU no node (-1) and the host has one
    root = tmp_path / "vm"
    (root / "devices" / "system" / "node" / "node0").mkdir(parents=True)
    (root / "devices" / "system" / "node" / "node0" / "cpulist").write_text("0-15\n")
    dev = root / "bus" / "pci" / "devices" / "0000:18:00.0"
    dev.mkdir(parents=True)
    (dev / "numa_node").write_text("-1\n")
    line = json.loads(_run(host_check, root, "numa", "0000:18:00.0", "--host-node", "local").stdout)
    assert (line["node"], line["gpu_node"]) == (0, -1)


def test_a_numbered_node(host_check, tmp_path):
    p = _run(host_check, _sysfs(tmp_path), "numa", "0000:17:00.0", "--host-node", "0")
    assert json.loads(p.stdout)["cpus"] == "0,1,2,3"


def test_no_flag_prints_nothing(host_check, tmp_path):
    p = _run(host_check, _sysfs(tmp_path), "numa", "0000:17:00.0")
    assert p.returncode == 0 and p.stdout == ""


@pytest.mark.parametrize("args, words", [
    (["--host-node", "2"], "no NUMA node 2"),
    (["--host-node", "-1"], "not a NUMA node"),
    (["--host-node", "east"], "not an integer"),
    (["--host-node", "local"], "no NUMA node for the GPU"),   # numa_node -1 in sysfs
    (["--start-gate", "/nonexistent/gate"], "not a folder"),
])
def test_bad_flags_exit_2_with_one_line(host_check, tmp_path, args, words):
    bus = "0000:18:00.0"
    p = _run(host_check, _sysfs(tmp_path), "numa", bus, *args)
    assert p.returncode == 2 and p.stdout.count("\n") == 1
    assert words in json.loads(p.stdout)["message"]
