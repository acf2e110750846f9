"""The coalescer: warp memory instructions -> 32 B sectors -> PCIe requests.

For each warp load, store or atomic to global or local memory (shared memory
never leaves the SM):
- each active lane's access [addr, addr + width_B) touches the 32 B sectors
  it overlaps (an access crossing a sector boundary touches the next sector
  too), as GPGPU-Sim's coalescer does for compute capability >= 4.0
  (accel-sim/gpgpu-sim_distribution src/abstract_hardware_model.cc; NVIDIA
  CUDA C++ Programming Guide, "Compute Capability 7.x", Global Memory);
- the sectors of an instruction are grouped by 128 B line; for host memory
  one PCIe request is sent per run of contiguous sectors within a line, so
  32, 64, 96 or 128 B, as the seed's FPGA observed (emogi_vldb2020 §3,
  Figure 3: a misaligned warp sends a 32 B and a 96 B request; sectors 0 and 2
  of a line make two 32 B requests);
- device memory sectors become 32 B requests (SPACE_DEVICE) when
  ``include_device``;
- stores are writes (``is_write``), and so are reductions to device memory
  (atomics whose opcode is ``RED...``: no thread waits for their result);
  other atomics, and reductions to host memory (a PCIe AtomicOp is a
  non-posted request with a completion), are reads;
- ``useful_B`` counts the bytes of the request that some lane asked for, each
  byte once however many lanes asked for it; with caches, also the bytes
  later lanes read from the sectors it brought into a cache (below).

Where memory lives: an address in a host region (``Region.location ==
'host'``) is host memory; every other address, and all local memory, is
device memory. A sector's space is that of the first lane that touches it.

Caches (optional, :mod:`hostlink.traces.cache`): loads look up the L1 of
their CTA's SM, then the L2; a sector that hits is not requested. Host memory
bypasses both unless ``cache_host``. Whether a GPU caches host reads is its
config's ``caches_host_reads``, and :func:`hostlink.traces.cache.host_read_cache`
turns it into the caches to pass (with ``cache_host=True``). Default zero-copy
loads are cached: random 4 B loads over a small host region run far faster
than the same loads with ``ld.cv`` (the ``first_run`` experiment,
validation/experiments/first_run/). The seed's naive-kernel
observation, a thread sends a new 32 B request only when it crosses a 32 B
boundary, so one request serves up to eight 4 B accesses (emogi_vldb2020 §3
"Strided Access"), is what ``cache_host=True`` with an L1 gives; uncached,
every access sends its own request. Device sectors go through the caches
whether or not they are emitted, so they compete for the same lines.

Useful bytes of cached data: a hit's bytes are credited to the request that
brought its sector into the cache (the fill record of the hit copy; an L1
copy filled from the L2 shares the L2 copy's record), each byte of a request
once, so ``useful_B <= size_B`` and a byte read by many lanes or many times
counts once: a request's useful bytes are the bytes of it that some lane read
while it was cached. Hits on sectors that no emitted request brought in (a
device sector without ``include_device``) credit nothing. When streaming
(:func:`iter_coalesced`), credits to requests of an earlier chunk come with
the chunk as ``late_*`` arrays (global request indices); :func:`coalesce`
applies them.

Rows must come in launch order (launch indices never decrease); within a
launch, each warp's rows in program order, warps in any interleaving.

Requests: stores are writes; loads and atomics are reads (a PCIe AtomicOp is
non-posted and returns data, like a read). The requests of an atomic that is
not a reduction are marked in the stream's ``atomic`` column (None when a
chunk or stream has none): the warp waits for their old value. ``inst`` is the dynamic index of
the instruction among its warp's global and local memory instructions
(program order; instructions that end up sending nothing still count), and
the stream is ordered by launch, warp, inst, then address.

Assumption: addresses are below 2**62 (GPU virtual addresses have 49 to 57
bits); a lane address or a host region at or above it is an error.

Speed: a Numba kernel walks each warp instruction once (tens of millions of
lane accesses per second; tests/bench/bench_coalescer.py records it). The
caches and their fill records take 96 B per way at first (about 70 MiB for an
H200's L1s and L2; :mod:`hostlink.traces.cache`).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Iterable, Iterator

import numpy as np
from numba import njit

from hostlink.model.compute import IssueCounter
from hostlink.model.geometry import SECTOR_B, SECTOR_SHIFT
from hostlink.model.errors import TraceError
from hostlink.model.workload import (REQUEST_DTYPES, SPACE_DEVICE, SPACE_HOST, LaunchInfo,
                                     RequestStream)
from hostlink.traces.cache import (REC_LINE, REC_MASK01, REC_MASK23, REC_OWNER, TAG,
                                   CacheConfig, CacheState, compact_records, lookup_fill,
                                   sector_state, set_index, set_sector_state)
from hostlink.traces.schema import (LOCATION_HOST, OP_ATOMIC, OP_LOAD, OP_STORE, SPACE_GLOBAL,
                                    SPACE_LOCAL, WARP_SIZE, InstTable, KernelLaunch, Region,
                                    WarpTrace)

# Output buffer bound per kernel call (requests); rows are batched to stay below it.
_BATCH_PIECES = 1 << 20

KIND_LOAD, KIND_STORE, KIND_ATOMIC, KIND_REDUCTION = 0, 1, 2, 3
#: the kernel's output columns: the request columns and whether the request's
#: instruction is an atomic that returns (the stream's optional ``atomic``)
OUT_DTYPES = {**REQUEST_DTYPES, "atomic": np.bool_}


_NO_LATE = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.uint8))


@dataclass
class CoalescedChunk:
    """The requests of one input chunk (ordered as the chunk's rows) and its sector counts.

    ``sectors_host``/``sectors_device``: distinct sectors touched per
    instruction, summed, before any cache. ``first_request``: the global index
    (emission order over the whole iteration) of ``requests``' first row.
    ``late_index``/``late_useful_B``/``late_space``: useful bytes this chunk's
    cache hits credit to requests of earlier chunks (their global index, the
    bytes, their space); those requests were yielded before and are not
    updated, so a total of useful bytes over the iteration is the sum of every
    chunk's ``requests.useful_B`` plus its ``late_useful_B``.
    """
    insts: InstTable
    requests: RequestStream
    sectors_host: int
    sectors_device: int
    first_request: int = 0
    late_index: np.ndarray = field(default_factory=lambda: _NO_LATE[0])
    late_useful_B: np.ndarray = field(default_factory=lambda: _NO_LATE[1])
    late_space: np.ndarray = field(default_factory=lambda: _NO_LATE[2])


# --------------------------------------------------------------------------- kernel

@njit(cache=True, nogil=True)
def _popcount64(x):
    x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return (x * np.uint64(0x0101010101010101)) >> np.uint64(56)


@njit(cache=True, nogil=True)
def _credit(rid, sub, bits, recs, base_id, out_useful, late_id, late_B, late_space, nl, space):
    """Credit the bytes ``bits`` of a hit on sector ``sub`` (0-3) of its line to fill
    record ``rid``'s request (bytes it already has count once); returns the new
    count of late credits."""
    f = REC_MASK01 + (sub >> 1)
    shift = np.int64(32 * (sub & 1))
    word = recs[rid, f]
    new = np.int64(bits) & ~((word >> shift) & np.int64(0xFFFFFFFF))
    if new == 0:
        return nl
    recs[rid, f] = word | (new << shift)
    cnt = _popcount64(np.uint64(new))
    owner = recs[rid, REC_OWNER]
    if owner >= base_id:
        out_useful[owner - base_id] += cnt
    elif nl > 0 and late_id[nl - 1] == owner:
        late_B[nl - 1] += cnt
    else:
        late_id[nl] = owner
        late_B[nl] = cnt
        late_space[nl] = space
        nl += 1
    return nl


@njit(cache=True, nogil=True)
def _attach(lines, unit, sector, way, rid, set_fn):
    """Point the sector filled at ``way`` to record ``rid`` if its line is still there."""
    if way < 0:
        return
    line = sector >> 2
    s = set_index(line, lines.shape[1], set_fn)
    if lines[unit, s, way, TAG] != line:
        return  # evicted by a later sector of the same instruction
    set_sector_state(lines, unit, s, way, sector & 3, rid)


@njit(cache=True, nogil=True)
def _coalesce_rows(addrs, mask, width, kind, local, sm, row_launch, row_warp, row_inst,
                   host_start, host_end, include_device, cache_host, use_l1, use_l2,
                   l1_lines, l2_lines, set_fn, clock, recs, rec_used, base_id, r0, k0, nl0,
                   out_launch, out_warp, out_inst, out_addr, out_size, out_useful, out_space,
                   out_write, out_atomic, sec_host, sec_device, late_id, late_B, late_space):
    """Coalesce rows r0.. ; write requests to the out_* arrays from ``k0``.

    Returns (requests written, late credits written, rows done): rows done is
    less than the row count when the record pool must grow first (the caller
    grows it and calls again from there). addrs is (n, 32) int64;
    host_start/host_end are the sorted, disjoint host ranges.
    sec_host/sec_device receive each row's distinct sector counts.
    ``base_id`` is the global index of ``out_*[0]``; a cache hit whose sector
    was brought in by an earlier request credits its bytes to that request:
    in ``out_useful`` when it is in this batch, else as a late credit
    (``late_id``, ``late_B``, ``late_space``, from ``nl0``).
    """
    n = addrs.shape[0]
    nhost = host_start.shape[0]
    maxp = WARP_SIZE * 10  # a lane of width_B <= 255 spans at most 9 sectors
    p_sec = np.empty(maxp, dtype=np.int64)
    p_bits = np.empty(maxp, dtype=np.uint64)
    p_host = np.empty(maxp, dtype=np.bool_)
    emit = np.empty(maxp, dtype=np.bool_)
    fill1 = np.empty(maxp, dtype=np.int64)
    fill2 = np.empty(maxp, dtype=np.int64)
    full32 = np.uint64(0xFFFFFFFF)
    last_lo = np.int64(0)
    last_hi = np.int64(0)
    last_host = False
    l1_sets = l1_lines.shape[1]
    l2_sets = l2_lines.shape[1]
    caching = use_l1 or use_l2
    k = k0
    nl = nl0
    for r in range(r0, n):
        if caching and rec_used[0] + maxp > recs.shape[0]:
            # room for a row's records: drop the unreferenced ones; grow if that is not enough
            used = compact_records(l1_lines, l2_lines, use_l1, use_l2, recs, rec_used)
            if recs.shape[0] - used < max(maxp, recs.shape[0] // 2):
                return k, nl, r
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
        unit1 = sm[r]
        for q in range(np_):
            hq = p_host[q]
            if hq:
                nh += 1
            else:
                nd += 1
            go = True
            w1 = -1
            w2 = -1
            if kd == KIND_LOAD and (use_l1 or use_l2) and (cache_host or not hq):
                sec = p_sec[q]
                sub = sec & 3
                set1 = 0
                hit = False
                rid = -1
                if use_l1:
                    set1 = set_index(sec >> 2, l1_sets, set_fn)
                    got = lookup_fill(l1_lines, clock, unit1, sec, set_fn)
                    if got >= 0:
                        hit = True
                        rid = sector_state(l1_lines, unit1, set1, got, sub)
                    else:
                        w1 = -got - 1
                if not hit and use_l2:
                    got = lookup_fill(l2_lines, clock, 0, sec, set_fn)
                    if got >= 0:
                        hit = True
                        rid = sector_state(l2_lines, 0, set_index(sec >> 2, l2_sets, set_fn), got,
                                           sub)
                        if w1 >= 0 and rid >= 0:
                            # the L1 copy comes from the L2 copy: same fill
                            set_sector_state(l1_lines, unit1, set1, w1, sub, rid)
                    else:
                        w2 = -got - 1
                if hit:
                    if rid >= 0:
                        nl = _credit(rid, sub, p_bits[q], recs, base_id, out_useful,
                                     late_id, late_B, late_space, nl,
                                     SPACE_HOST if hq else SPACE_DEVICE)
                    w1 = -1
                    w2 = -1
                go = not hit
            emit[q] = go and (hq or include_device)
            fill1[q] = w1
            fill2[q] = w2
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
            # the cached copies this request fills point to a new fill record
            filled = False
            for j in range(start, q + 1):
                if fill1[j] >= 0 or fill2[j] >= 0:
                    filled = True
            if filled:
                rid = rec_used[0]
                rec_used[0] = rid + 1
                recs[rid, REC_OWNER] = base_id + k
                recs[rid, REC_MASK01] = 0
                recs[rid, REC_MASK23] = 0
                recs[rid, REC_LINE] = p_sec[start] >> 2
                for j in range(start, q + 1):
                    sub = p_sec[j] & 3
                    recs[rid, REC_MASK01 + (sub >> 1)] |= (np.int64(p_bits[j])
                                                          << np.int64(32 * (sub & 1)))
                    _attach(l1_lines, unit1, p_sec[j], fill1[j], rid, set_fn)
                    _attach(l2_lines, 0, p_sec[j], fill2[j], rid, set_fn)
            out_launch[k] = row_launch[r]
            out_warp[k] = row_warp[r]
            out_inst[k] = row_inst[r]
            out_addr[k] = p_sec[start] << SECTOR_SHIFT
            out_size[k] = (q - start + 1) * SECTOR_B
            out_useful[k] = useful
            out_space[k] = SPACE_HOST if p_host[start] else SPACE_DEVICE
            out_write[k] = (kd == KIND_STORE) or (kd == KIND_REDUCTION and not p_host[start])
            out_atomic[k] = kd == KIND_ATOMIC
            k += 1
            q += 1
    return k, nl, n


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

    Rows come in launch order, so only one launch's counters (4 B per warp of the
    largest launch) are held at a time. The array is kept from launch to launch and
    only the warps a launch touched are reset, so a launch costs its rows, not its
    grid: a BFS of thousands of levels launches every vertex's warp each level.
    """

    def __init__(self, launches: list[KernelLaunch]):
        self.launches = launches
        self.launch = -1
        self.counts = np.zeros(0, dtype=np.uint32)
        self.touched: list[np.ndarray] = []

    def assign(self, launch: int, gw: np.ndarray) -> np.ndarray:
        """Program-order index of each row (rows in program order per warp)."""
        if launch != self.launch:
            if launch < self.launch:
                raise TraceError(f"rows of launch {launch} come after rows of launch "
                                 f"{self.launch}: a trace must be in launch order")
            info = self.launches[launch]
            warps = info.ctas * info.warps_per_cta
            if warps > len(self.counts):
                self.counts = np.zeros(warps, dtype=np.uint32)
            else:
                for t in self.touched:
                    self.counts[t] = 0
            self.touched = []
            self.launch = launch
        counts = self.counts
        order = np.argsort(gw, kind="stable")
        sk = gw[order]
        n = len(gw)
        idx = np.arange(n, dtype=np.int64)
        first = np.ones(n, dtype=bool)
        first[1:] = sk[1:] != sk[:-1]
        starts = np.flatnonzero(first)
        rank_sorted = idx - np.repeat(starts, np.diff(np.append(starts, n)))
        rank = np.empty(n, dtype=np.int64)
        rank[order] = rank_sorted
        inst = counts[gw].astype(np.int64) + rank
        warps = sk[starts]
        counts[warps] += np.diff(np.append(starts, n)).astype(np.uint32)
        self.touched.append(warps)
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
                            threads_per_cta=l.threads_per_cta, regs_per_thread=int(l.nregs))
                 for l in launches)


