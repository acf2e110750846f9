"""The environment of a measurement run, recorded as JSON beside its results.

What is recorded (each key absent rather than guessed when its source is
missing; failures are listed under ``unavailable``):
- GPU: nvidia-smi ``--query-gpu`` fields (name, driver, PCIe generation and
  width current and max, memory, clocks), BAR1 size (``nvidia-smi -q -d
  MEMORY``), the CUDA version the driver reports, and the ``devinfo``
  program's JSON line (SM count, L2 size, runtime version, ...);
- the PCIe link as Linux sees it (``/sys/bus/pci/devices/<id>/``: link speed
  and width, NUMA node of the GPU);
- host: CPU model and count, memory, NUMA nodes, kernel, hostname;
- every GPU with its NUMA node, ``nvidia-smi topo -m`` and each NUMA node's
  CPUs, memory and distances (``topology``: :mod:`hostlink.validation.topology_env`);
- software: nvcc version, Python version, git SHA (``git rev-parse``, or the
  ``HOSTLINK_GIT_SHA`` variable where the tree has no .git).

Note: an idle GPU may train its link down to save power, so the current PCIe
generation read before a run can be lower than during it; both current and
max are kept.
"""
from __future__ import annotations

import json
import os
import platform
import re
import socket
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

SMI_FIELDS = (
    "name", "driver_version", "pci.bus_id", "pcie.link.gen.current", "pcie.link.gen.max",
    "pcie.link.gen.gpumax", "pcie.link.gen.hostmax", "pcie.link.width.current", "pcie.link.width.max",
    "memory.total", "clocks.max.sm", "clocks.max.memory", "vbios_version", "persistence_mode",
    "compute_mode", "power.limit",
)


def _run(cmd: list[str], timeout: float = 30.0) -> str | None:
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return p.stdout if p.returncode == 0 else None


def parse_smi_value(text: str) -> str | int | float | None:
    """One ``--format=csv,noheader,nounits`` value; '[N/A]' and friends become None."""
    v = text.strip().splitlines()[0].strip() if text.strip() else ""
    if not v or v.startswith("[") or v.lower() in ("n/a", "not supported"):
        return None
    if re.fullmatch(r"-?\d+", v):
        return int(v)
    if re.fullmatch(r"-?\d+\.\d*", v):
        return float(v)
    return v


def parse_bar1_MiB(text: str) -> int | None:
    """BAR1 total (MiB) from ``nvidia-smi -q -d MEMORY``."""
    m = re.search(r"BAR1 Memory Usage\s*\n\s*Total\s*:\s*(\d+)\s*MiB", text)
    return int(m.group(1)) if m else None


def parse_smi_cuda_version(text: str) -> str | None:
    m = re.search(r"CUDA Version:\s*([\d.]+)", text)
    return m.group(1) if m else None


def parse_nvcc_version(text: str) -> str | None:
    m = re.search(r"release\s+([\d.]+),\s*V([\d.]+)", text)
    return m.group(2) if m else None


def parse_cpuinfo(text: str) -> dict:
    models = re.findall(r"^model name\s*:\s*(.+)$", text, flags=re.M)
    return {"cpu_model": models[0].strip() if models else None, "cpu_logical": len(models) or None}


def parse_meminfo_B(text: str) -> int | None:
    m = re.search(r"^MemTotal:\s*(\d+)\s*kB", text, flags=re.M)
    return int(m.group(1)) * 1024 if m else None


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def _sysfs_pci(bus_id: str | None) -> dict:
    """Link speed/width and NUMA node of the GPU from sysfs (bus id as nvidia-smi prints it)."""
    if not bus_id:
        return {}
    # nvidia-smi: 00000000:01:00.0; sysfs: 0000:01:00.0
    m = re.fullmatch(r"(?:[0-9A-Fa-f]{4})?([0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])", bus_id)
    if not m:
        return {}
    dev = Path("/sys/bus/pci/devices") / m.group(1).lower()
    out = {}
    for key in ("current_link_speed", "max_link_speed", "current_link_width", "max_link_width", "numa_node"):
        v = _read(dev / key)
        if v is not None:
            out[key] = v
    return out


def git_sha(repo: Path) -> dict:
    sha = _run(["git", "-C", str(repo), "rev-parse", "HEAD"])
    if sha:
        dirty = _run(["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=no"])
        return {"git_sha": sha.strip(), "git_dirty": bool(dirty and dirty.strip())}
    env = os.environ.get("HOSTLINK_GIT_SHA")
    return {"git_sha": env, "git_dirty": None} if env else {}


def collect(repo: Path, devinfo: Path | None = None) -> dict:
    """Everything above, as a JSON-ready dict."""
    env: dict = {"recorded_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                 "hostname": socket.gethostname(), "kernel": platform.release(),
                 "python": sys.version.split()[0]}
    unavailable = []
    gpu: dict = {}
    if _run(["nvidia-smi", "-L"]) is None:
        unavailable.append("nvidia-smi")
    else:
        for f in SMI_FIELDS:
            out = _run(["nvidia-smi", "-i", "0", f"--query-gpu={f}", "--format=csv,noheader,nounits"])
            if out is None:
                unavailable.append(f"nvidia-smi:{f}")
                continue
            v = parse_smi_value(out)
            if v is not None:
                gpu[f.replace(".", "_")] = v
        q = _run(["nvidia-smi", "-i", "0", "-q", "-d", "MEMORY"]) or ""
        bar1 = parse_bar1_MiB(q)
        if bar1 is not None:
            gpu["bar1_MiB"] = bar1
        cv = parse_smi_cuda_version(_run(["nvidia-smi"]) or "")
        if cv:
            gpu["driver_cuda_version"] = cv
        gpu["sysfs"] = _sysfs_pci(gpu.get("pci_bus_id"))
    if devinfo is not None and Path(devinfo).exists():
        out = _run([str(devinfo)])
        if out:
            for line in out.splitlines():
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if obj.get("type") == "device":
                    gpu["devinfo"] = obj
        else:
            unavailable.append("devinfo")
    env["gpu"] = gpu
    nvcc = _run(["nvcc", "--version"])
    env["nvcc"] = parse_nvcc_version(nvcc) if nvcc else None
    host = {}
    ci = _read(Path("/proc/cpuinfo"))
    if ci:
        host.update(parse_cpuinfo(ci))
    mi = _read(Path("/proc/meminfo"))
    if mi:
        host["mem_total_B"] = parse_meminfo_B(mi)
    nodes = sorted(p.name for p in Path("/sys/devices/system/node").glob("node[0-9]*"))
    host["numa_nodes"] = len(nodes) or None
    host["cpu_count"] = os.cpu_count()
    env["host"] = host
    from hostlink.validation.topology_env import collect as collect_topology
    env["topology"], missing = collect_topology(_run)
    unavailable += missing
    env.update(git_sha(repo))
    env["unavailable"] = unavailable
    return env
