"""Closed forms for the time of one kernel launch from its request stream.

The analytic fidelity times a launch as the longest of a few terms, each a
bound the discrete-event model (:mod:`hostlink.model.des.events`) obeys too
(the queueing term an estimate, not a bound).
This module holds the terms that come from the warps and the SMs; the link,
DRAM and tag bounds are :mod:`hostlink.model.analytic`'s.

- The warp's chain (:func:`warp_chains`): a warp issues its memory
  instructions in program order, at most ``loads_in_flight`` at once. An
  instruction that reads waits the load-to-use latency of its memory (host or
  device; more for a device atomic that returns, and DRAM's for device reads
  the L2 misses where it is replayed) plus the issue gaps of its
  lines: its k lines leave the warp one ``gpu.host_request_gap_ns`` (host) or
  ``gpu.request_gap_ns`` (device) apart, so its last line starts (k - 1) gaps
  after its first. An instruction that only writes does not hold the warp: a
  store is posted (it is done when it leaves the GPU, a few ns). The warp also
  issues no faster than one line per gap, so its chain is at least its lines
  times the gap.
- CTA waves (:func:`launch_terms`): a launch runs ``sm_count`` x the CTAs an
  SM holds (its warp slots and registers, :mod:`hostlink.model.occupancy`) at
  once and starts the next one
  when one ends; a CTA lasts as long as its longest warp. Greedy list
  scheduling of jobs on m slots ends no earlier than the longest job and than
  the jobs' sum over m (Graham, "Bounds on multiprocessing timing anomalies",
  SIAM J. Appl. Math. 17(2), 1969): the launch takes the larger of the two.
- Queueing (:func:`loaded_chain_ns`): while a launch's reads run at their
  bandwidth bound (the link's, or device memory's), the longest warp's reads
  wait behind everyone else's, one
  mean wait per launch from Little's law (Little, "A proof for the queuing
  formula L = lambda W", Operations Research 9(3), 1961).
- The SM's issue stage (:func:`launch_terms`): an SM lets at most one read line
  leave every ``gpu.sm_request_ns`` (``gpu.sm_l2_request_ns`` for a device line
  the L2 serves, where it is set: :mod:`hostlink.model.l2_lines`); a CTA runs on
  SM ``slot mod sm_count`` (the first wave round robin), so the SM with the most
  turns takes at least their sum, and its last line then still waits the least
  latency of the launch's reads.

Assumptions: compute between memory instructions is free (as in the DES);
queueing at the SM is left to its bound, and queueing for the link or device
memory to one mean wait over a launch's busy phase; CTAs of later waves are spread over the
SMs as the first wave is.
The costs are the DES's, measured as its docstring says
(validation/experiments/request_cost/runs/h100 and request_share for the issue stage).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from hostlink.model.workload import SPACE_HOST, RequestStream


@dataclass(frozen=True)
class WarpChains:
    """One row per warp that issues a memory instruction, in program order."""
    launch: np.ndarray      # launch of the warp
    warp: np.ndarray        # warp id within its launch
    chain_ns: np.ndarray    # the warp's dependent chain (see the module docstring)
    read_lines: np.ndarray  # read lines the warp sends through its SM's issue stage
    tail_ns: np.ndarray     # the least latency of the warp's reads (inf without reads)
    l2_lines: np.ndarray | None = None  # of those, lines the L2 serves (None: none)


def _in_order(col: np.ndarray, order: np.ndarray | None) -> np.ndarray:
    """``col`` in program order: itself where the stream is in it (``order`` None)."""
    return col if order is None else col[order]


def _instructions(stream: RequestStream, order: np.ndarray | None):
    """Launch and warp per request in program order (``order``: the permutation into
    it, None where the stream is in it), the mask of requests that start an
    instruction, and those requests' indices (the columns' own types: a request
    stream's columns are a few bytes a row, and a copy of each is one of a chain's
    largest arrays)."""
    la = _in_order(stream.launch, order)
    wa = _in_order(stream.warp, order)
    ia = _in_order(stream.inst, order)
    new = np.ones(len(la), dtype=bool)
    new[1:] = (la[1:] != la[:-1]) | (wa[1:] != wa[:-1]) | (ia[1:] != ia[:-1])
    return la, wa, new, np.flatnonzero(new)


@dataclass(frozen=True)
class ChainShape:
    """What :func:`warp_chains` takes from a stream before any latency: one row per
    instruction (``inst_*``), per run of instructions that wait together (``seg``,
    ``seg_k``) and per warp (``launch``, ``warp``, ``read_lines``, ``busy_ns``)."""
    inst_host: np.ndarray    # the instruction reads or writes host memory
    inst_read: np.ndarray    # it reads
    atomic_ns: np.ndarray | None  # a device atomic's latency beyond a read's (else 0)
    issue_ns: np.ndarray     # its last line's issue gaps after its first
    seg: np.ndarray | None   # first instruction of each run (None: no waits marked)
    seg_k: np.ndarray | None  # instructions in each run
    wstarts: np.ndarray      # first instruction of each warp
    lif: int                 # loads in flight per warp
    launch: np.ndarray
    warp: np.ndarray
    read_lines: np.ndarray
    busy_ns: np.ndarray      # the warp's own issue time
    l2_lines: np.ndarray | None = None  # read lines the L2 serves, per warp (None: none)
    inst_dram: np.ndarray | None = None  # per instruction: a device read the L2 misses
    k_lines: np.ndarray | None = None   # per instruction: its read lines (a stream of no
    #                                     atomics, for :func:`in_device_memory`)


def in_device_memory(shape: ChainShape, device_gap_ns: float) -> ChainShape:
    """``shape`` (of a stream with no atomics and no L2 replayed) as
    :func:`chain_shape` gives it with ``as_device``: every instruction's lines leave
    ``device_gap_ns`` apart, none reads host memory. Nothing else in a shape depends
    on where the data lies, so the program order's sort is not made again."""
    if shape.k_lines is None or shape.l2_lines is not None:
        raise ValueError("the shape keeps no read lines per instruction")
    k = shape.k_lines.astype(np.float64)
    gap = float(device_gap_ns)
    return replace(
        shape, inst_host=np.zeros(len(k), dtype=bool),
        issue_ns=np.maximum(k - 1, 0) * gap,
        busy_ns=np.add.reduceat(k * gap, shape.wstarts))


