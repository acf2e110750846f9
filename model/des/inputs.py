"""Lay a RequestStream out for the discrete-event engines and cost every request once.

All byte counts come from the one packetiser (:mod:`hostlink.model.pcie.tlp`)
and the DRAM model (:mod:`hostlink.model.dram`); this module only turns them
into service times:

- link: the TLP capacity per direction after DLLPs and SKP ordered sets
  (:func:`hostlink.model.pcie.spec.tlp_capacity_GBps`, B/ns); a request's
  upstream time is its MRd wire bytes over it, its downstream time its CplD
  wire bytes over it;
- DRAM: bytes of the whole bursts a request touches over the sustained
  bandwidth (channels x rate x width x efficiency);
- device memory: the request's bytes over ``gpu.device_bw_GBps``;
- GPU-internal path: ``gpu.host_path_ns`` after a read's credits return
  (see :mod:`hostlink.model.des.events`);
- credits: a read holds one tag per MRd, one completion header per CplD and
  its completion data credits (16 B units); the tags are the least of
  ``link.tags`` and ``gpu.max_outstanding_host_reads``; completion buffers of
  0 are unlimited;
- device atomics that return (the stream's ``atomic``): a device read's costs,
  and ``gpu.atomic_extra_ns`` more latency; where ``gpu.atomic_spread_ns`` is
  set, their lines reach the SM log-spaced (:mod:`hostlink.model.des.events`);
- the SM's issue stage: ``gpu.request_gap_ns`` between two device lines
  leaving a warp, ``gpu.host_request_gap_ns`` between two host lines,
  ``gpu.sm_request_ns`` between two lines leaving an SM (a line: the read
  requests of one instruction to one 128 B line, :func:`line_leads`; writes do
  not pass the stage), ``gpu.sm_l2_request_ns`` for a device read line the L2
  serves, where it is set (an L2 replay, :func:`l2_lines`: a device read the L2
  misses then waits ``gpu.dram_lat_ns``, not ``gpu.device_lat_ns``);
- occupancy: CTA slots per launch = ``sm_count`` x the CTAs an SM holds, by its
  warp slots and its registers (:mod:`hostlink.model.occupancy`); a stream
  without launch records is taken as one warp per CTA.
- translation (when ``translation.enabled``): which host reads miss the GPU
  TLB and the IOTLB comes from :mod:`hostlink.model.translation`, given the
  order in which the reads reach it (see :func:`translation_flags`).
"""
from __future__ import annotations

import numpy as np

from hostlink.model.geometry import LINE_B
from numba import njit

from hostlink.model import dram as dram_model
from hostlink.model.config.schema import SystemConfig
from hostlink.model.des.events import (DEVICE_ATOMIC, DEVICE_READ, DEVICE_WRITE, HOST_READ,
                                       HOST_WRITE, N_KINDS, UNLIMITED, CostTable, DesInputs)
from hostlink.model.errors import ConfigError, HostlinkError
from hostlink.model.pcie import spec
from hostlink.model.pcie.tlp import TlpFormat, packetize_reads, packetize_writes
from hostlink.model.workload import SPACE_HOST, RequestStream


def link_rate_Bpns(system: SystemConfig) -> float:
    """TLP bytes per ns per direction (= GB/s) the link carries."""
    link = system.link
    dllp = None if link.dllp_overhead is None else np.asarray(link.dllp_overhead, dtype=float)
    return float(spec.tlp_capacity_GBps(link.gen, link.lanes, link.mps_B, link.uses_flit_mode,
                                        dllp))


def tlp_format(system: SystemConfig) -> TlpFormat:
    link = system.link
    return TlpFormat.resolve(gen=link.gen, mps_B=link.mps_B, mrrs_B=link.mrrs_B, rcb_B=link.rcb_B,
                             addr_64bit=link.addr_64bit, ecrc=link.ecrc,
                             framing_B=link.framing_B, flit_mode=link.uses_flit_mode,
                             cpl_split=getattr(link, "cpl_split", "mps"))


def dram_rate_Bpns(system: SystemConfig) -> float:
    """The host's rate of serving the bursts of the device's requests (B/ns = GB/s)."""
    return dram_model.served_GBps(system.host)


def tag_limit(system: SystemConfig) -> int:
    """Reads in flight the tags and the GPU allow (completion credits come on top)."""
    return int(min(system.link.tags, system.gpu.max_outstanding_host_reads))


