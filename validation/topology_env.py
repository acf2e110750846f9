"""The host's GPUs and NUMA layout, for the environment record of a run.

Recorded: every GPU nvidia-smi lists (index, name, PCI bus id) with the NUMA
node sysfs gives its PCI device; the GPU/CPU affinity matrix ``nvidia-smi topo
-m`` prints (kept as text, with its rows parsed where they parse); each NUMA
node's CPUs, memory and distances (``/sys/devices/system/node/node<N>/``:
``cpulist``, ``meminfo``, ``distance``, Documentation/ABI/stable/sysfs-devices-node);
and ``numactl -H`` where numactl is installed. Each part is absent rather than
guessed where its source is missing.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Callable


def parse_gpu_list(text: str) -> list[dict]:
    """``nvidia-smi --query-gpu=index,name,pci.bus_id --format=csv,noheader`` rows."""
    out = []
    for line in text.strip().splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) != 3 or not parts[0].isdigit():
            continue
        out.append({"index": int(parts[0]), "name": parts[1], "pci_bus_id": parts[2]})
    return out


def sysfs_bus_id(smi_bus_id: str) -> str | None:
    """nvidia-smi's ``00000000:17:00.0`` as sysfs writes it (``0000:17:00.0``)."""
    m = re.fullmatch(r"(?:[0-9A-Fa-f]{4})?([0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])",
                     smi_bus_id.strip())
    return m.group(1).lower() if m else None


def parse_topo_matrix(text: str) -> dict:
    """Rows of ``nvidia-smi topo -m``: each GPU's links to the others (NV#, PIX, PXB,
    PHB, NODE, SYS, X) and its CPU and NUMA affinity columns, by header name."""
    lines = [ln.rstrip() for ln in text.splitlines() if ln.strip()]
    if not lines:
        return {}
    header = re.split(r"\t+|\s{2,}", lines[0].strip())
    rows = {}
    for ln in lines[1:]:
        cells = re.split(r"\t+|\s{2,}", ln.strip())
        if not cells or not re.fullmatch(r"GPU\d+|NIC\d+", cells[0]):
            continue
        rows[cells[0]] = dict(zip(header, cells[1:]))
    return rows


def parse_node_meminfo_B(text: str) -> int | None:
    """``Node 0 MemTotal: N kB`` of a node's meminfo, in bytes."""
    m = re.search(r"MemTotal:\s*(\d+)\s*kB", text)
    return int(m.group(1)) * 1024 if m else None


def numa_nodes(root: Path = Path("/sys/devices/system/node")) -> list[dict]:
    """Each NUMA node: its id, CPUs, memory and distances."""
    out = []
    nodes = sorted((p for p in root.glob("node[0-9]*") if p.name[4:].isdigit()),
                   key=lambda p: int(p.name[4:]))
    for p in nodes:
        node: dict = {"node": int(p.name[4:])}
        cpus = _read(p / "cpulist")
        if cpus is not None:
            node["cpulist"] = cpus
        mem = _read(p / "meminfo")
        if mem is not None:
            node["mem_total_B"] = parse_node_meminfo_B(mem)
        dist = _read(p / "distance")
        if dist is not None:
            node["distance"] = [int(x) for x in dist.split() if x.isdigit()]
        out.append(node)
    return out


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def collect(run: Callable[[list[str]], str | None],
            pci_root: Path = Path("/sys/bus/pci/devices")) -> tuple[dict, list[str]]:
    """The record and the sources that were unavailable; ``run(cmd)`` returns a
    command's stdout or None."""
    out: dict = {}
    missing = []
    listing = run(["nvidia-smi", "--query-gpu=index,name,pci.bus_id", "--format=csv,noheader"])
    if listing is None:
        missing.append("nvidia-smi:gpus")
    else:
        gpus = parse_gpu_list(listing)
        for g in gpus:
            bus = sysfs_bus_id(g["pci_bus_id"])
            node = _read(pci_root / bus / "numa_node") if bus else None
            if node is not None and re.fullmatch(r"-?\d+", node):
                g["numa_node"] = int(node)
        out["gpus"] = gpus
    topo = run(["nvidia-smi", "topo", "-m"])
    if topo is None:
        missing.append("nvidia-smi:topo")
    else:
        out["topo_matrix"] = topo
        out["topo"] = parse_topo_matrix(topo)
    out["numa"] = numa_nodes()
    numactl = run(["numactl", "-H"])
    if numactl is None:
        missing.append("numactl")
    else:
        out["numactl_H"] = numactl
    return out, missing
