"""The host loop around a program's launches: what the GPU's timeline holds
between one timed launch and the next.

A traversal program times each walk launch with a pair of CUDA events and the
whole run with another pair; between the walks its host loop puts small stream
items (a flag's reset, its read-back to the host, a synchronisation, another
kernel). A loop is written as the sequence of those items, repeated once per
iteration (:data:`LOOPS`, the same table as ``gpu_kernels/micro/host_loop.cu``):

- ``walk``: the timed launch; costs ``launch_gap_us`` outside its events;
- ``kernel:C``: an untimed kernel of C CTAs: ``launch_gap_us`` plus C CTA
  dispatches (``gpu.cta_dispatch_ns``);
- ``memset:N``: ``memset_small_us`` up to ``memset_small_max_B`` bytes, else
  ``memset_us`` plus N bytes at the device memory's bandwidth;
- ``d2h:N``: ``copy_us``, a small copy from device to pinned host memory; the
  kernel or memset straight after it pays ``copy_return_us``;
- ``sync``: ``sync_us``, the host's round trip from the stream running dry to
  its next item.

N and C are numbers, ``V`` (the graph's vertices) or ``V/256``. A run adds
``run_us`` once and, where its loop does not end with ``sync``, one
synchronisation (the run ends synchronised). The costs are additive, each item
on its own: they hold while the GPU is the bottleneck (each launch long enough
that the host has enqueued the items after it: 20 us and more measured on an
H200, ``validation/experiments/host_loop/runs/h200``); with empty launches the host
is, and items cost less.

References: CUDA Runtime API (stream ordering of cudaMemsetAsync,
cudaMemcpyAsync and kernels); ``gpu_kernels/traversal/{bfs,sssp,cc,pagerank}.cu``
(their ``run()``); the microbenchmark ``gpu_kernels/micro/host_loop.cu``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hostlink.model.errors import ConfigError

#: loop name -> its items per iteration (the microbenchmark's table)
LOOPS: dict[str, str] = {
    "bfs": "memset:4,walk,d2h:4,sync",
    "sssp": "memset:4,walk,d2h:4,memset:V,sync",
    "cc": "memset:4,walk,d2h:4,memset:V,sync",
    "pagerank": "walk,kernel:V/256",
    "walk": "walk",
    "walk_sync": "walk,sync",
    "walk_copy_sync": "walk,d2h:4,sync",
    "walk_copy_memset_v": "walk,d2h:4,memset:V",
    "walk_memset": "memset:4,walk",
    "walk_memset_v": "memset:V,walk",
    "walk_kernel": "walk,kernel:1",
    "walk_kernel_v": "walk,kernel:V/256",
}

#: the traversal programs' own loops
PROGRAMS = ("bfs", "sssp", "cc", "pagerank")

OPS = ("walk", "kernel", "memset", "d2h", "sync")

#: the cost keys of ``host_loop`` a loop's time is linear in, in this order
COST_KEYS = ("launch_gap_us", "memset_small_us", "memset_us", "copy_us", "copy_return_us",
             "sync_us", "run_us")


@dataclass(frozen=True)
class Item:
    op: str
    amount: str = ""     # a number, "V" or "V/256" ("" for walk and sync)

    def count(self, vertices: int) -> int:
        if self.amount == "V":
            return int(vertices)
        if self.amount == "V/256":
            return (int(vertices) + 255) // 256
        return int(self.amount) if self.amount else 0


def parse_loop(loop: str) -> tuple[Item, ...]:
    """The items of a loop given by name (:data:`LOOPS`) or as a sequence
    (``"memset:4,walk,d2h:4,sync"``); one clear error for a bad item."""
    seq = LOOPS.get(loop, loop)
    items = []
    for tok in seq.split(","):
        op, _, amount = tok.strip().partition(":")
        if op not in OPS:
            raise ConfigError(f"host loop '{loop}': unknown item '{tok}' (items: {', '.join(OPS)}; "
                              f"named loops: {', '.join(LOOPS)})")
        needs = op in ("kernel", "memset", "d2h")
        if needs != bool(amount):
            raise ConfigError(f"host loop '{loop}': item '{tok}' " +
                              ("needs an amount (op:N, N a number, V or V/256)" if needs
                               else "takes no amount"))
        if amount and amount not in ("V", "V/256") and not amount.isdigit():
            raise ConfigError(f"host loop '{loop}': '{amount}' in '{tok}' is not a number, V or V/256")
        items.append(Item(op, amount))
    if not any(i.op == "walk" for i in items):
        raise ConfigError(f"host loop '{loop}': no walk (the timed launch) in it")
    return tuple(items)


def loop_terms(loop: str, vertices: int, system) -> tuple[np.ndarray, np.ndarray, float]:
    """The loop's time as ``iterations x (per_iter @ costs + per_iter_ns) + per_run @
    costs`` (costs in us, in :data:`COST_KEYS` order; ``per_iter_ns`` is the bytes
    and CTAs priced by the device's bandwidth and dispatch rate).
    Returns ``(per_iter, per_run, per_iter_ns)``."""
    hl = system.host_loop
    per_iter = np.zeros(len(COST_KEYS))
    k = {key: i for i, key in enumerate(COST_KEYS)}
    known_ns = 0.0
    prev = None
    items = parse_loop(loop)
    for it in items:
        n = it.count(vertices)
        if prev == "d2h" and it.op in ("walk", "kernel", "memset"):
            per_iter[k["copy_return_us"]] += 1
        if it.op in ("walk", "kernel"):
            per_iter[k["launch_gap_us"]] += 1
            if it.op == "kernel":
                known_ns += max(1, n) * system.gpu.cta_dispatch_ns
        elif it.op == "memset":
            if n <= hl.memset_small_max_B:
                per_iter[k["memset_small_us"]] += 1
            else:
                per_iter[k["memset_us"]] += 1
                known_ns += n / system.gpu.device_bw_GBps      # B / (GB/s) = ns
        elif it.op == "d2h":
            per_iter[k["copy_us"]] += 1
        else:
            per_iter[k["sync_us"]] += 1
        prev = it.op
    per_run = np.zeros(len(COST_KEYS))
    per_run[k["run_us"]] = 1
    if items[-1].op != "sync":
        per_run[k["sync_us"]] = 1
    return per_iter, per_run, known_ns


def costs_us(system) -> np.ndarray:
    return np.array([float(getattr(system.host_loop, key)) for key in COST_KEYS])


def _iteration_and_run_ns(system, loop: str, vertices: int) -> tuple[float, float]:
    """What one iteration of the loop costs, and what the run adds once (ns)."""
    per_iter, per_run, iter_ns = loop_terms(loop, vertices, system)
    c = costs_us(system) * 1e3
    return float(per_iter @ c + iter_ns), float(per_run @ c)


def loop_gap_ns(system, loop: str, vertices: int, iterations: int) -> float:
    """The run's time outside its timed launches (ns): ``iterations`` times the
    loop, plus the run's own costs."""
    iteration_ns, run_ns = _iteration_and_run_ns(system, loop, vertices)
    return iterations * iteration_ns + run_ns


def launch_gaps_ns(system, loop: str, vertices: int, launches: int) -> np.ndarray:
    """The same, per timed launch (one walk per iteration): each launch carries its
    iteration's items, the first also the run's."""
    if launches <= 0:
        return np.zeros(0)
    walks = sum(1 for i in parse_loop(loop) if i.op == "walk")
    if walks != 1:
        raise ConfigError(f"host loop '{loop}': per-launch gaps need one walk per iteration, "
                          f"it has {walks}")
    iteration_ns, run_ns = _iteration_and_run_ns(system, loop, vertices)
    gaps = np.full(launches, iteration_ns)
    gaps[0] += run_ns
    return gaps