def issue_gaps_ns(system: SystemConfig) -> np.ndarray:
    """Time between two lines leaving one warp, by request kind (reads alone pass the
    issue stage: the writes' entries are 0; a device atomic's is a load's, used where
    its lines do not spread, ``gpu.atomic_spread_ns`` None)."""
    gpu = system.gpu
    gaps = np.zeros(N_KINDS)
    gaps[HOST_READ] = float(gpu.host_request_gap_ns)
    gaps[DEVICE_READ] = gaps[DEVICE_ATOMIC] = float(gpu.request_gap_ns)
    return gaps


def line_indices(row: np.ndarray, inst_ptr: np.ndarray, leads: np.ndarray,
                 lines: np.ndarray | None) -> np.ndarray:
    """Per request (``row`` order): the lines of its instruction before it, each request
    that opens a line (``leads``) counting its ``lines`` (1 where None), one that
    follows counting none (int32)."""
    n = len(row)
    width = (np.ones(n, dtype=np.int64) if lines is None
             else np.asarray(lines, dtype=np.int64)[row])
    width = np.where(leads, width, 0)
    before = np.cumsum(width) - width
    starts = np.repeat(inst_ptr[:-1], np.diff(inst_ptr))
    out = before - before[starts]
    # a request that follows its line's first is on that line: one back
    out = np.where(leads, out, np.maximum(out - 1, 0))
    return out.astype(np.int32)


def line_leads(stream: RequestStream, row: np.ndarray, inst_ptr: np.ndarray) -> np.ndarray:
    """Per request (``row`` order): True where it opens a line, i.e. is its
    instruction's first request or lies in another 128 B line or memory space
    than the request before it and does not follow its instruction's first
    (the stream's ``follows``)."""
    follows = (np.zeros(0, dtype=np.bool_) if stream.follows is None
               else stream.follows.astype(np.bool_, copy=False))
    return _line_leads(stream.addr.view(np.int64), stream.space, follows, row, inst_ptr,
                       LINE_B)


@njit(cache=True)
def _line_leads(addr, space, follows, row, inst_ptr, line_B):
    """:func:`line_leads` in one pass (``follows`` empty: the stream has none)."""
    n = row.shape[0]
    leads = np.empty(n, dtype=np.bool_)
    has_follows = follows.shape[0] > 0
    for k in range(n):
        r = row[k]
        if k == 0:
            leads[k] = True
        else:
            p = row[k - 1]
            leads[k] = addr[r] // line_B != addr[p] // line_B or space[r] != space[p]
        if has_follows and follows[r]:
            leads[k] = False
    for i in range(inst_ptr.shape[0] - 1):
        if inst_ptr[i] < n:
            leads[inst_ptr[i]] = True
    return leads


@njit(cache=True)
def _in_program_order(la, wa, ia) -> bool:
    """Whether the rows are already in (launch, warp, inst) order (one pass, no copies)."""
    for r in range(1, len(la)):
        if la[r] != la[r - 1]:
            if la[r] < la[r - 1]:
                return False
        elif wa[r] != wa[r - 1]:
            if wa[r] < wa[r - 1]:
                return False
        elif ia[r] < ia[r - 1]:
            return False
    return True


def program_permutation(stream: RequestStream) -> np.ndarray | None:
    """Permutation into (launch, warp, inst) order, or None when already in it."""
    if len(stream) < 2 or _in_program_order(stream.launch, stream.warp, stream.inst):
        return None
    return np.lexsort((stream.inst, stream.warp, stream.launch))


def program_order(stream: RequestStream) -> np.ndarray:
    """Row indices in (launch, warp, inst) order (stable)."""
    order = program_permutation(stream)
    return np.arange(len(stream), dtype=np.int64) if order is None else order


