"""Microbenchmark twins: the workload each CUDA program of ``gpu_kernels/micro`` runs.

A microbenchmark case ``micro/<benchmark>/<parameters>`` is predicted by the public
:func:`hostlink.model.predict.predict` of the workload built here from the program's
documented access pattern (:data:`hostlink.model.workload.WORKLOADS`); what turns a
workload into time lives in the model (:mod:`hostlink.model.runs` and the modules it
names). This module holds no timing: it builds request streams (the coalescing rule
of :func:`hostlink.traces.emulator.fast.coalesce_ranges`: one request per run of
contiguous 32 B sectors within a 128 B line), launches and the parameters read off
case names, and reads the program's metrics off the prediction (:func:`metrics`).

``zc_read``/``zc_warps`` (a :class:`~hostlink.model.workload.SampledRun`) coalesced:
warp w's j-th load covers block w + j W of 32 x bytes_per_lane bytes at offset_B
(misaligned offsets split each block into a 32/64/96 B head and tail); strided:
thread t reads its own chunk_B chunk bytes_per_lane at a time (one sector per lane
and load); random: warp w's loads cover blocks ``mix64(seed ^ mix64(j)) % blocks``
of the first region_B bytes (the program's hash, reproduced bit for bit; the
workload says so, :class:`~hostlink.model.workload.HashedLines`, and the model adds
the hash's issue time, :mod:`hostlink.model.kernel_costs`); scatter: lane l of warp
w's j-th load reads word ``mix64(seed ^ mix64((first_w + j) 32 + l)) % words`` of the
region, one sector per lane (host memory only: in device memory which level serves
each lane's line is not modelled). A warp issues the loads
its kernel keeps in flight and then uses them all before the next ones, so those
loads are one instruction of the twin (it completes with its last load) and a warp
keeps one instruction in flight. How many: what the kernel's SASS shows
(:func:`read_kernel_in_flight`: the run's own record, else the committed build's),
which is the source's ``unroll`` except where ptxas pairs wide loads, unrolls a loop
further or waits for a load before calling a routine (the random pattern's modulo);
strided ``ld.cv`` loads of host memory overlap one per line
(:func:`cv_lines_in_flight`).
``ptr_chase`` (a :class:`~hostlink.model.workload.PointerChase`, timed by
:mod:`hostlink.model.chase`): one thread, one dependent 8 B load per step (a 32 B
request), an untimed pass then a timed pass: over the next links of the cycle where
the program reports ``revisits`` (fresh nodes), else over the same nodes (the first
H200 run's program). In host memory the stream holds both passes through the L1; in
device memory the twin replays the loads through the GPU's L1 and L2 with the
program's flushes and counts the level that serves each
(:func:`device_chase_levels`, :func:`device_chase_lane_levels`: the slowest of
``lanes`` threads; an atomic chase skips the L1); loads of more than one lane have
no twin unless atomic.
``uvm_touch`` (a :class:`~hostlink.model.workload.FirstTouch`): 4 B per lane, one
128 B line per warp load, sequential, the program's permutation ``j * 2654435761
mod n`` or one line every ``stride_B`` (sparse), in the UVM model by advice;
``prefetch``: the buffer prefetched, then the kernel on device memory.
``memcpy``: a :class:`~hostlink.model.workload.Copy` (:mod:`hostlink.model.copy_engine`).
``launch``: a :class:`~hostlink.model.workload.LaunchGrid`; ``host_loop``: a
:class:`~hostlink.model.workload.HostLoopRun`; ``gather``: a
:class:`~hostlink.model.workload.Gather` (:mod:`hostlink.validation.twin_gather`);
``host_read``: a :class:`~hostlink.model.workload.HostRead` (no GPU takes part).

Caches: host loads with the default cache operator go through the caches
:func:`hostlink.traces.cache.host_read_cache` gives for the system's GPU (the
coalescer with ``cache_host=True``; ``cache = cg``: those without the L1,
``cv``: none), loads reaching them in issue order (warps in turn, the loads of an
unrolled group back to back); a load that hits sends no request and costs the model
no time.

The strided pattern's L1 losses on a GH100 (H100, H200; the kernel at unroll 4,
host memory) are the measured ones (:mod:`hostlink.model.l1_losses`), where that
table stands for the run: a lane's later visits to a sector fetch it again, and
beyond that every fetch is sent twice, in the shares that give the table's host
sectors per sector read (:func:`hostlink.model.l1_losses.lossy_sector_requests`).
Elsewhere they are replayed. They depend on where the warps stand in their sequences, which the issue
order above keeps in step. The twin replays its loads twice, in step and with every
warp at an independent, uniform point of its own sequence (at a sector's first load;
:data:`DRIFT_SEED`), and keeps the replay that fetches more host bytes per byte read
(``extra["phases"]``). Assumption: warps whose lines survive in the L1 run ahead of
those whose lines are lost, so over a long grid-stride run they drift apart, and
their lines then crowd some sets past the L1's ways; where the SM's lines exceed the
L1 no line survives a round trip, every warp is held back alike and they stay in
step. Checked against the H200's Nsight Compute counts
(``validation/experiments/l1_probe/runs/h200`` and ``unroll_probe``) by
tests/validation/test_twin_strided_l1.py. The twin's prefix holds a few sectors per
lane, so the lines a warp leaves behind (which the LRU evicts first) do not enter
it, nor do the refetches of 16 B per lane (one sector per round trip: nothing to
lose in LRU order).

Assumptions of these twins (not of the model):
- a large run is predicted on a prefix of its traffic: every warp of the real
  grid is kept, each issues at most enough loads that the twin holds about
  ``max_requests`` requests; the steady-state bandwidth of the prefix (the
  bytes its loads read over kernel time) stands for the whole run, whose time
  is the launch overhead plus its bytes over that bandwidth (a warp keeps at
  least 8 x unroll loads, 2 x unroll for the strided pattern's 32-request
  instructions). UVM first touch is predicted on a prefix of the buffer of at
  most ``max_uvm_B`` (1 GiB by default: buffers up to 1 GiB whole) and scaled by
  size, all but the run's one-off first fault; a sparse prefix keeps whole
  strides, at least one line. First touch split over launches pays the one-off
  cost of back-to-back launches (``uvm.launches_first_fault_us`` where set, as a
  traversal: :func:`hostlink.model.uvm.model.first_fault_cost_us`), a single
  launch ``uvm.first_fault_us``.
- warps = 0 ("as many as fit") takes the grid the program reported
  (``warps_launched``) where the measured results hold it, else every
  resident warp slot of the GPU (``sm_count * max_warps_per_sm``).
- a buffer starts at a 2 MiB boundary (the allocators return page-aligned
  memory; the GPU page size of the mapping is the translation model's).
- the pointer chase's random cycle is drawn with NumPy (the program uses
  std::mt19937_64): the same number of distinct random nodes, not the same
  nodes.
- ``memcpy`` copies are timed back to back in a stream (the copy engine's setup
  per copy, :mod:`hostlink.model.copy_engine`).
"""
from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Callable

import numpy as np