def chain_shape(stream: RequestStream, loads_in_flight: int, *, as_device: bool = False,
                atomic_extra_ns: float = 0.0, atomic_spread_ns: float | None = None,
                host_gap_ns: float = 0.0, device_gap_ns: float = 0.0,
                l2=None) -> ChainShape:
    """:class:`ChainShape` of ``stream`` (the arguments as :func:`warp_chains`'s);
    the program order's sort is most of a chain's cost, and no latency enters it."""
    from hostlink.model.des.inputs import program_permutation
    from hostlink.model.geometry import LINE_B
    order = program_permutation(stream)
    la, wa, new, starts = _instructions(stream, order)
    space = _in_order(stream.space, order)
    read = ~_in_order(stream.is_write, order)
    on_host = (space == SPACE_HOST) & (not as_device)
    # a line: the reads of one instruction to one 128 B line of one space (their first
    # leads), unless the stream marks a request to follow its instruction's first
    line = _in_order(stream.addr, order) // np.uint64(LINE_B)
    lead = new.copy()
    lead[1:] |= (line[1:] != line[:-1]) | (space[1:] != space[:-1])
    del line
    if stream.follows is not None:
        lead &= ~_in_order(stream.follows, order) | new
    width = 1 if stream.lines is None else _in_order(stream.lines, order).astype(np.int64)
    lead_reads = lead & read
    k_lines = np.add.reduceat(lead_reads.astype(np.int32) if stream.lines is None
                              else np.where(lead_reads, width, 0), starts).astype(np.float64)
    del lead_reads
    inst_read = np.logical_or.reduceat(read, starts)
    inst_host = np.logical_or.reduceat(on_host, starts)
    gap = np.where(inst_host, float(host_gap_ns), float(device_gap_ns))
    spread_lines = np.zeros(len(starts), dtype=bool)
    atomic_ns = None
    if stream.atomic is not None:
        atomic = ~inst_host & _in_order(stream.atomic, order)[starts]
        extra = np.full(len(starts), float(atomic_extra_ns))
        if atomic_spread_ns is not None and atomic.any():
            k = np.add.reduceat(lead * width, starts)
            extra += float(atomic_spread_ns) * np.log2(np.maximum(k, 1))
            spread_lines = atomic      # its lines spread by the log law, not by gaps
        atomic_ns = np.where(atomic, extra, 0.0)
    # the last line leaves (k - 1) gaps after the first; a store holds nothing
    issue_ns = np.where(spread_lines, 0.0, np.maximum(k_lines - 1, 0) * gap)
    busy_ns = np.where(spread_lines, 0.0, k_lines * gap)    # the warp's own issue time
    i_la, i_wa = la[starts].astype(np.int64), wa[starts].astype(np.int64)
    del la, wa
    wnew = np.ones(len(starts), dtype=bool)
    wnew[1:] = (i_la[1:] != i_la[:-1]) | (i_wa[1:] != i_wa[:-1])
    seg = seg_k = None
    if stream.waits is not None:
        # 4 B an instruction where they fit (they are kept with the stream)
        index = np.int32 if len(starts) < 2**31 else np.int64
        seg = np.flatnonzero(wnew | _in_order(stream.waits, order)[starts]).astype(index)
        seg_k = np.diff(np.append(seg, len(starts))).astype(index)
    wstarts = np.flatnonzero(wnew)
    l2_lines = inst_dram = None
    from hostlink.model.l2_lines import l2_served, replays
    if l2 is not None and replays(stream, as_device) and np.any(~on_host & read):
        row = np.arange(len(stream), dtype=np.int64) if order is None else order
        replay = l2_served(stream, row, lead, l2, as_device=as_device)
        l2_lines = np.add.reduceat(np.add.reduceat(replay.lines, starts).astype(np.float64),
                                   wstarts)
        inst_dram = np.logical_or.reduceat(replay.misses, starts)
    return ChainShape(inst_host=inst_host, inst_read=inst_read, atomic_ns=atomic_ns,
                      issue_ns=issue_ns, seg=seg, seg_k=seg_k, wstarts=wstarts,
                      lif=max(1, int(loads_in_flight)), launch=i_la[wstarts],
                      warp=i_wa[wstarts], read_lines=np.add.reduceat(k_lines, wstarts),
                      busy_ns=np.add.reduceat(busy_ns, wstarts), l2_lines=l2_lines,
                      inst_dram=inst_dram,
                      k_lines=k_lines.astype(np.float32) if stream.atomic is None else None)


