"""The single entry point: time and bandwidth of a request stream on a system.

``predict(source, system, mode="zerocopy", fidelity="analytic") -> Prediction``

- ``source``: a :class:`~hostlink.model.workload.TraversalWorkload` (a traversal
  program's run: its stream, loads in flight per warp and host loop), a
  :class:`~hostlink.model.workload.RequestStream`, a workload described beyond
  its requests (:data:`hostlink.model.workload.WORKLOADS`: a sampled run, a first
  touch, a pointer chase, a copy, a launch, a host loop; timed by
  :mod:`hostlink.model.runs`), a
  :class:`~hostlink.traces.schema.WarpTrace`, or the path of a trace (an
  Accel-Sim folder, a trace store, or a gem5 packet trace, read as its
  requests by :func:`hostlink.traces.gem5_trace.read_gem5`): traces are coalesced by
  :func:`hostlink.traces.coalescer.coalesce` (device sectors included;
  unless ``coalesce_options`` names ``cache`` or ``cache_host``, through the
  caches :func:`hostlink.traces.cache.host_read_cache` gives for the
  system's GPU with ``cache_host=True``: the GPU's L1 and L2 when
  ``gpu.caches_host_reads``, else none). A ready RequestStream is used as
  it is.
- ``system``: a :class:`~hostlink.model.config.SystemConfig` or a preset name
  or file (``overrides``: ``["link.rtt_ns=1.2us", ...]`` or a dict).
- ``mode``: ``zerocopy`` (host requests cross the link as they are),
  ``uvm`` / ``uvm_readmostly`` (the host requests' pages migrate on fault;
  :func:`hostlink.model.uvm.simulate_uvm`, the latter with
  cudaMemAdviseSetReadMostly), ``uvm_accessedby`` (managed memory left on the
  host with cudaMemAdviseSetAccessedBy: timed as zero-copy, translated as
  :func:`hostlink.model.translation.managed_host_view` says), ``device``
  (everything in device memory).
- ``fidelity``: ``analytic`` or ``des``; ``engine`` picks the DES engine
  (``fast`` or the SimPy ``reference``); ``nbins``: bins of the DES's
  bandwidth-over-time series (``extra["des"]``); ``uvm_options``: keywords of
  :func:`hostlink.model.uvm.simulate_uvm`.
- ``host_loop``: the program's loop around its launches (a name of
  :data:`hostlink.model.host_loop.LOOPS` or a sequence of items) with ``vertices``
  for its sizes: the time between launches is that loop's
  (:mod:`hostlink.model.host_loop`); without it, ``launch_overhead_us`` per launch
  and ``level_sync_us`` between launches.

Zero-copy, analytic: the stream's host requests, grouped by size and offset,
go through the analytic model (:func:`hostlink.model.analytic.predict_system`),
whose least bound gives the bandwidth. Each launch then takes the longest of
(its bytes over that bandwidth, its device bytes over device bandwidth, its
critical path: the warp whose instructions, each one load-to-use latency
(:func:`host_latency_ns`, ``gpu.host_path_ns + link.rtt_ns``, for host,
``device_lat_ns`` for device, more for a device atomic that returns, plus
its lines' issue gaps; a store holds nothing: :func:`critical_path_ns`) and
at most ``loads_in_flight`` at a time, take longest, lengthened by queueing
behind the launch's busy phase; its CTA waves; its
busiest SM's issue stage: :func:`launch_terms_ns`), plus the launch overhead and, after the first launch,
the level synchronisation (or the host loop's items). Zero-copy, des: the discrete-event model
(:mod:`hostlink.model.des`). UVM: the UVM model's service and device time per
launch plus the same overheads, at either fidelity (it is itself a
simulation; ``extra["uvm"]`` holds its full result), to which the kernel's own
time with every page resident (device mode at the same fidelity) is added. Every
mode's launch then takes at least its CTAs' dispatch and the launch's own time
(:func:`launch_floor`: ``gpu.cta_dispatch_ns``, ``gpu.launch_ns``). Device: the host
requests are served by device memory (the analytic bound is bandwidth and
latency as above; the DES runs the stream with every request on the device path).

Assumptions: compute between memory instructions is free beyond the issue of every warp
instruction (:mod:`hostlink.model.compute`, the bound ``compute``); launches run one
after another; the analytic critical path takes queueing as one mean wait per
launch (:func:`hostlink.model.analytic_launch.loaded_chain_ns`).

A stream's own counts and its engine runs are kept with the stream
(:mod:`hostlink.model.stream_memo`; the runs keyed by every part of the system but
the ``uvm`` section): predicting one stream again on a system that differs in its
UVM costs alone, as a UVM calibration does, replays nothing.
"""
from __future__ import annotations

import copy
import dataclasses
from pathlib import Path

import numpy as np

from hostlink.model.config import SystemConfig, load_any_system, system_with
from hostlink.model.errors import ConfigError, HostlinkError
from hostlink.model.result import Prediction
from hostlink.model.workload import (OPTIONAL_COLUMNS, REQUEST_DTYPES, SPACE_DEVICE, SPACE_HOST,
                                     WORKLOADS, RequestStream, TraversalWorkload)

MODES = ("zerocopy", "uvm_accessedby", "uvm", "uvm_readmostly", "device")
#: modes only a gather takes (:mod:`hostlink.model.gather_run`): its UVM table already
#: resident, and host threads gathering the rows before one copy
GATHER_MODES = ("uvm_warm", "cpu_gather")
FIDELITIES = ("analytic", "des")


# ------------------------------------------------------------------ inputs

def resolve_system(system, overrides=None) -> SystemConfig:
    """A SystemConfig from a config, a preset name or a file, with overrides applied."""
    if isinstance(system, SystemConfig):
        return system_with(system, overrides) if overrides else system
    if isinstance(system, (str, Path)):
        return load_any_system(str(system), overrides)
    raise ConfigError(f"system must be a SystemConfig, a preset name or a file, "
                      f"not {type(system).__name__}")


def coalesce_defaults(gpu, coalesce_options: dict | None = None) -> dict:
    """The options a trace is coalesced with: device sectors included and, unless
    ``coalesce_options`` names ``cache`` or ``cache_host``, the host-read caches
    of ``gpu`` (:func:`hostlink.traces.cache.host_read_cache`, ``cache_host=True``;
    no caches when ``gpu`` is None); ``coalesce_options`` override the rest."""
    opts: dict = {"include_device": True}
    given = coalesce_options or {}
    if gpu is not None and "cache" not in given and "cache_host" not in given:
        from hostlink.traces.cache import host_read_cache
        opts.update(cache=host_read_cache(gpu), cache_host=True)
    opts.update(given)
    return opts