from hostlink.model import l1_losses
from hostlink.model.l1_losses import mix64   # the programs' mixer (zc_common.cuh)
from hostlink.model.geometry import LINE_B, SECTOR_B
from hostlink.model.workload import (SPACE_DEVICE, SPACE_HOST, Copy, FirstTouch, HashedLines,
                                     HostLoopRun, LaunchGrid, LaunchInfo, PointerChase,
                                     RequestStream, SampledRun)
from hostlink.validation.sass import WAIT_MODEL
from hostlink.validation.twin_common import PREDICT_MODE, TwinError

MICRO_BASE = 0x7F00_0000_0000          # 2 MiB aligned
PERM_MULTIPLIER = 2654435761           # gpu_kernels/micro/uvm_touch.cu
DEFAULT_MAX_REQUESTS = 1 << 20
DEFAULT_MAX_UVM_B = 1 << 30
MIN_LOADS_PER_WARP = 8
#: loads in flight of the read kernels for runs without a record of their own: the SASS of
#: gpu_kernels/micro/zc_read (nvcc 13.0, sm_90; zc_warps holds the same kernels), unchanged
#: since the first run, as every later run's own record shows; package data of
#: hostlink.validation, copied from the committed run validation/experiments/sass/runs/h200 (its
#: "source" key says so)
REFERENCE_LOADS_IN_FLIGHT = Path(str(resources.files("hostlink.validation") / "data"
                                     / "zc_read_loads_in_flight.json"))
_CACHE_OPERATOR = {"default": 0, "cg": 1, "cv": 2}          # zc_common.cuh: enum Cache
_PATTERN = {"coalesced": 0, "strided": 1, "random": 2, "scatter": 3}   # zc_common.cuh: enum Pattern


# ----------------------------------------------------------------------------
# Request streams of the microbenchmarks


def warps_per_block(warps: int, sm_count: int) -> int:
    """The programs' block shape: the largest of 8, 4, 2, 1 dividing ``warps``
    that still gives one block per SM or more (zc_common.cuh)."""
    for w in (8, 4, 2, 1):
        if warps % w == 0 and warps // w >= min(warps, sm_count):
            return w
    return 1


def _stream(inst_row: np.ndarray, row_warp: np.ndarray, row_inst: np.ndarray,
            addr: np.ndarray, size: np.ndarray, useful: np.ndarray, *, space: int,
            launch: np.ndarray | int = 0, launches: tuple[LaunchInfo, ...] = ()) -> RequestStream:
    n = len(addr)
    launch_col = (np.full(n, launch, dtype=np.uint32) if np.isscalar(launch)
                  else np.asarray(launch)[inst_row])
    return RequestStream(
        launch=launch_col.astype(np.uint32), warp=row_warp[inst_row].astype(np.uint32),
        inst=row_inst[inst_row].astype(np.uint32), addr=addr.astype(np.uint64),
        size_B=size.astype(np.uint16), useful_B=useful.astype(np.uint16),
        space=np.full(n, space, dtype=np.uint8), is_write=np.zeros(n, dtype=bool),
        launches=launches)


def _ranges_stream(row_warp, row_inst, lo, hi, range_row, *, space, launches,
                   launch=0, presorted=True) -> RequestStream:
    """Coalesce lane byte ranges [lo, hi) of instructions ``range_row`` into requests."""
    from hostlink.traces.emulator.fast import coalesce_ranges

    r, addr, size, useful = coalesce_ranges(range_row.astype(np.int64), lo, hi, presorted)
    return _stream(r, row_warp, row_inst, addr, size, useful, space=space, launch=launch,
                   launches=launches)


def host_cache_for(params: dict, system):
    """The caches a microbenchmark's host loads go through, by its cache operator
    (:func:`hostlink.model.kernel_costs.cache_for_operator`)."""
    from hostlink.model.kernel_costs import cache_for_operator
    return cache_for_operator(system.gpu, str(params.get("cache", "default")))


