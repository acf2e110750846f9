"""The host's GPUs and NUMA layout in the environment record, from canned outputs."""
from __future__ import annotations

from hostlink.validation import topology_env as te

# nvidia-smi topo -m on a two-socket host with two GPUs (the layout nvidia-smi
# prints: tab-separated cells, a legend after a blank line)
TOPO = ("\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n"
        "GPU0\t X \tSYS\t0-15\t0\t\tN/A\n"
        "GPU1\tSYS\t X \t16-31\t1\t\tN/A\n"
        "\nLegend:\n\n  X    = Self\n")


def test_topo_matrix_rows():
    rows = te.parse_topo_matrix(TOPO)
    assert rows["GPU0"]["GPU1"] == "SYS" and rows["GPU1"]["CPU Affinity"] == "16-31"
    assert rows["GPU1"]["NUMA Affinity"] == "1"


def test_gpu_list_and_bus_ids():
    gpus = te.parse_gpu_list("0, NVIDIA H200, 00000000:17:00.0\n1, NVIDIA H200, 00000000:A1:00.0\n")
    assert [g["index"] for g in gpus] == [0, 1]
    assert te.sysfs_bus_id(gpus[1]["pci_bus_id"]) == "0000:a1:00.0"
    assert te.sysfs_bus_id("garbage") is None


def test_numa_nodes_from_sysfs(tmp_path):
    for n, cpus, kb in ((0, "0-15", 100), (1, "16-31", 200)):
        d = tmp_path / f"node{n}"
        d.mkdir()
        (d / "cpulist").write_text(cpus + "\n")
        (d / "meminfo").write_text(f"Node {n} MemTotal:       {kb} kB\nNode {n} MemFree: 1 kB\n")
        (d / "distance").write_text("10 21\n" if n == 0 else "21 10\n")
    nodes = te.numa_nodes(tmp_path)
    assert [x["cpulist"] for x in nodes] == ["0-15", "16-31"]
    assert nodes[1]["mem_total_B"] == 200 * 1024 and nodes[0]["distance"] == [10, 21]


def test_collect_with_and_without_nvidia_smi(tmp_path):
    bus = tmp_path / "0000:17:00.0"
    bus.mkdir()
    (bus / "numa_node").write_text("1\n")
    answers = {"--query-gpu=index,name,pci.bus_id": "0, NVIDIA H200, 00000000:17:00.0\n",
               "topo": TOPO}

    def run(cmd):
        return next((v for k, v in answers.items() if k in cmd), None)
    rec, missing = te.collect(run, pci_root=tmp_path)
    assert rec["gpus"][0]["numa_node"] == 1 and rec["topo"]["GPU0"]["GPU1"] == "SYS"
    assert missing == ["numactl"]
    rec, missing = te.collect(lambda cmd: None, pci_root=tmp_path)
    assert "gpus" not in rec and set(missing) == {"nvidia-smi:gpus", "nvidia-smi:topo", "numactl"}
