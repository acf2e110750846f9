"""The request stream: what every timing model consumes.

A request stream is the sequence of memory requests the GPU's memory system
sends for a kernel run, after coalescing: for host memory these are the PCIe
read (or write) requests of 32, 64, 96 or 128 B; for device memory, 32 B
sectors. Requests keep the warp and the dynamic instruction that issued them,
so a timing model can replay each warp's program order.

Assumptions:
- one row per request; rows are grouped by launch, then warp, then
  instruction (program order within each warp);
- ``useful_B`` counts the bytes inside the request that some lane asked for,
  so ``sum(useful_B) / sum(size_B)`` is the coalescing efficiency.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from hostlink.model.geometry import LINE_B, WARP_SIZE

SPACE_HOST = 0
SPACE_DEVICE = 1

REQUEST_DTYPES = {
    "launch": np.uint32,   # kernel launch index, in issue order
    "warp": np.uint32,     # warp id within its launch: cta * warps_per_cta + warp_in_cta
    "inst": np.uint32,     # dynamic memory-instruction index within the warp
    "addr": np.uint64,     # first byte of the request
    "size_B": np.uint16,   # request size in bytes
    "useful_B": np.uint16, # bytes of the request some lane asked for
    "space": np.uint8,     # SPACE_HOST or SPACE_DEVICE
    "is_write": np.bool_,
}

#: the optional per-row columns (see :class:`RequestStream`): not stored with a trace
OPTIONAL_COLUMNS = ("waits", "lines", "follows", "atomic", "stand_in")


@dataclass(frozen=True)
class LaunchInfo:
    """One kernel launch: its name, grid and the warps per CTA.

    ``warp_insts`` and ``longest_warp_insts``: the warp instructions of every
    kind the launch issues, and those of its longest warp, where the trace
    gives them (0: unknown); :mod:`hostlink.model.compute` bounds the launch's
    time by their issue. ``stall_sm_clocks``: SM clocks, summed over the SMs,
    that some of those instructions are known to take beyond one per scheduler
    a clock (their dependences' stalls, as measured; 0: none known).
    ``regs_per_thread``: the registers a thread of the kernel uses, which bound the
    CTAs an SM holds at once (:mod:`hostlink.model.occupancy`; 0: unknown).
    ``shared_writes``: writes the launch makes to one word that all its warps share
    (a traversal's edge counter and ``changed`` flag), which the L2 serves one
    after another (``gpu.shared_write_ns``; 0: none known). Not
    compared: two records of one launch are equal whether or not they carry the
    counts."""
    name: str
    ctas: int
    warps_per_cta: int
    threads_per_cta: int
    warp_insts: int = field(default=0, compare=False)
    longest_warp_insts: int = field(default=0, compare=False)
    stall_sm_clocks: float = field(default=0.0, compare=False)
    regs_per_thread: int = field(default=0, compare=False)
    shared_writes: int = field(default=0, compare=False)


@dataclass(frozen=True)
class RequestStream:
    """Columns of equal length, one row per request (see REQUEST_DTYPES).

    ``waits`` (optional, one bool per row, the same for every row of an
    instruction): the request's instruction issues only once every earlier
    instruction of its warp has completed (a data or control dependence on
    them), whatever the warp's ``gpu.loads_in_flight_per_warp``. None: no such
    dependences are known, instructions wait only for a free slot of that
    window. It is not stored with a trace: the source that knows the kernel's
    dependences sets it (:func:`hostlink.traces.emulator.issue_order.walk_waits`).

    ``lines`` (optional, one count >= 1 per row): the 128 B lines of its
    instruction a request stands for in the SM's issue stage
    (:mod:`hostlink.model.des.events`); a compact stream that folds an
    instruction's scattered reads into one request sets it
    (:func:`hostlink.traces.emulator.visits.with_visit_skeleton`). None: one each.
    Not stored with a trace either.

    ``follows`` (optional, one bool per row): the request leaves the SM's issue
    stage with its instruction's first request, whatever line it reads, and costs
    the stage nothing of its own: the sector requests of a load that bypasses the
    L1 (``ld.cv``), which cost a warp's round next to nothing where the default
    operator's cost 14-15 ns each (validation/experiments/request_cost/runs/h100). None:
    every line pays. Not stored with a trace either.

    ``atomic`` (optional, one bool per row, the same for every row of an
    instruction): the request's instruction is an atomic whose old value the warp
    waits for (an ``ATOM``; a ``RED`` reduction is a write no one waits for). A
    device atomic takes ``gpu.atomic_extra_ns`` beyond a load the L2 serves, and
    its lines leave the warp ``gpu.atomic_request_gap_ns`` apart
    (validation/experiments/atomic_chase/runs/h200). None: no instruction is such an atomic
    (or none is known). Set by the coalescer; not stored with a trace.

    ``stand_in`` (optional, one bool per row): in a stream whose requests stand for
    lines (``lines``), the request stands for a dependent step of a walk, not for a
    line the GPU's L2 could hold (:mod:`hostlink.model.l2_lines`). None: in such a
    stream, the device requests stand in and the host requests are lines. Set where a
    run in device memory makes every request a device one; not stored with a trace."""
    launch: np.ndarray
    warp: np.ndarray
    inst: np.ndarray
    addr: np.ndarray
    size_B: np.ndarray
    useful_B: np.ndarray
    space: np.ndarray
    is_write: np.ndarray
    launches: tuple[LaunchInfo, ...] = field(default=())
    waits: np.ndarray | None = None
    lines: np.ndarray | None = None
    follows: np.ndarray | None = None
    atomic: np.ndarray | None = None
    stand_in: np.ndarray | None = None

    def __post_init__(self) -> None:
        n = len(self.addr)
        for name, dtype in REQUEST_DTYPES.items():
            col = getattr(self, name)
            if len(col) != n:
                raise ValueError(f"RequestStream column '{name}' has {len(col)} rows, expected {n}")
            if col.dtype != dtype:
                object.__setattr__(self, name, np.asarray(col, dtype=dtype))
        for name in OPTIONAL_COLUMNS:
            col = getattr(self, name)
            if col is None:
                continue
            if len(col) != n:
                raise ValueError(f"RequestStream column '{name}' has {len(col)} rows, "
                                 f"expected {n}")
            if name != "lines":
                object.__setattr__(self, name, np.asarray(col, dtype=np.bool_))
                continue
            lines = np.asarray(col)
            if n and lines.min() < 1:
                raise ValueError(f"RequestStream column 'lines': row {int(np.argmin(lines))} "
                                 f"stands for {int(lines.min())} lines (at least 1)")
            object.__setattr__(self, "lines", lines.astype(np.uint16))

    def _with(self, **columns) -> "RequestStream":
        optional = {k: getattr(self, k) for k in OPTIONAL_COLUMNS}
        optional.update(columns)
        return RequestStream(**{k: getattr(self, k) for k in REQUEST_DTYPES},
                             launches=self.launches, **optional)

    def with_waits(self, waits: np.ndarray | None) -> "RequestStream":
        """The same requests with the given dependences (see the class notes)."""
        return self._with(waits=waits)

    def with_lines(self, lines: np.ndarray | None) -> "RequestStream":
        """The same requests, each standing for ``lines`` issue lines (see the class notes)."""
        return self._with(lines=lines)

    def with_follows(self, follows: np.ndarray | None) -> "RequestStream":
        """The same requests, those marked leaving the issue stage with their
        instruction's first (see the class notes)."""
        return self._with(follows=follows)

    def with_atomic(self, atomic: np.ndarray | None) -> "RequestStream":
        """The same requests, those marked atomics whose warp waits for their old value
        (see the class notes)."""
        return self._with(atomic=atomic)

    def __len__(self) -> int:
        return len(self.addr)

    @classmethod
    def empty(cls) -> "RequestStream":
        return cls(**{k: np.zeros(0, dtype=v) for k, v in REQUEST_DTYPES.items()})

    @classmethod
    def concat(cls, parts: list["RequestStream"]) -> "RequestStream":
        """Join streams; launch indices of later parts are shifted after earlier ones.
        Of the optional columns only ``atomic`` is kept (False in parts without it)."""
        if not parts:
            return cls.empty()
        cols: dict[str, list[np.ndarray]] = {k: [] for k in REQUEST_DTYPES}
        launches: list[LaunchInfo] = []
        for part in parts:
            for k in REQUEST_DTYPES:
                col = getattr(part, k)
                cols[k].append(col + len(launches) if k == "launch" else col)
            launches.extend(part.launches)
        atomic = None
        if any(part.atomic is not None for part in parts):
            atomic = np.concatenate([np.zeros(len(p), dtype=np.bool_) if p.atomic is None
                                     else p.atomic for p in parts])
        return cls(**{k: np.concatenate(v).astype(REQUEST_DTYPES[k]) for k, v in cols.items()},
                   launches=tuple(launches), atomic=atomic)

    def select(self, mask: np.ndarray) -> "RequestStream":
        return RequestStream(**{k: getattr(self, k)[mask] for k in REQUEST_DTYPES},
                             launches=self.launches,
                             **{k: None if getattr(self, k) is None else getattr(self, k)[mask]
                                for k in OPTIONAL_COLUMNS})

    def host_reads(self) -> "RequestStream":
        return self.select((self.space == SPACE_HOST) & ~self.is_write)

    def size_histogram(self, space: int = SPACE_HOST, writes: bool = False) -> dict[int, int]:
        """Request counts by size in bytes for one space (host reads by default)."""
        sel = (self.space == space) & (self.is_write == writes)
        sizes, counts = np.unique(self.size_B[sel], return_counts=True)
        return {int(s): int(c) for s, c in zip(sizes, counts)}


@dataclass(frozen=True)
class TraversalWorkload:
    """One run of a graph traversal program: its request stream and what the GPU
    program adds around it (built by :func:`hostlink.traces.traversal.traversal_workload`).

    :func:`hostlink.model.predict.predict` times it with ``loads_in_flight`` as the
    GPU's loads in flight per warp, the program's host loop (``kernel``, over
    ``vertices``) between launches, and the UVM one-off cost of launches back to back
    (that of buffers within one VA block where ``managed`` says so)."""
    stream: RequestStream
    kernel: str                  # bfs | sssp | cc | pagerank: the program and its host loop
    variant: str
    loads_in_flight: int         # host requests a warp keeps in flight
    vertices: int                # the graph's, which size the host loop's copies
    edges_read: int = 0          # neighbour-list elements the active vertices read
    iterations: int = 0          # launches of the walk (levels, rounds)
    bytes_read_B: int = 0        # edges_read x element bytes (ids, and SSSP's weights)
    # its host arrays (edge list, SSSP's weights), each its own managed buffer in the
    # UVM modes, as (start address, bytes); empty: unknown
    managed: tuple[tuple[int, int], ...] = ()


# ----------------------------------------------------------------------------
# Workloads described beyond their request streams
#
# What the model must know about a kernel that its requests do not show: that a
# stream is a sample of a longer run, that its loads pick their lines by a hash,
# that the run is a copy, a dependent chase or a UVM first touch. predict() takes
# these as its ``source`` (:mod:`hostlink.model.runs` turns each into time).


@dataclass(frozen=True)
class HashedLines:
    """Warp loads whose blocks the kernel picks by a hash of the load's index over a
    region (the random pattern of ``gpu_kernels/micro/zc_common.cuh``), or whose lanes
    each pick a word by a hash (its scatter pattern): the hash's own instructions take
    issue time per load (:mod:`hostlink.model.kernel_costs`).

    ``region_B``: the bytes the blocks are drawn from, in whole blocks;
    ``block_B``: the bytes one warp load reads (32 lanes x bytes per lane);
    ``cache_op``: the loads' cache operator, ``default``, ``cg`` (no L1) or ``cv``
    (no cache: every load fetches again); ``per_lane``: each lane draws its own word
    (a load touches 32 lines), where a block's lanes read it whole."""
    region_B: int
    block_B: int
    cache_op: str = "default"
    per_lane: bool = False

    @property
    def lines_per_load(self) -> float:
        """Lines one warp load touches: its lanes' own where each draws a word, else
        its block's."""
        return float(WARP_SIZE) if self.per_lane else self.block_B / LINE_B

    @property
    def reads_per_load(self) -> int:
        """Reads a warp load sends at once where nothing caches them: a lane's each
        where each draws a word, else one for its block."""
        return WARP_SIZE if self.per_lane else 1

    @property
    def read_B(self) -> int:
        """Bytes a read of a line brings the load: a lane's word, or the whole line."""
        return self.block_B // WARP_SIZE if self.per_lane else LINE_B


@dataclass(frozen=True)
class SampledRun:
    """A kernel run predicted on a sample of its traffic: ``stream`` holds the first
    loads of every warp of the grid, whose steady-state bandwidth stands for the run.

    ``full_B``: the bytes the whole run's loads read; ``sample_B``: the bytes the
    stream's loads read (cache hits included); ``warps``: the grid's warps (0: not
    known); ``group``: the loads of one instruction (a warp keeps them in flight
    together); ``cached``: the loads went through the GPU's caches when the stream
    was built; ``hashed``: the loads pick their lines by a hash (None: they do not);
    ``loads_in_flight``: instructions a warp keeps in flight
    (``gpu.loads_in_flight_per_warp`` for this kernel)."""
    stream: RequestStream
    full_B: float
    sample_B: float
    warps: int = 0
    group: int = 1
    cached: bool = False
    hashed: HashedLines | None = None
    loads_in_flight: int = 1


@dataclass(frozen=True)
class FirstTouch:
    """A kernel's first touch of a managed (or, with ``prefetch``, prefetched) buffer of
    ``size_B`` bytes: ``stream`` reads a prefix of it whose loads read ``sample_B``
    bytes of the ``full_B`` the whole run reads; ``back_to_back``: the read is split
    over launches that follow one another (the UVM one-off cost of a traversal's);
    ``prefetch``: the buffer is prefetched to the GPU before the kernel; ``managed``: the
    buffer as a (start address, bytes) pair for the UVM model, where known."""
    stream: RequestStream
    size_B: int
    full_B: float
    sample_B: float
    back_to_back: bool = False
    prefetch: bool = False
    loads_in_flight: int = 1
    managed: tuple[tuple[int, int], ...] = ()  # the buffer as (start, size_B); empty: unknown


@dataclass(frozen=True)
class PointerChase:
    """One dependent load after another: ``steps`` loads timed from inside the kernel.

    In host memory ``stream`` holds the chase's requests (the loads the L1 serves send
    none), launch ``timed_launch`` the timed pass. In device memory ``levels`` holds
    the timed loads' count served by each level (L1, L2, DRAM:
    :data:`hostlink.model.device_memory.LEVELS`), per slowest lane of a step where
    ``lanes`` threads of each of ``warps`` warps chase together; ``atomic``: each step
    is an atomic that returns its word; ``load_B``: the bytes each step reads."""
    steps: int
    stream: RequestStream | None = None
    timed_launch: int = 1
    levels: tuple[float, ...] | None = None
    atomic: bool = False
    lanes: int = 1
    warps: int = 1
    loads_in_flight: int = 1
    load_B: int = 8


@dataclass(frozen=True)
class Copy:
    """A cudaMemcpy of ``size_B`` bytes by the copy engine, host to device
    (``to_device``) or device to host, timed back to back with others."""
    size_B: int
    to_device: bool = True


@dataclass(frozen=True)
class LaunchGrid:
    """A launch of ``ctas`` CTAs; ``stream``: the requests of its first
    ``sample_ctas`` CTAs (None: the kernel touches no memory); ``shared_writes``: its
    warps' writes to one word they all share (as :class:`LaunchInfo`'s)."""
    ctas: int
    stream: RequestStream | None = None
    sample_ctas: int = 0
    loads_in_flight: int = 1
    shared_writes: int = 0


@dataclass(frozen=True)
class HostLoopRun:
    """``iterations`` of a host program's loop (:data:`hostlink.model.host_loop.LOOPS`)
    around walk launches of ``walk_us`` each, sized for ``vertices``; no memory traffic."""
    loop: str
    iterations: int
    vertices: int
    walk_us: float = 0.0


@dataclass(frozen=True)
class Gather:
    """A gather of ``rows`` rows of ``row_B`` bytes from a table of ``table_B`` bytes
    (a GNN's feature gather, :mod:`hostlink.traces.gather`), timed by
    :mod:`hostlink.model.gather_run`. ``stream``: the requests of its first
    ``sample_rows`` rows (every warp of the grid, a few rows each);
    ``requests_by_size_B``: the whole run's host read requests by size ((size, count)
    pairs; empty: scaled from the sample); ``pages``/``sample_pages``: the distinct
    ``uvm.page_B`` pages the whole run and the sample touch (0: unknown, scaled by rows);
    ``host_threads``: the threads of the CPU-gather path; ``table_spans``: the distinct
    :data:`~hostlink.model.translation.PAGE_TABLE_SPAN_B` spans of the table the whole
    run touches; ``l2_flushed``: the run starts with the GPU's L2 flushed (as the
    gather program's timed kernels do), so its walks fetch page-table entries cold
    (:func:`~hostlink.model.translation.cold_span_time_ns`)."""
    stream: RequestStream
    rows: int
    row_B: int
    table_B: int
    sample_rows: int
    variant: str = "aligned"
    lane_B: int = 4
    requests_by_size_B: tuple[tuple[int, int], ...] = ()
    pages: int = 0
    sample_pages: int = 0
    loads_in_flight: int = 1
    host_threads: int = 16
    table_spans: int = 0
    l2_flushed: bool = False


@dataclass(frozen=True)
class HostRead:
    """``threads`` host threads reading ``rows`` random rows of ``row_B`` bytes from a
    host table of ``table_B`` bytes, each thread its share in turn; ``copy``: each row
    copied into its slot of a staging buffer (the CPU gather without its copy to the
    GPU), else only read. Timed by :func:`hostlink.model.cpu_gather.host_read_time`;
    no GPU and no link take part."""
    rows: int
    row_B: int
    table_B: int
    threads: int = 16
    copy: bool = False


#: the workloads :func:`hostlink.model.predict.predict` takes beside request streams and traces
WORKLOADS = (SampledRun, FirstTouch, PointerChase, Copy, LaunchGrid, HostLoopRun, Gather, HostRead)