def layout(stream: RequestStream, system: SystemConfig) -> dict:
    """Row order and the instruction/warp/CTA/launch index arrays of a stream, and each
    CTA's place in its launch's grid (``cta_index``: its warps' ids over the warps per
    CTA)."""
    n = len(stream)
    perm = program_permutation(stream)
    row = np.arange(n, dtype=np.int64) if perm is None else perm.astype(np.int64, copy=False)

    def in_order(col):
        # rows already in program order are taken as they are (no gather, no copy)
        return col if perm is None else col[perm]
    launch, warp, inst = in_order(stream.launch), in_order(stream.warp), in_order(stream.inst)
    n_launch = max(len(stream.launches), int(launch.max()) + 1 if n else 0)
    if stream.launches and n and int(launch.max()) >= len(stream.launches):
        raise HostlinkError(f"request stream: launch {int(launch.max())} has no launch record "
                            f"(the stream lists {len(stream.launches)} launches)")
    from hostlink.model.occupancy import ctas_per_sm, launch_shapes
    wpc, regs = launch_shapes(stream.launches, n_launch)
    gpu = system.gpu
    too_big = wpc > gpu.max_warps_per_sm
    if too_big.any():
        k = int(np.flatnonzero(too_big)[0])
        raise ConfigError(f"launch {k}: {int(wpc[k])} warps per CTA exceed "
                          f"gpu.max_warps_per_sm = {gpu.max_warps_per_sm}")
    slots = gpu.sm_count * np.asarray(ctas_per_sm(gpu.max_warps_per_sm, gpu.registers_per_sm,
                                                  wpc, regs), dtype=np.int64)

    if n == 0:
        z = np.zeros(1, dtype=np.int64)
        return {"row": row, "inst_ptr": z, "warp_ptr": z, "cta_ptr": z,
                "launch_ptr": np.zeros(n_launch + 1, dtype=np.int64), "launch_slots": slots,
                "cta_index": np.zeros(0, dtype=np.int64)}
    counts = _starts(launch, warp, inst, wpc.astype(np.int64), None, None, None, None, None)
    inst_ptr, warp_ptr, cta_ptr = (np.empty(k + 1, dtype=np.int64) for k in counts)
    c_launch = np.empty(counts[2], dtype=np.int64)
    cta_index = np.empty(counts[2], dtype=np.int64)
    _starts(launch, warp, inst, wpc.astype(np.int64), inst_ptr, warp_ptr, cta_ptr, c_launch,
            cta_index)
    return {
        "row": row,
        "inst_ptr": inst_ptr,
        "warp_ptr": warp_ptr,
        "cta_ptr": cta_ptr,
        "launch_ptr": np.searchsorted(c_launch, np.arange(n_launch + 1)).astype(np.int64,
                                                                                copy=False),
        "launch_slots": slots.astype(np.int64, copy=False),
        "cta_index": cta_index,   # its place in the grid
    }