def as_stream(source, coalesce_options: dict | None = None,
              trace_options: dict | None = None, *, gpu=None) -> RequestStream:
    """The request stream of a stream, a WarpTrace or a trace folder.

    ``coalesce_options`` go to :func:`hostlink.traces.coalescer.coalesce`
    (defaults: :func:`coalesce_defaults` for ``gpu``), ``trace_options``
    (``regions``, ``memcpy_location``) to
    :func:`hostlink.traces.store.open_trace`."""
    if isinstance(source, RequestStream):
        return source
    opts = coalesce_defaults(gpu, coalesce_options)
    from hostlink.traces.coalescer import coalesce
    from hostlink.traces.schema import WarpTrace
    if isinstance(source, WarpTrace):
        return coalesce(source, **opts)
    if isinstance(source, (str, Path)):
        from hostlink.traces.gem5_trace import read_gem5, reads_as_gem5
        if reads_as_gem5(source):  # requests already: nothing to coalesce
            return read_gem5(source)
        return coalesce(open_trace_folder(source, trace_options), **opts)
    raise HostlinkError(f"cannot predict from a {type(source).__name__}: give a RequestStream, "
                        "a WarpTrace or a trace folder")


def open_trace_folder(source, trace_options: dict | None = None):
    """The WarpTrace of a trace folder, with the regions of its ``regions.toml`` and
    ``trace_options`` (``regions``, ``memcpy_location``:
    :func:`hostlink.traces.store.open_trace`)."""
    from hostlink.traces.folder_regions import with_folder_regions
    from hostlink.traces.store import open_trace
    topts = dict(trace_options or {})
    topts["regions"] = with_folder_regions(source, topts.get("regions"))
    return open_trace(Path(source), **topts)


def n_launches(stream: RequestStream) -> int:
    return max(len(stream.launches), int(stream.launch.max()) + 1 if len(stream) else 0)


def _overheads_ns(system: SystemConfig, n: int) -> np.ndarray:
    gaps = np.full(n, system.launch_overhead_us * 1e3)
    gaps[1:] += system.level_sync_us * 1e3
    return gaps


def unique_useful_B(stream: RequestStream, sel: np.ndarray) -> int:
    """Distinct useful bytes of the selected requests, estimated as the least of
    their useful bytes (exact when no byte is asked twice) and the distinct bytes
    their ranges cover (exact up to sector padding when data is read again)."""
    if not sel.any():
        return 0
    from hostlink.model.uvm.model import unique_bytes
    useful = int(stream.useful_B[sel].sum(dtype=np.int64))
    return min(useful, unique_bytes(stream.addr[sel], stream.size_B[sel]))


def _common(stream: RequestStream) -> dict:
    """The stream's own counts (computed once per stream: :mod:`hostlink.model.stream_memo`);
    a fresh dict each call, its arrays shared."""
    from hostlink.model.stream_memo import memoized
    common = memoized(stream, "common", None, lambda: _count_common(stream))
    return dict(common, requests_by_size_B=dict(common["requests_by_size_B"]))


def _count_common(stream: RequestStream) -> dict:
    host = stream.space == SPACE_HOST
    reads = host & ~stream.is_write
    return {
        "host": host,
        "requests_by_size_B": stream.size_histogram(SPACE_HOST),
        "requests": int(np.count_nonzero(reads)),
        "useful_B": int(stream.useful_B[host].sum(dtype=np.int64)),
        "requested_B": int(stream.size_B[host].sum(dtype=np.int64)),
        "unique_useful_B": unique_useful_B(stream, host),
        "launches": n_launches(stream),
    }


# ------------------------------------------------------------------ analytic pieces

def size_histogram(stream: RequestStream):
    """The stream's host requests grouped by (size, offset in the 4 KiB page, write),
    for the analytic model (a packed one-dimensional key: one sort)."""
    from hostlink.model.analytic import SizeHistogram
    host = stream.space == SPACE_HOST
    key = (((stream.addr[host] & np.uint64(4095)).astype(np.int64) << 20)
           | (stream.size_B[host].astype(np.int64) << 1) | stream.is_write[host])
    uniq, counts = np.unique(key, return_counts=True)
    return SizeHistogram.of((uniq >> 1) & 0x7FFFF, counts.astype(np.float64), uniq >> 20,
                            (uniq & 1).astype(bool))


def host_latency_ns(system: SystemConfig) -> float:
    """A warp's unloaded load-to-use latency of a host read, less its service times:
    the GPU-internal path (``gpu.host_path_ns``) plus the link round trip during
    which the read holds its tag (``link.rtt_ns``). Little's law on tags and
    completion credits takes ``link.rtt_ns`` alone."""
    return float(system.gpu.host_path_ns) + float(system.link.rtt_ns)


def critical_path_ns(stream: RequestStream, host_lat_ns: float, device_lat_ns: float,
                     loads_in_flight: int, as_device: bool = False,
                     atomic_extra_ns: float = 0.0,
                     atomic_spread_ns: float | None = None, *, host_gap_ns: float = 0.0,
                     device_gap_ns: float = 0.0) -> np.ndarray:
    """Per launch: the longest warp's dependent chain of instructions.

    An instruction that reads host memory costs ``host_lat_ns``, one that reads
    only device memory ``device_lat_ns`` (plus ``atomic_extra_ns``, and
    ``atomic_spread_ns * log2(k)`` for its k lines, where the stream marks it an atomic
    that returns, ``stream.atomic``), one that only writes nothing (stores are
    posted); an instruction of k lines waits (k - 1) issue gaps more
    (``host_gap_ns`` or ``device_gap_ns``); a warp keeps at most
    ``loads_in_flight`` in flight, so its chain is its summed latency over that.
    Where the stream marks instructions that wait for the warp's earlier ones
    (``stream.waits``), each run of instructions from one that waits to the next
    takes ``ceil(k / loads_in_flight)`` rounds of its slowest latency
    (:func:`hostlink.model.analytic_launch.warp_chains`)."""
    from hostlink.model.analytic_launch import warp_chains
    out = np.zeros(n_launches(stream))
    chains = warp_chains(stream, host_lat_ns, device_lat_ns, loads_in_flight,
                         as_device=as_device, atomic_extra_ns=atomic_extra_ns,
                         atomic_spread_ns=atomic_spread_ns, host_gap_ns=host_gap_ns,
                         device_gap_ns=device_gap_ns)
    np.maximum.at(out, chains.launch, chains.chain_ns)
    return out


# Requests whose walks' chains are priced at once. Making a chain shape holds some
# tens of bytes a request (hostlink.model.analytic_launch.chain_shape), so parts of
# whole launches bound that memory however long the run. A bound on this process's
# memory, not a property of the GPU.
WALK_PART_REQUESTS = 1 << 21


