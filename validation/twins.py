"""Predicted twins: the model's prediction of every case a validation run measured.

A measured case (named by :mod:`hostlink.validation.manifest`) has a twin
that issues the same memory traffic in the model:

- traversal cases ``<kernel>/<graph>/<variant>/<memory_mode>/<id_bytes>B``:
  the same graph (regenerated from the manifest's generator and seed, or read
  from the run's graph files), the same sources (``metadata.json``), the same
  kernel, variant and id width, emulated by :mod:`hostlink.traces.emulator`
  and predicted in the memory mode's model (zero-copy, UVM, device);
- microbenchmark cases ``micro/<benchmark>/<parameters>``: the request stream
  the CUDA program of ``gpu_kernels/micro`` issues, built here from its
  documented access pattern (the coalescing rule of
  :func:`hostlink.traces.emulator.fast.coalesce_ranges`: one request per run
  of contiguous 32 B sectors within a 128 B line):

  ``zc_read``/``zc_warps`` coalesced: warp w's j-th load covers block
  w + j W of 32 x bytes_per_lane bytes at offset_B (misaligned offsets split
  each block into a 32/64/96 B head and tail); strided: thread t reads its
  own chunk_B chunk bytes_per_lane at a time (one sector per lane and load);
  random: warp w's loads cover blocks ``mix64(seed ^ mix64(j)) % blocks`` of
  the first region_B bytes (the program's hash, reproduced bit for bit).
  The program issues ``unroll`` loads and then uses them all before the next
  ones, so an unrolled group is one instruction of the twin (it completes with
  its last load) and a warp keeps one instruction in flight. The random
  pattern's run takes at least the SMs' and each warp's time for its hashes
  (``options.micro.random_load_ns``, ``random_chain_ns``) and, with ``ld.cv`` on host
  memory, one round trip per line of the region for each read of it
  (:func:`random_pattern_floor_ns`).
  ``ptr_chase``: one thread, one dependent 8 B load per step (a 32 B request),
  an untimed pass then a timed pass (the twin times the second): over the next
  links of the cycle where the program reports ``revisits`` (fresh nodes), else
  over the same nodes (the first H200 run's program). In host memory the
  requests go through the model; in device memory each load costs the latency
  of the level that serves it (:mod:`hostlink.model.device_memory`), replayed
  through the GPU's L1 and L2 with the program's flushes
  (:func:`device_chase_levels`). ``uvm_touch``: 4 B per lane, one 128 B line per warp load,
  sequential, the program's permutation ``j * 2654435761 mod n`` or one line
  every ``stride_B`` (sparse), in the UVM
  model by advice; ``prefetch`` is :func:`hostlink.model.uvm.prefetch_time_s`
  followed by the kernel on device memory. ``memcpy``: the copy engine's stream
  of 256 B reads (H2D) or posted 256 B writes (D2H) at the analytic model's
  link bound (REFERENCE.md: the copy engine issues 256 B requests), not held
  to the SMs' read limits (``gpu.max_outstanding_host_reads``,
  ``link.cpl_buffer_B``).

Caches: host loads with the default cache operator go through the caches
:func:`hostlink.traces.cache.host_read_cache` gives for the system's GPU (the
coalescer with ``cache_host=True``; ``cache = cg``: those without the L1,
``cv``: none),
loads reaching them in issue order (warps in turn, the loads of an unrolled
group back to back); a load that hits sends no request and costs the model no
time. The traversal twins' edge-list loads take the same caches.

Assumptions of the twins (not of the model):
- a traversal twin carries the kernel's device-array accesses only on graphs of
  at most ``DEFAULT_MAX_DEVICE_EDGES`` edges (2^24: the scale-14 graphs, not the
  scale-21 and -24 ones, whose device accesses would not fit in memory); above
  it, a launch's device-side time is its CTA dispatch and launch time only.
- SSSP and CC launches run in waves of the GPU's resident warps
  (:mod:`hostlink.traces.emulator.algorithms`), an approximation of how far
  updates spread within a launch.
- a large run is predicted on a prefix of its traffic: every warp of the real
  grid is kept, each issues at most enough loads that the twin holds about
  ``max_requests`` requests; the steady-state bandwidth of the prefix (the
  bytes its loads read over kernel time) stands for the whole run, whose time
  is the launch overhead plus its bytes over that bandwidth (a warp keeps at
  least 8 x unroll loads, 2 x unroll for the strided pattern's 32-request
  instructions). UVM first touch is predicted on a prefix of the buffer of at
  most ``max_uvm_B`` (1 GiB by default: buffers up to 1 GiB whole) and scaled by
  size, all but the run's one-off first fault; a sparse prefix keeps whole
  strides, at least one line.
- warps = 0 ("as many as fit") takes the grid the program reported
  (``warps_launched``) where the measured results hold it, else every
  resident warp slot of the GPU (``sm_count * max_warps_per_sm``).
- a buffer starts at a 2 MiB boundary (the allocators return page-aligned
  memory; the GPU page size of the mapping is the translation model's).
- the pointer chase's random cycle is drawn with NumPy (the program uses
  std::mt19937_64): the same number of distinct random nodes, not the same
  nodes.
- ``memcpy`` pays ``gpu.copy_setup_ns`` per copy (the program times copies
  back to back in a stream) and, host to device, one round trip before its
  first byte.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

from hostlink.model.errors import ConfigError, HostlinkError
from hostlink.model.workload import (REQUEST_DTYPES, SPACE_DEVICE, SPACE_HOST, LaunchInfo,
                                     RequestStream)

MICRO_BASE = 0x7F00_0000_0000          # 2 MiB aligned
SECTOR_B = 32
LINE_B = 128
COPY_ENGINE_REQUEST_B = 256            # REFERENCE.md (NVIDIA/nccl-tests #149)
PERM_MULTIPLIER = 2654435761           # gpu_kernels/micro/uvm_touch.cu
DEFAULT_MAX_REQUESTS = 1 << 20
DEFAULT_MAX_UVM_B = 1 << 30
DEFAULT_MAX_DEVICE_EDGES = 1 << 24     # graphs up to this many edges carry their device arrays
WEIGHT_B = 4                           # an edge weight: uint32 (gpu_kernels/traversal/walk.cuh)
MIN_LOADS_PER_WARP = 8

#: The metric each benchmark is judged by (the others are reported too).
PRIMARY_METRIC = {"memcpy": "bw_GBps", "zc_read": "bw_GBps", "zc_warps": "bw_GBps",
                  "ptr_chase": "lat_ns", "uvm_touch": "time_ms", "launch": "time_us"}
TRAVERSAL_PRIMARY = "kernel_time_ms"

#: Harness memory mode -> the model's prediction mode.
#: SetAccessedBy on host-resident managed memory is a remote mapping (no migration
#: on x86 without ATS, REFERENCE.md "UVM"): its reads are zero-copy reads.
PREDICT_MODE = {"device": "device", "zerocopy": "zerocopy", "registered": "zerocopy",
                "uvm_accessedby": "zerocopy", "uvm": "uvm", "uvm_readmostly": "uvm_readmostly"}
ZEROCOPY_MODES = ("zerocopy", "registered", "uvm_accessedby")
UVM_MODES = ("uvm", "uvm_readmostly")


class TwinError(HostlinkError):
    """A case whose twin cannot be built (unknown parameters, missing graph)."""


# ----------------------------------------------------------------------------
# Cases of a run


@dataclass
class RunData:
    """A measured run directory: its tidy results, case parameters and manifest."""
    path: Path
    measured: pd.DataFrame
    cases: dict[str, dict]
    metadata: dict
    experiment: str

    def hint(self, case: str, metric: str) -> float | None:
        """Median of a measured metric of a case (launch parameters such as warps_launched)."""
        m = self._hints.get((case, metric))
        return None if m is None or not np.isfinite(m) else float(m)

    def __post_init__(self) -> None:
        df = self.measured
        med = df.groupby(["case", "metric"], sort=False)["value"].median()
        self._hints = med.to_dict()


def load_run(results_dir: str | Path) -> RunData:
    """Read RESULTS_DIR/results.csv (or .parquet) and the case parameters in metadata.json."""
    from hostlink.validation.results_io import read_results

    path = Path(results_dir)
    if not path.is_dir():
        raise TwinError(f"{path}: not a results directory")
    table = None
    for name in ("results.parquet", "results.csv"):
        if (path / name).is_file():
            table = read_results(path / name)
            break
    if table is None:
        raise TwinError(f"{path}: no results.csv or results.parquet")
    measured = table[table["model_kind"] == "measured"].copy()
    if measured.empty:
        raise TwinError(f"{path}: the results hold no measured rows")
    meta = {}
    if (path / "metadata.json").is_file():
        try:
            meta = json.loads((path / "metadata.json").read_text())
        except json.JSONDecodeError as exc:
            raise TwinError(f"{path / 'metadata.json'}: not valid JSON ({exc.msg})") from None
    cases = dict(meta.get("cases") or {})
    for case in measured["case"].unique():
        if case not in cases:
            cases[case] = params_from_name(case, where=str(path / "results"))
    experiment = meta.get("experiment") or str(measured["experiment"].iloc[0])
    return RunData(path, measured, cases, meta, experiment)


def _parse_value(text: str):
    try:
        return int(text)
    except ValueError:
        return text


def params_from_name(case: str, where: str = "case") -> dict:
    """Parameters of a case from its name alone (settings take their defaults)."""
    from hostlink.validation.manifest import KERNELS, MICRO_BENCHMARKS

    parts = case.split("/")
    if parts[0] == "micro":
        if len(parts) != 3 or parts[1] not in MICRO_BENCHMARKS:
            raise TwinError(f"{where}: case '{case}' is not micro/<benchmark>/<key>=<value>,...")
        spec = MICRO_BENCHMARKS[parts[1]][1]
        params: dict = {"kind": "micro", "benchmark": parts[1]}
        for item in filter(None, parts[2].split(",")):
            key, sep, value = item.partition("=")
            if not sep or key not in spec:
                raise TwinError(f"{where}: case '{case}': unknown parameter '{item}'")
            params[key] = _parse_value(value)
        for key, p in spec.items():
            if not p.naming:
                params.setdefault(key, p.default)
        return params
    if parts[0] == "trace":
        return {"kind": "trace"}
    if len(parts) == 5 and parts[0] in KERNELS and parts[4].endswith("B"):
        return {"kind": "traversal", "kernel": parts[0], "graph": parts[1], "variant": parts[2],
                "memory_mode": parts[3], "id_bytes": int(parts[4][:-1])}
    raise TwinError(f"{where}: case '{case}' is neither a traversal nor a micro case name")


def micro_group(params: dict) -> str:
    """The microbenchmark group of a case: the unit calibration uses or holds out."""
    b = params["benchmark"]
    if b == "memcpy":
        return f"micro/memcpy/{params.get('direction', 'h2d')}"
    if b == "zc_read":
        return f"micro/zc_read/{params.get('pattern', 'coalesced')}"
    if b == "zc_warps":
        # coalesced lines against warps (the requester limit); 32 B reads against
        # warps (the tag window) are a group of their own
        pattern = params.get("pattern", "coalesced")
        return "micro/zc_warps" if pattern == "coalesced" else f"micro/zc_warps/{pattern}"
    if b == "ptr_chase":
        where = "device" if params.get("memory_mode") == "device" else "host"
        return f"micro/ptr_chase/{where}"
    if b == "uvm_touch":
        group = f"micro/uvm_touch/{params.get('advice', 'none')}/{params.get('pattern', 'seq')}"
        return group + ("/returned" if params.get("host_state", "fresh") == "returned" else "")
    if b == "launch":
        return f"micro/launch/{params.get('work', 'empty')}"
    return f"micro/{b}"


def case_group(case: str, params: dict) -> str:
    """Group of any case: micro groups above; traversal by memory-mode class."""
    kind = params.get("kind")
    if kind == "micro":
        return micro_group(params)
    if kind == "traversal":
        mode = params["memory_mode"]
        cls = ("zerocopy" if mode in ZEROCOPY_MODES else "uvm" if mode in UVM_MODES else "device")
        return f"traversal/{cls}"
    return "other"


def primary_metric(params: dict) -> str:
    if params.get("kind") == "micro":
        return PRIMARY_METRIC.get(params["benchmark"], "bw_GBps")
    return TRAVERSAL_PRIMARY


# ----------------------------------------------------------------------------
# The model behind one interface


@dataclass
class ModelRun:
    """What a twin needs from a prediction."""
    time_ns: float                 # whole run, with launch overheads
    kernel_ns: np.ndarray          # per launch, kernel time only
    host_bytes_B: float = 0.0      # bytes the host requests moved


LOADED_RTT_PASSES = 4          # at most: the fixed point settles in two or three
LOADED_RTT_TOL = 2e-3          # relative change of the predicted time that ends the passes


def run_model(stream: RequestStream, system, mode: str, fidelity: str,
              options: dict | None = None) -> ModelRun:
    """Predict one request stream with :func:`hostlink.model.predict.predict`.

    ``options``: model options beyond the system config: ``{"uvm": {...}}``
    (keywords of :func:`hostlink.model.uvm.simulate_uvm`, used in the UVM modes) and
    ``{"link": {"rtt_at_full_link_ns": d}}``, a round trip that grows with the link's
    load (zero-copy mode; see :func:`loaded_prediction`). ``{"prefetch": {"call_us": c}}``
    is read by the prefetch first-touch twin only (:func:`_predict_uvm_touch`),
    ``{"micro": {"random_load_ns": t, "random_chain_ns": c}}`` by the random-pattern
    read twins only
    (:func:`random_pattern_floor_ns`)."""
    from hostlink.model.predict import predict

    uvm_options = dict((options or {}).get("uvm") or {})
    full_ns = float(((options or {}).get("link") or {}).get("rtt_at_full_link_ns", 0.0) or 0.0)
    if mode == "zerocopy" and full_ns > 0:
        pred = loaded_prediction(stream, system, fidelity, full_ns)
    else:
        pred = predict(stream, system, mode=mode, fidelity=fidelity,
                       uvm_options=uvm_options if mode in ("uvm", "uvm_readmostly") else None)
    kernel = getattr(pred, "kernel_time_s", None)
    per_launch = getattr(pred, "per_launch_kernel_s", None)
    if per_launch is not None:
        kernel_ns = np.asarray(per_launch, dtype=np.float64) * 1e9
    elif kernel is not None:
        kernel_ns = np.asarray([kernel * 1e9])
    else:
        kernel_ns = np.asarray([pred.time_s * 1e9])
    return ModelRun(time_ns=float(pred.time_s) * 1e9, kernel_ns=kernel_ns,
                    host_bytes_B=float(getattr(pred, "host_bytes_B", 0.0) or 0.0))


def link_utilisation(pred, system) -> float:
    """Share of the run's kernel time the downstream link spends on its completions."""
    from hostlink.model.des.inputs import link_rate_Bpns

    kernel_ns = float(np.sum(pred.per_launch_kernel_s)) * 1e9
    if kernel_ns <= 0:
        return 0.0
    return min(1.0, float(pred.wire_B_down) / (kernel_ns * link_rate_Bpns(system)))