def warp_chains(stream: RequestStream, host_lat_ns: float, device_lat_ns: float,
                loads_in_flight: int, *, as_device: bool = False,
                atomic_extra_ns: float = 0.0, atomic_spread_ns: float | None = None,
                host_gap_ns: float = 0.0, device_gap_ns: float = 0.0,
                l2=None, dram_lat_ns: float | None = None) -> WarpChains:
    """Each warp's dependent chain of instructions (see the module docstring).
    ``l2``: the L2 to replay over the device reads (a CacheConfig,
    :mod:`hostlink.model.l2_lines`; None: none), whose misses wait ``dram_lat_ns``.

    Where the stream marks instructions that wait for the warp's earlier ones
    (``stream.waits``), each run of instructions from one that waits to the next
    takes ``ceil(k / loads_in_flight)`` rounds of its slowest latency; otherwise
    the chain is the summed latency over ``loads_in_flight``. Either way the
    chain is at least the warp's lines times their issue gaps. The stream's
    :class:`ChainShape` is kept with it (:mod:`hostlink.model.stream_memo`): the
    loaded round trip's passes and a sweep's systems change only the latencies."""
    from hostlink.model.stream_memo import memoized, peek
    empty = np.zeros(0)
    if len(stream) == 0:
        return WarpChains(empty.astype(np.int64), empty.astype(np.int64), empty, empty, empty)
    opts = dict(as_device=bool(as_device), atomic_extra_ns=float(atomic_extra_ns),
                atomic_spread_ns=None if atomic_spread_ns is None else float(atomic_spread_ns),
                host_gap_ns=float(host_gap_ns), device_gap_ns=float(device_gap_ns), l2=l2)
    key = (max(1, int(loads_in_flight)), *sorted(opts.items()))

    def shape_of():
        # in device memory, the same stream's shape from host memory where it is held
        if as_device and l2 is None and stream.atomic is None:
            host_key = (key[0], *sorted(dict(opts, as_device=False).items()))
            host = peek(stream, "chain_shape", host_key)
            if host is not None and host.k_lines is not None and host.l2_lines is None:
                return in_device_memory(host, device_gap_ns)
        return chain_shape(stream, loads_in_flight, **opts)
    shape = memoized(stream, "chain_shape", key, shape_of, keep=2)
    return chains_at(shape, host_lat_ns, device_lat_ns, dram_lat_ns)