def random_region_B(params: dict) -> int:
    """The bytes a random-pattern run draws its blocks from: ``region_B`` in whole blocks
    of 32 x bytes_per_lane (at least one), as the program rounds it."""
    blk = 32 * int(params.get("bytes_per_lane", 4))
    return max(1, int(params.get("region_B", 1 << 30)) // blk) * blk


def _lane_stream(warp, j, gid, lane_addr, lane_mask, width_B: int, *, launches, cache,
                 region_B: int, launch=None, space=SPACE_HOST) -> RequestStream:
    """Requests of lane-level loads through the caches (:func:`hostlink.traces.coalescer.coalesce`).

    Row ``r`` is the ``j[r]``-th load of warp ``warp[r]`` (0, 1, ... per warp and
    launch), ``gid[r]`` its instruction in the twin (loads of one unrolled group share
    it); ``lane_addr`` (n, 32) and ``lane_mask`` the lanes. Loads reach the caches
    in issue order: each launch's warps take their next instruction in turn, a
    warp issuing the loads of one instruction (an unrolled group) back to back."""
    from hostlink.traces.coalescer import coalesce
    from hostlink.traces.schema import (LOCATION_DEVICE, LOCATION_HOST, OP_LOAD, SPACE_GLOBAL,
                                        InstTable, KernelLaunch, Region)

    n = len(warp)
    launch = np.zeros(n, dtype=np.int64) if launch is None else np.asarray(launch, np.int64)
    wpc = np.array([li.warps_per_cta for li in launches], dtype=np.int64)[launch]
    order = np.lexsort((j, warp, np.asarray(gid, dtype=np.int64), launch))
    table = InstTable(
        launch=launch[order], cta=(warp // wpc)[order], warp=(warp % wpc)[order],
        pc=np.zeros(n), opcode=np.zeros(n), op=np.full(n, OP_LOAD), space=np.full(n, SPACE_GLOBAL),
        width_B=np.full(n, width_B), mask=np.asarray(lane_mask, dtype=np.uint32)[order],
        addrs=np.asarray(lane_addr, dtype=np.int64)[order].view(np.uint64))   # the same bits
    kls = [KernelLaunch(li.name, (li.ctas, 1, 1), (li.warps_per_cta * 32, 1, 1)) for li in launches]
    location = LOCATION_DEVICE if space == SPACE_DEVICE else LOCATION_HOST
    s = coalesce(table, [Region("buffer", MICRO_BASE, int(region_B), location)],
                 launches=kls, cache=cache, cache_host=True, include_device=True)
    if len(s) == 0:
        return s
    # the coalescer numbers a warp's loads 0, 1, ... in row order, i.e. j: map j to gid
    key = (launch * (int(warp.max()) + 1) + warp) * (int(j.max()) + 1) + j
    srt = np.argsort(key)
    skey = key[srt]
    want = ((s.launch.astype(np.int64) * (int(warp.max()) + 1) + s.warp.astype(np.int64))
            * (int(j.max()) + 1) + s.inst.astype(np.int64))
    inst = np.asarray(gid, dtype=np.int64)[srt[np.searchsorted(skey, want)]]
    return RequestStream(launch=s.launch, warp=s.warp, inst=inst.astype(np.uint32), addr=s.addr,
                         size_B=s.size_B, useful_B=s.useful_B, space=s.space,
                         is_write=s.is_write, launches=launches)


def _per_warp_counts(n_items: int, warps: int) -> np.ndarray:
    """Loads of each warp when warp w takes items w, w + W, w + 2W, ... < n_items."""
    w = np.arange(warps, dtype=np.int64)
    return np.maximum(0, -(-(n_items - w) // warps))


def _expand(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(warp, j) of every instruction for per-warp instruction counts."""
    warp = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
    first = np.cumsum(counts) - counts
    j = np.arange(len(warp), dtype=np.int64) - np.repeat(first, counts)
    return warp, j


@dataclass
class MicroTwin:
    """A microbenchmark case's workload (:data:`hostlink.model.workload.WORKLOADS`) and
    how the program's metrics read off its prediction."""
    case: str
    benchmark: str
    params: dict
    mode: str                        # prediction mode of the case's memory
    stream: RequestStream | None
    full_bytes_B: float              # useful bytes of the measured run
    twin_bytes_B: float              # useful bytes of the twin
    loads_in_flight: int = 1
    steps: int = 0                   # ptr_chase
    size_B: int = 0                  # memcpy, uvm_touch
    extra: dict = field(default_factory=dict)
    workload: object = None          # what predict() takes
    bound: str = ""                  # what bound the last prediction (bound_of)

    @property
    def scale(self) -> float:
        return self.full_bytes_B / self.twin_bytes_B if self.twin_bytes_B else 1.0

    @property
    def managed_on_host(self) -> bool:
        """Whether the case reads managed memory left on the host (SetAccessedBy)."""
        return (self.params.get("memory_mode") == "uvm_accessedby"
                or (self.benchmark == "uvm_touch" and self.params.get("advice") == "accessedby"))

    @property
    def predict_mode(self) -> str:
        """The mode :func:`hostlink.model.predict.predict` takes for the case: managed
        memory left on the host is ``uvm_accessedby`` (zero-copy, its own page walks)."""
        return "uvm_accessedby" if self.managed_on_host and self.mode == "zerocopy" else self.mode

    def system_for(self, system):
        """The system the case's kernel runs on (its loads in flight per warp; managed
        memory on the host with its own page walks), as predict() takes it."""
        from hostlink.model.runs import with_loads_in_flight
        from hostlink.model.translation import managed_host_view
        system = with_loads_in_flight(system, self.loads_in_flight)
        return managed_host_view(system) if self.managed_on_host else system

    def predict(self, system, fidelity: str = "des") -> dict[str, float]:
        """Predicted metrics (same names and units as the program's), from the public
        :func:`hostlink.model.predict.predict` of the case's workload."""
        from hostlink.model.predict import predict
        pred = predict(self.workload, system, mode=self.predict_mode, fidelity=fidelity)
        self.bound = bound_of(pred)
        return metrics(self, pred)


def bound_of(pred) -> str:
    """The bound a prediction names: its class where it has one (a gather's link,
    requests in flight, translation, the host's serve rate, ...), else its own name."""
    return str(pred.extra.get("bound_class") or pred.bound or "")


def metrics(twin: MicroTwin, pred) -> dict[str, float]:
    """The program's metrics of a twin, read off the prediction of its workload."""
    time_ms = pred.time_s * 1e3
    b = twin.benchmark
    if b == "ptr_chase":
        return {"lat_ns": pred.extra["step_ns"], "time_ms": time_ms}
    if b == "launch":
        return {"time_us": pred.time_s * 1e6, "time_ms": time_ms,
                "ns_per_cta": pred.extra["ns_per_cta"]}
    if b == "host_loop":
        return {"gap_us": pred.extra["gap_per_iteration_ns"] * 1e-3, "time_ms": time_ms,
                "kernel_time_ms": pred.kernel_time_s * 1e3}
    if b == "uvm_touch":
        out = {"prefetch_ms": pred.extra["prefetch_s"] * 1e3} if twin.workload.prefetch else {}
        out.update(time_ms=time_ms, bw_GBps=pred.bw_GBps,
                   kernel_ms=pred.extra["kernel_with_launch_s"] * 1e3)
        if int(twin.params.get("launches", 1)) > 1 and len(pred.per_launch_time_s) > 1:
            out["first_launch_ms"] = pred.per_launch_time_s[0] * 1e3
            out["later_launch_ms"] = float(np.mean(pred.per_launch_time_s[1:])) * 1e3
        return out
    return {"time_ms": time_ms, "bw_GBps": pred.bw_GBps}


def read_kernel_symbol(bytes_per_lane: int, cache: str, unroll: int, pattern: str) -> str:
    """The mangled name of ``zc::read_kernel<BPL, CACHE, UNROLL, PATTERN>``
    (gpu_kernels/micro/zc_common.cuh), as cuobjdump names it."""
    return (f"_ZN2zc11read_kernelILi{int(bytes_per_lane)}ELi{_CACHE_OPERATOR[cache]}"
            f"ELi{int(unroll)}ELi{_PATTERN[pattern]}EEEvNS_6LaunchE")


@functools.lru_cache(maxsize=1)
def _reference_programs() -> dict:
    try:
        return json.loads(REFERENCE_LOADS_IN_FLIGHT.read_text())["programs"]
    except (OSError, ValueError, KeyError) as exc:
        raise TwinError(f"{REFERENCE_LOADS_IN_FLIGHT}: cannot read the read kernels' loads "
                        f"in flight ({exc})") from None


def run_loads_in_flight(run_dir: str | Path) -> dict | None:
    """A run's record of the global loads each kernel keeps in flight, read from the
    programs' SASS by the runner (``loads_in_flight.json``: ``{program: {"kernels":
    {...}}}``); None where the run has none."""
    path = Path(run_dir) / "loads_in_flight.json"
    if not path.is_file():
        return None
    try:
        record = json.loads(path.read_text())
        programs = record["programs"]
    except (ValueError, KeyError, TypeError) as exc:
        raise TwinError(f"{path}: not a record of loads in flight ({exc})") from None
    if not isinstance(programs, dict):
        raise TwinError(f"{path}: 'programs' is not a table")
    if record.get("wait_model") != WAIT_MODEL:
        # read with an earlier wait model (register dependences, ld.cv loads one by one):
        # the reference, read from the same sources' SASS with the current one, stands in
        return None
    return programs


def read_kernel_in_flight(params: dict, programs: dict | None = None) -> int | None:
    """Global loads one thread of a zc_read/zc_warps point's kernel keeps in flight, as
    its SASS shows: from ``programs`` (a run's record, :func:`run_loads_in_flight`),
    else from :data:`REFERENCE_LOADS_IN_FLIGHT`; None where neither names the kernel.

    ptxas does not always keep the source's ``unroll``: 8 B per lane strided and 16 B
    per lane coalesced or strided at unroll 4 issue two pairs, the strided loop at
    unroll 1 four loads (it unrolls the loop), and the random pattern one load
    whatever the unroll (the call to its modulo routine waits for the load before;
    the ``sass``, ``unroll_probe`` and ``cv_overlap`` experiments)."""
    cache = str(params.get("cache", "default"))
    pattern = str(params.get("pattern", "coalesced"))
    if cache not in _CACHE_OPERATOR or pattern not in _PATTERN:
        return None
    bench = str(params.get("benchmark", "zc_read"))
    unroll = int(params.get("unroll", 4 if bench == "zc_read" else 1))
    symbol = read_kernel_symbol(int(params.get("bytes_per_lane", 4)), cache, unroll, pattern)
    for record in (programs or {}, _reference_programs()):
        for program in (bench, "zc_read"):        # zc_warps holds zc_read's kernels
            n = ((record.get(program) or {}).get("kernels") or {}).get(symbol)
            if n:
                return int(n)
    return None


def cv_lines_in_flight(group: int, bytes_per_lane: int) -> int:
    """Loads of a strided group with ``ld.cv`` on host memory that overlap: one per
    128 B line the group's loads span in a lane's chunk.

    A warp's ld.cv loads of a line it has a load in flight for wait for that load,
    where its loads of distinct lines overlap as the default operator's do: one warp's
    bandwidth over consecutive lines doubles with the unroll with either operator, but
    its strided ld.cv loads (a lane's next 4-16 B of one line) come at one load per
    round trip whatever the unroll (the ``warp_rounds`` and ``cv_overlap``
    experiments, validation/experiments/warp_rounds/). At 16 B per lane the loads come
    somewhat faster than one per round trip, which this rule leaves out."""
    return max(1, min(group, group * bytes_per_lane // LINE_B))


def _resolve_warps(params: dict, system, hint: float | None) -> int:
    w = int(params.get("warps", 0) or 0)
    if w > 0:
        return w
    if hint is not None and hint > 0:
        return int(round(hint))
    return int(system.gpu.sm_count * system.gpu.max_warps_per_sm)


def _launch(name: str, warps: int, sm_count: int) -> tuple[LaunchInfo, ...]:
    wpb = warps_per_block(warps, sm_count)
    return (LaunchInfo(name, warps // wpb, wpb, wpb * 32),)


def _block_stream(warp, j, group, lo, bpl: int, *, space, launches, cache, region_B: int):
    """The stream of warp loads of whole blocks (32 lanes x ``bpl`` bytes from ``lo``),
    ``group`` loads to an instruction: coalesced directly, or lane by lane through the
    caches where ``cache`` is given."""
    blk = 32 * bpl
    if cache is None:
        return _ranges_stream(warp, j // group, lo, lo + blk, np.arange(len(lo)),
                              space=space, launches=launches)
    lane = np.arange(32, dtype=np.int64)
    return _lane_stream(warp, j, j // group, lo[:, None] + lane * bpl,
                        np.full(len(lo), 0xFFFFFFFF), bpl, launches=launches, cache=cache,
                        region_B=region_B, space=space)


#: seed of the drifted warps' phases (any fixed value: the twins are deterministic)
DRIFT_SEED = 0x5EED_D81F


def _drifted_starts(warps: int, span: int, per_chunk: int, step: int) -> np.ndarray:
    """Where each warp stands in its own sequence of loads once the warps have
    drifted apart: independent, uniform over the first ``span`` loads, at a
    multiple of ``step`` loads into its chunk."""
    rng = np.random.default_rng(DRIFT_SEED)
    q = rng.integers(0, max(1, span), size=warps, dtype=np.int64)
    k, e = np.divmod(q, per_chunk)
    return k * per_chunk + (e // step) * step


def _strided_lanes(warps: int, starts: np.ndarray, n_inst: int, chunk: int, bpl: int,
                   group: int, nchunks: int):
    """The strided pattern's loads: warp w issues loads ``starts[w]`` to ``starts[w] +
    n_inst - 1`` of its threads' sequence (thread t: chunks t, t + T, ..., ``bpl`` bytes
    at a time; load q is element q mod per_chunk of the thread's chunk round q div
    per_chunk), ``group`` loads of a chunk to an instruction. Returns, per load with an
    active lane, its warp, its index ``i`` in the warp's prefix, its instruction
    ``gid``, its element ``e`` of the chunk, the lanes' first bytes (n, 32) and which
    lanes have a chunk."""
    threads = warps * 32
    per_chunk = chunk // bpl
    warp = np.repeat(np.arange(warps, dtype=np.int64), n_inst)
    i = np.tile(np.arange(n_inst, dtype=np.int64), warps)
    q = starts[warp] + i
    k, e = np.divmod(q, per_chunk)
    lane = np.arange(32, dtype=np.int64)
    chunk_id = warp[:, None] * 32 + lane[None, :] + k[:, None] * threads
    active = chunk_id < nchunks
    keep = active.any(axis=1)
    warp, i, k, e, chunk_id, active = (warp[keep], i[keep], k[keep], e[keep], chunk_id[keep],
                                       active[keep])
    lane_lo = MICRO_BASE + chunk_id * chunk + e[:, None] * bpl
    groups_per_chunk = -(-per_chunk // group)
    gid = k * groups_per_chunk + e // group
    gid -= (starts // per_chunk * groups_per_chunk + starts % per_chunk // group)[warp]
    return warp, i, gid, e, lane_lo, active


def _strided_stream(warps: int, starts: np.ndarray, n_inst: int, chunk: int, bpl: int,
                    group: int, nchunks: int, *, space, launches, cache):
    """The strided pattern's stream (:func:`_strided_lanes`' loads, through ``cache``
    where given) and the bytes its loads read."""
    warp, i, gid, _, lane_lo, active = _strided_lanes(warps, starts, n_inst, chunk, bpl, group,
                                                      nchunks)
    loaded = int(active.sum()) * bpl
    if cache is None:
        rows = np.broadcast_to(np.arange(len(warp))[:, None], lane_lo.shape)[active]
        lo = lane_lo[active]
        return _ranges_stream(warp, gid, lo, lo + bpl, rows, space=space,
                              launches=launches), loaded
    lane = np.arange(32, dtype=np.int64)
    mask = (active.astype(np.int64) << lane).sum(axis=1)
    return _lane_stream(warp, i, gid, np.where(active, lane_lo, MICRO_BASE), mask, bpl,
                        launches=launches, cache=cache, region_B=nchunks * chunk,
                        space=space), loaded


def _strided_measured_stream(warps: int, n_inst: int, chunk: int, bpl: int, group: int,
                             nchunks: int, refetch: float, *, space, launches):
    """The strided pattern's stream through an L1 that fetches ``refetch`` host sectors per
    sector read (:func:`hostlink.model.l1_losses.lossy_sector_requests`), and the bytes
    its loads read."""
    from hostlink.model.l1_losses import lossy_sector_requests

    warp, _, gid, e, lane_lo, active = _strided_lanes(warps, np.zeros(warps, dtype=np.int64),
                                                      n_inst, chunk, bpl, group, nchunks)
    loaded = int(active.sum()) * bpl
    row, addr, size, useful = lossy_sector_requests(warp, gid, e, lane_lo, active, bpl, group,
                                                    refetch)
    return _stream(row, warp, gid, addr, size, useful, space=space,
                   launches=launches), loaded


def build_zc(case: str, params: dict, system, *, warps_hint: float | None = None,
             max_requests: int = DEFAULT_MAX_REQUESTS,
             in_flight: int | None = None, measured_l1: bool = True) -> MicroTwin:
    """Twin of a zc_read or zc_warps point: a warp's instruction is the ``in_flight``
    loads its kernel keeps in flight (:func:`read_kernel_in_flight`), ``unroll`` where
    that is not known. ``measured_l1``: the strided pattern's L1 losses from
    :mod:`hostlink.model.l1_losses` where they were measured for the GPU and
    kernel (False: the LRU replays for every GPU)."""
    bench = params["benchmark"]
    pattern = params.get("pattern", "coalesced")
    op = params.get("op", "load")
    if op != "load":
        raise TwinError(f"case '{case}': op '{op}' has no twin: the twins model loads "
                        "(device-memory writes: validation/experiments/write_cost/runs/h100)")
    if pattern == "scatter" and params.get("memory_mode", "zerocopy") == "device":
        raise TwinError(f"case '{case}': pattern 'scatter' in device memory has no twin: which "
                        "level (L2, DRAM) serves each lane's line is not modelled")
    bpl = int(params.get("bytes_per_lane", 4))
    blk = 32 * bpl
    unroll = int(params.get("unroll", 4 if bench == "zc_read" else 1))
    warps = _resolve_warps(params, system, warps_hint)
    total_B = int(params.get("total_B", 1 << 30))
    per_warp_B = int(params.get("max_per_warp_B", 1 << 30))
    mode_name = params.get("memory_mode", "zerocopy")
    if mode_name not in PREDICT_MODE:
        raise TwinError(f"case '{case}': unknown memory_mode '{mode_name}'")
    space = SPACE_DEVICE if mode_name == "device" else SPACE_HOST
    mode = "device" if mode_name == "device" else PREDICT_MODE[mode_name]
    launches = _launch(bench, warps, system.gpu.sm_count)
    nbytes = min(total_B, warps * per_warp_B)
    group = int(in_flight) if in_flight else unroll
    issued = max(unroll, group)       # a prefix keeps whole unrolled and compiled groups
    if pattern == "strided" and space == SPACE_HOST and params.get("cache") == "cv":
        group = cv_lines_in_flight(group, bpl)
    # device loads pass the same L1 (host_read_cache: the L1 alone; a device load
    # it misses is served at the L2's latency, gpu.device_lat_ns)
    cache = host_cache_for(params, system)
    phases = None                     # strided through the L1: the warps' phases replayed
    l1_note: dict = {}                # strided through the L1 measured: its losses

    hashed = None            # loads whose addresses the kernel draws by a hash
    if pattern == "coalesced":
        offset = int(params.get("offset_B", 0))
        nblocks = nbytes // blk
        full = nblocks * blk
        counts = _per_warp_counts(nblocks, warps)
        per_inst = -(-(offset % LINE_B + blk) // LINE_B)
        cap = max(MIN_LOADS_PER_WARP * issued, -(-max_requests // max(1, warps * per_inst)))
        counts = np.minimum(counts, cap)
        warp, j = _expand(counts)
        lo = MICRO_BASE + offset + (warp + j * warps) * blk
        loaded = len(lo) * blk
        stream = _block_stream(warp, j, group, lo, bpl, space=space, launches=launches,
                               cache=cache, region_B=offset + nbytes + LINE_B)
    elif pattern == "strided":
        chunk = int(params.get("chunk_B", 4096))
        if chunk % bpl:
            raise TwinError(f"case '{case}': chunk_B {chunk} is not a multiple of {bpl}")
        threads = warps * 32
        nchunks = max(1, nbytes // chunk)
        full = nchunks * chunk
        per_chunk = chunk // bpl
        rounds = -(-nchunks // threads)
        cap = max(2 * issued, -(-max_requests // max(1, warps * 32)))
        n_inst = min(rounds * per_chunk, cap)
        refetch = None
        # (chunks of whole sectors: no two lanes share one)
        if (measured_l1 and cache is not None and cache.l1_size_B > 0 and chunk % SECTOR_B == 0
                and l1_losses.applies(system.gpu, cache_op=str(params.get("cache", "default")),
                                      space_host=space == SPACE_HOST, bytes_per_lane=bpl,
                                      unroll=unroll)):
            refetch = l1_losses.measured_loss(chunk, bpl, warps / system.gpu.sm_count,
                                              nchunks / threads)
        measured = refetch is not None
        if measured:
            # the losses measured on this GPU's L1 (model/l1_losses.py), not replayed,
            # on a prefix of whole sectors (a sector cut short would count its fetch
            # against part of its bytes)
            whole = int(np.lcm(group, max(1, SECTOR_B // bpl)))
            n_whole = min(rounds * per_chunk, -(-n_inst // whole) * whole)
            stream, loaded = _strided_measured_stream(warps, n_whole, chunk, bpl, group, nchunks,
                                                      refetch, space=space, launches=launches)
            l1_note = {"l1": "measured", "refetch": refetch}
        else:
            in_step = np.zeros(warps, dtype=np.int64)
            stream, loaded = _strided_stream(warps, in_step, n_inst, chunk, bpl, group, nchunks,
                                             space=space, launches=launches, cache=cache)
        if not measured and cache is not None and rounds * per_chunk > n_inst:
            # the L1's losses depend on the warps' phases: replay the loads of warps
            # drifted apart too (each at the first load of a sector and of a compiled
            # group) and keep the replay that fetches more per byte read
            step = int(np.lcm(group, max(1, SECTOR_B // bpl)))
            starts = _drifted_starts(warps, rounds * per_chunk - n_inst, per_chunk, step)
            drifted, drifted_loaded = _strided_stream(
                warps, starts, n_inst, chunk, bpl, group, nchunks, space=space,
                launches=launches, cache=cache)
            if (drifted.size_B.astype(np.int64).sum() * loaded
                    > stream.size_B.astype(np.int64).sum() * drifted_loaded):
                stream, loaded = drifted, drifted_loaded
                phases = "drifted"
            else:
                phases = "in step"
    elif pattern in ("random", "scatter"):
        # warp w takes loads [w P, (w + 1) P) of the run's, P = ceil(loads / warps), and
        # picks its addresses by a hash of the load's index (zc_common.cuh)
        region_B = random_region_B(params)
        hashed = HashedLines(region_B, blk, str(params.get("cache", "default")),
                             per_lane=pattern == "scatter")
        nblocks = nbytes // blk
        full = nblocks * blk
        per_warp = -(-nblocks // warps)
        first = np.arange(warps, dtype=np.int64) * per_warp
        counts = np.clip(np.minimum(nblocks, first + per_warp) - first, 0, None)
        per_load = int(hashed.lines_per_load)      # the requests of a load
        cap = max(MIN_LOADS_PER_WARP * issued, -(-max_requests // max(1, warps * per_load)))
        warp, jl = _expand(np.minimum(counts, cap))
        jg = (first[warp] + jl).astype(np.uint64)
        seed = np.uint64(int(params.get("seed", 1)))
        loaded = len(warp) * blk
        if pattern == "random":      # the warp reads a whole block
            line = mix64(seed ^ mix64(jg)) % np.uint64(region_B // blk)
            stream = _block_stream(warp, jl, group, MICRO_BASE + line.astype(np.int64) * blk,
                                   bpl, space=space, launches=launches, cache=cache,
                                   region_B=region_B)
        else:                        # each lane reads its own word (kScatter)
            lane = np.arange(32, dtype=np.uint64)
            word = mix64(seed ^ mix64(jg[:, None] * np.uint64(32) + lane)) \
                % np.uint64(region_B // bpl)
            lane_lo = MICRO_BASE + word.astype(np.int64) * bpl
            if cache is None:
                lo = lane_lo.ravel()
                stream = _ranges_stream(warp, jl // group, lo, lo + bpl,
                                        np.repeat(np.arange(len(warp)), 32), space=space,
                                        launches=launches, presorted=False)
            else:
                stream = _lane_stream(warp, jl, jl // group, lane_lo,
                                      np.full(len(warp), 0xFFFFFFFF), bpl, launches=launches,
                                      cache=cache, region_B=region_B, space=space)
    else:
        raise TwinError(f"case '{case}': unknown pattern '{pattern}'")
    if len(stream) == 0:
        raise TwinError(f"case '{case}': every load of the twin hits in the caches (the model "
                        "gives cache hits no time)")
    if pattern == "strided" and space == SPACE_HOST and params.get("cache") == "cv":
        # a strided ld.cv load's sector requests leave the SM with its first: 32 of them
        # cost a warp's round what one line does (the request_cost experiment,
        # validation/experiments/request_cost/runs/h100), where the default operator's
        # requests cost an issue gap each
        stream = stream.with_follows(np.ones(len(stream), dtype=bool))
    # the bytes the twin's loads read (cache hits included), as the program counts them
    workload = SampledRun(stream, float(full), float(loaded), warps=warps, group=group,
                          cached=cache is not None, hashed=hashed, loads_in_flight=1)
    return MicroTwin(case, bench, params, mode, stream, float(full), float(loaded),
                     loads_in_flight=1,
                     extra={"warps": warps, "cached": cache is not None, "group": group,
                            **({"phases": phases} if phases else {}), **l1_note},
                     workload=workload)


def build_ptr_chase(case: str, params: dict, system, *,
                    revisits_hint: float | None = None) -> MicroTwin:
    """Twin of a pointer-chase point: an untimed pass, then the timed pass (launch 1).

    Programs that report ``revisits`` (``revisits_hint`` not None) time the next
    ``steps`` links of the cycle, nodes never loaded before when the chain holds
    2 x steps of them; earlier ones (first_run) timed the untimed pass's links again."""
    stride = int(params.get("stride_B", 4096))
    footprint = int(params.get("footprint_B", 64 << 20))
    steps = int(params.get("steps", 2000))
    n = footprint // stride
    if n < 2:
        raise TwinError(f"case '{case}': footprint holds fewer than 2 nodes")
    fresh = revisits_hint is not None
    total = 2 * steps if fresh else steps
    if params.get("order", "random") == "seq":
        chain = np.arange(total, dtype=np.int64) % n
    else:
        rng = np.random.default_rng(int(params.get("seed", 1)))
        k = min(total, n)
        others = rng.choice(np.arange(1, n, dtype=np.int64), size=k - 1, replace=False) \
            if n <= 1 << 24 else (rng.integers(1, n, size=k - 1, dtype=np.int64))
        cyc = np.concatenate([[0], others])
        chain = np.resize(cyc, total)
    nodes, timed = (chain[:steps], chain[steps:]) if fresh else (chain, chain)
    space = SPACE_DEVICE if params.get("memory_mode") == "device" else SPACE_HOST
    cache_op = str(params.get("cache", "default"))
    warps = int(params.get("warps", 1))
    lanes = min(int(params.get("lanes", 1)), n // max(1, warps))   # as the program runs it
    if cache_op == "atomic" and space != SPACE_DEVICE:
        raise TwinError(f"case '{case}': atomic chases run in device memory only")
    if (lanes > 1 or warps > 1) and cache_op != "atomic":
        raise TwinError(f"case '{case}': a load of {lanes} lanes by {warps} warps has no twin "
                        "(the time a load past the L1 spends on its lines is not modelled; an "
                        "atomic's is)")
    if space == SPACE_DEVICE:
        if lanes > 1 or warps > 1:
            if not fresh:
                raise TwinError(f"case '{case}': a chase of {lanes} lanes by {warps} warps "
                                "needs the program that reports revisits (an L2 flush before "
                                "each pass)")
            levels = device_chase_lane_levels(n, steps, lanes, stride, cache_op, system.gpu,
                                              seed=int(params.get("seed", 1)),
                                              order=str(params.get("order", "random")),
                                              warps=warps)
        else:
            levels = device_chase_levels(nodes, timed, stride, cache_op, system.gpu,
                                         l2_flushed=fresh)
        workload = PointerChase(steps, levels=tuple(float(c) for c in levels),
                                atomic=cache_op == "atomic", lanes=lanes, warps=warps)
        return MicroTwin(case, "ptr_chase", params, "device", None, float(8 * steps),
                         float(8 * steps), loads_in_flight=1, steps=steps,
                         extra={"levels": levels, "atomic": cache_op == "atomic",
                                "lanes": lanes, "warps": warps}, workload=workload)
    mode = "device" if space == SPACE_DEVICE else PREDICT_MODE.get(params.get("memory_mode",
                                                                              "zerocopy"))
    lo = MICRO_BASE + np.concatenate([nodes, timed]) * stride
    n_inst = len(lo)
    row_inst = np.arange(n_inst, dtype=np.int64) % steps
    row_warp = np.zeros(n_inst, dtype=np.int64)
    launch_of_row = np.repeat(np.arange(2), steps)
    li = LaunchInfo("ptr_chase", 1, 1, 1)
    # device loads pass the same L1 (host_read_cache: the L1 alone; a device load
    # it misses is served at the L2's latency, gpu.device_lat_ns)
    cache = host_cache_for(params, system)
    if cache is None:
        stream = _ranges_stream(row_warp, row_inst, lo, lo + 8, np.arange(n_inst), space=space,
                                launches=(li, li), launch=launch_of_row)
    else:
        addr = np.zeros((n_inst, 32), dtype=np.int64)
        addr[:, 0] = lo
        stream = _lane_stream(row_warp, row_inst, row_inst, addr, np.ones(n_inst), 8,
                              launches=(li, li), cache=cache, region_B=footprint,
                              launch=launch_of_row)
    return MicroTwin(case, "ptr_chase", params, mode, stream, float(8 * steps), float(8 * steps),
                     loads_in_flight=1, steps=steps,
                     workload=PointerChase(steps, stream=stream, timed_launch=1))


def device_chase_levels(untimed: np.ndarray, timed: np.ndarray, stride_B: int, cache: str,
                        gpu, *, l2_flushed: bool) -> np.ndarray:
    """Loads of a device pointer chase's timed pass served by the L1, the L2 and DRAM
    (:data:`hostlink.model.device_memory.LEVELS` order; the caches replayed by
    :func:`hostlink.model.chase.chase_levels`).

    The program flushes the L2 before each pass where it reports ``revisits``
    (``l2_flushed``): the timed pass starts from empty caches. The first H200 run's
    program flushed only before the untimed pass, so the timed pass finds the nodes
    the untimed one loaded in the L2. The L1 starts empty at each launch; loads with
    ``cg`` or ``cv`` skip it (device memory's point of coherence is the L2), and so
    do atomics (performed at the L2)."""
    from hostlink.model.chase import chase_levels

    if cache not in ("default", "cg", "cv", "atomic"):
        raise TwinError(f"pointer chase: unknown cache operator '{cache}'")

    def addr(nodes: np.ndarray) -> np.ndarray:
        return MICRO_BASE + np.asarray(nodes, dtype=np.int64) * stride_B

    return chase_levels(gpu, addr(timed), warmup_addr=None if l2_flushed else addr(untimed),
                        l1=cache == "default")


def device_chase_lane_levels(n: int, steps: int, lanes: int, stride_B: int, cache: str, gpu, *,
                             seed: int = 1, order: str = "random", warps: int = 1) -> np.ndarray:
    """Steps of a device chase by ``lanes`` threads of each of ``warps`` warps whose
    slowest lane of warp 0 (the one timed) the L1, the L2 or DRAM served
    (:data:`hostlink.model.device_memory.LEVELS` order).

    The program's threads chase one cycle over the ``n`` nodes, lane 0 of warp 0 from
    where the untimed pass ended (``steps`` links from node 0), lane l of warp w from
    node ``w * lanes + l``, in both passes; the L2 is flushed before the timed pass
    (programs that report ``revisits``). The twin's cycle is a random one (seeded, not
    the program's own), or node i to i + 1 (``order`` seq); the threads step in
    lockstep, a step's looked up in thread order
    (:func:`hostlink.model.chase.chase_levels`)."""
    from hostlink.model.chase import chase_levels

    if cache not in ("default", "cg", "cv", "atomic"):
        raise TwinError(f"pointer chase: unknown cache operator '{cache}'")
    lanes = min(lanes, n // max(1, warps))      # as the program runs it
    threads = lanes * max(1, warps)
    if order == "seq":
        cycle = np.arange(n, dtype=np.int64)
    else:
        cycle = np.random.default_rng(seed).permutation(n).astype(np.int64)
    pos = np.empty(n, dtype=np.int64)
    pos[cycle] = np.arange(n, dtype=np.int64)
    start = pos[np.arange(threads, dtype=np.int64)]
    start[0] = (pos[0] + steps) % n
    at = (start[None, :] + np.arange(steps, dtype=np.int64)[:, None]) % n   # (steps, threads)
    nodes = cycle[at]
    return chase_levels(gpu, MICRO_BASE + nodes * stride_B, l1=cache == "default", lanes=lanes)


def build_memcpy(case: str, params: dict, system) -> MicroTwin:
    size = int(params.get("size_B", 1 << 30))
    return MicroTwin(case, "memcpy", params, "zerocopy", None, float(size), float(size),
                     size_B=size,
                     workload=Copy(size, to_device=params.get("direction", "h2d") != "d2h"))


def build_uvm_touch(case: str, params: dict, system, *, warps_hint: float | None = None,
                    max_uvm_B: int = DEFAULT_MAX_UVM_B) -> MicroTwin:
    """Twin of a UVM first-touch point (advice none, readmostly, prefetch or accessedby)."""
    size = int(params.get("size_B", 256 << 20))
    pattern = params.get("pattern", "seq")
    advice = params.get("advice", "none")
    warps = _resolve_warps(params, system, warps_hint)
    warps = -(-warps // 8) * 8                       # the program launches whole 8-warp blocks
    launches = _launch("uvm_touch", warps, system.gpu.sm_count)
    twin_size = min(size, max_uvm_B)
    full_B = size
    nblocks = twin_size // LINE_B
    if pattern == "seq":
        counts = _per_warp_counts(nblocks, warps)
        warp, j = _expand(counts)
        block = warp + j * warps
    elif pattern == "sparse":
        stride = int(params.get("stride_B", 2 << 20))
        if stride < LINE_B or stride % LINE_B:
            raise TwinError(f"case '{case}': stride_B must be a multiple of {LINE_B}")
        # the program touches size // stride lines; the prefix keeps whole strides and at
        # least one line (a stride above max_uvm_B would otherwise leave it empty)
        lines = size // stride
        twin_lines = min(lines, max(1, max_uvm_B // stride))
        full_B, twin_size = lines * stride, twin_lines * stride
        counts = _per_warp_counts(twin_lines, warps)
        warp, j = _expand(counts)
        block = (warp + j * warps) * (stride // LINE_B)
    elif pattern == "random":
        per = -(-nblocks // warps)
        first = np.arange(warps, dtype=np.int64) * per
        counts = np.clip(np.minimum(nblocks, first + per) - first, 0, None)
        warp, jl = _expand(counts)
        jg = first[warp] + jl
        block = (jg * PERM_MULTIPLIER) % nblocks
        j = jl
    else:
        raise TwinError(f"case '{case}': unknown pattern '{pattern}'")
    launch_of_row: np.ndarray | int = 0
    parts = int(params.get("launches", 1))
    if parts > 1:
        # the timed read split over launches: launch k reads lines [k n / K, (k+1) n / K)
        # of the n the pattern touches, in the pattern's order within its part, with
        # the whole grid (gpu_kernels/micro/uvm_touch.cu); its warps are numbered apart
        if pattern not in ("seq", "sparse") or twin_size != size:
            raise TwinError(f"case '{case}': a read split over launches is modelled for the "
                            "seq and sparse patterns of a buffer predicted whole only")
        per_line = 1 if pattern == "seq" else int(params.get("stride_B", 2 << 20)) // LINE_B
        n = nblocks if pattern == "seq" else lines
        parts = min(parts, n)
        ws, js, bs, ks = [], [], [], []
        for k in range(parts):
            first, last = k * n // parts, (k + 1) * n // parts
            w, jj = _expand(_per_warp_counts(last - first, warps))
            ws.append(w + k * warps)
            js.append(jj)
            bs.append((first + w + jj * warps) * per_line)
            ks.append(np.full(len(w), k, dtype=np.int64))
        warp, j, block = np.concatenate(ws), np.concatenate(js), np.concatenate(bs)
        launch_of_row = np.concatenate(ks)
        launches = launches * parts
    lo = MICRO_BASE + block * LINE_B
    mode = {"none": "uvm", "readmostly": "uvm_readmostly", "accessedby": "zerocopy",
            "prefetch": "device"}.get(advice)
    if mode is None:
        raise TwinError(f"case '{case}': unknown advice '{advice}'")
    space = SPACE_DEVICE if advice == "prefetch" else SPACE_HOST
    stream = _ranges_stream(warp, j, lo, lo + LINE_B, np.arange(len(lo)), space=space,
                            launches=launches, launch=launch_of_row)
    workload = FirstTouch(stream, size, float(full_B), float(twin_size),
                          back_to_back=int(params.get("launches", 1)) > 1,
                          prefetch=advice == "prefetch", managed=((MICRO_BASE, size),))
    return MicroTwin(case, "uvm_touch", params, mode, stream, float(full_B), float(twin_size),
                     loads_in_flight=1, size_B=size, extra={"warps": warps, "advice": advice},
                     workload=workload)


#: a flag point's writes to a shared word per writing warp, by its ``write``
#: (gpu_kernels/micro/launch_grid.cu: the counter and the flag are one word each)
SHARED_WRITES_PER_WRITER = {"red": 1, "store": 1, "both": 2, "red_apart": 0, "store_apart": 0}


def build_launch(case: str, params: dict, system, *,
                 max_requests: int = DEFAULT_MAX_REQUESTS) -> MicroTwin:
    """Twin of a launch-time point: ``ctas`` CTAs of ``threads_per_cta`` threads;
    work ``label``: each warp loads the 4 B word of its global warp id (all lanes one
    address: one 32 B device read per warp), ``empty``: no memory traffic, ``flag``:
    ``writers`` warps write one shared word each (``write`` red or store), or one of
    each (both), or a word of their own (red_apart, store_apart: nothing shared, and
    no read either). The label loads of at most ``max_requests`` warps (whole CTAs)
    are simulated and their time scaled to the grid."""
    ctas = int(params.get("ctas", 1))
    threads = int(params.get("threads_per_cta", 256))
    work = params.get("work", "empty")
    if ctas < 1 or threads < 32 or threads % 32:
        raise TwinError(f"case '{case}': ctas must be >= 1 and threads_per_cta a multiple of 32")
    if work not in ("empty", "label", "flag"):
        raise TwinError(f"case '{case}': unknown work '{work}'")
    shared = 0
    if work == "flag":
        per_writer = SHARED_WRITES_PER_WRITER.get(params.get("write", "red"))
        if per_writer is None:
            raise TwinError(f"case '{case}': unknown write '{params.get('write')}'")
        shared = int(params.get("writers", 0)) * per_writer
    wpc = threads // 32
    stream = None
    sim_ctas = ctas
    if work == "label":
        sim_ctas = max(1, min(ctas, max_requests // wpc))
        warps = sim_ctas * wpc
        warp = np.arange(warps, dtype=np.int64)
        lo = MICRO_BASE + (warp * 4) // SECTOR_B * SECTOR_B
        stream = _ranges_stream(warp, np.zeros(warps, dtype=np.int64), lo, lo + SECTOR_B,
                                np.arange(warps), space=SPACE_DEVICE,
                                launches=(LaunchInfo("launch_grid", sim_ctas, wpc, threads),))
    return MicroTwin(case, "launch", params, "device", stream, float(ctas), float(sim_ctas),
                     extra={"ctas": ctas},
                     workload=LaunchGrid(ctas, stream, sim_ctas if stream is not None else 0,
                                         shared_writes=shared))


def build_host_loop(case: str, params: dict, system) -> MicroTwin:
    """Twin of a host-loop point: ``iterations`` of the named loop around walk
    launches of ``walk_us`` each (:mod:`hostlink.model.host_loop`); no memory traffic."""
    from hostlink.model.host_loop import LOOPS, parse_loop
    loop = params.get("loop", "bfs")
    if loop not in LOOPS:
        raise TwinError(f"case '{case}': unknown host loop '{loop}' (known: {', '.join(LOOPS)})")
    iterations = int(params.get("iterations", 16))
    vertices = int(params.get("vertices", 16384))
    if iterations < 1 or vertices < 1:
        raise TwinError(f"case '{case}': iterations and vertices must be >= 1")
    parse_loop(loop)
    walk_us = float(params.get("walk_us", 0))
    return MicroTwin(case, "host_loop", params, "device", None, 0.0, 0.0,
                     extra={"loop": loop, "iterations": iterations, "vertices": vertices,
                            "walk_us": walk_us},
                     workload=HostLoopRun(loop, iterations, vertices, walk_us))


def build_gather(case: str, params: dict, system) -> MicroTwin:
    """The twin of a gather case (:mod:`hostlink.validation.twin_gather`)."""
    from hostlink.model.errors import HostlinkError
    from hostlink.validation.twin_gather import gather_twin
    try:
        mode, work = gather_twin(case, params, system)
    except HostlinkError as exc:
        raise TwinError(str(exc)) from None
    full_B = float(work.rows * work.row_B)
    return MicroTwin(case, "gather", params, mode, work.stream, full_B, full_B,
                     loads_in_flight=work.loads_in_flight, workload=work)


def build_host_read(case: str, params: dict, system) -> MicroTwin:
    """The twin of a host_read case: a :class:`~hostlink.model.workload.HostRead` of the
    program's rows, threads and op."""
    from hostlink.model.workload import HostRead
    rows, row_B = int(params.get("rows", 262144)), int(params["row_B"])
    threads, table_B = int(params.get("threads", 16)), int(params["region_B"])
    if rows < 1 or threads < 1 or row_B < 4 or table_B < row_B:
        raise TwinError(f"case '{case}': rows and threads must be >= 1 and the region must "
                        "hold a row")
    work = HostRead(rows, row_B, table_B, threads, copy=params.get("op", "sum") == "copy")
    full_B = float(rows * row_B)
    return MicroTwin(case, "host_read", params, "device", None, full_B, full_B,
                     workload=work)


def build_micro(case: str, params: dict, system, *, hints: Callable[[str], float | None] | None = None,
                max_requests: int = DEFAULT_MAX_REQUESTS,
                max_uvm_B: int = DEFAULT_MAX_UVM_B,
                loads_in_flight: dict | None = None) -> MicroTwin:
    """The twin of one microbenchmark case (``hints(metric)``: measured launch facts;
    ``loads_in_flight``: the run's record of its kernels' loads in flight,
    :func:`run_loads_in_flight`)."""
    bench = params.get("benchmark")
    warps_hint = hints("warps_launched") if hints else None
    if bench in ("zc_read", "zc_warps"):
        return build_zc(case, params, system, warps_hint=warps_hint, max_requests=max_requests,
                        in_flight=read_kernel_in_flight(params, loads_in_flight))
    if bench == "ptr_chase":
        return build_ptr_chase(case, params, system,
                               revisits_hint=hints("revisits") if hints else None)
    if bench == "memcpy":
        return build_memcpy(case, params, system)
    if bench == "uvm_touch":
        return build_uvm_touch(case, params, system, warps_hint=warps_hint, max_uvm_B=max_uvm_B)
    if bench == "launch":
        return build_launch(case, params, system, max_requests=max_requests)
    if bench == "host_loop":
        return build_host_loop(case, params, system)
    if bench == "gather":
        return build_gather(case, params, system)
    if bench == "host_read":
        return build_host_read(case, params, system)
    raise TwinError(f"case '{case}': no twin for benchmark '{bench}'")