def loaded_prediction(stream: RequestStream, system, fidelity: str, full_ns: float):
    """Zero-copy prediction with a round trip that grows with the link's load.

    On the H200 the round trip of a 128 B read grows with the load long before the
    link saturates (1.22 us up to 16 warps with one read each, 1.32 us at 132 warps
    and 25% of the link, 1.41 us at 264 and 47%, 1.54 us at 528 and 85%): about
    ``full_ns`` x the downstream link's utilisation, which the engines' fixed
    ``link.rtt_ns`` does not give (their queueing adds only the link's own
    serialisation). Mean-field approximation, pending a per-read mechanism in the
    engines: the run is predicted with ``rtt_ns = link.rtt_ns + full_ns * U``, U the
    utilisation of the previous pass (:func:`link_utilisation`), from U of the
    unloaded pass until the time moves by less than ``LOADED_RTT_TOL``. One U stands
    for every launch of a run, so short launches on a quiet link get the round trip
    of the busy ones."""
    from hostlink.model.config import system_with
    from hostlink.model.predict import predict

    rtt0 = float(system.link.rtt_ns)
    pred = predict(stream, system, mode="zerocopy", fidelity=fidelity)
    for _ in range(LOADED_RTT_PASSES):
        u = link_utilisation(pred, system)
        if u <= 0:
            break
        nxt = predict(stream, system_with(system, {"link.rtt_ns": rtt0 + full_ns * u}),
                      mode="zerocopy", fidelity=fidelity)
        done = abs(nxt.time_s - pred.time_s) <= LOADED_RTT_TOL * pred.time_s
        pred = nxt
        if done:
            break
    return pred