def _with_issue_counts(infos: tuple[LaunchInfo, ...], issued) -> tuple[LaunchInfo, ...]:
    """The launch records with their warp instructions (an IssueCounter's counts)."""
    total, longest = issued.per_launch(len(infos))
    return tuple(replace(info, warp_insts=int(t), longest_warp_insts=int(m))
                 for info, t, m in zip(infos, total, longest))


REDUCTION_PREFIX = "RED"    # SASS reductions: atomics whose result no thread waits for


def posted_opcodes(opcodes: list[str] | None) -> np.ndarray | None:
    """Per opcode index of a trace: whether its atomics are reductions (``RED...``:
    fire and forget, the warp does not wait; ``ATOM...`` returns the old value)."""
    if not opcodes:
        return None
    return np.array([str(o).upper().startswith(REDUCTION_PREFIX) for o in opcodes], dtype=bool)


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
                   include_device: bool = False,
                   posted: np.ndarray | None = None) -> Iterator[CoalescedChunk]:
    """Coalesce chunk by chunk (bounded memory); see :func:`coalesce` for the arguments.
    ``posted`` (bool per opcode index, :func:`posted_opcodes`): atomics of those
    opcodes are reductions, emitted as writes to device memory (the warp does not
    wait for them); taken from a WarpTrace's opcodes when not given.

    Each yielded chunk's requests follow its rows' order; the caches and the
    per-warp instruction counters carry over from chunk to chunk. A chunk's
    ``useful_B`` holds the credits known when it is yielded; cache hits in
    later chunks credit it through their ``late_*`` arrays (see
    :class:`CoalescedChunk`).
    """
    if posted is None and isinstance(trace_or_chunks, WarpTrace):
        posted = posted_opcodes(trace_or_chunks.opcodes)
    chunks, regions, launches = _resolve(trace_or_chunks, regions, launches)
    host_start, host_end = _host_ranges(regions)
    state = CacheState(cache if cache is not None else CacheConfig())
    counters = _WarpCounters(launches)
    infos = _launch_infos(launches)
    current_launch = -1
    used_sm = np.zeros(max(1, state.config.sm_count), dtype=bool)
    emitted = 0
    credits = state.use_l1 or state.use_l2
    for chunk in chunks:
        sel = ((chunk.width_B > 0)
               & ((chunk.op == OP_LOAD) | (chunk.op == OP_STORE) | (chunk.op == OP_ATOMIC))
               & ((chunk.space == SPACE_GLOBAL) | (chunk.space == SPACE_LOCAL)))
        rows = np.flatnonzero(sel)
        if len(rows) == 0:
            yield CoalescedChunk(chunk, RequestStream(**{k: np.zeros(0, v) for k, v in
                                                          REQUEST_DTYPES.items()}, launches=infos),
                                 0, 0, emitted)
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
        # every row kept (a trace of loads and stores alone): views, not copies of the
        # 32 lane addresses a row (256 B)
        pick = slice(None) if len(rows) == len(sel) else rows
        addrs = chunk.addrs[pick]
        if len(addrs) and int(addrs.max()) >> 62:
            raise TraceError("a lane address is >= 2**62, beyond the coalescer's range")
        addrs = addrs.view(np.int64)
        mask = chunk.mask[pick]
        width = chunk.width_B[pick]
        op = chunk.op[pick]
        kind = np.where(op == OP_STORE, KIND_STORE,
                        np.where(op == OP_ATOMIC, KIND_ATOMIC, KIND_LOAD)).astype(np.uint8)
        if posted is not None and len(posted):
            code = chunk.opcode[rows].astype(np.int64)
            red = (op == OP_ATOMIC) & (code >= 0) & (code < len(posted))
            red[red] = posted[code[red]]
            kind[red] = KIND_REDUCTION
        local = chunk.space[rows] == SPACE_LOCAL
        sm = (cta % state.config.sm_count).astype(np.int64)
        bound = _pieces_bound(mask, width)
        sec_host = np.zeros(len(rows), dtype=np.int64)
        sec_dev = np.zeros(len(rows), dtype=np.int64)
        row_launch = launch.astype(np.uint32)
        row_warp = gw.astype(np.uint32)
        row_inst = inst.astype(np.uint32)
        outs: list[dict[str, np.ndarray]] = []
        lates: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        chunk_first = emitted
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
                if current_launch < 0 or not state.use_l1:
                    state.flush_l1()
                elif used_sm.any():     # only the SMs the last launch used hold lines
                    state.flush_l1(np.flatnonzero(used_sm))
                used_sm[:] = False
                current_launch = int(launch[start])
            used_sm[sm[start:stop]] = True
            cap = int(csum[stop - 1] - base)
            out = {k: np.empty(cap, dtype=v) for k, v in OUT_DTYPES.items()}
            # a late credit per hit sector at most
            late = ((np.empty(cap, np.int64), np.empty(cap, np.int64), np.empty(cap, np.uint8))
                    if credits else _NO_LATE)
            b = slice(start, stop)
            k = nl = done = 0
            rows_b = stop - start
            while True:
                k, nl, done = _coalesce_rows(
                    addrs[b], mask[b], width[b], kind[b], local[b], sm[b],
                    row_launch[b], row_warp[b], row_inst[b], host_start, host_end,
                    include_device, cache_host, state.use_l1, state.use_l2,
                    state.l1_lines, state.l2_lines, state.set_fn, state.clock, state.recs,
                    state.rec_used,
                    emitted, done, k, nl,
                    out["launch"], out["warp"], out["inst"], out["addr"], out["size_B"],
                    out["useful_B"], out["space"], out["is_write"], out["atomic"],
                    sec_host[b], sec_dev[b],
                    *late)
                if done == rows_b:
                    break
                state.grow_records()
            shrink = k < cap // 2  # do not keep a mostly empty buffer alive
            outs.append({name: col[:k].copy() if shrink else col[:k] for name, col in out.items()})
            if nl:
                lates.append(tuple(col[:nl].copy() for col in late))
            emitted += k
            start = stop
        cols = outs[0] if len(outs) == 1 else {
            name: np.concatenate([o[name] for o in outs]) for name in OUT_DTYPES}
        late_index, late_B, late_space = _NO_LATE
        if lates:
            late_index, late_B, late_space = (np.concatenate(c) for c in zip(*lates))
            # credits to earlier batches of this chunk go to their requests now
            mine = late_index >= chunk_first
            if mine.any():
                useful = cols["useful_B"].astype(np.int64)
                np.add.at(useful, late_index[mine] - chunk_first, late_B[mine])
                cols["useful_B"] = useful.astype(REQUEST_DTYPES["useful_B"])
                late_index, late_B, late_space = (late_index[~mine], late_B[~mine],
                                                  late_space[~mine])
        atomic = cols.pop("atomic")
        requests = RequestStream(**cols, launches=infos,
                                 atomic=atomic if atomic.any() else None)
        yield CoalescedChunk(chunk, requests, int(sec_host.sum()), int(sec_dev.sum()),
                             chunk_first, late_index, late_B, late_space)


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
    posted = (posted_opcodes(trace_or_chunks.opcodes) if isinstance(trace_or_chunks, WarpTrace)
              else None)
    chunks, regions, launches = _resolve(trace_or_chunks, regions, launches)
    parts = []
    late_index, late_B = [], []
    issued = IssueCounter()            # every warp instruction, for the issue floor
    for c in iter_coalesced(chunks, regions, launches=launches, cache=cache,
                            cache_host=cache_host, include_device=include_device, posted=posted):
        parts.append(c.requests)
        issued.add(c.insts.launch, c.insts.cta, c.insts.warp)
        if len(c.late_index):
            late_index.append(c.late_index)
            late_B.append(c.late_useful_B)
    infos = _with_issue_counts(_launch_infos(launches), issued)
    if not parts:
        return RequestStream(**{k: np.zeros(0, v) for k, v in REQUEST_DTYPES.items()},
                             launches=infos)
    cols = {k: np.concatenate([getattr(p, k) for p in parts]) for k in REQUEST_DTYPES}
    atomic = None
    if any(p.atomic is not None for p in parts):
        atomic = np.concatenate([np.zeros(len(p), dtype=np.bool_) if p.atomic is None
                                 else p.atomic for p in parts])
    if late_index:
        # hits credited to requests of earlier chunks (global index = concatenated position)
        useful = cols["useful_B"].astype(np.int64)
        np.add.at(useful, np.concatenate(late_index), np.concatenate(late_B))
        cols["useful_B"] = useful.astype(REQUEST_DTYPES["useful_B"])
    stream = RequestStream(**cols, launches=infos, atomic=atomic)
    del cols, atomic
    from hostlink.model.des.inputs import program_permutation
    order = program_permutation(stream)       # one pass where already in order
    return stream if order is None else stream.select(order)