def _scan_parts(stream: RequestStream, scans: np.ndarray):
    """The requests of the launches ``scans`` marks, in parts of whole launches of at
    most :data:`WALK_PART_REQUESTS` requests each (a larger launch alone). A stream no
    longer than one part is its own part, so its chain shapes stay memoized with it
    (:mod:`hostlink.model.stream_memo`) for the next prediction of it."""
    if len(stream) <= WALK_PART_REQUESTS:
        yield stream
        return
    launch = stream.launch
    order = None if bool((launch[1:] >= launch[:-1]).all()) else np.argsort(launch,
                                                                             kind="stable")
    bounds = np.searchsorted(launch if order is None else launch[order],
                             np.arange(len(scans) + 1))

    def part(lo: int, hi: int) -> RequestStream:
        rows = slice(bounds[lo], bounds[hi])    # views where the stream is in launch order
        return stream.select(rows if order is None else order[rows])
    start, size = None, 0
    for k, scan in enumerate(scans):
        count = int(bounds[k + 1] - bounds[k])
        if start is not None and (not scan or size + count > WALK_PART_REQUESTS):
            yield part(start, k)
            start, size = None, 0
        if scan and count:
            start = k if start is None else start
            size += count
    if start is not None:
        yield part(start, len(scans))


def host_walks_ns(stream: RequestStream, system: SystemConfig,
                  floor_ns: np.ndarray) -> np.ndarray:
    """Per launch, what reading its walks' lists from host memory adds to the issue
    floor of its vertex tests (``floor_ns``, one per launch;
    :mod:`hostlink.model.compute`, "Tests and walks from host memory"); 0 but for
    launches that test every vertex at a measured rate (their record's
    ``stall_sm_clocks``: the chunked and balanced traversal launches,
    :mod:`hostlink.traces.scan_cost`).

    A warp's walks wait longer from host memory by its dependent chain
    (:func:`critical_path_ns`) with its host reads at the host's load-to-use latency
    less the same chain at device memory's. Its CTA holds its slot that much longer.
    The floor's CTAs run in waves of the launch's CTA slots, each wave ending a share
    of the floor after the one before; a CTA that would end a wave early delays the
    launch only by what its walks add beyond the rest of the floor, so the launch
    takes the most any warp's walks add beyond that slack. Assumptions: each wave
    of the grid's CTAs (:func:`hostlink.model.occupancy.ctas_per_sm` a SM) takes an
    equal share of the floor, the last ending with it; a warp's walks delay it by
    the same wherever they lie among its tests."""
    from hostlink.model.analytic_launch import warp_chains
    from hostlink.model.occupancy import ctas_per_sm, launch_shapes
    floor_ns = np.asarray(floor_ns, dtype=np.float64)
    n = len(floor_ns)
    out = np.zeros(n)
    infos = stream.launches[:n]
    scans = np.zeros(n, dtype=bool)
    grid = np.ones(n)                       # the launch's CTAs
    for k, info in enumerate(infos):
        scans[k] = float(getattr(info, "stall_sm_clocks", 0.0) or 0.0) > 0
        grid[k] = max(1, int(info.ctas))
    if not scans.any() or len(stream) == 0:
        return out
    gpu = system.gpu

    def chains(part: RequestStream, as_device: bool):
        return warp_chains(part, host_latency_ns(system), gpu.device_lat_ns,
                           gpu.loads_in_flight_per_warp, as_device=as_device,
                           atomic_extra_ns=gpu.atomic_extra_ns,
                           atomic_spread_ns=gpu.atomic_spread_ns,
                           host_gap_ns=gpu.host_request_gap_ns,
                           device_gap_ns=gpu.request_gap_ns)

    wpc, regs = launch_shapes(infos, n)
    slots = gpu.sm_count * ctas_per_sm(gpu.max_warps_per_sm, gpu.registers_per_sm, wpc, regs)
    waves = grid / slots                    # the launch's waves of CTAs
    for part in _scan_parts(stream, scans):
        host, device = chains(part, False), chains(part, True)
        launch = host.launch.astype(np.int64)
        keep = (launch < n) & scans[np.minimum(launch, n - 1)]
        if not keep.any():
            continue
        launch = launch[keep]
        extra = (host.chain_ns - device.chain_ns)[keep]
        cta = host.warp.astype(np.int64)[keep] // wpc[launch]
        # the share of the floor by which the CTA's wave has ended (the last wave at 1)
        ends = np.minimum(1.0, (cta // slots[launch] + 1) / waves[launch])
        slack = floor_ns[launch] * (1.0 - ends)
        np.maximum.at(out, launch, extra - slack)
    return np.maximum(out, 0.0)


def launch_issue_floor_ns(stream: RequestStream, system: SystemConfig, n: int, *,
                          from_host: bool) -> np.ndarray:
    """Per launch, the least time its SMs need to issue its instructions
    (:func:`hostlink.model.compute.stream_issue_floor_ns`), and where its walks read
    host memory (``from_host``) what those reads add (:func:`host_walks_ns`)."""
    from hostlink.model.compute import stream_issue_floor_ns
    floor = stream_issue_floor_ns(stream, system.gpu, n)
    return floor + host_walks_ns(stream, system, floor) if from_host else floor


def launch_terms_ns(stream: RequestStream, system: SystemConfig,
                    as_device: bool = False) -> dict[str, np.ndarray]:
    """Per launch, the analytic fidelity's terms from the warps and the SMs: the
    longest warp's chain (``latency``), the CTA waves (``waves``) and the busiest
    SM's issue stage (``sm_issue``), with the system's latencies and issue costs
    (:mod:`hostlink.model.analytic_launch`)."""
    from hostlink.model.analytic_launch import launch_terms, warp_chains
    gpu = system.gpu
    l2 = None
    if gpu.sm_l2_request_ns is not None and gpu.sm_request_ns > 0:
        from hostlink.model.l2_lines import l2_config
        l2 = l2_config(gpu)
    chains = warp_chains(stream, host_latency_ns(system), gpu.device_lat_ns,
                         gpu.loads_in_flight_per_warp, as_device=as_device,
                         atomic_extra_ns=gpu.atomic_extra_ns,
                         atomic_spread_ns=gpu.atomic_spread_ns,
                         host_gap_ns=gpu.host_request_gap_ns, device_gap_ns=gpu.request_gap_ns,
                         l2=l2, dram_lat_ns=gpu.dram_lat_ns)
    terms = launch_terms(chains, stream, n_launches(stream), gpu.sm_count,
                         gpu.max_warps_per_sm, gpu.sm_request_ns, gpu.registers_per_sm,
                         gpu.sm_l2_request_ns)
    return {"latency": terms["path"], "waves": terms["waves"], "sm_issue": terms["sm"]}


def _per_launch_sum(stream: RequestStream, sel: np.ndarray, values: np.ndarray) -> np.ndarray:
    return np.bincount(stream.launch[sel].astype(np.int64), weights=values[sel].astype(np.float64),
                       minlength=n_launches(stream))


def _host_costs(stream: RequestStream, system: SystemConfig) -> dict:
    """:func:`hostlink.model.des.inputs.request_costs` in the stream's row order; its
    cost classes, which depend on the stream alone, are kept with the stream (a
    calibration prices the same stream on many systems)."""
    from hostlink.model.des.inputs import request_classes, request_costs
    from hostlink.model.stream_memo import memoized
    row = np.arange(len(stream))
    classes = memoized(stream, "request_classes", None, lambda: request_classes(stream, row),
                       keep=1)
    return request_costs(stream, system, row, classes=classes)


# ------------------------------------------------------------------ the modes

def _tlb_miss_rate(stream: RequestStream, system: SystemConfig) -> float:
    """Fraction of the host requests whose page misses the GPU's TLB, in the
    order resident warps issue them (0 with translation disabled)."""
    if not system.translation.enabled:
        return 0.0
    from hostlink.model.translation import stream_translation
    resident = system.gpu.sm_count * system.gpu.max_warps_per_sm
    return stream_translation(stream, system.translation, resident).tlb_miss_rate


def _zerocopy_analytic_kept(stream, system, common) -> dict:
    """:func:`_zerocopy_analytic`, once per stream and system less the sections no
    engine reads, as :func:`_zerocopy_des` (the loaded round trip's last pass is the
    prediction itself). A deep copy each call: callers add to it."""
    from hostlink.model.stream_memo import memoized, system_key_without_uvm
    return copy.deepcopy(memoized(stream, "analytic", system_key_without_uvm(system),
                                  lambda: _zerocopy_analytic(stream, system, common),
                                  keep=DES_RUNS_KEPT))


def _zerocopy_analytic(stream, system, common) -> dict:
    """Each launch takes the longest of its terms: its host bytes at the analytic
    model's bandwidth (``link``, named after the binding bound), its device bytes at
    device bandwidth (``device``) and :func:`launch_terms_ns`'s (``latency``, the
    longest chain lengthened by queueing behind the bandwidth term,
    :func:`hostlink.model.analytic_launch.loaded_chain_ns`; ``waves``, which count
    as ``latency`` too; ``sm_issue``); the run's bound is the term that takes the
    most time."""
    from hostlink.model.analytic import predict_system, translation_params
    n = common["launches"]
    host = common["host"]
    gpu = system.gpu
    costs = _host_costs(stream, system)
    dev = ~host
    dev_ns = _per_launch_sum(stream, dev, stream.size_B.astype(np.float64)) / gpu.device_bw_GBps
    warps = launch_terms_ns(stream, system)
    if host.any():
        from hostlink.model.stream_memo import memoized
        hist = memoized(stream, "size_histogram", None, lambda: size_histogram(stream), keep=1)
        resident = system.gpu.sm_count * system.gpu.max_warps_per_sm
        miss = memoized(stream, "tlb_miss_rate", (system.translation, resident),
                        lambda: _tlb_miss_rate(stream, system))
        res = predict_system(system, hist, **translation_params(system, miss)).item()
        bw = res["bw_GBps"]
        link_ns = _per_launch_sum(stream, host, stream.size_B.astype(np.float64)) / bw
        bound_name = res["bound"]
        limit = res["outstanding_limit"]
        mean_size = res["bytes_per_read"]
    else:
        res, link_ns, bound_name, limit, mean_size = {}, np.zeros(n), "device", 0.0, 1.0
    if host.any():
        from hostlink.model.analytic_launch import loaded_chain_ns, read_demand
        warps["latency"] = loaded_chain_ns(link_ns, warps["latency"], host_latency_ns(system),
                                           read_demand(stream, gpu, n), mean_size, bw)
    terms = np.stack([link_ns, dev_ns, warps["latency"], warps["waves"], warps["sm_issue"]])
    kernel_ns = terms.max(axis=0)
    which = terms.argmax(axis=0)
    share = np.bincount(which, weights=kernel_ns, minlength=len(terms))
    bound = (bound_name, "device", "latency", "latency", "sm_issue")[int(np.argmax(share))]
    kernel_total = kernel_ns.sum()
    reads_ns = link_ns.sum()
    if host.any() and kernel_total > 0:
        # Little's law over the time the link term runs at its bound; reads hold
        # their tags for the link round trip only, not the GPU-internal path
        busy = min(1.0, reads_ns / kernel_total)
        outstanding = min(limit, res["bw_GBps"] * system.link.rtt_ns / mean_size) * busy
        peak = float(min(limit, common["requests"]))
    else:
        outstanding, peak = float("nan"), float("nan")
    return {"kernel_ns": kernel_ns, "bound": bound, "outstanding_mean": outstanding,
            "outstanding_peak": peak, "wire_B_down": costs["wire"]["down"],
            "wire_B_up": costs["wire"]["up"], "dram_B": int(costs["host_dram_B"]),
            "extra": {"analytic": res, "kernel_terms_ns": {
                "link": link_ns.tolist(), "device": dev_ns.tolist(),
                **{name: v.tolist() for name, v in warps.items()}}}}


def des_bound(stats: dict, kernel_ns: float, limits: dict) -> tuple[str, dict]:
    """What bound a DES run, and every resource's utilisation.

    Servers (the link directions, host DRAM, device memory, the page walkers)
    come first: one busy 85% of the time or more is the bound (reads queued
    behind it hold their tags, so the tags look busy too). Otherwise the read
    slots (the least of tags, the GPU's limit and the completion credits,
    named after the least) bind if they are held 85% of the time; otherwise
    the run is bound by ``latency``: too few warps or instructions in flight."""
    if kernel_ns <= 0:
        return "none", {}
    util = {
        "link_down": stats["busy_down_ns"] / kernel_ns,
        "link_up": stats["busy_up_ns"] / kernel_ns,
        "dram": stats["busy_dram_ns"] / kernel_ns,
        "device": stats["busy_dev_ns"] / kernel_ns,
        "translation": stats.get("walk_busy_ns", 0.0) / kernel_ns,
    }
    server = max(util, key=util.get)
    # the read slots, named after the least limit (a run in device memory holds none)
    slots_name = min(limits, key=limits.get) if limits else None
    if slots_name is not None:
        util[slots_name] = stats["sum_lat_ns"] / kernel_ns / limits[slots_name]
    if util[server] >= 0.85:
        return server, util
    if slots_name is not None and util[slots_name] >= 0.85:
        return slots_name, util
    return "latency", util


# Engine runs (and analytic ones) kept per stream: a zero-copy prediction's loaded round
# trip takes up to five (hostlink.model.loaded_rtt), the device run one more; the three host
# memory modes of a traversal (pinned, registered, AccessedBy) replay the same five
# in turn, and fewer kept than that would evict each before its reuse (a few KB each)
DES_RUNS_KEPT = 8


def _zerocopy_des(stream, system, common, engine="fast", nbins=1024, as_device=False,
                  share=1.0) -> dict:
    """The engine's run of ``stream`` (as device memory with ``as_device``), once per
    stream and system less its ``uvm`` section (:mod:`hostlink.model.stream_memo`):
    a UVM calibration replays the same kernels on every evaluation, and a traversal
    twin's memory modes share runs. A deep copy each call: callers add to it."""
    from hostlink.model.stream_memo import memoized
    key = _des_key(system, engine, nbins, as_device, share)
    return copy.deepcopy(memoized(stream, "des", key, lambda: _with_fewer_walkers(
        stream, system, key, as_device, share) or _run_des(
        stream, system, common, engine, nbins, as_device, share), keep=DES_RUNS_KEPT))


def _with_fewer_walkers(stream, system, key, as_device, share) -> dict | None:
    """The engine's run of ``stream`` on ``system`` taken from one held on a system that
    differs only in having fewer page walkers (``translation.walkers``: pinned memory's
    where this is managed memory on the host), where no walk waited for a walker
    there; None where none is held. A walk starts when its walker's walk before it
    ends, and the walks take the walkers in turn: where ``w`` walkers kept every walk
    from waiting, more keep each walker's walk before it earlier still, so every event
    is as it was. Only the walkers' busy share (``walk_busy_ns``) and the bound it
    may set change. Blended runs (:func:`blended_run`) are not taken: the loaded
    round trip blends this system's own passes again."""
    from hostlink.model.stream_memo import engine_fields, held
    if as_device:
        return None
    at = engine_fields().index("translation")
    mine = key[0][at]
    for other, run in held(stream, "des"):
        xl = other[0][at]
        if (other[1:] != key[1:] or run.get("blended") or xl.walkers >= mine.walkers
                or dataclasses.replace(xl, walkers=mine.walkers) != mine
                or other[0][:at] + other[0][at + 1:] != key[0][:at] + key[0][at + 1:]):
            continue
        stats = run["extra"]["des"]["stats"]
        if stats["sum_walk_wait_ns"] != 0:
            continue
        out = copy.deepcopy(run)
        des = out["extra"]["des"]
        # as _run_des counts it, with this system's walkers
        des["stats"]["walk_busy_ns"] = (stats["walks"] * float(mine.miss_lat_ns)
                                        / max(1, int(mine.walkers)))
        out["bound"], des["utilisation"] = des_bound(
            des["stats"], float(np.sum(out["kernel_ns"])), _des_limits(system, as_device, share))
        return out
    return None


def _des_limits(system, as_device: bool, share: float) -> dict:
    """The read slots an engine run holds, by name, for :func:`des_bound` (a miniature
    holds its share of them); a run in device memory holds none, and reads nothing of
    the link (its memo key leaves the link out: :func:`_des_key`)."""
    from hostlink.model.des.inputs import tag_limit
    limits = {}
    if not as_device:
        link = system.link
        limits["tags" if link.tags <= system.gpu.max_outstanding_host_reads else "requester"] \
            = float(tag_limit(system)) * share
        if link.cpl_buffer_hdrs:
            limits["cpl_credits"] = float(link.cpl_buffer_hdrs) * share
    return limits


def _des_key(system, engine, nbins, as_device, share) -> tuple:
    """The key an engine run of a stream is kept under (:func:`_zerocopy_des`)."""
    from hostlink.model.stream_memo import system_key_without_uvm
    return (system_key_without_uvm(system, in_device_memory=as_device), engine, int(nbins),
            bool(as_device), float(share))


def _des_blender(stream, engine, nbins, share=1.0):
    """``blend_on`` for :func:`hostlink.model.loaded_rtt.loaded_system`: the engine's run
    of ``stream`` on ``at`` as the blend of its runs on ``first`` and ``second``
    (:func:`blended_run`), held where :func:`_zerocopy_des` finds it; False where
    either run is not held or a different resource binds them."""
    from hostlink.model.stream_memo import hold, peek

    def blend_on(first, second, at, w: float) -> bool:
        lo = peek(stream, "des", _des_key(first, engine, nbins, False, share))
        hi = peek(stream, "des", _des_key(second, engine, nbins, False, share))
        if lo is None or hi is None or lo["bound"] != hi["bound"]:
            return False
        hold(stream, "des", _des_key(at, engine, nbins, False, share), blended_run(lo, hi, w),
             keep=DES_RUNS_KEPT)
        return True
    return blend_on


def blended_run(lo: dict, hi: dict, w: float) -> dict:
    """Two engine runs of one stream (:func:`_run_des`) at different round trips,
    blended with weight ``w`` on ``hi``: every number and array of numbers of the
    same shape in both moves linearly between them; what cannot (a name, a
    bandwidth series in bins of another width) is the nearer run's."""
    def mix(a, b):
        nearer = b if w >= 0.5 else a
        if isinstance(a, dict) and isinstance(b, dict) and a.keys() == b.keys():
            out = {k: mix(a[k], b[k]) for k in a}
            if a.get("bw_series_bin_s") != b.get("bw_series_bin_s"):
                for k in ("bw_series_bin_s", "bw_series_GBps"):
                    out[k] = copy.deepcopy(nearer[k])
            return out
        if isinstance(a, float) and isinstance(b, float):
            return float(a + w * (b - a))
        if isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.shape == b.shape \
                and a.dtype.kind == "f":
            return a + w * (b - a)
        if isinstance(a, list) and isinstance(b, list) and len(a) == len(b) and \
                all(isinstance(x, float) for x in a + b):
            return [x + w * (y - x) for x, y in zip(a, b)]
        return copy.deepcopy(nearer)
    out = mix(lo, hi)
    out["blended"] = True
    return out


def _run_des(stream, system, common, engine, nbins, as_device, share=1.0) -> dict:
    from hostlink.model.des import STAT_NAMES, simulate
    host = common["host"]
    if as_device:
        from hostlink.model.l2_lines import stand_ins
        optional = {k: getattr(stream, k) for k in OPTIONAL_COLUMNS}
        optional["stand_in"] = stand_ins(stream)    # before every request is a device one
        stream = RequestStream(**{k: getattr(stream, k) for k in REQUEST_DTYPES if k != "space"},
                               space=np.full(len(stream), SPACE_DEVICE, dtype=np.uint8),
                               launches=stream.launches, **optional)
    # a device run's stream is made here and run once: nothing to keep
    inputs, out = simulate(stream, system, engine=engine, nbins=nbins, keep_inputs=not as_device,
                           share=share)
    stats = {name: float(out.stats[i]) for i, name in enumerate(STAT_NAMES)}
    stats["walk_busy_ns"] = stats["walks"] * inputs.walk_ns / max(1, inputs.walkers)
    kernel_ns = out.kernel_ns
    total_kernel = float(kernel_ns.sum())
    bound, util = des_bound(stats, total_kernel, _des_limits(system, as_device, share))
    has_reads = stats["host_reads"] > 0
    wire = inputs.extra["wire_B"]
    dram_B = int(inputs.extra["host_dram_B"])
    used = np.flatnonzero(out.bw_bins_B)
    series = out.bw_bins_B[:used[-1] + 1 if len(used) else 0] / out.bin_ns  # B/ns = GB/s
    return {"kernel_ns": kernel_ns, "bound": bound,
            "outstanding_mean": stats["sum_lat_ns"] / total_kernel if has_reads and total_kernel
            else float("nan"),
            "outstanding_peak": stats["peak_outstanding"] if has_reads else float("nan"),
            "wire_B_down": wire["down"], "wire_B_up": wire["up"], "dram_B": dram_B,
            "extra": {"des": {"stats": stats, "utilisation": util, "engine": engine,
                              "bw_series_bin_s": out.bin_ns * 1e-9,
                              "bw_series_GBps": series.tolist(),
                              "mean_read_latency_ns": stats["sum_lat_ns"] / stats["host_reads"]
                              if has_reads else float("nan")}}}


def _device_analytic(stream, system, common) -> dict:
    """Every request served by device memory: each launch takes the longest of its
    bytes at device bandwidth and :func:`launch_terms_ns`'s terms (the chain
    lengthened by queueing behind the bytes' busy phase,
    :func:`hostlink.model.analytic_launch.loaded_chain_ns`)."""
    gpu = system.gpu
    size = stream.size_B.astype(np.float64)
    bytes_ns = _per_launch_sum(stream, np.ones(len(stream), dtype=bool), size) / gpu.device_bw_GBps
    warps = launch_terms_ns(stream, system, as_device=True)
    if len(stream):
        from hostlink.model.analytic_launch import loaded_chain_ns, read_demand
        reads = ~stream.is_write
        mean_B = float(size[reads].mean()) if reads.any() else 0.0
        warps["latency"] = loaded_chain_ns(
            bytes_ns, warps["latency"], float(gpu.device_lat_ns),
            read_demand(stream, gpu, len(bytes_ns), host_only=False), mean_B,
            float(gpu.device_bw_GBps))
    terms = np.stack([bytes_ns, warps["latency"], warps["waves"], warps["sm_issue"]])
    kernel_ns = terms.max(axis=0)
    share = np.bincount(terms.argmax(axis=0), weights=kernel_ns, minlength=len(terms))
    bound = ("device", "latency", "latency", "sm_issue")[int(np.argmax(share))]
    return {"kernel_ns": kernel_ns, "bound": bound, "extra": {
        "kernel_terms_ns": {"device": bytes_ns.tolist(),
                            **{name: v.tolist() for name, v in warps.items()}}}}


def _uvm(stream, system, common, read_mostly: bool, options: dict, fidelity: str = "analytic",
         engine: str = "fast") -> dict:
    """Fault service (the UVM model) plus the kernel's own run with every page resident:
    the stream in device mode at the same fidelity (latency, device bandwidth, CTA
    slots), as the model's faults stall the warps while batches are serviced, not
    overlapped with the work (see :mod:`hostlink.model.uvm.model`)."""
    from hostlink.model.pcie.tlp import packetize_reads
    from hostlink.model.des.inputs import tlp_format
    from hostlink.model.uvm import simulate_uvm
    res = simulate_uvm(stream, system, read_mostly=read_mostly, **options)
    n = common["launches"]
    service_ns = np.zeros(n)
    for row in res.per_launch:
        service_ns[row.launch] += row.service_time_s * 1e9
    work = (_zerocopy_des(stream, system, common, engine, as_device=True) if fidelity == "des"
            else _device_analytic(stream, system, common))
    work_ns = np.asarray(work["kernel_ns"], dtype=np.float64)
    kernel_ns = service_ns + np.pad(work_ns, (0, max(0, n - len(work_ns))))[:n]
    page = system.uvm.page_B
    pk = packetize_reads(0, page, tlp_format(system))
    pages = res.h2d_B / page
    bound = "uvm_service" if service_ns.sum() >= work_ns.sum() else "device"
    return {"kernel_ns": kernel_ns, "bound": bound, "uvm": res,
            "wire_B_down": float(pk.down_wire_B) * pages, "wire_B_up": float(pk.up_wire_B) * pages,
            "extra": {"uvm": res.to_dict()}}


# ------------------------------------------------------------------ the launch itself

def launch_ctas(stream: RequestStream, n: int) -> np.ndarray:
    """CTAs of each of the stream's ``n`` launches (from its launch records; a launch
    without one counts the distinct CTAs its requests come from)."""
    ctas = np.zeros(n)
    for k, info in enumerate(stream.launches[:n]):
        ctas[k] = info.ctas
    missing = np.flatnonzero(ctas == 0)
    if len(missing) and len(stream):
        wpc = np.array([max(1, i.warps_per_cta) for i in stream.launches] or [1], dtype=np.int64)
        la = stream.launch.astype(np.int64)
        per = wpc[np.minimum(la, len(wpc) - 1)] if len(stream.launches) else np.ones_like(la)
        cta = stream.warp.astype(np.int64) // per
        for k in missing:
            sel = la == k
            ctas[k] = len(np.unique(cta[sel])) if sel.any() else 0
    return ctas


def launch_shared_writes_ns(stream: RequestStream, n: int, system: SystemConfig) -> np.ndarray:
    """Per launch of the stream's ``n``, what the L2 takes to serve its writes to one
    shared word (its records' ``shared_writes`` x ``gpu.shared_write_ns``)."""
    out = np.zeros(n)
    if system.gpu.shared_write_ns > 0:
        for k, info in enumerate(stream.launches[:n]):
            out[k] = info.shared_writes * system.gpu.shared_write_ns
    return out


def shared_writes_added_ns(shared_ns: np.ndarray, paced: bool = False) -> np.ndarray:
    """Per launch, what its writes to words all its warps share add to its work before
    its dispatch bounds it (:func:`launch_floor`); ``shared_ns``: the L2's time to
    serve them (:func:`launch_shared_writes_ns`).

    The L2 serves such writes (a traversal's edge counter and ``changed`` flag) one
    after another. The analytic model adds that time to the launch's work, and the
    longer of the two and the dispatch sets the launch. A discrete-event run
    (``paced``) has served them already (:mod:`hostlink.model.des.events`): nothing
    is added. Measured (validation/experiments/flag_writes): a launch whose warps only
    write takes the longer of its dispatch and its writes; each level of a naive BFS
    of grid3d in device memory takes its work plus its writes; a merged level, which
    waits on its dispatch, takes as long with them as without."""
    shared_ns = np.asarray(shared_ns, dtype=np.float64)
    return np.zeros_like(shared_ns) if paced else shared_ns


#: where the engines pace the CTAs (a des run), the dispatch is named a launch's bound
#: from this share of its work on (which then holds the dispatch): its larger part
PACED_DISPATCH_BINDS = 0.5


def launch_floor(kernel_ns: np.ndarray, stream: RequestStream,
                 system: SystemConfig, paced: bool = False) -> tuple[np.ndarray, bool]:
    """Kernel time per launch with the launch itself: ``max(work, ctas x
    gpu.cta_dispatch_ns) + gpu.launch_ns``, and whether the dispatch bound the run;
    the analytic model's work includes the launch's writes to its shared words
    (:func:`shared_writes_added_ns`).

    The CTA dispatcher starts CTAs no faster than one every ``cta_dispatch_ns``
    (measured with empty kernels, ``micro/launch``), so a launch whose CTAs have
    little to do (a traversal level with a small frontier over a grid of one warp
    per vertex) lasts as long as dispatching its grid; ``launch_ns`` is what a
    pair of CUDA events around a launch adds beyond it. The two overlap the work
    as a maximum, not a sum: CTAs dispatched while earlier ones wait on memory
    cost nothing extra. The discrete-event engines also hold each CTA back until
    its dispatch (``DesInputs.cta_start_ns``), so there the work of the grid's
    last CTAs ends after its dispatch; the analytic model takes the maximum alone.
    ``paced``: ``kernel_ns`` holds the dispatch (a discrete-event run's), which then
    binds the run where it is at least half of the work."""
    gpu = system.gpu
    if gpu.cta_dispatch_ns <= 0 and gpu.launch_ns <= 0 and gpu.shared_write_ns <= 0:
        return kernel_ns, False
    n = len(kernel_ns)
    dispatch_ns = launch_ctas(stream, n) * gpu.cta_dispatch_ns
    kernel_ns = kernel_ns + shared_writes_added_ns(launch_shared_writes_ns(stream, n, system),
                                                   paced)
    binds = (dispatch_ns >= PACED_DISPATCH_BINDS * kernel_ns if paced
             else dispatch_ns > kernel_ns)
    bound = bool(dispatch_ns.sum() > 0 and
                 np.where(binds, dispatch_ns, 0.0).sum() > 0.5 * np.maximum(
                     dispatch_ns, kernel_ns).sum())
    return np.maximum(kernel_ns, dispatch_ns) + (gpu.launch_ns if n else 0.0), bound


def launch_bounds(part: dict, work_bound: str, kernel_ns: np.ndarray, gaps_ns: np.ndarray,
                  stream: RequestStream, system: SystemConfig, host_loop: bool,
                  issue_ns: np.ndarray | None = None, paced: bool = False) -> list[str]:
    """What bound each launch: the time between launches where it exceeds the kernel's
    (``host_loop`` or ``launch_overhead``), the CTA dispatch where it exceeds the work
    (``paced``, a discrete-event run's: its work holds the dispatch, which then binds
    where it is at least half of it), else the term that set
    the kernel's time (analytic: the link's bound, device memory or the latency chain,
    per launch; DES and UVM: the run's bound); ``issue_ns``: the launches' instruction
    issue floors (:mod:`hostlink.model.compute`), ``compute`` where one sets its launch;
    ``shared_writes`` where the L2's writes to one shared word do
    (:func:`launch_shared_writes_ns`)."""
    n = len(kernel_ns)
    dispatch_ns = launch_ctas(stream, n) * system.gpu.cta_dispatch_ns
    shared_ns = launch_shared_writes_ns(stream, n, system)
    binds_at = PACED_DISPATCH_BINDS if paced else 1.0
    terms = (part.get("extra") or {}).get("kernel_terms_ns")
    names = None
    if terms:
        keys = [k for k, v in terms.items() if len(v) == n]
        if keys:
            stacked = np.array([terms[k] for k in keys], dtype=float)
            link_name = ((part.get("extra") or {}).get("analytic") or {}).get("bound", "link")
            names = np.array([link_name if k == "link" else k for k in keys])[
                stacked.argmax(axis=0)]
    out = []
    for k in range(n):
        if gaps_ns[k] > kernel_ns[k]:
            out.append("host_loop" if host_loop else "launch_overhead")
        elif dispatch_ns[k] > 0 and \
                dispatch_ns[k] >= binds_at * (kernel_ns[k] - system.gpu.launch_ns):
            out.append("cta_dispatch")
        elif issue_ns is not None and issue_ns[k] > 0 and \
                issue_ns[k] >= kernel_ns[k] - system.gpu.launch_ns:
            out.append("compute")
        elif shared_ns[k] > 0 and \
                shared_ns[k] >= 0.5 * (kernel_ns[k] - system.gpu.launch_ns):
            out.append("shared_writes")
        else:
            out.append(str(names[k]) if names is not None else str(work_bound))
    return out


# ------------------------------------------------------------------ entry point

def predict(source, system, mode: str = "zerocopy", fidelity: str = "analytic", *,
            overrides=None, coalesce_options: dict | None = None,
            trace_options: dict | None = None, engine: str = "fast", nbins: int = 1024,
            uvm_options: dict | None = None, host_loop: str | None = None,
            vertices: int = 0, back_to_back: bool | None = None,
            share: float = 1.0, managed=None) -> Prediction:
    """Predict ``source`` on ``system`` (see the module docstring).

    ``share`` < 1: the discrete-event model runs ``source`` on a miniature of that
    share of the GPU and its host (:mod:`hostlink.model.des.miniature`): a sample of
    a launch's CTAs then takes about as long as the whole launch. Zero-copy and
    device memory only, at the des fidelity.

    ``back_to_back``: whether the run's launches follow one another after its
    pages went to the GPU and back (a traversal), which picks the UVM one-off
    cost ``uvm.launches_first_fault_us`` over ``uvm.first_fault_us``; None: a
    stream of more than one launch is such a run. ``managed``: the run's managed
    buffers as (start address, bytes) pairs where known (a traversal workload gives
    its own): the UVM model's VA blocks end with them, and a run of back-to-back
    launches whose buffers each lie within one VA block pays
    ``uvm.launches_one_block_first_fault_us`` (:func:`hostlink.model.uvm.simulate_uvm`)."""
    from hostlink.model.workload import Gather
    if mode not in MODES and not (mode in GATHER_MODES and isinstance(source, Gather)):
        extra = f" (a gather also takes {', '.join(GATHER_MODES)})" if mode in GATHER_MODES else ""
        raise ConfigError(f"mode must be one of {', '.join(MODES)}, not '{mode}'{extra}")
    if fidelity not in FIDELITIES:
        raise ConfigError(f"fidelity must be one of {', '.join(FIDELITIES)}, not '{fidelity}'")
    if share != 1.0 and (fidelity != "des" or mode not in ("zerocopy", "uvm_accessedby",
                                                            "device") or not 0 < share < 1):
        raise ConfigError(f"a miniature takes a share in (0, 1), the des fidelity and "
                          f"zero-copy or device memory (got share {share}, {mode}, {fidelity})")
    system = resolve_system(system, overrides)
    if isinstance(source, TraversalWorkload):
        source, system, host_loop, vertices, back_to_back, managed = _traversal_run(
            source, system, host_loop, vertices, back_to_back, managed)
    if isinstance(source, WORKLOADS):
        if share != 1.0:
            raise ConfigError(f"a miniature runs a request stream, not a "
                              f"{type(source).__name__}")
        return _predict_described(source, system, mode, fidelity, engine=engine, nbins=nbins,
                                  uvm_options=uvm_options)
    if mode == "uvm_accessedby":
        from hostlink.model.translation import managed_host_view
        system = managed_host_view(system)
    stream = as_stream(source, coalesce_options, trace_options, gpu=system.gpu)
    common = _common(stream)
    if back_to_back is None:
        back_to_back = common["launches"] > 1
    args = dict(mode=mode, fidelity=fidelity, engine=engine, nbins=nbins,
                uvm_options=uvm_options, back_to_back=back_to_back, share=share,
                managed=managed)
    if mode in ("zerocopy", "uvm_accessedby") and system.link.rtt_at_full_link_ns > 0:
        from hostlink.model.loaded_rtt import loaded_system
        unloaded_ns = system.link.rtt_ns
        system = loaded_system(
            stream, system, lambda s: _predict_stream(stream, s, common, **args),
            blend_on=_des_blender(stream, engine, nbins, share) if fidelity == "des" else None)
        pred = _predict_stream(stream, system, common, host_loop=host_loop, vertices=vertices,
                               **args)
        pred.extra["loaded_rtt_ns"] = {"unloaded": unloaded_ns, "loaded": system.link.rtt_ns}
        # the engine's inputs served the passes (hostlink.model.des.simulate); the runs
        # themselves stay memoized, a few numbers per launch
        from hostlink.model.stream_memo import forget
        forget(stream, "des_inputs")
        forget(stream, "des_group_inputs")
        return pred
    from hostlink.model.progress import RUN, stage
    stage(RUN, f"predicting {mode} ({fidelity})")
    return _predict_stream(stream, system, common, host_loop=host_loop, vertices=vertices, **args)


def _traversal_run(work: TraversalWorkload, system: SystemConfig, host_loop, vertices,
                   back_to_back, managed):
    """A traversal program's run: its stream on ``system`` with the warps' loads in
    flight the program keeps, its host loop between launches (unless the caller names
    another), its launches back to back and its managed buffers (unless the caller
    names them)."""
    if work.loads_in_flight != system.gpu.loads_in_flight_per_warp:
        system = system_with(system, {"gpu.loads_in_flight_per_warp": int(work.loads_in_flight)})
    if host_loop is None:
        host_loop, vertices = work.kernel, work.vertices
    return (work.stream, system, host_loop, vertices,
            True if back_to_back is None else back_to_back,
            work.managed if managed is None else managed)


def _predict_described(workload, system: SystemConfig, mode: str, fidelity: str,
                       **opts) -> Prediction:
    """:func:`predict` of a workload described beyond its requests (a sampled run, a
    copy, a chase, a first touch, a launch, a host loop: :data:`WORKLOADS`), by
    :func:`hostlink.model.runs.predict_workload`, which predicts their streams here."""
    from hostlink.model.runs import predict_workload
    return predict_workload(workload, system, mode, fidelity, **opts)


def _predict_stream(stream: RequestStream, system: SystemConfig, common: dict, *, mode: str,
                    fidelity: str, engine: str, nbins: int, uvm_options: dict | None,
                    back_to_back: bool, host_loop: str | None = None,
                    vertices: int = 0, share: float = 1.0,
                    managed=None) -> Prediction:
    """:func:`predict` of a resolved stream on a resolved system (the loaded round trip,
    where the system has one, already settled in ``system.link.rtt_ns``)."""
    n = common["launches"]
    nan = float("nan")
    if mode in ("zerocopy", "uvm_accessedby"):
        part = (_zerocopy_des(stream, system, common, engine, nbins, share=share)
                if fidelity == "des" else _zerocopy_analytic_kept(stream, system, common))
        link_B = float(common["requested_B"])
        moved_B = float(part["dram_B"])
    elif mode == "device":
        part = (_zerocopy_des(stream, system, common, engine, nbins, as_device=True,
                              share=share)
                if fidelity == "des" else _device_analytic(stream, system, common))
        part.update(outstanding_mean=nan, outstanding_peak=nan, wire_B_down=0.0, wire_B_up=0.0,
                    dram_B=0)
        link_B = moved_B = 0.0
    else:
        part = _uvm(stream, system, common, mode == "uvm_readmostly",
                    dict(uvm_options or {}, back_to_back=back_to_back, managed=managed),
                    fidelity, engine)
        res = part.pop("uvm")
        part.update(outstanding_mean=nan, outstanding_peak=nan, dram_B=int(res.h2d_B))
        link_B = float(res.h2d_B + res.d2h_B)
        moved_B = float(res.h2d_B)
    kernel_ns = np.asarray(part["kernel_ns"], dtype=np.float64)
    if len(kernel_ns) < n:
        kernel_ns = np.pad(kernel_ns, (0, n - len(kernel_ns)))
    work_bound = part["bound"]
    from hostlink.model.compute import BOUND as ISSUE_BOUND
    from hostlink.model.compute import apply_issue_floor
    from hostlink.model.kernel_costs import HOST_MODES
    issue_ns = launch_issue_floor_ns(stream, system, len(kernel_ns),
                                     from_host=mode in HOST_MODES)
    kernel_ns, issue = apply_issue_floor(kernel_ns, issue_ns)
    if issue["binds"]:  # compute (instruction issue), not memory, sets the time
        part["bound"] = ISSUE_BOUND
    # the engines pace the CTAs: a des run's work holds the dispatch
    kernel_ns, floor_bound = launch_floor(kernel_ns, stream, system, paced=fidelity == "des")
    if floor_bound:
        part["bound"] = "cta_dispatch"
    if host_loop is None:
        gaps = _overheads_ns(system, n)
    else:
        from hostlink.model.host_loop import launch_gaps_ns
        gaps = launch_gaps_ns(system, host_loop, vertices, n)
    per_launch_ns = gaps + kernel_ns
    total_s = float(per_launch_ns.sum()) * 1e-9
    bound = part["bound"]
    if n and gaps.sum() > kernel_ns.sum():
        bound = "host_loop" if host_loop is not None else "launch_overhead"
    uniq = common["unique_useful_B"]
    extra = dict(part.get("extra", {}))
    extra.update({"unique_useful_B": uniq, "launches": n, "overhead_s": float(gaps.sum()) * 1e-9,
                  "issue": issue,
                  "launch_bounds": launch_bounds(part, work_bound, kernel_ns, gaps, stream,
                                                 system, host_loop is not None, issue_ns,
                                                 paced=fidelity == "des")})
    return Prediction(
        mode=mode, fidelity=fidelity, system=system.name, time_s=total_s,
        bw_GBps=common["useful_B"] / total_s * 1e-9 if total_s > 0 else 0.0,
        link_bw_GBps=link_B / total_s * 1e-9 if total_s > 0 else 0.0,
        requests_by_size_B=common["requests_by_size_B"], requests=common["requests"],
        useful_B=common["useful_B"], requested_B=common["requested_B"],
        wire_B_down=float(part["wire_B_down"]), wire_B_up=float(part["wire_B_up"]),
        dram_B=int(part["dram_B"]), outstanding_mean=float(part["outstanding_mean"]),
        outstanding_peak=float(part["outstanding_peak"]),
        read_amplification=moved_B / uniq if uniq else 0.0, bound=bound,
        per_launch_time_s=(per_launch_ns * 1e-9).tolist(),
        per_launch_kernel_s=(kernel_ns * 1e-9).tolist(), extra=extra)
