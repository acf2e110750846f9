"""Runs on several GPUs and NUMA nodes: a manifest's ``[placement]`` and its jobs.

A manifest may hold::

    [placement]
    gpus = [0, 1]                 # CUDA device ordinals
    host_nodes = ["local", 0, 1]  # NUMA node of the host buffers: a number or "local"
    together = true               # also every GPU at once (default true)

Then every microbenchmark and traversal job runs on each GPU alone with its
host buffers on each node (``--device G --host-node N``), and, with
``together``, on all the GPUs at once, one process per GPU, started together:
each program sets up, writes ``ready.<device>.<pid>`` into a gate folder and
waits for its ``go`` file (``--start-gate``, gpu_kernels/common/numa.hpp), which
:func:`run_group` writes once every process is ready (or one has ended).

Case names gain the placement: ``<case>@gpu0:node1`` alone and
``<case>@gpus0+1:node1/gpu0`` for GPU 0's rows of the run of GPUs 0 and 1 at
once. ``local`` is each GPU's own node (its PCI device's ``numa_node``).

Assumption: programs started together overlap for their timed work where each
point runs long enough; a point's rows say when it ran no more than that.
"""
from __future__ import annotations

import dataclasses
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Callable

from pydantic import AfterValidator, Field

from hostlink.model.tomlcheck import TomlModel, fault

#: seconds run_group waits for the programs of a group to be ready
READY_TIMEOUT_S = 600.0


@dataclass(frozen=True)
class Placement:
    gpus: tuple[int, ...]
    host_nodes: tuple[str, ...]
    together: bool = True


def _distinct(values: list) -> list:
    if len(set(values)) != len(values):
        raise fault(" = {v} lists a value twice", v=list(values))
    return values


def _node(value: Any) -> str:
    ok = value == "local" or (isinstance(value, int) and not isinstance(value, bool)
                              and 0 <= value < 1024)
    if not ok:
        raise fault(" = {v} is not a NUMA node number or 'local'", v=repr(value))
    return str(value)


class PlacementTable(TomlModel):
    """The ``[placement]`` table of a manifest."""
    gpus: Annotated[list[Annotated[int, Field(ge=0)]], Field(min_length=1),
                    AfterValidator(_distinct)] = [0]
    host_nodes: Annotated[list[Annotated[Any, AfterValidator(_node)]], Field(min_length=1),
                          AfterValidator(_distinct)] = ["local"]
    together: bool = True

    def placement(self) -> Placement:
        return Placement(tuple(self.gpus), tuple(self.host_nodes), self.together)


def alone_suffix(gpu: int, node: str) -> str:
    return f"@gpu{gpu}:node{node}"


def together_suffix(gpus: tuple[int, ...], node: str, gpu: int) -> str:
    return f"@gpus{'+'.join(map(str, gpus))}:node{node}/gpu{gpu}"


def expand_jobs(jobs: list, placement: Placement, gate_root: Path) -> list:
    """Each micro and traversal job on each GPU alone and, with ``together``, on all
    of them at once, per host node; self-trace jobs stay as they are."""
    out = []
    for job in jobs:
        if job.kind not in ("micro", "traversal"):
            out.append(job)
            continue
        for node in placement.host_nodes:
            for gpu in placement.gpus:
                out.append(_placed(job, gpu, node, alone_suffix(gpu, node), f"g{gpu}n{node}"))
            if placement.together and len(placement.gpus) > 1:
                name = f"all{'+'.join(map(str, placement.gpus))}n{node}"
                gate = gate_root / f"{job.id}__{name}"
                for gpu in placement.gpus:
                    placed = _placed(job, gpu, node, together_suffix(placement.gpus, node, gpu),
                                     f"{name}__g{gpu}")
                    out.append(dataclasses.replace(placed, group=f"{job.id}__{name}",
                                                   argv=placed.argv + ["--start-gate", str(gate)]))
    return out


def _placed(job, gpu: int, node: str, suffix: str, tag: str):
    base = job.case_of

    def case_of(meas, base=base, suffix=suffix):
        case = base(meas)
        return None if case is None else case + suffix
    return dataclasses.replace(job, id=f"{job.id}__{tag}", case_of=case_of,
                               argv=list(job.argv) + ["--device", str(gpu), "--host-node", node],
                               expected_cases=[c + suffix for c in job.expected_cases])


def gate_of(job) -> Path:
    """The gate folder a grouped job's argv names."""
    return Path(job.argv[job.argv.index("--start-gate") + 1])


def run_group(jobs: list, run_one: Callable, *args) -> list:
    """Run the jobs of one group at once (``run_one(job, *args)`` each, in threads):
    opens their gate when every program is ready or one has ended."""
    gate = gate_of(jobs[0])
    gate.mkdir(parents=True, exist_ok=True)
    for stale in gate.iterdir():
        stale.unlink()
    with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
        futures = [pool.submit(run_one, job, *args) for job in jobs]
        opener = threading.Thread(target=_open_gate, args=(gate, len(jobs), futures), daemon=True)
        opener.start()
        results = [f.result() for f in futures]
    opener.join(timeout=1.0)
    return results


def _open_gate(gate: Path, n: int, futures: list) -> None:
    until = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < until:
        ready = len(list(gate.glob("ready.*")))
        if ready >= n or any(f.done() for f in futures):
            break
        time.sleep(0.005)
    (gate / "go").touch()


def placed_case_params(params: dict, cases: list[str]) -> dict:
    """Each placed case's parameters: its base case's, plus the GPU, the host node and
    the GPUs it ran with (``together``: empty when alone)."""
    out = {}
    for case in cases:
        base, sep, where = case.partition("@")
        if not sep or base not in params:
            continue
        head, _, own = where.partition("/")
        gpus, _, node = head.partition(":node")
        if own:  # gpus0+1:node1/gpu0
            together = [int(g) for g in gpus[len("gpus"):].split("+")]
            gpu = int(own[len("gpu"):])
        else:    # gpu0:node1
            together, gpu = [], int(gpus[len("gpu"):])
        out[case] = {**params[base], "gpu": gpu, "host_node": node, "together": together}
    return out