# ----------------------------------------------------------------------------
# Request streams of the microbenchmarks


def mix64(x: np.ndarray) -> np.ndarray:
    """The programs' 64-bit mixer (zc_common.cuh), wrapping like C++ uint64_t."""
    x = np.asarray(x, dtype=np.uint64) + np.uint64(0x9E3779B97F4A7C15)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


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
    """The caches a microbenchmark's host loads go through: the GPU's
    (:func:`hostlink.traces.cache.host_read_cache`) for the default cache
    operator, without the L1 for ``cache = cg`` (``ld.cg`` bypasses it), none for
    ``cache = cv`` (``ld.cv`` fetches again) or when no level is left."""
    from hostlink.traces.cache import host_read_cache

    op = str(params.get("cache", "default"))
    if op == "cv":
        return None
    cache = host_read_cache(system.gpu)
    if cache is not None and op == "cg":
        import dataclasses
        cache = dataclasses.replace(cache, l1_size_B=0)
    if cache is None or (cache.l1_size_B == 0 and cache.l2_size_B == 0):
        return None
    return cache


def _lane_stream(warp, j, gid, lane_addr, lane_mask, width_B: int, *, launches, cache,
                 region_B: int, launch=None) -> RequestStream:
    """Requests of lane-level loads through the caches (:func:`hostlink.traces.coalescer.coalesce`).

    Row ``r`` is the ``j[r]``-th load of warp ``warp[r]`` (0, 1, ... per warp and
    launch), ``gid[r]`` its instruction in the twin (loads of one unrolled group share
    it); ``lane_addr`` (n, 32) and ``lane_mask`` the lanes. Loads reach the caches
    in issue order: each launch's warps take their next instruction in turn, a
    warp issuing the loads of one instruction (an unrolled group) back to back."""
    from hostlink.traces.coalescer import coalesce
    from hostlink.traces.schema import (LOCATION_HOST, OP_LOAD, SPACE_GLOBAL, InstTable,
                                        KernelLaunch, Region)

    n = len(warp)
    launch = np.zeros(n, dtype=np.int64) if launch is None else np.asarray(launch, np.int64)
    wpc = np.array([li.warps_per_cta for li in launches], dtype=np.int64)[launch]
    order = np.lexsort((j, warp, np.asarray(gid, dtype=np.int64), launch))
    table = InstTable(
        launch=launch[order], cta=(warp // wpc)[order], warp=(warp % wpc)[order],
        pc=np.zeros(n), opcode=np.zeros(n), op=np.full(n, OP_LOAD), space=np.full(n, SPACE_GLOBAL),
        width_B=np.full(n, width_B), mask=np.asarray(lane_mask, dtype=np.uint32)[order],
        addrs=np.asarray(lane_addr, dtype=np.int64)[order].astype(np.uint64))
    kls = [KernelLaunch(li.name, (li.ctas, 1, 1), (li.warps_per_cta * 32, 1, 1)) for li in launches]
    s = coalesce(table, [Region("buffer", MICRO_BASE, int(region_B), LOCATION_HOST)],
                 launches=kls, cache=cache, cache_host=True)
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
    """A microbenchmark case's request stream and how its metrics follow from a prediction."""
    case: str
    benchmark: str
    params: dict
    mode: str                        # prediction mode
    stream: RequestStream | None
    full_bytes_B: float              # useful bytes of the measured run
    twin_bytes_B: float              # useful bytes of the twin
    loads_in_flight: int = 1
    steps: int = 0                   # ptr_chase
    size_B: int = 0                  # memcpy, uvm_touch
    extra: dict = field(default_factory=dict)

    @property
    def scale(self) -> float:
        return self.full_bytes_B / self.twin_bytes_B if self.twin_bytes_B else 1.0

    def system_for(self, system):
        """The system with the case's own launch knobs (loads in flight per warp)."""
        from hostlink.model.config import system_with
        if self.loads_in_flight != system.gpu.loads_in_flight_per_warp:
            return system_with(system, {"gpu.loads_in_flight_per_warp": int(self.loads_in_flight)})
        return system

    def predict(self, system, fidelity: str = "des", options: dict | None = None) -> dict[str, float]:
        """Predicted metrics (same names and units as the program's); ``options``: see
        :func:`run_model`."""
        fn = _PREDICTORS[self.benchmark]
        return fn(self, self.system_for(system), fidelity, options)


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


def build_zc(case: str, params: dict, system, *, warps_hint: float | None = None,
             max_requests: int = DEFAULT_MAX_REQUESTS) -> MicroTwin:
    """Twin of a zc_read or zc_warps point."""
    bench = params["benchmark"]
    pattern = params.get("pattern", "coalesced")
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
    group = unroll
    cache = host_cache_for(params, system) if space == SPACE_HOST else None
    lane = np.arange(32, dtype=np.int64)

    if pattern == "coalesced":
        offset = int(params.get("offset_B", 0))
        nblocks = nbytes // blk
        full = nblocks * blk
        counts = _per_warp_counts(nblocks, warps)
        per_inst = -(-(offset % LINE_B + blk) // LINE_B)
        cap = max(MIN_LOADS_PER_WARP * unroll, -(-max_requests // max(1, warps * per_inst)))
        counts = np.minimum(counts, cap)
        warp, j = _expand(counts)
        lo = MICRO_BASE + offset + (warp + j * warps) * blk
        loaded = len(lo) * blk
        if cache is None:
            stream = _ranges_stream(warp, j // group, lo, lo + blk, np.arange(len(lo)),
                                    space=space, launches=launches)
        else:
            stream = _lane_stream(warp, j, j // group, lo[:, None] + lane * bpl,
                                  np.full(len(lo), 0xFFFFFFFF), bpl, launches=launches,
                                  cache=cache, region_B=offset + nbytes + LINE_B)
    elif pattern == "strided":
        chunk = int(params.get("chunk_B", 4096))
        if chunk % bpl:
            raise TwinError(f"case '{case}': chunk_B {chunk} is not a multiple of {bpl}")
        threads = warps * 32
        nchunks = max(1, nbytes // chunk)
        full = nchunks * chunk
        per_chunk = chunk // bpl
        # thread t: chunks t, t + T, ...; a warp's instruction (k, j) covers lane chunks
        # w*32 + l + k*T, element j of each.
        rounds = -(-nchunks // threads)
        cap = max(2 * unroll, -(-max_requests // max(1, warps * 32)))
        n_inst = min(rounds * per_chunk, cap)
        kk = np.arange(n_inst, dtype=np.int64) // per_chunk
        jj = np.arange(n_inst, dtype=np.int64) % per_chunk
        warp = np.repeat(np.arange(warps, dtype=np.int64), n_inst)
        k = np.tile(kk, warps)
        e = np.tile(jj, warps)
        lane = np.arange(32, dtype=np.int64)
        chunk_id = warp[:, None] * 32 + lane[None, :] + k[:, None] * threads
        active = chunk_id < nchunks
        keep = active.any(axis=1)
        warp, k, e, chunk_id, active = warp[keep], k[keep], e[keep], chunk_id[keep], active[keep]
        inst = np.arange(len(warp))
        lane_lo = MICRO_BASE + chunk_id * chunk + e[:, None] * bpl
        gid = k * (-(-per_chunk // group)) + e // group
        loaded = int(active.sum()) * bpl
        if cache is None:
            rows = np.broadcast_to(inst[:, None], lane_lo.shape)[active]
            lo = lane_lo[active]
            stream = _ranges_stream(warp, gid, lo, lo + bpl, rows, space=space,
                                    launches=launches)
        else:
            mask = (active.astype(np.int64) << lane).sum(axis=1)
            stream = _lane_stream(warp, k * per_chunk + e, gid,
                                  np.where(active, lane_lo, MICRO_BASE), mask, bpl,
                                  launches=launches, cache=cache, region_B=nchunks * chunk)
    elif pattern == "random":
        region = int(params.get("region_B", 1 << 30))
        region_blocks = max(1, region // blk)
        nblocks = nbytes // blk
        full = nblocks * blk
        per_warp = -(-nblocks // warps)
        first = np.arange(warps, dtype=np.int64) * per_warp
        counts = np.clip(np.minimum(nblocks, first + per_warp) - first, 0, None)
        cap = max(MIN_LOADS_PER_WARP * unroll, -(-max_requests // max(1, warps * (blk // LINE_B))))
        counts = np.minimum(counts, cap)
        warp, jl = _expand(counts)
        jg = first[warp] + jl
        seed = np.uint64(int(params.get("seed", 1)))
        line = mix64(seed ^ mix64(jg.astype(np.uint64))) % np.uint64(region_blocks)
        lo = MICRO_BASE + line.astype(np.int64) * blk
        loaded = len(lo) * blk
        if cache is None:
            stream = _ranges_stream(warp, jl // group, lo, lo + blk, np.arange(len(lo)),
                                    space=space, launches=launches)
        else:
            stream = _lane_stream(warp, jl, jl // group, lo[:, None] + lane * bpl,
                                  np.full(len(lo), 0xFFFFFFFF), bpl, launches=launches,
                                  cache=cache, region_B=region_blocks * blk)
    else:
        raise TwinError(f"case '{case}': unknown pattern '{pattern}'")
    if len(stream) == 0:
        raise TwinError(f"case '{case}': every load of the twin hits in the caches (the model "
                        "gives cache hits no time)")
    # the bytes the twin's loads read (cache hits included), as the program counts them
    return MicroTwin(case, bench, params, mode, stream, float(full), float(loaded),
                     loads_in_flight=unroll // group,
                     extra={"warps": warps, "cached": cache is not None})


def without_launch(system):
    """``system`` without the launch's own costs (``gpu.launch_ns``,
    ``gpu.cta_dispatch_ns``): for twins that time the steady state of a prefix of
    the traffic or time inside the kernel (the pointer chase's %globaltimer)."""
    from hostlink.model.config import system_with
    if system.gpu.launch_ns == 0 and system.gpu.cta_dispatch_ns == 0:
        return system
    return system_with(system, {"gpu.launch_ns": 0.0, "gpu.cta_dispatch_ns": 0.0})


def random_pattern_floor_ns(twin: MicroTwin, system, options: dict | None = None,
                            traffic_GBps: float | None = None) -> float:
    """Least time of a zc_read/zc_warps random-pattern run beyond its memory traffic, ns
    (0 for the other patterns).

    - The kernel's own work: each load's line is ``mix64(seed ^ mix64(j)) % blocks``
      (gpu_kernels/micro/zc_common.cuh), two 64-bit hashes and a 64-bit modulo, about
      130 SASS instructions per warp load (validation/results/h200/sass), so loads the
      caches serve run at the SMs' issue rate, not the L1's: every SM spends
      ``options.micro.random_load_ns`` per warp load, and a warp, whose instructions
      depend on one another (the modulo is a called routine), at least
      ``options.micro.random_chain_ns`` per load. Both are fitted on random lines in
      device memory (640-660 GB/s at full occupancy on an H100 and an H200 from 4 KiB
      to 16 MiB regions; 65-71 GB/s with one warp per SM over 4 KiB,
      validation/results/*/hot_lines); 0, the default, leaves a bound out. The bound
      does not add a load's own latency to the chain: loads that miss the L1 make one
      warp slower than it (1 MiB of device memory, L2 hits: 52-53 GB/s with one warp
      per SM).
    - With ``cache = cv`` on host memory (``LDG.E.STRONG.SYS``) a warp's loads wait for
      each other (0.08 GB/s for one warp at every unroll, validation/results/h200/
      unroll_probe), so each warp spends its chain time plus a host round trip
      (``link.rtt_ns + gpu.host_path_ns``) per load (132 warps over 1 MiB: 11.4-11.5 GB/s
      on both GPUs).
    - With ``cache = cv`` on host memory reads of one line do not overlap either: a line
      has one read at a time, and a read holds its line for
      ``options.micro.cv_line_ns`` (at least the round trip) plus
      ``options.micro.cv_line_gap_ns`` for every line read at once, so
      ``region_B / 128`` lines bound the bandwidth. The lines read at once are at most
      the lines, the warps, and the reads the memory model's bandwidth for the run
      (``traffic_GBps``, when given) keeps in flight over one round trip.
      Measured with 2112 and 8448 warps (validation/results/*/hot_lines): 4 KiB (32
      lines) 2.5 GB/s on both GPUs, whatever the warps; 16 KiB 9.4-9.5; 64 KiB 23-24
      on the H200, 27 on the H100: a line is held about 1.65 us with 32 lines and
      2.4-2.7 us with 512, where one round trip is 1.19-1.21 us; 256 KiB (2048 lines)
      reaches the link. Both options are fitted on those points (calibrate step
      ``cv_lines``); 0, the default, holds a line one round trip."""
    p = twin.params
    if twin.benchmark not in ("zc_read", "zc_warps") or p.get("pattern") != "random":
        return 0.0
    micro = (options or {}).get("micro") or {}
    load_ns = float(micro.get("random_load_ns", 0.0) or 0.0)
    chain_ns = float(micro.get("random_chain_ns", 0.0) or 0.0)
    blk = 32 * int(p.get("bytes_per_lane", 4))
    warps = int(twin.extra.get("warps", 0) or 0) or system.gpu.sm_count
    loads = twin.full_bytes_B / blk
    floor = max(loads / min(warps, system.gpu.sm_count) * load_ns, loads / warps * chain_ns)
    if p.get("cache") == "cv" and twin.mode == "zerocopy":
        region = max(1, int(p.get("region_B", 1 << 30)) // blk) * blk
        lines = max(1, region // LINE_B)
        round_trip_ns = system.link.rtt_ns + system.gpu.host_path_ns
        hold_ns = max(round_trip_ns, float(micro.get("cv_line_ns", 0.0) or 0.0))
        gap_ns = float(micro.get("cv_line_gap_ns", 0.0) or 0.0)
        at_once = min(lines, warps)
        if traffic_GBps is not None and traffic_GBps > 0:
            at_once = min(at_once, traffic_GBps * round_trip_ns / LINE_B)
        line_ns = hold_ns + gap_ns * at_once
        floor = max(floor, loads / warps * (chain_ns + round_trip_ns),
                    twin.full_bytes_B * line_ns / (lines * LINE_B))
    return floor


def _predict_bandwidth_run(twin: MicroTwin, system, fidelity: str,
                           options: dict | None = None) -> dict[str, float]:
    run = run_model(twin.stream, without_launch(system), twin.mode, fidelity, options)
    kernel_ns = float(np.sum(run.kernel_ns))
    if kernel_ns <= 0:
        raise TwinError(f"case '{twin.case}': the model predicted no time")
    bw = twin.twin_bytes_B / kernel_ns                      # B/ns = GB/s
    body_ns = max(twin.full_bytes_B / bw, random_pattern_floor_ns(twin, system, options, bw))
    time_ns = system.launch_overhead_us * 1e3 + body_ns
    return {"time_ms": time_ns * 1e-6, "bw_GBps": twin.full_bytes_B / time_ns}


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
    if space == SPACE_DEVICE:
        levels = device_chase_levels(nodes, timed, stride, str(params.get("cache", "default")),
                                     system.gpu, l2_flushed=fresh)
        return MicroTwin(case, "ptr_chase", params, "device", None, float(8 * steps),
                         float(8 * steps), loads_in_flight=1, steps=steps,
                         extra={"levels": levels})
    mode = "device" if space == SPACE_DEVICE else PREDICT_MODE.get(params.get("memory_mode",
                                                                              "zerocopy"))
    lo = MICRO_BASE + np.concatenate([nodes, timed]) * stride
    n_inst = len(lo)
    row_inst = np.arange(n_inst, dtype=np.int64) % steps
    row_warp = np.zeros(n_inst, dtype=np.int64)
    launch_of_row = np.repeat(np.arange(2), steps)
    li = LaunchInfo("ptr_chase", 1, 1, 1)
    cache = host_cache_for(params, system) if space == SPACE_HOST else None
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
                     loads_in_flight=1, steps=steps)


def device_chase_levels(untimed: np.ndarray, timed: np.ndarray, stride_B: int, cache: str,
                        gpu, *, l2_flushed: bool) -> np.ndarray:
    """Loads of a device pointer chase's timed pass served by the L1, the L2 and DRAM
    (:data:`hostlink.model.device_memory.LEVELS` order).

    The program flushes the L2 before each pass where it reports ``revisits``
    (``l2_flushed``): the timed pass starts from empty caches. The first H200 run's
    program flushed only before the untimed pass, so the timed pass finds the nodes
    the untimed one loaded in the L2. The L1 starts empty at each launch; loads with
    ``cg`` or ``cv`` skip it (device memory's point of coherence is the L2)."""
    from hostlink.model.device_memory import level_counts
    from hostlink.traces.cache import CacheConfig, CacheState

    if cache not in ("default", "cg", "cv"):
        raise TwinError(f"pointer chase: unknown cache operator '{cache}'")
    state = CacheState(CacheConfig.from_gpu(gpu, l1=cache == "default"))

    def sectors(nodes: np.ndarray) -> np.ndarray:
        return (MICRO_BASE + np.asarray(nodes, dtype=np.int64) * stride_B) // SECTOR_B

    if not l2_flushed:
        state.levels(0, sectors(untimed))
        state.flush_l1()
    return level_counts(state.levels(0, sectors(timed)))


def _predict_ptr_chase(twin: MicroTwin, system, fidelity: str,
                       options: dict | None = None) -> dict[str, float]:
    if "levels" in twin.extra:          # device memory: one dependent load at a time
        from hostlink.model.device_memory import dependent_chain_ns
        timed_ns = dependent_chain_ns(system.gpu, twin.extra["levels"])
        return {"lat_ns": timed_ns / twin.steps, "time_ms": timed_ns * 1e-6}
    run = run_model(twin.stream, without_launch(system), twin.mode, fidelity, options)
    if len(run.kernel_ns) < 2:
        raise TwinError(f"case '{twin.case}': the model returned no per-launch times")
    timed_ns = float(run.kernel_ns[1])
    if timed_ns <= 0:
        raise TwinError(f"case '{twin.case}': every load of the timed pass hits in the caches "
                        "(the model gives cache hits no time)")
    return {"lat_ns": timed_ns / twin.steps, "time_ms": timed_ns * 1e-6}


def build_memcpy(case: str, params: dict, system) -> MicroTwin:
    size = int(params.get("size_B", 1 << 30))
    return MicroTwin(case, "memcpy", params, "zerocopy", None, float(size), float(size),
                     size_B=size)


def _predict_memcpy(twin: MicroTwin, system, fidelity: str,
                    options: dict | None = None) -> dict[str, float]:
    from hostlink.model.analytic import SizeHistogram, predict_system

    from hostlink.model.config import system_with

    write = twin.params.get("direction", "h2d") == "d2h"
    hist = SizeHistogram.of([COPY_ENGINE_REQUEST_B], [1.0], 0, write)
    # the copy engine is not held to the SMs' read limits (calibrated from SM reads)
    if system.link.cpl_buffer_B:
        system = system_with(system, {"link.cpl_buffer_B": 0})
    res = predict_system(system, hist, requester_limit=0)
    bw = float(res.bw_GBps)
    time_ns = (system.gpu.copy_setup_ns + twin.size_B / bw
               + (0.0 if write else system.link.rtt_ns))
    return {"time_ms": time_ns * 1e-6, "bw_GBps": twin.size_B / time_ns}


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
    lo = MICRO_BASE + block * LINE_B
    mode = {"none": "uvm", "readmostly": "uvm_readmostly", "accessedby": "zerocopy",
            "prefetch": "device"}.get(advice)
    if mode is None:
        raise TwinError(f"case '{case}': unknown advice '{advice}'")
    space = SPACE_DEVICE if advice == "prefetch" else SPACE_HOST
    stream = _ranges_stream(warp, j, lo, lo + LINE_B, np.arange(len(lo)), space=space,
                            launches=launches)
    return MicroTwin(case, "uvm_touch", params, mode, stream, float(full_B), float(twin_size),
                     loads_in_flight=1, size_B=size, extra={"warps": warps, "advice": advice})


def _predict_uvm_touch(twin: MicroTwin, system, fidelity: str,
                       options: dict | None = None) -> dict[str, float]:
    run = run_model(twin.stream, system, twin.mode, fidelity, options)
    body_ns = run.time_ns - system.launch_overhead_us * 1e3
    if twin.scale != 1.0:
        # a prefix stands for the buffer: its per-line time scales, the run's one-off
        # first fault (options.uvm.first_fault_us, with the first batch) does not
        once_ns = 0.0
        if twin.mode in UVM_MODES and len(twin.stream):
            once_ns = float(((options or {}).get("uvm") or {}).get("first_fault_us", 0.0) or 0.0) * 1e3
        body_ns = once_ns + (body_ns - once_ns) * twin.scale
    out: dict[str, float] = {}
    prefetch_ns = 0.0
    if twin.extra.get("advice") == "prefetch":
        from hostlink.model.uvm import prefetch_time_s
        call_us = float(((options or {}).get("prefetch") or {}).get("call_us", 0.0) or 0.0)
        prefetch_ns = prefetch_time_s(twin.size_B, system, call_us=call_us) * 1e9
        out["prefetch_ms"] = prefetch_ns * 1e-6
    time_ns = system.launch_overhead_us * 1e3 + body_ns + prefetch_ns
    out["time_ms"] = time_ns * 1e-6
    out["bw_GBps"] = twin.size_B / time_ns
    out["kernel_ms"] = (time_ns - prefetch_ns) * 1e-6
    return out


def build_launch(case: str, params: dict, system, *,
                 max_requests: int = DEFAULT_MAX_REQUESTS) -> MicroTwin:
    """Twin of a launch-time point: ``ctas`` CTAs of ``threads_per_cta`` threads;
    work ``label``: each warp loads the 4 B word of its global warp id (all lanes one
    address: one 32 B device read per warp), ``empty``: no memory traffic. The
    label loads of at most ``max_requests`` warps (whole CTAs) are simulated and
    their time scaled to the grid."""
    ctas = int(params.get("ctas", 1))
    threads = int(params.get("threads_per_cta", 256))
    work = params.get("work", "empty")
    if ctas < 1 or threads < 32 or threads % 32:
        raise TwinError(f"case '{case}': ctas must be >= 1 and threads_per_cta a multiple of 32")
    if work not in ("empty", "label"):
        raise TwinError(f"case '{case}': unknown work '{work}'")
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
                     extra={"ctas": ctas})


def _predict_launch(twin: MicroTwin, system, fidelity: str,
                    options: dict | None = None) -> dict[str, float]:
    """``launch_ns + max(work, ctas x cta_dispatch_ns)`` (:func:`hostlink.model.predict.launch_floor`),
    the work the label loads' device time scaled from the simulated CTAs."""
    work_ns = 0.0
    if twin.stream is not None:
        run = run_model(twin.stream, without_launch(system), "device", fidelity, options)
        work_ns = float(np.sum(run.kernel_ns)) * twin.scale
    ctas = int(twin.extra["ctas"])
    gpu = system.gpu
    time_ns = max(work_ns, ctas * gpu.cta_dispatch_ns) + gpu.launch_ns
    if time_ns <= 0:
        raise TwinError(f"case '{twin.case}': the model predicted no time (gpu.launch_ns and "
                        "gpu.cta_dispatch_ns are 0: the launch is not modelled)")
    return {"time_us": time_ns * 1e-3, "time_ms": time_ns * 1e-6, "ns_per_cta": time_ns / ctas}


_PREDICTORS: dict[str, Callable] = {
    "launch": _predict_launch,
    "zc_read": _predict_bandwidth_run, "zc_warps": _predict_bandwidth_run,
    "ptr_chase": _predict_ptr_chase, "memcpy": _predict_memcpy, "uvm_touch": _predict_uvm_touch,
}


def build_micro(case: str, params: dict, system, *, hints: Callable[[str], float | None] | None = None,
                max_requests: int = DEFAULT_MAX_REQUESTS,
                max_uvm_B: int = DEFAULT_MAX_UVM_B) -> MicroTwin:
    """The twin of one microbenchmark case (``hints(metric)``: measured launch facts)."""
    bench = params.get("benchmark")
    warps_hint = hints("warps_launched") if hints else None
    if bench in ("zc_read", "zc_warps"):
        return build_zc(case, params, system, warps_hint=warps_hint, max_requests=max_requests)
    if bench == "ptr_chase":
        return build_ptr_chase(case, params, system,
                               revisits_hint=hints("revisits") if hints else None)
    if bench == "memcpy":
        return build_memcpy(case, params, system)
    if bench == "uvm_touch":
        return build_uvm_touch(case, params, system, warps_hint=warps_hint, max_uvm_B=max_uvm_B)
    if bench == "launch":
        return build_launch(case, params, system, max_requests=max_requests)
    raise TwinError(f"case '{case}': no twin for benchmark '{bench}'")


# ----------------------------------------------------------------------------
# Traversal twins


class GraphSource:
    """The graphs of a run: read from the run's .bel files, else regenerated from the manifest."""

    def __init__(self, run: RunData, graph_dir: str | Path | None = None):
        self.run = run
        self.graph_dir = Path(graph_dir) if graph_dir else None
        self._cache: dict[str, object] = {}
        self._specs = None
        self._streams: dict[tuple, tuple] = {}

    def emulated(self, config: tuple, source: int, make):
        """The emulated request stream of a configuration (graph, kernel, variant, id
        width, ...) and source; the memory modes of one configuration share it (the
        streams of the last configuration only are kept)."""
        if config not in self._streams:
            self._streams = {config: {}}
        per_source = self._streams[config]
        if source not in per_source:
            per_source[source] = make()
        return per_source[source]

    def _spec(self, name: str):
        if self._specs is None:
            from hostlink.validation.manifest import load_manifest
            mpath = self.run.path / "manifest.toml"
            self._specs = load_manifest(mpath).graphs if mpath.is_file() else {}
        return self._specs.get(name)

    def get(self, name: str):
        if name in self._cache:
            return self._cache[name]
        from hostlink.traces.graphs.generators import generate
        from hostlink.traces.graphs.readers import read_bel

        csr = None
        prefixes = []
        if self.graph_dir is not None:
            prefixes.append(self.graph_dir / name)
        info = (self.run.metadata.get("graphs") or {}).get(name) or {}
        prefixes.append(self.run.path / "graphs" / name)
        spec = self._spec(name)
        for prefix in prefixes:
            if Path(f"{prefix}.bel.col").is_file() and Path(f"{prefix}.bel.dst").is_file():
                csr = read_bel(prefix, id_bytes=8, name=name)
                break
        if csr is None:
            kind = getattr(spec, "kind", None) or info.get("kind")
            if kind in ("kron", "urand"):
                scale = getattr(spec, "scale", None) or info.get("scale")
                degree = getattr(spec, "degree", None) or info.get("degree")
                seed = getattr(spec, "seed", None) or info.get("seed")
                csr = generate(kind, int(scale), int(degree), int(seed), weighted=True, id_bytes=8,
                               name=name)
            elif kind == "file" and spec is not None and spec.path is not None:
                csr = read_bel(spec.path, id_bytes=8, name=name)
            else:
                raise TwinError(f"graph '{name}': no .bel files under "
                                f"{', '.join(map(str, prefixes))} and no generator in the manifest")
        self._cache = {name: csr}            # one graph in memory at a time
        return csr


def requests_ahead(variant: str, load_ahead: int, id_bytes: int, weighted: bool = False) -> int:
    """Host requests a warp of a traversal kernel keeps in flight at load-ahead
    ``load_ahead`` (gpu_kernels/traversal/walk.cuh): the merged variants issue
    ``load_ahead`` warp-wide trips, each of one line or more (and as many loads of
    the weights where the kernel is ``weighted``), before the first use;
    in the naive kernel a thread's ``load_ahead`` trips are consecutive elements of
    its own list, which share one 32 B sector while ``load_ahead x id_bytes <= 32``:
    the later loads wait on the first one's sector (an L1 hit in the twin's
    stream), so only ``ceil(load_ahead x id_bytes / 32)`` requests are in flight
    (and ``ceil(load_ahead x WEIGHT_B / 32)`` of the weights)."""
    if variant == "naive":
        n = max(1, min(load_ahead, -(-load_ahead * id_bytes // SECTOR_B)))
        return n + (max(1, min(load_ahead, -(-load_ahead * WEIGHT_B // SECTOR_B)))
                    if weighted else 0)
    return max(1, load_ahead) * (2 if weighted else 1)


def predict_traversal(case: str, params: dict, system, graphs: GraphSource, *,
                      fidelity: str = "des", options: dict | None = None,
                      timing: dict | None = None,
                      max_sources: int | None = None,
                      max_device_edges: int = DEFAULT_MAX_DEVICE_EDGES) -> list[tuple[str, float, int]]:
    """(metric, value, rep) rows of a traversal case's twin, one set per source.

    The kernel's load-ahead (``load_ahead`` trips of loads issued before their
    visits; 1 where the run does not record it) sets the model's loads in flight
    per warp (:func:`requests_ahead`: the naive kernel's trips share a sector).
    A twin that carries the device accesses is put in the kernel's issue order at
    that load-ahead (a group's host loads, then its visits) and marks what each
    instruction waits for (:mod:`hostlink.traces.emulator.issue_order`): the visits
    run one after another and the next group waits for them.
    The kernel's loads of the edge list go through the GPU's caches
    (:func:`hostlink.traces.cache.host_read_cache`; one emulated stream serves every
    memory mode of a configuration: device and migrated managed memory are cached
    alike). ``timing`` (a dict) receives the wall-clock seconds spent emulating
    (``emulate_s``; a stream shared by memory modes counts once) and predicting
    (``model_s``), the sources and the requests predicted. ``max_sources``: predict
    only the first sources (a sample; rep numbers stay those of the measured run,
    ``source_index * reps + repetition``). The twin holds the kernel's device-array
    accesses too (vertex labels, offsets, atomics: :mod:`hostlink.traces.emulator.program`)
    on graphs of at most ``max_device_edges`` edges; larger graphs (scale 21 and up
    at degree 16) keep only the edge list's requests, as those accesses alone would
    need about 14 times the requests (9 GiB for a kron-21 BFS), and their device-side
    time is then the launches' dispatch and latency floor only."""
    import time

    from hostlink.model.config import system_with
    from hostlink.traces.emulator import emulate

    kernel, variant = params["kernel"], params["variant"]
    mode_name = params["memory_mode"]
    if mode_name not in PREDICT_MODE:
        raise TwinError(f"case '{case}': unknown memory mode '{mode_name}'")
    if variant == "balanced":
        raise TwinError(f"case '{case}': the balanced variant runs on the GPU only (no emulation)")
    mode = PREDICT_MODE[mode_name]
    id_bytes = int(params["id_bytes"])
    csr = graphs.get(params["graph"])
    reps = int(params.get("reps", 1) or 1)
    if kernel in ("bfs", "sssp"):
        sources = [int(s) for s in (params.get("sources") or [])]
        if not sources:
            raise TwinError(f"case '{case}': no sources recorded (metadata.json 'cases')")
        if max_sources is not None:
            sources = sources[:max(1, int(max_sources))]
    else:
        sources = [0]
    kw = {}
    if kernel == "pagerank":
        kw["iterations"] = int(params.get("iterations", 10))
    elem_B = id_bytes + (4 if kernel == "sssp" else 0)
    from hostlink.traces.cache import CacheConfig, host_read_cache
    from hostlink.traces.coalescer import coalesce
    from hostlink.traces.emulator.issue_order import issue_order, walk_waits
    from hostlink.traces.emulator.program import program
    host_cache = host_read_cache(system.gpu)
    cache = host_cache if host_cache is not None else CacheConfig.from_gpu(system.gpu, l2=False)
    load_ahead = int(params.get("load_ahead", 1) or 1)
    ahead = requests_ahead(variant, load_ahead, id_bytes, weighted=kernel == "sssp")
    if ahead != system.gpu.loads_in_flight_per_warp:
        system = system_with(system, {"gpu.loads_in_flight_per_warp": ahead})
    # SSSP and CC launches run in waves of the resident warps (later waves see the
    # earlier waves' updates: :mod:`hostlink.traces.emulator.algorithms`)
    resident = system.gpu.sm_count * system.gpu.max_warps_per_sm
    # the device arrays' accesses (labels, offsets, atomics) are about 14x the edge
    # list's requests: kept for graphs whose twin fits in memory
    with_device = csr.num_edges <= max_device_edges
    rows: list[tuple[str, float, int]] = []
    for si, source in enumerate(sources):
        # the emulator lays the edge list out in host memory and the other arrays in
        # device memory; in device mode the predictor serves the edge list's requests
        # from device memory too
        def make(source=source):
            em = emulate(csr, kernel, variant, source=source, id_bytes=id_bytes,
                         memory="zerocopy", include_device=with_device, resident_warps=resident,
                         **kw)
            edges = int(sum(int((csr.offsets[a + 1] - csr.offsets[a]).sum()) for a in em.active))
            trace = em.trace()
            if with_device:      # the kernel's order at its load-ahead, and its dependences
                trace = issue_order(trace, program(kernel, id_bytes, True), load_ahead)
            stream = coalesce(trace, cache=cache, cache_host=host_cache is not None,
                              include_device=with_device)
            if with_device:
                stream = stream.with_waits(walk_waits(stream))
            return stream, edges, len(em.active)
        config = (params["graph"], kernel, variant, id_bytes, kw.get("iterations"),
                  host_cache is not None, with_device, resident,
                  load_ahead if with_device else None)
        t0 = time.perf_counter()
        stream, edges, iterations = graphs.emulated(config, source, make)
        t1 = time.perf_counter()
        if len(stream) == 0:
            raise TwinError(f"case '{case}': the emulated run issues no requests")
        run = run_model(stream, system, mode, fidelity, options)
        if timing is not None:
            timing["emulate_s"] = timing.get("emulate_s", 0.0) + (t1 - t0)
            timing["model_s"] = timing.get("model_s", 0.0) + (time.perf_counter() - t1)
            timing["sources"] = timing.get("sources", 0) + 1
            timing["requests"] = timing.get("requests", 0) + len(stream)
        kernel_ns = float(np.sum(run.kernel_ns))
        values = {"time_ms": run.time_ns * 1e-6, "kernel_time_ms": kernel_ns * 1e-6,
                  "iterations": float(iterations), "edges_read": float(edges),
                  "bytes_read_B": float(edges * elem_B),
                  "bw_GBps": edges * elem_B / kernel_ns if kernel_ns > 0 else math.nan}
        for r in range(reps):
            for metric, value in values.items():
                rows.append((metric, float(value), si * reps + r))
    return rows


# ----------------------------------------------------------------------------
# Every case of a run


def predict_run(run: RunData, system, *, fidelity: str = "des", graph_dir=None,
                only: str | None = None, progress: bool = False,
                max_requests: int = DEFAULT_MAX_REQUESTS,
                max_uvm_B: int = DEFAULT_MAX_UVM_B,
                options: dict | None = None, timings: dict | None = None,
                max_sources: int | None = None, skip_cases: set[str] | None = None,
                on_case: Callable[[str, pd.DataFrame, str | None], None] | None = None,
                ) -> tuple[pd.DataFrame, dict[str, str]]:
    """Tidy predicted rows for every measured case (model_kind = fidelity), and the
    cases whose twin failed with the reason (``options``: see :func:`run_model`;
    ``timings``, a dict, receives each traversal case's wall-clock seconds, and
    ``max_sources`` samples each traversal case's sources, see
    :func:`predict_traversal`). ``skip_cases``: cases not predicted (already done
    elsewhere, e.g. a resumed report); ``on_case(case, rows, failure)`` is called as
    each case finishes, with its tidy rows (empty if it failed) and the failure
    message or None, so a caller can keep finished cases."""
    from hostlink.validation.results_io import make_table, unit_of

    if fidelity not in ("des", "analytic"):
        raise TwinError(f"fidelity must be 'des' or 'analytic', not '{fidelity}'")
    skip = set(skip_cases or ())
    cases = [c for c in run.measured["case"].unique() if selected(c, only) and c not in skip]
    graphs = GraphSource(run, graph_dir)
    def order_key(c):
        p = run.cases[c]
        return (p.get("kind") != "micro", str(p.get("graph", "")), str(p.get("kernel", "")),
                str(p.get("variant", "")), int(p.get("id_bytes", 0) or 0), c)
    order = sorted(cases, key=order_key)
    rows, failures = [], {}
    run_id = f"{run.experiment}-twin-{fidelity}"
    bar = _progress(len(order), progress)
    for case in order:
        params = run.cases[case]
        kind = params.get("kind")
        first = len(rows)
        failure = None
        try:
            if kind == "micro":
                twin = build_micro(case, params, system, hints=lambda m, c=case: run.hint(c, m),
                                   max_requests=max_requests, max_uvm_B=max_uvm_B)
                for metric, value in twin.predict(system, fidelity, options).items():
                    rows.append((run_id, run.experiment, case, fidelity, metric, value,
                                 unit_of(metric), 0))
            elif kind == "traversal":
                timing = {} if timings is not None else None
                if timings is not None:
                    timings[case] = timing
                for metric, value, rep in predict_traversal(case, params, system, graphs,
                                                            fidelity=fidelity, options=options,
                                                            timing=timing,
                                                            max_sources=max_sources):
                    rows.append((run_id, run.experiment, case, fidelity, metric, value,
                                 unit_of(metric), rep))
        except HostlinkError as exc:
            failures[case] = failure = str(exc)
        if on_case is not None:
            on_case(case, make_table(rows[first:]), failure)
        bar(case)
    return make_table(rows), failures


def sampled_measurements(run: RunData, max_sources: int | None) -> pd.DataFrame:
    """The run's measured rows, traversal cases limited to the repetitions of their first
    ``max_sources`` sources (``rep < max_sources * reps``): what a twin predicted with
    ``max_sources`` is compared with."""
    m = run.measured
    if max_sources is None:
        return m
    limit = {}
    for case, p in run.cases.items():
        if p.get("kind") == "traversal" and p.get("kernel") in ("bfs", "sssp"):
            limit[case] = max(1, int(max_sources)) * int(p.get("reps", 1) or 1)
    lim = m["case"].map(limit).fillna(np.inf).to_numpy(dtype=float)
    return m[m["rep"].to_numpy(dtype=float) < lim]


def selected(case: str, only: str | None) -> bool:
    """Whether a case matches ``only``: comma-separated substrings, any of which may match."""
    if not only:
        return True
    return any(part and part in case for part in only.split(","))


def _progress(total: int, enabled: bool):
    if not enabled:
        return lambda case: None
    import sys
    state = {"n": 0}

    def step(case: str) -> None:
        state["n"] += 1
        sys.stderr.write(f"\r[{state['n']}/{total}] {case[:70]:<70}")
        if state["n"] == total:
            sys.stderr.write("\n")
        sys.stderr.flush()
    return step


def synthesize(cases: dict[str, dict], system, *, fidelity: str = "des", noise_pct: float = 0.0,
               reps: int = 3, seed: int = 0, experiment: str = "synthetic",
               max_requests: int = DEFAULT_MAX_REQUESTS,
               options: dict | None = None) -> pd.DataFrame:
    """Measured-looking results of microbenchmark cases, generated by the model itself.

    Each case's predicted metrics are repeated ``reps`` times with independent
    log-normal noise of ``noise_pct`` percent (a seeded NumPy generator), and
    labelled ``measured``: data with known parameters for testing calibration.
    """
    from hostlink.validation.results_io import make_table, unit_of

    rng = np.random.default_rng(seed)
    rows = []
    for case, params in cases.items():
        twin = build_micro(case, params, system, max_requests=max_requests)
        values = twin.predict(system, fidelity, options)
        if twin.benchmark in ("zc_read", "zc_warps", "uvm_touch"):
            values["warps_launched"] = float(twin.extra.get("warps", 0))
        for rep in range(reps):
            noise = np.exp(rng.normal(0.0, noise_pct / 100.0)) if noise_pct else 1.0
            for metric, value in values.items():
                v = value if metric == "warps_launched" else value * (
                    1.0 / noise if metric.endswith("GBps") else noise)
                rows.append((f"{experiment}-synthetic", experiment, case, "measured", metric,
                             float(v), unit_of(metric), rep))
    return make_table(rows)