def chains_at(shape: ChainShape, host_lat_ns: float, device_lat_ns: float,
              dram_lat_ns: float | None = None) -> WarpChains:
    """The warps' chains of ``shape`` at these load-to-use latencies (``dram_lat_ns``:
    a device instruction's that the L2 misses, where ``shape`` marks them)."""
    inst_lat = np.where(shape.inst_host, host_lat_ns, device_lat_ns)
    if shape.inst_dram is not None and dram_lat_ns is not None:
        inst_lat = np.where(shape.inst_dram & ~shape.inst_host, dram_lat_ns, inst_lat)
    if shape.atomic_ns is not None:
        inst_lat = inst_lat + shape.atomic_ns
    tail = np.where(shape.inst_read, inst_lat, np.inf)
    inst_lat = np.where(shape.inst_read, inst_lat + shape.issue_ns, 0.0)
    if shape.seg is not None:
        lat = np.zeros(len(inst_lat))
        lat[shape.seg] = (np.ceil(shape.seg_k / shape.lif)
                          * np.maximum.reduceat(inst_lat, shape.seg))
    else:
        lat = inst_lat / shape.lif
    chain = np.maximum(np.add.reduceat(lat, shape.wstarts), shape.busy_ns)
    return WarpChains(launch=shape.launch, warp=shape.warp, chain_ns=chain,
                      read_lines=shape.read_lines,
                      tail_ns=np.minimum.reduceat(tail, shape.wstarts),
                      l2_lines=shape.l2_lines)


def launch_terms(chains: WarpChains, stream: RequestStream, n_launch: int, sm_count: int,
                 max_warps_per_sm: int, sm_request_ns: float,
                 registers_per_sm: int,
                 sm_l2_request_ns: float | None = None) -> dict[str, np.ndarray]:
    """Per launch: the longest warp (``path``), the CTA waves (``waves``: the CTAs'
    summed durations over the CTA slots) and the busiest SM's issue stage (``sm``:
    its lines' turns, ``sm_l2_request_ns`` for those the L2 serves where the chains
    count them, then the least read latency)."""
    out = {name: np.zeros(n_launch) for name in ("path", "waves", "sm")}
    if len(chains.chain_ns) == 0:
        return out
    np.maximum.at(out["path"], chains.launch, chains.chain_ns)
    from hostlink.model.occupancy import ctas_per_sm, launch_shapes
    wpc_of, regs_of = launch_shapes(stream.launches, n_launch)
    wpc = wpc_of[chains.launch]
    cta = chains.warp // wpc
    # CTAs per launch: key (launch, cta), chains in program order
    key = chains.launch * (int(cta.max()) + 1) + cta
    uniq, inv = np.unique(key, return_inverse=True)
    cta_ns = np.zeros(len(uniq))
    np.maximum.at(cta_ns, inv, chains.chain_ns)
    turns = chains.read_lines * float(sm_request_ns)
    if chains.l2_lines is not None and sm_l2_request_ns is not None:
        turns = turns + chains.l2_lines * (float(sm_l2_request_ns) - float(sm_request_ns))
    cta_turns_ns = np.bincount(inv, weights=turns, minlength=len(uniq))
    cta_launch = uniq // (int(cta.max()) + 1)
    # the CTAs that issue requests take the slots in id order: the k-th of a launch
    # starts on SM k mod sm_count
    first = np.searchsorted(cta_launch, cta_launch)
    rank = np.arange(len(uniq)) - first
    slots = sm_count * ctas_per_sm(max_warps_per_sm, registers_per_sm, wpc_of, regs_of)
    out["waves"] = np.bincount(cta_launch, weights=cta_ns, minlength=n_launch) / slots
    if sm_request_ns > 0:
        sm = cta_launch * sm_count + rank % sm_count
        per_sm = np.bincount(sm, weights=cta_turns_ns, minlength=n_launch * sm_count)
        tail = np.full(n_launch, np.inf)
        np.minimum.at(tail, chains.launch, chains.tail_ns)
        busiest = per_sm.reshape(n_launch, sm_count).max(axis=1)
        out["sm"] = np.where(busiest > 0, busiest + np.where(np.isfinite(tail), tail, 0.0),
                             0.0)
    return out


