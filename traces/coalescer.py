"""The coalescer: warp memory instructions -> 32 B sectors -> PCIe requests.

For each warp load, store or atomic to global or local memory (shared memory
never leaves the SM):
- each active lane's access [addr, addr + width_B) touches the 32 B sectors
  it overlaps (an access crossing a sector boundary touches the next sector
  too), as GPGPU-Sim's coalescer does for compute capability >= 4.0
  (accel-sim/gpgpu-sim_distribution src/abstract_hardware_model.cc, REFERENCE.md
  "GPU side");
- the sectors of an instruction are grouped by 128 B line; for host memory
  one PCIe request is sent per run of contiguous sectors within a line, so
  32, 64, 96 or 128 B, as the seed's FPGA observed (emogi_vldb2020 §3,
  Figure 3: a misaligned warp sends a 32 B and a 96 B request; sectors 0 and 2
  of a line make two 32 B requests);
- device memory sectors become 32 B requests (SPACE_DEVICE) when
  ``include_device``;
- ``useful_B`` counts the bytes of the request that some lane asked for, each
  byte once however many lanes asked for it.

Where memory lives: an address in a host region (``Region.location ==
'host'``) is host memory; every other address, and all local memory, is
device memory. A sector's space is that of the first lane that touches it.

Caches (optional, :mod:`hostlink.traces.cache`): loads look up the L1 of
their CTA's SM, then the L2; a sector that hits is not requested. Host memory
bypasses both unless ``cache_host``. Default off: the UVM driver maps remote
memory uncached, and whether an SM caches pinned host memory is to be
measured (REFERENCE.md "GPU side"). The seed's naive-kernel observation, a
thread sends a new 32 B request only when it crosses a 32 B boundary, so one
request serves up to eight 4 B accesses (emogi_vldb2020 §3 "Strided
Access"), is what ``cache_host=True`` with an L1 gives; uncached, every
access sends its own request. Device sectors go through the caches whether
or not they are emitted, so they compete for the same lines.

Rows must come in launch order (launch indices never decrease); within a
launch, each warp's rows in program order, warps in any interleaving.

Requests: stores are writes; loads and atomics are reads (a PCIe AtomicOp is
non-posted and returns data, like a read). ``inst`` is the dynamic index of
the instruction among its warp's global and local memory instructions
(program order; instructions that end up sending nothing still count), and
the stream is ordered by launch, warp, inst, then address.

Assumption: addresses are below 2**62 (GPU virtual addresses have 49 to 57
bits); a lane address or a host region at or above it is an error.

Speed: a Numba kernel walks each warp instruction once (tens of millions of
lane accesses per second; tests/bench/bench_coalescer.py records it).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Iterator

import numpy as np
from numba import njit

from hostlink.model.errors import TraceError
from hostlink.model.workload import (REQUEST_DTYPES, SPACE_DEVICE, SPACE_HOST, LaunchInfo,
                                     RequestStream)
from hostlink.traces.cache import CacheConfig, CacheState, lookup_fill
from hostlink.traces.schema import (LOCATION_HOST, OP_ATOMIC, OP_LOAD, OP_STORE, SPACE_GLOBAL,
                                    SPACE_LOCAL, WARP_SIZE, InstTable, KernelLaunch, Region,
                                    WarpTrace)

SECTOR_B = 32
LINE_B = 128
SECTOR_SHIFT = 5
# Output buffer bound per kernel call (requests); rows are batched to stay below it.
_BATCH_PIECES = 1 << 20

KIND_LOAD, KIND_STORE, KIND_ATOMIC = 0, 1, 2


@dataclass
class CoalescedChunk:
    """The requests of one input chunk (ordered as the chunk's rows) and its sector counts.

    ``sectors_host``/``sectors_device``: distinct sectors touched per
    instruction, summed, before any cache.
    """
    insts: InstTable
    requests: RequestStream
    sectors_host: int
    sectors_device: int


# --------------------------------------------------------------------------- kernel

@njit(cache=True, nogil=True)
def _popcount64(x):
    x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return (x * np.uint64(0x0101010101010101)) >> np.uint64(56)


@njit(cache=True, nogil=True)
def _coalesce_rows(addrs, mask, width, kind, local, sm, row_launch, row_warp, row_inst,
                   host_start, host_end, include_device, cache_host, use_l1, use_l2,
                   l1_tags, l1_valid, l1_stamp, l2_tags, l2_valid, l2_stamp, clock,
                   out_launch, out_warp, out_inst, out_addr, out_size, out_useful, out_space,
                   out_write, sec_host, sec_device):
    """Coalesce rows; write requests to the out_* arrays; return their count.

    addrs is (n, 32) int64; host_start/host_end are the sorted, disjoint host
    ranges. sec_host/sec_device receive each row's distinct sector counts.
    """
    n = addrs.shape[0]
    nhost = host_start.shape[0]
    maxp = WARP_SIZE * 10  # a lane of width_B <= 255 spans at most 9 sectors
    p_sec = np.empty(maxp, dtype=np.int64)
    p_bits = np.empty(maxp, dtype=np.uint64)
    p_host = np.empty(maxp, dtype=np.bool_)
    emit = np.empty(maxp, dtype=np.bool_)
    full32 = np.uint64(0xFFFFFFFF)
    last_lo = np.int64(0)
    last_hi = np.int64(0)
    last_host = False
    k = 0
    for r in range(n):
        m = mask[r]
        w = np.int64(width[r])
        np_ = 0
        is_local = local[r]
        for lane in range(WARP_SIZE):
            if (m >> lane) & 1 == 0:
                continue
            a = addrs[r, lane]
            h = False
            if not is_local and nhost > 0:
                if last_lo <= a < last_hi:
                    h = last_host
                else:
                    i = np.searchsorted(host_start, a, side="right") - 1
                    if i >= 0 and a < host_end[i]:
                        h = True
                        last_lo = host_start[i]
                        last_hi = host_end[i]
                        last_host = True
                    else:
                        # cache the gap between host ranges
                        last_lo = host_end[i] if i >= 0 else np.int64(0)
                        last_hi = host_start[i + 1] if i + 1 < nhost else np.int64(2**62)
                        last_host = False
            e = a + w
            s = a >> SECTOR_SHIFT
            while True:
                sb = s << SECTOR_SHIFT
                lo = a - sb if a > sb else 0
                hi = e - sb if e < sb + SECTOR_B else SECTOR_B
                bits = (full32 >> np.uint64(SECTOR_B - (hi - lo))) << np.uint64(lo)
                # insertion by sector (lanes usually ascend, so this rarely moves)
                j = np_
                while j > 0 and p_sec[j - 1] > s:
                    p_sec[j] = p_sec[j - 1]
                    p_bits[j] = p_bits[j - 1]
                    p_host[j] = p_host[j - 1]
                    j -= 1
                if j > 0 and p_sec[j - 1] == s:
                    # merge into the existing sector (undo the shift)
                    for q in range(j, np_):
                        p_sec[q] = p_sec[q + 1]
                        p_bits[q] = p_bits[q + 1]
                        p_host[q] = p_host[q + 1]
                    p_bits[j - 1] |= bits
                else:
                    p_sec[j] = s
                    p_bits[j] = bits
                    p_host[j] = h
                    np_ += 1
                s += 1
                if (s << SECTOR_SHIFT) >= e:
                    break
        # per distinct sector: count, then filter through the caches
        nh = 0
        nd = 0
        kd = kind[r]
        for q in range(np_):
            hq = p_host[q]
            if hq:
                nh += 1
            else:
                nd += 1
            go = True
            if kd == KIND_LOAD and (use_l1 or use_l2) and (cache_host or not hq):
                hit = False
                if use_l1:
                    hit = lookup_fill(l1_tags, l1_valid, l1_stamp, clock, sm[r], p_sec[q])
                if not hit and use_l2:
                    hit = lookup_fill(l2_tags, l2_valid, l2_stamp, clock, 0, p_sec[q])
                go = not hit
            emit[q] = go and (hq or include_device)
        sec_host[r] = nh
        sec_device[r] = nd
        # group emitted sectors into requests
        q = 0
        while q < np_:
            if not emit[q]:
                q += 1
                continue
            start = q
            useful = _popcount64(p_bits[q])
            if p_host[q]:
                while (q + 1 < np_ and emit[q + 1] and p_host[q + 1]
                       and p_sec[q + 1] == p_sec[q] + 1
                       and (p_sec[q + 1] >> 2) == (p_sec[start] >> 2)):
                    q += 1
                    useful += _popcount64(p_bits[q])
            out_launch[k] = row_launch[r]
            out_warp[k] = row_warp[r]
            out_inst[k] = row_inst[r]
            out_addr[k] = p_sec[start] << SECTOR_SHIFT
            out_size[k] = (q - start + 1) * SECTOR_B
            out_useful[k] = useful
            out_space[k] = SPACE_HOST if p_host[start] else SPACE_DEVICE
            out_write[k] = kd == KIND_STORE
            k += 1
            q += 1
    return k


# --------------------------------------------------------------------------- driver

def _host_ranges(regions: list[Region]) -> tuple[np.ndarray, np.ndarray]:
    live = sorted((r for r in regions if r.size_B > 0), key=lambda r: (r.start, r.end))
    for a, b in zip(live, live[1:]):
        if b.start < a.end:
            raise TraceError(f"regions '{a.name}' [{a.start:#x}, {a.end:#x}) and '{b.name}' "
                             f"[{b.start:#x}, {b.end:#x}) overlap")
    host = [r for r in live if r.location == LOCATION_HOST]
    for r in host:
        if r.end > 2**62:
            raise TraceError(f"region '{r.name}' ends at {r.end:#x}, beyond the coalescer's "
                             "address range (2**62)")
    return (np.array([r.start for r in host], dtype=np.int64),
            np.array([r.end for r in host], dtype=np.int64))


def popcount32(mask: np.ndarray) -> np.ndarray:
    """Set bits of each uint32 (active lanes of each mask)."""
    mask = np.asarray(mask, dtype=np.uint32)
    if hasattr(np, "bitwise_count"):
        return np.bitwise_count(mask).astype(np.int64)
    return np.unpackbits(mask.view(np.uint8)).reshape(-1, 32).sum(axis=1).astype(np.int64)


def _pieces_bound(mask: np.ndarray, width: np.ndarray) -> np.ndarray:
    """Upper bound of the requests a row can produce: lanes x sectors per lane
    (an access of w bytes spans at most (w + 30) // 32 + 1 sectors)."""
    return popcount32(mask) * ((width.astype(np.int64) + SECTOR_B - 2) // SECTOR_B + 1)


class _WarpCounters:
    """Dynamic memory-instruction counters of every warp of the current launch.

    Rows come in launch order, so only one launch's counters (4 B per warp)
    are held at a time.
    """

    def __init__(self, launches: list[KernelLaunch]):
        self.launches = launches
        self.launch = -1
        self.counts = np.zeros(0, dtype=np.uint32)

    def assign(self, launch: int, gw: np.ndarray) -> np.ndarray:
        """Program-order index of each row (rows in program order per warp)."""
        if launch != self.launch:
            if launch < self.launch:
                raise TraceError(f"rows of launch {launch} come after rows of launch "
                                 f"{self.launch}: a trace must be in launch order")
            info = self.launches[launch]
            self.counts = np.zeros(info.ctas * info.warps_per_cta, dtype=np.uint32)
            self.launch = launch
        counts = self.counts
        order = np.argsort(gw, kind="stable")
        sk = gw[order]
        n = len(gw)
        idx = np.arange(n, dtype=np.int64)
        first = np.ones(n, dtype=bool)
        first[1:] = sk[1:] != sk[:-1]
        rank_sorted = idx - np.maximum.accumulate(np.where(first, idx, 0))
        rank = np.empty(n, dtype=np.int64)
        rank[order] = rank_sorted
        inst = counts[gw].astype(np.int64) + rank
        counts += np.bincount(gw, minlength=len(counts)).astype(np.uint32)
        return inst


def _infer_launches(chunks: list[InstTable]) -> list[KernelLaunch]:
    nl = max((int(c.launch.max()) + 1 for c in chunks if len(c)), default=0)
    ctas = np.zeros(nl, dtype=np.int64)
    wpc = np.zeros(nl, dtype=np.int64)
    for c in chunks:
        if len(c):
            np.maximum.at(ctas, c.launch.astype(np.int64), c.cta.astype(np.int64) + 1)
            np.maximum.at(wpc, c.launch.astype(np.int64), c.warp.astype(np.int64) + 1)
    return [KernelLaunch(name=f"launch{i}", grid=(int(max(ctas[i], 1)), 1, 1),
                         block=(int(max(wpc[i], 1)) * WARP_SIZE, 1, 1)) for i in range(nl)]


def _launch_infos(launches: list[KernelLaunch]) -> tuple[LaunchInfo, ...]:
    return tuple(LaunchInfo(name=l.name, ctas=l.ctas, warps_per_cta=l.warps_per_cta,
                            threads_per_cta=l.threads_per_cta) for l in launches)


def _resolve(trace_or_chunks, regions, launches):
    if isinstance(trace_or_chunks, WarpTrace):
        chunks = trace_or_chunks.iter_chunks()
        regions = trace_or_chunks.regions if regions is None else regions
        launches = trace_or_chunks.launches if launches is None else launches
    elif isinstance(trace_or_chunks, InstTable):
        chunks = [trace_or_chunks]
    else:
        chunks = trace_or_chunks
    if launches is None:
        chunks = list(chunks)
        launches = _infer_launches(chunks)
    return chunks, list(regions or []), list(launches)


def iter_coalesced(trace_or_chunks: WarpTrace | InstTable | Iterable[InstTable],
                   regions: list[Region] | None = None, *,
                   launches: list[KernelLaunch] | None = None,
                   cache: CacheConfig | None = None, cache_host: bool = False,
                   include_device: bool = False) -> Iterator[CoalescedChunk]:
    """Coalesce chunk by chunk (bounded memory); see :func:`coalesce` for the arguments.

    Each yielded chunk's requests follow its rows' order; the caches and the
    per-warp instruction counters carry over from chunk to chunk.
    """
    chunks, regions, launches = _resolve(trace_or_chunks, regions, launches)
    host_start, host_end = _host_ranges(regions)
    state = CacheState(cache if cache is not None else CacheConfig())
    counters = _WarpCounters(launches)
    infos = _launch_infos(launches)
    current_launch = -1
    for chunk in chunks:
        sel = ((chunk.width_B > 0)
               & ((chunk.op == OP_LOAD) | (chunk.op == OP_STORE) | (chunk.op == OP_ATOMIC))
               & ((chunk.space == SPACE_GLOBAL) | (chunk.space == SPACE_LOCAL)))
        rows = np.flatnonzero(sel)
        if len(rows) == 0:
            yield CoalescedChunk(chunk, RequestStream(**{k: np.zeros(0, v) for k, v in
                                                          REQUEST_DTYPES.items()}, launches=infos),
                                 0, 0)
            continue
        launch = chunk.launch[rows]
        cta = chunk.cta[rows].astype(np.int64)
        warp = chunk.warp[rows].astype(np.int64)
        if int(launch.max()) >= len(launches):
            raise TraceError(f"a row names launch {int(launch.max())}; the trace has "
                             f"{len(launches)} launches")
        if np.any(launch[1:] < launch[:-1]):
            raise TraceError("rows of a chunk are not in launch order")
        gw = np.empty(len(rows), dtype=np.int64)
        inst = np.empty(len(rows), dtype=np.int64)
        for li in np.unique(launch):
            info = launches[int(li)]
            on = launch == li
            c, w = cta[on], warp[on]
            if c.max() >= info.ctas or w.max() >= info.warps_per_cta:
                raise TraceError(f"launch {int(li)} ('{info.name}'): a row names CTA {int(c.max())} "
                                 f"/ warp {int(w.max())}, outside grid {info.grid} and "
                                 f"block {info.block}")
            if info.ctas * info.warps_per_cta > 2**32:
                raise TraceError(f"launch {int(li)} ('{info.name}') has more than 2**32 warps")
            g = c * info.warps_per_cta + w
            gw[on] = g
            inst[on] = counters.assign(int(li), g)
        addrs = chunk.addrs[rows]
        if np.any(addrs >> np.uint64(62)):
            raise TraceError("a lane address is >= 2**62, beyond the coalescer's range")
        addrs = addrs.view(np.int64)
        mask = chunk.mask[rows]
        width = chunk.width_B[rows]
        op = chunk.op[rows]
        kind = np.where(op == OP_STORE, KIND_STORE,
                        np.where(op == OP_ATOMIC, KIND_ATOMIC, KIND_LOAD)).astype(np.uint8)
        local = chunk.space[rows] == SPACE_LOCAL
        sm = (cta % state.config.sm_count).astype(np.int64)
        bound = _pieces_bound(mask, width)
        sec_host = np.zeros(len(rows), dtype=np.int64)
        sec_dev = np.zeros(len(rows), dtype=np.int64)
        row_launch = launch.astype(np.uint32)
        row_warp = gw.astype(np.uint32)
        row_inst = inst.astype(np.uint32)
        outs: list[dict[str, np.ndarray]] = []
        # batches: at most _BATCH_PIECES output slots, never spanning a launch change
        cuts = np.flatnonzero(np.diff(launch.astype(np.int64))) + 1
        csum = np.cumsum(bound)
        start = 0
        n = len(rows)
        while start < n:
            base = csum[start - 1] if start else 0
            stop = max(int(np.searchsorted(csum, base + _BATCH_PIECES, side="right")), start + 1)
            later = cuts[cuts > start]
            if len(later) and later[0] < stop:
                stop = int(later[0])
            if int(launch[start]) != current_launch:
                state.flush_l1()
                current_launch = int(launch[start])
            cap = int(csum[stop - 1] - base)
            out = {k: np.empty(cap, dtype=v) for k, v in REQUEST_DTYPES.items()}
            b = slice(start, stop)
            k = _coalesce_rows(addrs[b], mask[b], width[b], kind[b], local[b], sm[b],
                               row_launch[b], row_warp[b], row_inst[b],
                               host_start, host_end, include_device, cache_host,
                               state.use_l1, state.use_l2,
                               state.l1_tags, state.l1_valid, state.l1_stamp,
                               state.l2_tags, state.l2_valid, state.l2_stamp, state.clock,
                               out["launch"], out["warp"], out["inst"], out["addr"],
                               out["size_B"], out["useful_B"], out["space"], out["is_write"],
                               sec_host[b], sec_dev[b])
            shrink = k < cap // 2  # do not keep a mostly empty buffer alive
            outs.append({name: col[:k].copy() if shrink else col[:k] for name, col in out.items()})
            start = stop
        cols = outs[0] if len(outs) == 1 else {
            name: np.concatenate([o[name] for o in outs]) for name in REQUEST_DTYPES}
        requests = RequestStream(**cols, launches=infos)
        yield CoalescedChunk(chunk, requests, int(sec_host.sum()), int(sec_dev.sum()))


def coalesce(trace_or_chunks: WarpTrace | InstTable | Iterable[InstTable],
             regions: list[Region] | None = None, *,
             launches: list[KernelLaunch] | None = None, cache: CacheConfig | None = None,
             cache_host: bool = False, include_device: bool = False) -> RequestStream:
    """The request stream of a trace.

    ``trace_or_chunks``: a WarpTrace (its regions and launches are used unless
    given) or InstTable chunks. ``regions``: where memory lives (addresses in
    no region are device memory). ``launches``: needed to number warps
    (``cta * warps_per_cta + warp``); inferred from the rows when neither
    given nor in a WarpTrace. ``cache``: L1/L2 sizes (None: no caches).
    ``cache_host``: host sectors go through the caches too. ``include_device``:
    emit device sector requests as well.
    """
    chunks, regions, launches = _resolve(trace_or_chunks, regions, launches)
    parts = [c.requests for c in iter_coalesced(chunks, regions, launches=launches, cache=cache,
                                                 cache_host=cache_host,
                                                 include_device=include_device)]
    infos = _launch_infos(launches)
    if not parts:
        return RequestStream(**{k: np.zeros(0, v) for k, v in REQUEST_DTYPES.items()},
                             launches=infos)
    cols = {k: np.concatenate([getattr(p, k) for p in parts]) for k in REQUEST_DTYPES}
    key_launch = cols["launch"].astype(np.int64)
    key_warp = cols["warp"].astype(np.int64)
    key_inst = cols["inst"].astype(np.int64)
    n = len(key_launch)
    if n > 1:
        dl = np.diff(key_launch)
        dw = np.diff(key_warp)
        di = np.diff(key_inst)
        ordered = np.all((dl > 0) | ((dl == 0) & ((dw > 0) | ((dw == 0) & (di >= 0)))))
        if not ordered:
            order = np.lexsort((key_inst, key_warp, key_launch))
            cols = {k: v[order] for k, v in cols.items()}
    return RequestStream(**cols, launches=infos)