@njit(cache=True)
def _starts(launch, warp, inst, wpc, inst_ptr, warp_ptr, cta_ptr, c_launch, cta_index):
    """Rows in program order: where each instruction, warp and CTA starts (instructions
    as rows, warps as instructions, CTAs as warps: each pointer array ends with the
    count it indexes); each CTA's launch and place in its launch's grid (its warps' ids
    over the launch's warps per CTA). With the arrays None, only their counts, as
    (instructions, warps, CTAs)."""
    n = launch.shape[0]
    n_inst = n_warp = n_cta = 0
    for r in range(n):
        new_warp = r == 0 or launch[r] != launch[r - 1] or warp[r] != warp[r - 1]
        if not (new_warp or inst[r] != inst[r - 1]):
            continue
        if inst_ptr is not None:
            inst_ptr[n_inst] = r
        n_inst += 1
        if not new_warp:
            continue
        if warp_ptr is not None:
            warp_ptr[n_warp] = n_inst - 1
        n_warp += 1
        cta = np.int64(warp[r]) // wpc[launch[r]]
        if (r > 0 and launch[r] == launch[r - 1]
                and cta == np.int64(warp[r - 1]) // wpc[launch[r - 1]]):
            continue
        if cta_ptr is not None:
            cta_ptr[n_cta] = n_warp - 1
        if c_launch is not None:
            c_launch[n_cta] = launch[r]
        if cta_index is not None:
            cta_index[n_cta] = cta
        n_cta += 1
    if inst_ptr is not None:
        inst_ptr[n_inst] = n
    if warp_ptr is not None:
        warp_ptr[n_warp] = n_inst
    if cta_ptr is not None:
        cta_ptr[n_cta] = n_warp
    return n_inst, n_warp, n_cta


#: a cost class key within one request kind: offset << KEY_OFFSET_SHIFT | size
KEY_OFFSET_SHIFT = 32


def _class_keys(offset: np.ndarray, size: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct (offset, size) pairs as keys ``offset << 32 | size``, and each request's
    index among them (int32)."""
    offset = offset.astype(np.int64)
    size = size.astype(np.int64)
    width = int(size.max()) + 1
    span = int(offset.max()) + 1
    if span * width <= (1 << 24):
        # a dense (offset, size) table: no sort needed
        cell = offset * width + size
        table = np.zeros(span * width, dtype=np.int32)
        table[cell] = 1
        used = np.flatnonzero(table)
        table[used] = np.arange(len(used), dtype=np.int32)
        return ((used // width) << KEY_OFFSET_SHIFT) | (used % width), table[cell]
    uniq, inv = np.unique((offset << KEY_OFFSET_SHIFT) | size, return_inverse=True)
    return uniq, inv.ravel().astype(np.int32)


def _cost_dtype(name: str):
    return np.float64 if name.endswith("_ns") else np.int64


def _class_costs(kind: int, offset_B: np.ndarray, size_B: np.ndarray, system: SystemConfig,
                 fmt: TlpFormat, rate_Bpns: float, burst_B: int) -> dict[str, np.ndarray]:
    """The :class:`CostTable` columns of cost classes of one request kind (offset in the
    4 KiB page, 0 for device requests, and size), and each class's wire bytes up and
    down (``up_wire_B``, ``down_wire_B``)."""
    m = len(size_B)
    c = {name: np.zeros(m, dtype=_cost_dtype(name)) for name in (
        "ser_up_ns", "ser_down_ns", "dram_ns", "dev_ns", "need_tags", "need_hdr",
        "need_data_B", "dram_B", "up_wire_B", "down_wire_B")}
    c["size_B"] = size_B.astype(np.int64)
    if kind == HOST_READ:
        p = packetize_reads(offset_B, size_B, fmt)
        c["up_wire_B"], c["down_wire_B"] = p.up_wire_B, p.down_wire_B
        c["ser_up_ns"] = p.up_wire_B / rate_Bpns
        c["ser_down_ns"] = p.down_wire_B / rate_Bpns
        c["need_tags"] = np.asarray(p.n_mrd, dtype=np.int64)
        c["need_hdr"] = np.asarray(p.n_cpld, dtype=np.int64)
        c["need_data_B"] = np.asarray(p.cpl_credit_B, dtype=np.int64)
    elif kind == HOST_WRITE:
        c["up_wire_B"] = packetize_writes(offset_B, size_B, fmt).up_wire_B
        c["ser_up_ns"] = c["up_wire_B"] / rate_Bpns
    if kind in (HOST_READ, HOST_WRITE):
        c["dram_B"] = (dram_model.bursts_touched(offset_B, size_B, burst_B) * burst_B
                       ).astype(np.int64)
        c["dram_ns"] = c["dram_B"] / dram_rate_Bpns(system)
    else:
        c["dev_ns"] = size_B / system.gpu.device_bw_GBps
    return {name: v if name.endswith("wire_B") else np.asarray(v, dtype=_cost_dtype(name))
            for name, v in c.items()}


#: the largest dense (kind, offset, size) table :func:`request_classes` counts in one
#: pass (12 B a cell); a stream of larger requests takes the sorting path, as does one
#: of fewer than a request per DENSE_CELLS_PER_REQUEST cells, where clearing the table
#: costs more than the sort (1,000 requests: 6.0 ms against 2.6; 300,000: 9.3 against
#: 10.8; 3 M: 42 against 238, 2-core machine)
DENSE_CLASS_CELLS = 1 << 22
DENSE_CELLS_PER_REQUEST = 16


@njit(cache=True)
def _dense_classes(row, space, write, atomic, addr, size_B, width, host_space, page_mask):
    """Each request's kind and cost class in one pass over ``row``, the classes numbered
    kind by kind (HOST_READ .. DEVICE_ATOMIC) and, within a kind, by (offset, size):
    as :func:`_class_keys` numbers them. ``atomic`` is empty where the stream marks
    none. Returns (kind, class id, the (kind, offset, size) cells in use, their
    counts)."""
    n = row.shape[0]
    span = page_mask + 1
    cells = N_KINDS * span * width
    count = np.zeros(cells, dtype=np.int64)
    kind = np.empty(n, dtype=np.uint8)
    cost_id = np.empty(n, dtype=np.int32)      # each request's cell, then its class
    has_atomic = atomic.shape[0] > 0
    for i in range(n):
        r = row[i]
        if space[r] == host_space:
            k = HOST_WRITE if write[r] else HOST_READ
            off = np.int64(addr[r] & np.uint64(page_mask))
        else:
            k = DEVICE_WRITE if write[r] else DEVICE_READ
            if k == DEVICE_READ and has_atomic and atomic[r]:
                k = DEVICE_ATOMIC
            off = 0
        kind[i] = k
        c = (k * span + off) * width + np.int64(size_B[r])
        cost_id[i] = c
        count[c] += 1
    used = np.flatnonzero(count)
    ident = np.empty(cells, dtype=np.int32)
    for j in range(used.shape[0]):
        ident[used[j]] = j
    for i in range(n):
        cost_id[i] = ident[cost_id[i]]
    return kind, cost_id, used, count[used]


def request_classes(stream: RequestStream, row: np.ndarray) -> dict:
    """Kinds and cost classes of the requests, in ``row`` order: what of
    :func:`request_costs` depends on the stream alone.

    Returns ``kind`` (uint8, per request), ``cost_id`` (int32, per request) and
    ``kinds``: per kind present, in class order, (kind, the classes' keys
    ``offset << KEY_OFFSET_SHIFT | size``, the requests in each class). A host
    request's class is its kind, its offset in its 4 KiB page and its size; a
    device request's its kind and size."""
    n = len(row)
    if n:
        size = stream.size_B[row] if n < len(stream) else stream.size_B
        if size.min() < 1:
            bad = int(row[np.argmin(stream.size_B[row])])
            raise HostlinkError(f"request stream: row {bad} has size_B = 0")
        if int(size.max()) >= 1 << KEY_OFFSET_SHIFT:
            bad = int(row[np.argmax(stream.size_B[row])])
            raise HostlinkError(f"request stream: row {bad} has size_B = "
                                f"{int(stream.size_B[bad])} (at most "
                                f"{(1 << KEY_OFFSET_SHIFT) - 1})")
        width = int(size.max()) + 1
        del size
        cells = N_KINDS * spec.PAGE_4K_B * width
        if cells <= min(DENSE_CLASS_CELLS, n * DENSE_CELLS_PER_REQUEST):
            return _dense_request_classes(stream, row, width)
    return _sorted_request_classes(stream, row)


def _dense_request_classes(stream: RequestStream, row: np.ndarray, width: int) -> dict:
    """:func:`request_classes` by one compiled pass over a table of every (kind,
    offset, size)."""
    atomic = (np.zeros(0, dtype=np.bool_) if stream.atomic is None
              else np.asarray(stream.atomic, dtype=np.bool_))
    kind, cost_id, used, counts = _dense_classes(
        np.asarray(row, dtype=np.int64), stream.space, np.asarray(stream.is_write, np.bool_),
        atomic, np.asarray(stream.addr, dtype=np.uint64), stream.size_B, width, SPACE_HOST,
        spec.PAGE_4K_B - 1)
    span = spec.PAGE_4K_B
    cell_kind = used // (span * width)
    offset = (used // width) % span
    key = (offset << KEY_OFFSET_SHIFT) | (used % width)
    kinds = [(int(k), key[cell_kind == k], counts[cell_kind == k].astype(np.float64))
             for k in range(N_KINDS) if np.any(cell_kind == k)]
    return {"kind": kind, "cost_id": cost_id, "kinds": kinds}


def _sorted_request_classes(stream: RequestStream, row: np.ndarray) -> dict:
    """:func:`request_classes` kind by kind, each kind's classes found by
    :func:`_class_keys`."""
    n = len(row)
    space = stream.space[row]
    write = stream.is_write[row]
    host = space == SPACE_HOST
    kind = np.where(host, np.where(write, HOST_WRITE, HOST_READ),
                    np.where(write, DEVICE_WRITE, DEVICE_READ)).astype(np.uint8)
    if stream.atomic is not None:
        kind[(kind == DEVICE_READ) & stream.atomic[row]] = DEVICE_ATOMIC
    del space, write, host
    cost_id = np.zeros(n, dtype=np.int32)
    kinds = []
    n_classes = 0
    for k in (HOST_READ, HOST_WRITE, DEVICE_READ, DEVICE_WRITE, DEVICE_ATOMIC):
        sel = np.flatnonzero(kind == k)
        if not len(sel):
            continue
        rows = row[sel]
        size = stream.size_B[rows]
        if k in (HOST_READ, HOST_WRITE):
            offset = (stream.addr[rows] & np.uint64(spec.PAGE_4K_B - 1)).astype(np.int64)
        else:
            offset = np.zeros(len(sel), dtype=np.int64)
        del rows
        key, inv = _class_keys(offset, size)
        del offset, size
        cost_id[sel] = inv + n_classes
        del sel
        kinds.append((k, key, np.bincount(inv, minlength=len(key)).astype(np.float64)))
        del inv
        n_classes += len(key)
    return {"kind": kind, "cost_id": cost_id, "kinds": kinds}


def request_costs(stream: RequestStream, system: SystemConfig, row: np.ndarray,
                  classes: dict | None = None) -> dict:
    """Kinds, cost classes and the cost table of the requests, in ``row`` order.

    Returns ``kind`` (uint8, per request), ``cost_id`` (int32, per request), ``table``
    (a :class:`CostTable`, per class), ``wire`` (upstream and downstream wire bytes
    in all) and ``host_dram_B`` (bytes of the DRAM bursts the host requests touch).
    A host request's TLPs depend only on its offset in its 4 KiB page and its size,
    and so do its DRAM bursts (a burst divides the page): its class is its kind,
    that offset and its size. A device request's costs depend on its kind and size
    alone. ``classes``: :func:`request_classes` of the same rows, to reuse (they do
    not depend on the system)."""
    rate = link_rate_Bpns(system)
    fmt = tlp_format(system)
    burst = int(system.host.burst_B)
    if burst < 1 or spec.PAGE_4K_B % burst:
        raise ConfigError(f"host.burst_B: {burst} must be a power of two of at most "
                          f"{spec.PAGE_4K_B} (a request's bursts follow from its page offset)")
    classes = request_classes(stream, row) if classes is None else classes
    cols: dict[str, list[np.ndarray]] = {k: [] for k in (
        "size_B", "ser_up_ns", "ser_down_ns", "dram_ns", "dev_ns", "need_tags", "need_hdr",
        "need_data_B", "dram_B")}
    wire = {"up": 0.0, "down": 0.0}
    host_dram_B = 0
    for k, key, counts in classes["kinds"]:
        c = _class_costs(k, key >> KEY_OFFSET_SHIFT, key & ((1 << KEY_OFFSET_SHIFT) - 1),
                         system, fmt, rate, burst)
        if k in (HOST_READ, HOST_WRITE):
            wire["up"] += float(np.dot(counts, c["up_wire_B"]))
            wire["down"] += float(np.dot(counts, c["down_wire_B"]))
            host_dram_B += int(np.dot(counts, c["dram_B"]))
        for name in cols:
            cols[name].append(c[name])
    table = CostTable(**{name: (np.concatenate(v) if v else np.zeros(0, dtype=_cost_dtype(name)))
                         for name, v in cols.items()})
    return {"kind": classes["kind"], "cost_id": classes["cost_id"], "table": table,
            "wire": wire, "host_dram_B": host_dram_B}


def translation_flags(stream: RequestStream, system: SystemConfig, row: np.ndarray,
                      arrival: np.ndarray | None = None,
                      carry: tuple | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Per request (``row`` order): GPU TLB miss, and IOTLB miss (``translation.iommu``).

    ``arrival`` orders the host reads as they reach the TLB (a sort key per
    request, e.g. launch and issue time from a first simulation); without it
    the order is :func:`hostlink.model.translation.issue_order`'s round robin.
    ``carry``: (TLB, IOTLB) as the launches before the stream's left them
    (:class:`hostlink.model.translation.LruCarry` each), updated; None: both empty."""
    from hostlink.model import translation as xl
    n = len(row)
    cfg = system.translation
    walk = np.zeros(n, dtype=bool)
    iommu = np.zeros(n, dtype=bool)
    if not cfg.enabled or n == 0:
        return walk, iommu
    reads = np.flatnonzero((stream.space[row] == SPACE_HOST) & ~stream.is_write[row])
    if len(reads) == 0:
        return walk, iommu
    tlb, iotlb = (None, None) if carry is None else carry
    if arrival is not None:
        # where each warp's reads arrive in program order (the engines send them so),
        # a read repeats its warp's previous page in arrival order where it does in
        # program order: no sort by warp is needed
        same = (_program_order_repeats(stream, row[reads], cfg.page_B)
                if _warps_arrive_in_program_order(stream.launch, stream.warp, row, reads,
                                                  arrival) else None)
        order = np.argsort(arrival[reads], kind="stable")    # by arrival, then program order
        seq = reads[order]
        addr = stream.addr[row[seq]]
        pages = addr // np.uint64(cfg.page_B)
        if same is not None:
            walk[seq] = xl.translation_misses(pages, cfg, repeats=same[order], carry=tlb)
        else:
            walk[seq] = xl.translation_misses(pages, cfg, xl.warp_keys_of(stream, row[seq]),
                                              carry=tlb)
        del order, pages, same
    else:
        # The reads in program order (``row``), then in issue order. A warp's reads
        # keep their program order in the issue order (by instruction, then row), so
        # a read repeats its warp's previous page there exactly where it does here:
        # the repeats are found in program order, without a sort by warp.
        rr = row[reads]
        resident = system.gpu.sm_count * system.gpu.max_warps_per_sm
        perm = xl.issue_permutation(stream.launch[rr], stream.warp[rr], stream.inst[rr],
                                    resident)
        same = _program_order_repeats(stream, rr, cfg.page_B)
        pages = stream.addr[rr] // np.uint64(cfg.page_B)
        seq = reads[perm]
        walk[seq] = xl.translation_misses(pages[perm], cfg, repeats=same[perm], carry=tlb)
        del pages, same
        addr = stream.addr[rr][perm]
    if cfg.iommu:
        iommu[seq] = xl.lru_misses(addr // np.uint64(cfg.iommu_page_B), cfg.iommu_iotlb_entries,
                                   iotlb)
    return walk, iommu


def _program_order_repeats(stream: RequestStream, rr: np.ndarray, page_B: int) -> np.ndarray:
    """Per row of ``rr`` (rows of ``stream`` in program order): whether it reads the
    page its warp's previous row in ``rr`` read."""
    return _repeats(stream.launch, stream.warp, stream.addr, rr, np.uint64(page_B))


@njit(cache=True)
def _repeats(launch, warp, addr, rr, page_B):
    same = np.zeros(len(rr), dtype=np.bool_)
    for i in range(1, len(rr)):
        a, b = rr[i - 1], rr[i]
        same[i] = (launch[a] == launch[b] and warp[a] == warp[b]
                   and addr[a] // page_B == addr[b] // page_B)
    return same


@njit(cache=True)
def _warps_arrive_in_program_order(launch, warp, row, reads, arrival) -> bool:
    """Whether each warp's reads (``reads``: positions in program order, ``row``: their
    stream rows; a warp's consecutive) arrive no earlier than the read before them:
    the engines let a warp's requests leave its SM in the order it issued them."""
    for i in range(1, len(reads)):
        a, b = row[reads[i - 1]], row[reads[i]]
        if (launch[a] == launch[b] and warp[a] == warp[b]
                and arrival[reads[i]] < arrival[reads[i - 1]]):
            return False
    return True


def pages_fit(stream: RequestStream, system: SystemConfig) -> bool:
    """True when the host pages the stream reads fit in the TLB (and IOTLB): then only
    first touches miss, whatever the order, and one simulation pass suffices. Counted
    once per stream and ``translation`` section: every pass of the loaded round trip
    asks again (:mod:`hostlink.model.loaded_rtt`)."""
    cfg = system.translation
    if not cfg.enabled:
        return True
    from hostlink.model.stream_memo import memoized
    return memoized(stream, "pages_fit", cfg, lambda: _pages_fit(stream, cfg))


def _pages_fit(stream: RequestStream, cfg) -> bool:
    sel = (stream.space == SPACE_HOST) & ~stream.is_write
    addr = stream.addr[sel]
    if len(np.unique(addr // np.uint64(cfg.page_B))) > cfg.tlb_entries:
        return False
    if cfg.iommu and len(np.unique(addr // np.uint64(cfg.iommu_page_B))) > cfg.iommu_iotlb_entries:
        return False
    return True


def l2_lines(stream: RequestStream, system: SystemConfig, row: np.ndarray, leads: np.ndarray,
             kind: np.ndarray, state=None):
    """The device read lines the L2 serves and the reads DRAM serves (``row`` order):
    a :class:`~hostlink.model.l2_lines.L2Replay`; None where the GPU gives the L2's
    lines no rate of their own (``gpu.sm_l2_request_ns``), the stream's requests stand
    for lines (:func:`~hostlink.model.l2_lines.replays`) or it has no device reads.
    ``state``: the L2 the run's earlier launches left (an
    :class:`~hostlink.model.l2_lines.L2State`, updated); without it the replay starts
    empty and its answer is kept with the stream, by the L2's geometry: the passes of
    a loaded round trip share it."""
    from hostlink.model.l2_lines import l2_config, l2_served, replays
    gpu = system.gpu
    if gpu.sm_l2_request_ns is None or not replays(stream) or not np.any(kind == DEVICE_READ):
        return None     # (only device reads use the L2)
    config = l2_config(gpu) if state is None else state.config
    if state is not None:
        return l2_served(stream, row, leads, config, state=state)
    from hostlink.model.stream_memo import memoized
    return memoized(stream, "l2_lines", config, lambda: l2_served(stream, row, leads, config),
                    keep=1)


def warp_shared_ns(stream: RequestStream, lay: dict, shared_write_ns: float) -> np.ndarray | None:
    """Per warp of the layout ``lay``, the time the L2 takes to serve its writes to the
    words its launch's warps share: the launch's ``shared_writes`` times
    ``shared_write_ns``, shared evenly among the launch's warps. None where no launch
    writes such a word or the write costs nothing."""
    n_launch = len(lay["launch_slots"])
    counts = np.zeros(n_launch)
    for k, info in enumerate(stream.launches[:n_launch]):
        counts[k] = info.shared_writes
    if shared_write_ns <= 0 or not counts.any():
        return None
    first_warp = lay["cta_ptr"][lay["launch_ptr"]]
    warps = np.diff(first_warp)
    per_warp = np.where(warps > 0, counts * shared_write_ns / np.maximum(warps, 1), 0.0)
    return np.repeat(per_warp, warps).astype(np.float64)


def cta_start_ns(cta_index: np.ndarray, dispatch_ns: float) -> np.ndarray | None:
    """Per CTA, the earliest time from its launch's start at which the dispatcher lets
    it start: its place in the grid times ``dispatch_ns`` (``gpu.cta_dispatch_ns``, the
    dispatcher's time per CTA). None where the dispatcher costs nothing."""
    if dispatch_ns <= 0:
        return None
    return cta_index.astype(np.float64) * float(dispatch_ns)


def build_inputs(stream: RequestStream, system: SystemConfig, *, translation: bool | None = None,
                 arrival: np.ndarray | None = None, lay: dict | None = None,
                 costs: dict | None = None, l2_state=None) -> DesInputs:
    """The engines' inputs for ``stream`` on ``system``.

    ``translation``: model TLB/IOTLB misses (default: ``system.translation.enabled``);
    ``arrival``: the order reads reach the TLB (see :func:`translation_flags`);
    ``lay`` and ``costs``: results of :func:`layout` and :func:`request_costs`
    to reuse between passes; ``l2_state``: the L2 as the run's earlier launches left
    it, for a stream of later launches (see :func:`l2_lines`)."""
    lay = layout(stream, system) if lay is None else lay
    row = lay["row"]
    costs = request_costs(stream, system, row) if costs is None else costs
    link = system.link
    tags = tag_limit(system)
    hdrs = link.cpl_buffer_hdrs or UNLIMITED
    data = link.cpl_buffer_B or UNLIMITED
    table = costs["table"]
    for name, limit, need in (("link.tags / gpu.max_outstanding_host_reads", tags, "need_tags"),
                              ("link.cpl_buffer_hdrs", hdrs, "need_hdr"),
                              ("link.cpl_buffer_B", data, "need_data_B")):
        col = getattr(table, need)
        if len(col) and col.max() > limit:
            raise ConfigError(f"{name} = {limit} is less than one read needs "
                              f"({int(col.max())}): no read could ever be issued")
    use_xl = system.translation.enabled if translation is None else translation
    if use_xl:
        walk, iommu = translation_flags(stream, system, row, arrival)
    else:
        walk, iommu = np.zeros(len(row), dtype=bool), np.zeros(len(row), dtype=bool)
    cfg = system.translation
    leads = line_leads(stream, row, lay["inst_ptr"])
    spread = -1.0 if system.gpu.atomic_spread_ns is None else float(system.gpu.atomic_spread_ns)
    l2 = l2_lines(stream, system, row, leads, costs["kind"], l2_state)
    line_index = None
    if spread >= 0 and np.any(costs["kind"] == DEVICE_ATOMIC):
        line_index = line_indices(row, lay["inst_ptr"], leads, stream.lines)
    return DesInputs(
        row=row, inst_ptr=lay["inst_ptr"], warp_ptr=lay["warp_ptr"], cta_ptr=lay["cta_ptr"],
        launch_ptr=lay["launch_ptr"], launch_slots=lay["launch_slots"],
        kind=costs["kind"], cost_id=costs["cost_id"], costs=table, walk=walk, iommu_miss=iommu,
        tags=tags, cpl_hdrs=int(hdrs), cpl_data_B=int(data), rtt_ns=float(link.rtt_ns),
        device_lat_ns=float(system.gpu.device_lat_ns),
        loads_in_flight=int(system.gpu.loads_in_flight_per_warp),
        walkers=int(cfg.walkers), walk_ns=float(cfg.miss_lat_ns),
        iommu_miss_ns=float(cfg.iommu_miss_lat_ns),
        launch_overhead_ns=system.launch_overhead_us * 1e3,
        level_sync_ns=system.level_sync_us * 1e3,
        host_path_ns=float(system.gpu.host_path_ns),
        atomic_extra_ns=float(system.gpu.atomic_extra_ns),
        atomic_spread_ns=spread,
        atomic_sm_ns=float(system.gpu.atomic_sm_ns),
        line_index=line_index,
        cta_start_ns=cta_start_ns(lay["cta_index"], system.gpu.cta_dispatch_ns),
        warp_shared_ns=warp_shared_ns(stream, lay, float(system.gpu.shared_write_ns)),
        sm_count=int(system.gpu.sm_count),
        issue_gap_ns=issue_gaps_ns(system),
        sm_request_ns=float(system.gpu.sm_request_ns),
        sm_l2_request_ns=(None if system.gpu.sm_l2_request_ns is None
                          else float(system.gpu.sm_l2_request_ns)),
        l2_lines=None if l2 is None else l2.lines,
        l2_misses=None if l2 is None else l2.misses,
        dram_extra_ns=max(0.0, float(system.gpu.dram_lat_ns) - float(system.gpu.device_lat_ns)),
        leads=leads,
        issue_lines=None if stream.lines is None else stream.lines[row].astype(np.int32),
        inst_waits=(None if stream.waits is None
                    else stream.waits[row][lay["inst_ptr"][:-1]].astype(np.bool_)),
        extra={"host_dram_B": costs["host_dram_B"], "wire_B": costs["wire"]})