def loaded_chain_ns(link_ns: np.ndarray, chain_ns: np.ndarray, lat_ns: float,
                    demand: np.ndarray, bytes_per_read: float, bw_GBps: float) -> np.ndarray:
    """The longest warp's chain when it shares a server with a launch's busy phase.

    While the reads run at their bandwidth bound (``link_ns`` of the launch: the
    link's for host reads, device memory's for device reads),
    the reads wanted at once (``demand``: the resident warps that read them,
    times their loads in flight and requests per instruction) queue for it, so
    by Little's law each read takes ``R = max(lat, demand x bytes / bandwidth)``
    (1 GB/s = 1 B/ns). A warp's chain advances ``lat / R`` as fast as unloaded
    during that phase and at full speed after it: the launch takes
    ``link + max(0, chain - link x lat / R)``. A lone warp (R = lat) keeps its
    chain; warps all alike finish with the busy phase (their chains are what
    Little's law gives it); a long warp among many (a hub of a power-law graph)
    loses most of the busy phase to queueing."""
    link_ns = np.asarray(link_ns, dtype=np.float64)
    chain_ns = np.asarray(chain_ns, dtype=np.float64)
    if not (bw_GBps > 0 and np.isfinite(bw_GBps)) or lat_ns <= 0:
        return chain_ns
    r_ns = np.maximum(lat_ns, np.asarray(demand, dtype=np.float64) * bytes_per_read / bw_GBps)
    return np.where(link_ns > 0, link_ns + np.maximum(0.0, chain_ns - link_ns * lat_ns / r_ns),
                    chain_ns)


def read_demand(stream: RequestStream, gpu, n: int, host_only: bool = True) -> np.ndarray:
    """Per launch: reads its warps want at once (resident warps that read x
    instructions in flight per warp, :func:`_in_flight`, x read requests per
    instruction), of host memory alone or, with ``host_only`` False, of any memory."""
    reads = ~stream.is_write
    if host_only:
        reads = reads & (stream.space == SPACE_HOST)
    if not reads.any():
        return np.zeros(n)
    la = stream.launch.astype(np.int64)[reads]
    wa = stream.warp.astype(np.int64)[reads]
    ia = stream.inst.astype(np.int64)[reads]
    warps = _distinct(la * (int(wa.max()) + 1) + wa) // (int(wa.max()) + 1)
    n_warps = np.bincount(warps, minlength=n).astype(np.float64)
    span = (int(wa.max()) + 1) * (int(ia.max()) + 1)
    insts = _distinct(la * span + wa * (int(ia.max()) + 1) + ia) // span
    per_inst = np.bincount(la, minlength=n) / np.maximum(1, np.bincount(insts, minlength=n))
    resident = gpu.sm_count * gpu.max_warps_per_sm
    return np.minimum(n_warps, resident) * _in_flight(stream, gpu.loads_in_flight_per_warp) \
        * per_inst


def _distinct(keys: np.ndarray) -> np.ndarray:
    """``np.unique(keys)``; in one pass where the keys are already in order (a
    stream in program order), which spares the sort or hash of every request."""
    if len(keys) > 1 and bool((keys[1:] >= keys[:-1]).all()):
        first = np.empty(len(keys), dtype=bool)
        first[0] = True
        np.not_equal(keys[1:], keys[:-1], out=first[1:])
        return keys[first]
    return np.unique(keys)


def _in_flight(stream: RequestStream, loads_in_flight: int) -> float:
    """Instructions a warp has in flight on average: ``loads_in_flight``, or fewer
    where the stream marks instructions that wait for the warp's earlier ones (each
    run from one that waits to the next takes ``ceil(k / loads_in_flight)`` rounds)."""
    lif = max(1, int(loads_in_flight))
    if stream.waits is None or lif == 1 or len(stream) == 0:
        return float(lif)
    from hostlink.model.des.inputs import program_permutation
    order = program_permutation(stream)
    la, wa, _, starts = _instructions(stream, order)
    first = np.ones(len(starts), dtype=bool)
    first[1:] = (la[starts][1:] != la[starts][:-1]) | (wa[starts][1:] != wa[starts][:-1])
    seg = np.flatnonzero(first | _in_order(stream.waits, order)[starts])
    k = np.diff(np.append(seg, len(starts)))
    return float(len(starts) / np.ceil(k / lif).sum())
