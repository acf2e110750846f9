"""The emulator's front: run a kernel of gpu_kernels/KERNELS.md on a graph, get its trace.

``emulate(csr, "bfs", "merged_aligned", source=0, id_bytes=4)`` runs the
algorithm functionally (:mod:`.algorithms`), lays the arrays out
(:mod:`.layout`) and returns an :class:`Emulation` that streams the trace
(:meth:`Emulation.chunks`, :meth:`Emulation.trace`: traces.schema InstTable
chunks, launch by launch, at most ``chunk_rows`` warp instructions each),
computes the host read requests (:meth:`Emulation.requests`: directly, the
fast path, or through the coalescer with caches) and holds the algorithm's
result.

``resident_warps`` (None: every launch a Jacobi step) runs SSSP and CC
launches in waves of the vertices that many resident warps handle
(:func:`.algorithms.wave_vertices_of`): later waves see the earlier waves'
updates, as on the GPU.

Launch geometry (KERNELS.md): 256 threads (8 warps) per CTA, a 1-D grid of
ceil(threads / 256) CTAs, threads = V (naive), 32 V (merged,
merged_aligned), 32 ceil(V / 8) (chunked, balanced); a row's ``cta`` is the global
warp id // 8 and ``warp`` the global warp id % 8. Launches are named
``<kernel>_<variant>``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

import numpy as np

from hostlink.model.errors import ConfigError
from hostlink.model.workload import LaunchInfo, RequestStream
from hostlink.traces.cache import CacheConfig
from hostlink.traces.emulator import algorithms
from hostlink.traces.emulator.emit import (THREADS_PER_CTA, VARIANTS, WARPS_PER_CTA, grid_of,
                                           launch_chunks, plan_launch)
from hostlink.traces.emulator.fast import host_requests
from hostlink.traces.emulator.layout import DEFAULT_ALIGN_B, MEMORY_MODES, AddressMap, address_map
from hostlink.traces.emulator.program import opcode_names, program
from hostlink.traces.graphs.csr import CSR
from hostlink.traces.schema import InstTable, KernelLaunch, Region, WarpTrace

KERNELS = ("bfs", "sssp", "cc", "pagerank")
DEFAULT_CHUNK_ROWS = 1 << 16
MIN_CHUNK_ROWS = 64


class _Chunks:
    """Re-iterable view of an emulation's chunks (each pass re-emits them)."""

    def __init__(self, emulation: "Emulation"):
        self._emulation = emulation

    def __iter__(self) -> Iterator[InstTable]:
        return self._emulation.chunks()


