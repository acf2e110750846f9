"""Several GPUs reading one host at once: each GPU's own prediction, then their share.

``predict_shared(runs, system) -> SharedPrediction``: ``runs`` are
:class:`GpuRun` (a GPU of the system's topology, anything
:func:`hostlink.model.predict.predict` takes, its mode, and the NUMA node its
buffers live on); ``system`` has a ``[topology]``
(:mod:`hostlink.model.config.topology`).

Step 1, through the one door: each run is predicted alone by
:func:`hostlink.model.predict.predict` on its GPU's own system (the topology's
``system`` for that GPU, or the enclosing one). A run whose buffers live on
another socket's node pays the inter-socket latency in every read's round trip
(``link.rtt_ns + inter_socket.lat_ns`` per link crossed), which lowers its
tag-limited rate where the tags bind.

Step 2, the sharing: the runs' alone rates are their demands. Each shared
resource has a capacity and each run a cost per useful byte on it:

- ``dram:<node>``: the node's host memory serving bursts
  (:func:`hostlink.model.dram.served_GBps` of that socket's host); cost: the
  run's DRAM bytes (zero-copy: the bursts its requests touch; UVM: the pages
  moved; a copy: its bytes) per useful byte;
- ``inter_socket:<from>-><to>``: the link between sockets, per direction of the
  data (``inter_socket.bandwidth_GBps``); cost: the same DRAM bytes;
- ``uplink:<switch>:down`` / ``:up``: a switch's uplink per direction
  (:func:`hostlink.model.pcie.spec.tlp_capacity_GBps` of the uplink); cost:
  the run's wire bytes on its own link in that direction (TLP headers
  included) per useful byte.

A GPU's own link is no shared resource: step 1 priced it. The rates are
shared max-min fairly (progressive filling, Bertsekas and Gallager, *Data
Networks*, 2nd ed., §6.5.2): every run's rate rises together, capped at its
demand; when a resource fills, the runs crossing it freeze at their rate then
and that resource is their bound. A run that reaches its demand keeps its own
bound from step 1.

Assumptions: the runs overlap for their whole length (a run's time is its
useful bytes over its shared rate); the arbitration of every shared resource
is fair per run, not per request; the inter-socket link carries whole DRAM
bursts; remote reads change nothing but the round trip and the inter-socket
link (no coherence traffic, no IIO buffer limits); a GPU's own prediction takes
its own system's host memory, and the DRAM of the node its buffers live on
enters as the shared resource only.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Callable

from hostlink.model.errors import ConfigError, HostlinkError


@dataclass(frozen=True)
class GpuRun:
    """One GPU's workload: ``source`` (anything :func:`predict` takes) in ``mode`` on
    GPU ``gpu`` of the topology, its host buffers on NUMA node ``node`` (None: the
    GPU's own socket); ``adjust``: what the workload changes of the GPU's system (its
    loads in flight, say), applied before the prediction."""
    gpu: int
    source: Any
    mode: str = "zerocopy"
    node: int | None = None
    label: str = ""
    adjust: Callable[[Any], Any] | None = field(default=None, compare=False, repr=False)


@dataclass
class GpuShare:
    """One run's share: alone and shared rates (useful GB/s) and what bound it."""
    gpu: int
    name: str
    node: int
    label: str
    remote: bool
    alone_GBps: float
    shared_GBps: float
    bound: str
    time_s: float
    prediction: Any = field(repr=False, default=None)

    def to_dict(self) -> dict:
        return {k: getattr(self, k) for k in ("gpu", "name", "node", "label", "remote",
                                              "alone_GBps", "shared_GBps", "bound", "time_s")}


@dataclass
class SharedPrediction:
    """All runs at once: per run, the total, each shared resource's use."""
    system: str
    runs: list[GpuShare]
    utilisation: dict[str, float]
    capacity_GBps: dict[str, float]

    @property
    def total_GBps(self) -> float:
        return float(sum(r.shared_GBps for r in self.runs))

    @property
    def bound(self) -> str:
        """The shared resource that holds back the most runs; ``none`` where every
        run reaches its alone rate."""
        held = [r.bound for r in self.runs if r.bound in self.utilisation]
        return max(set(held), key=held.count) if held else "none"

    def to_dict(self) -> dict:
        return {"system": self.system, "total_GBps": self.total_GBps, "bound": self.bound,
                "runs": [r.to_dict() for r in self.runs],
                "utilisation": dict(self.utilisation), "capacity_GBps": dict(self.capacity_GBps)}


def gpu_system(system, gpu: int, node: int):
    """The system GPU ``gpu`` of ``system``'s topology runs on with its buffers on
    ``node``: its own preset (or the enclosing system, less the topology), with the
    inter-socket latency added to the link's round trip per link crossed."""
    from hostlink.model.config import load_any_system, system_with
    topo = system.topology
    att = topo.gpus[gpu]
    own = (dataclasses.replace(system, topology=None) if att.system is None
           else dataclasses.replace(load_any_system(att.system), topology=None))
    hops = topo.hops(gpu, node)
    if hops == 0:
        return own
    return system_with(own, {"link.rtt_ns": own.link.rtt_ns + hops * topo.inter_socket.lat_ns})


def _costs(pred, source, system) -> dict[str, float]:
    """Bytes per useful byte: host DRAM, wire down, wire up (see the module notes)."""
    from hostlink.model.workload import Copy
    useful = float(pred.useful_B)
    if useful <= 0:
        return {"dram": 0.0, "down": 0.0, "up": 0.0}
    if isinstance(source, Copy):
        from hostlink.model.copy_engine import COPY_ENGINE_REQUEST_B
        from hostlink.model.des.inputs import tlp_format
        from hostlink.model.pcie.tlp import packetize_reads, packetize_writes
        fmt = tlp_format(system)
        if source.to_device:
            pk = packetize_reads(0, COPY_ENGINE_REQUEST_B, fmt)
            down, up = float(pk.down_wire_B), float(pk.up_wire_B)
        else:
            down, up = 0.0, float(packetize_writes(0, COPY_ENGINE_REQUEST_B, fmt).up_wire_B)
        return {"dram": 1.0, "down": down / COPY_ENGINE_REQUEST_B,
                "up": up / COPY_ENGINE_REQUEST_B}
    dram = float(pred.dram_B or pred.requested_B or pred.useful_B)
    return {"dram": dram / useful, "down": float(pred.wire_B_down) / useful,
            "up": float(pred.wire_B_up) / useful}


def _resources(system, runs: list[GpuRun], nodes: list[int], costs: list[dict]) -> dict:
    """name -> (capacity GB/s, {run index: bytes per useful byte})."""
    from hostlink.model.dram import served_GBps
    from hostlink.model.pcie.spec import tlp_capacity_GBps
    from hostlink.model.workload import Copy
    topo = system.topology
    res: dict[str, tuple[float, dict[int, float]]] = {}

    def add(name, cap, i, cost):
        if cost > 0:
            res.setdefault(name, (float(cap), {}))[1][i] = cost

    for i, (run, node, c) in enumerate(zip(runs, nodes, costs)):
        add(f"dram:{node}", served_GBps(topo.sockets[node].host), i, c["dram"])
        gsock = topo.gpus[run.gpu].socket
        if gsock != node:
            to_gpu = not (isinstance(run.source, Copy) and not run.source.to_device)
            a, b = (node, gsock) if to_gpu else (gsock, node)
            add(f"inter_socket:{a}->{b}", topo.inter_socket.bandwidth_GBps, i, c["dram"])
        sw = topo.gpus[run.gpu].switch
        if sw is not None:
            up = topo.switch(sw).uplink
            cap = float(tlp_capacity_GBps(up.gen, up.lanes, up.mps_B, up.uses_flit_mode,
                                          up.dllp_overhead))
            add(f"uplink:{sw}:down", cap, i, c["down"])
            add(f"uplink:{sw}:up", cap, i, c["up"])
    return res


def max_min_share(demand: list[float], resources: dict) -> tuple[list[float], list[str | None]]:
    """Max-min fair rates under ``resources`` (name -> (capacity, {i: cost})), each
    rate at most its ``demand``; and the resource that froze each (None: its demand)."""
    n = len(demand)
    rate = [0.0] * n
    frozen: list[str | None] = [None] * n
    active = {i for i in range(n) if demand[i] > 0}
    used = {name: 0.0 for name in resources}
    while active:
        # the least common rise that fills a resource or meets a demand
        step, hit = min(((demand[i] - rate[i], None) for i in active), key=lambda t: t[0])
        for name, (cap, cost) in resources.items():
            slope = sum(cost[i] for i in active if i in cost)
            if slope > 0:
                rise = max(0.0, (cap - used[name]) / slope)
                if rise < step:
                    step, hit = rise, name
        for i in active:
            rate[i] += step
        for name, (cap, cost) in resources.items():
            used[name] += step * sum(cost[i] for i in active if i in cost)
        if hit is None:
            done = {i for i in active if rate[i] >= demand[i] * (1 - 1e-12)}
        else:
            done = {i for i in active if i in resources[hit][1]}
            for i in done:
                frozen[i] = hit
        active -= done
    return rate, frozen


def predict_shared(runs, system, fidelity: str = "analytic", **predict_options) -> SharedPrediction:
    """Predict ``runs`` (:class:`GpuRun`) at once on ``system`` (a SystemConfig or a
    preset with a ``[topology]``); ``predict_options`` go to every
    :func:`hostlink.model.predict.predict`."""
    from hostlink.model.predict import predict, resolve_system
    system = resolve_system(system)
    topo = system.topology
    if topo is None:
        raise ConfigError(f"system {system.name}: no [topology]: name a system preset with one "
                          "(e.g. firepro-s9150-2s-pcie3)")
    runs = list(runs)
    if not runs:
        raise HostlinkError("no runs to predict: give at least one GPU's workload")
    nodes, preds, systems = [], [], []
    for k, run in enumerate(runs):
        if not 0 <= run.gpu < len(topo.gpus):
            raise ConfigError(f"run {k}: GPU {run.gpu} is not in the topology of {system.name} "
                              f"({len(topo.gpus)} GPU(s))")
        node = topo.gpus[run.gpu].socket if run.node is None else run.node
        if not 0 <= node < len(topo.sockets):
            raise ConfigError(f"run {k}: NUMA node {node} is not in the topology of "
                              f"{system.name} ({len(topo.sockets)} node(s))")
        sysk = gpu_system(system, run.gpu, node)
        if run.adjust is not None:
            sysk = run.adjust(sysk)
        nodes.append(node)
        systems.append(sysk)
        preds.append(predict(run.source, sysk, mode=run.mode, fidelity=fidelity,
                             **predict_options))
    costs = [_costs(p, r.source, s) for p, r, s in zip(preds, runs, systems)]
    resources = _resources(system, runs, nodes, costs)
    demand = [float(p.bw_GBps) for p in preds]
    rate, frozen = max_min_share(demand, resources)
    shares = []
    for run, node, pred, r, f in zip(runs, nodes, preds, rate, frozen):
        shares.append(GpuShare(
            gpu=run.gpu, name=topo.gpus[run.gpu].name, node=node, label=run.label,
            remote=topo.hops(run.gpu, node) > 0, alone_GBps=float(pred.bw_GBps),
            shared_GBps=float(r), bound=f if f is not None else pred.bound,
            time_s=pred.useful_B / (r * 1e9) if r > 0 else float("inf"), prediction=pred))
    util = {name: sum(cost[i] * rate[i] for i in cost) / cap
            for name, (cap, cost) in resources.items()}
    return SharedPrediction(system=system.name, runs=shares, utilisation=util,
                            capacity_GBps={name: cap for name, (cap, _) in resources.items()})