@dataclass
class Emulation:
    """One emulated run: configuration, the functional result and the trace sources."""
    csr: CSR
    kernel: str
    variant: str
    source: int = 0
    id_bytes: int = 4
    memory: str = "zerocopy"
    include_device: bool = False
    iterations: int = algorithms.PR_DEFAULT_ITERATIONS
    chunk_rows: int = DEFAULT_CHUNK_ROWS
    align_B: int = DEFAULT_ALIGN_B
    resident_warps: int | None = None
    #: the launches' active vertices, given (a sample of a run) or None: run the algorithm
    run: algorithms.AlgorithmRun | None = field(default=None, repr=False)
    address_map: AddressMap = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.kernel not in KERNELS:
            raise ConfigError(f"unknown kernel '{self.kernel}' (expected {', '.join(KERNELS)})")
        if self.variant not in VARIANTS:
            raise ConfigError(f"unknown variant '{self.variant}' (expected {', '.join(VARIANTS)})")
        if self.id_bytes not in (4, 8):
            raise ConfigError(f"id_bytes must be 4 or 8, not {self.id_bytes}")
        if self.memory not in MEMORY_MODES:
            raise ConfigError(f"unknown memory mode '{self.memory}' (expected "
                              f"{', '.join(MEMORY_MODES)})")
        if not isinstance(self.chunk_rows, (int, np.integer)) or self.chunk_rows < MIN_CHUNK_ROWS:
            raise ConfigError(f"chunk_rows must be an integer >= {MIN_CHUNK_ROWS}, "
                              f"not {self.chunk_rows!r}")
        self.csr = self.csr.with_id_bytes(self.id_bytes)
        if self.resident_warps is not None and (
                not isinstance(self.resident_warps, (int, np.integer)) or self.resident_warps < 1):
            raise ConfigError(f"resident_warps must be a positive integer or None, "
                              f"not {self.resident_warps!r}")
        wave = (None if self.resident_warps is None
                else algorithms.wave_vertices_of(self.variant, int(self.resident_warps)))
        if self.run is None:
            self.run = algorithms.run(self.csr, self.kernel, source=self.source,
                                      iterations=self.iterations, wave_vertices=wave,
                                      serial_steps=algorithms.serial_steps_of(self.variant))
        self.address_map = address_map(self.csr.num_vertices, self.csr.num_edges, self.kernel,
                                       id_bytes=self.id_bytes, memory=self.memory,
                                       align_B=self.align_B)

    # ----------------------------------------------------------- descriptions
    @property
    def name(self) -> str:
        return f"{self.kernel}_{self.variant}"

    @property
    def result(self) -> np.ndarray:
        """BFS depths, SSSP distances (u32, 0xFFFFFFFF = unreached), CC labels, PR ranks."""
        return self.run.result

    @property
    def regions(self) -> list[Region]:
        return list(self.address_map.regions)

    @property
    def opcodes(self) -> list[str]:
        return opcode_names(self.kernel, self.id_bytes)

    @property
    def grid(self) -> int:
        return grid_of(self.variant, self.csr.num_vertices)

    @property
    def launches(self) -> list[KernelLaunch]:
        return [KernelLaunch(self.name, (self.grid, 1, 1), (THREADS_PER_CTA, 1, 1))
                for _ in self.run.active]

    @property
    def launch_infos(self) -> list[LaunchInfo]:
        return [LaunchInfo(self.name, self.grid, WARPS_PER_CTA, THREADS_PER_CTA)
                for _ in self.run.active]

    @property
    def active(self) -> list[np.ndarray]:
        """Active vertices of each launch (sorted)."""
        return self.run.active

    # --------------------------------------------------------------- traces
    def chunks(self) -> Iterator[InstTable]:
        """InstTable chunks of every launch in order (see module doc)."""
        prog = program(self.kernel, self.id_bytes, self.include_device)
        return launch_chunks(self.csr, self.kernel, self.variant, prog, self.address_map,
                             self.opcodes, self.run, self.source, self.include_device,
                             int(self.chunk_rows))

    def trace(self) -> WarpTrace:
        return WarpTrace(self.launches, self.opcodes, self.regions, _Chunks(self))

    def requests(self, cache: CacheConfig | None = None, cache_host: bool = True) -> RequestStream:
        """Host read requests of the run.

        Without ``cache``: computed directly from the index ranges (the fast
        path; equal to ``coalesce(self.trace()).host_reads()``). With a
        :class:`~hostlink.traces.cache.CacheConfig`: the lane trace through
        the coalescer with those caches (``cache_host``: host sectors go
        through them; :func:`hostlink.traces.cache.host_read_cache` says
        whether a GPU caches host reads), so a sector a lane finds cached
        sends no request and its bytes count as useful to the request that
        brought it in. Accesses reach the caches in trace order (one warp's
        units after another's, see :mod:`.emit`); with ``include_device`` the
        device arrays' lines compete for the same caches, and ``inst`` then
        numbers the device instructions too.
        """
        if cache is not None:
            if not isinstance(cache, CacheConfig):
                raise ConfigError(f"requests(cache=...) takes a CacheConfig or None, "
                                  f"not {type(cache).__name__}")
            from hostlink.traces.coalescer import coalesce
            return coalesce(self.trace(), cache=cache, cache_host=cache_host).host_reads()
        prog = program(self.kernel, self.id_bytes, False)
        plans = (plan_launch(self.csr, self.variant, prog, act, i, False, self.id_bytes)
                 for i, act in enumerate(self.run.active))
        slots = [(self.address_map.base(ins.region), ins.width_B,
                  self.address_map[ins.region].location) for ins in prog.trip]
        return host_requests(plans, self.run.active, self.csr.offsets, self.variant, slots,
                             self.launch_infos)

    def request_histogram(self) -> dict[int, int]:
        """Host read request counts by size in bytes."""
        return self.requests().size_histogram()


def emulate(csr: CSR, kernel: str, variant: str, **kw) -> Emulation:
    """Run ``kernel`` ('bfs', 'sssp', 'cc', 'pagerank') as ``variant`` on ``csr``."""
    return Emulation(csr, kernel, variant, **kw)


def request_histogram(csr: CSR, kernel: str, variant: str, **kw) -> dict[int, int]:
    """Host read requests by size of one emulated run, by the fast path."""
    return emulate(csr, kernel, variant, **kw).request_histogram()
