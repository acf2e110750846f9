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
- the SM's issue stage: ``gpu.request_gap_ns`` between two device lines
  leaving a warp, ``gpu.host_request_gap_ns`` between two host lines,
  ``gpu.sm_request_ns`` between two lines leaving an SM (a line: the read
  requests of one instruction to one 128 B line, :func:`line_leads`; writes do
  not pass the stage);
- occupancy: CTA slots per launch = ``sm_count * (max_warps_per_sm //
  warps_per_cta)``; a stream without launch records is taken as one warp per CTA.
- translation (when ``translation.enabled``): which host reads miss the GPU
  TLB and the IOTLB comes from :mod:`hostlink.model.translation`, given the
  order in which the reads reach it (see :func:`translation_flags`).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from hostlink.model import dram as dram_model
from hostlink.model.config.schema import SystemConfig
from hostlink.model.des.events import (DEVICE_READ, DEVICE_WRITE, HOST_READ, HOST_WRITE,
                                       UNLIMITED, DesInputs)
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
    h = system.host
    return float(dram_model.sustained_GBps(h.channels, h.transfer_rate_MTps,
                                           h.channel_width_bits, h.efficiency))


def tag_limit(system: SystemConfig) -> int:
    """Reads in flight the tags and the GPU allow (completion credits come on top)."""
    return int(min(system.link.tags, system.gpu.max_outstanding_host_reads))


def issue_gaps_ns(system: SystemConfig) -> np.ndarray:
    """Time between two lines leaving one warp, by request kind (reads alone pass the
    issue stage: the writes' entries are 0)."""
    gaps = np.zeros(4)
    gaps[HOST_READ] = float(system.gpu.host_request_gap_ns)
    gaps[DEVICE_READ] = float(system.gpu.request_gap_ns)
    return gaps


#: the unit the issue stage costs: one 128 B line of an instruction
ISSUE_LINE_B = 128


def line_leads(stream: RequestStream, row: np.ndarray, inst_ptr: np.ndarray) -> np.ndarray:
    """Per request (``row`` order): True where it opens a line, i.e. is its
    instruction's first request or lies in another 128 B line or memory space
    than the request before it."""
    n = len(row)
    leads = np.ones(n, dtype=np.bool_)
    if n < 2:
        return leads
    line = stream.addr[row] // np.uint64(ISSUE_LINE_B)
    space = stream.space[row]
    leads[1:] = (line[1:] != line[:-1]) | (space[1:] != space[:-1])
    leads[inst_ptr[:-1]] = True
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


def _order(stream: RequestStream) -> np.ndarray | None:
    """Permutation into (launch, warp, inst) order, or None when already in it."""
    if len(stream) < 2 or _in_program_order(stream.launch, stream.warp, stream.inst):
        return None
    return np.lexsort((stream.inst, stream.warp, stream.launch))


def program_order(stream: RequestStream) -> np.ndarray:
    """Row indices in (launch, warp, inst) order (stable)."""
    order = _order(stream)
    return np.arange(len(stream), dtype=np.int64) if order is None else order


def layout(stream: RequestStream, system: SystemConfig) -> dict:
    """Row order and the instruction/warp/CTA/launch index arrays of a stream."""
    n = len(stream)
    row = program_order(stream).astype(np.int64)
    launch = stream.launch.astype(np.int64)[row]
    warp = stream.warp.astype(np.int64)[row]
    inst = stream.inst.astype(np.int64)[row]
    n_launch = max(len(stream.launches), int(launch.max()) + 1 if n else 0)
    if stream.launches:
        if n and int(launch.max()) >= len(stream.launches):
            raise HostlinkError(f"request stream: launch {int(launch.max())} has no launch record "
                                f"(the stream lists {len(stream.launches)} launches)")
        wpc = np.array([max(1, li.warps_per_cta) for li in stream.launches], dtype=np.int64)
    else:
        wpc = np.ones(n_launch, dtype=np.int64)
    gpu = system.gpu
    too_big = wpc > gpu.max_warps_per_sm
    if too_big.any():
        k = int(np.flatnonzero(too_big)[0])
        raise ConfigError(f"launch {k}: {int(wpc[k])} warps per CTA exceed "
                          f"gpu.max_warps_per_sm = {gpu.max_warps_per_sm}")
    slots = gpu.sm_count * (gpu.max_warps_per_sm // wpc)

    if n == 0:
        z = np.zeros(1, dtype=np.int64)
        return {"row": row, "inst_ptr": z, "warp_ptr": z, "cta_ptr": z,
                "launch_ptr": np.zeros(n_launch + 1, dtype=np.int64), "launch_slots": slots}
    new_inst = np.ones(n, dtype=bool)
    new_inst[1:] = (launch[1:] != launch[:-1]) | (warp[1:] != warp[:-1]) | (inst[1:] != inst[:-1])
    inst_start = np.flatnonzero(new_inst)
    i_launch, i_warp = launch[inst_start], warp[inst_start]
    new_warp = np.ones(len(inst_start), dtype=bool)
    new_warp[1:] = (i_launch[1:] != i_launch[:-1]) | (i_warp[1:] != i_warp[:-1])
    warp_start = np.flatnonzero(new_warp)
    w_launch, w_warp = i_launch[warp_start], i_warp[warp_start]
    w_cta = w_warp // wpc[w_launch]
    new_cta = np.ones(len(warp_start), dtype=bool)
    new_cta[1:] = (w_launch[1:] != w_launch[:-1]) | (w_cta[1:] != w_cta[:-1])
    cta_start = np.flatnonzero(new_cta)
    c_launch = w_launch[cta_start]
    return {
        "row": row,
        "inst_ptr": np.append(inst_start, n).astype(np.int64),
        "warp_ptr": np.append(warp_start, len(inst_start)).astype(np.int64),
        "cta_ptr": np.append(cta_start, len(warp_start)).astype(np.int64),
        "launch_ptr": np.searchsorted(c_launch, np.arange(n_launch + 1)).astype(np.int64),
        "launch_slots": slots.astype(np.int64),
    }


def _page_keys(addr: np.ndarray, size: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct (offset in the 4 KiB page, size) pairs as keys ``offset << 20 | size``,
    and each request's index among them."""
    offset = (addr & np.uint64(spec.PAGE_4K_B - 1)).astype(np.int64)
    size = size.astype(np.int64)
    width = int(size.max()) + 1
    if width <= 4096:
        # a dense (offset, size) table: no sort needed
        cell = offset * width + size
        table = np.zeros(spec.PAGE_4K_B * width, dtype=np.int64)
        table[cell] = 1
        used = np.flatnonzero(table)
        table[used] = np.arange(len(used))
        return ((used // width) << 20) | (used % width), table[cell]
    uniq, inv = np.unique((offset << 20) | size, return_inverse=True)
    return uniq, inv.ravel()


def request_costs(stream: RequestStream, system: SystemConfig, row: np.ndarray) -> dict:
    """Kinds, service times and credit needs of the requests, in ``row`` order."""
    n = len(row)
    space = stream.space[row]
    write = stream.is_write[row]
    addr = stream.addr[row]
    size = stream.size_B[row].astype(np.int64)
    if n and size.min() < 1:
        bad = int(row[np.argmin(size)])
        raise HostlinkError(f"request stream: row {bad} has size_B = 0")
    host = space == SPACE_HOST
    kind = np.where(host, np.where(write, HOST_WRITE, HOST_READ),
                    np.where(write, DEVICE_WRITE, DEVICE_READ)).astype(np.uint8)
    rate = link_rate_Bpns(system)
    fmt = tlp_format(system)
    ser_up = np.zeros(n)
    ser_down = np.zeros(n)
    need_tags = np.zeros(n, dtype=np.int64)
    need_hdr = np.zeros(n, dtype=np.int64)
    need_data = np.zeros(n, dtype=np.int64)
    wire = {"up": 0.0, "down": 0.0}
    rd = np.flatnonzero(kind == HOST_READ)
    if len(rd):
        # TLPs depend only on the offset in the 4 KiB page and the size:
        # packetise each distinct pair once
        key, inv = _page_keys(addr[rd], size[rd])
        p = packetize_reads(key >> 20, key & 0xFFFFF, fmt)
        ser_up[rd] = (p.up_wire_B / rate)[inv]
        ser_down[rd] = (p.down_wire_B / rate)[inv]
        need_tags[rd] = p.n_mrd[inv]
        need_hdr[rd] = p.n_cpld[inv]
        need_data[rd] = p.cpl_credit_B[inv]
        counts = np.bincount(inv, minlength=len(key))
        wire["up"] += float(np.dot(counts, p.up_wire_B))
        wire["down"] += float(np.dot(counts, p.down_wire_B))
    wr = np.flatnonzero(kind == HOST_WRITE)
    if len(wr):
        key, inv = _page_keys(addr[wr], size[wr])
        p = packetize_writes(key >> 20, key & 0xFFFFF, fmt)
        ser_up[wr] = (p.up_wire_B / rate)[inv]
        wire["up"] += float(np.dot(np.bincount(inv, minlength=len(key)), p.up_wire_B))
    dram_B = np.zeros(n, dtype=np.int64)
    if host.any():
        burst = system.host.burst_B
        dram_B[host] = dram_model.bursts_touched(addr[host], size[host], burst) * burst
    dev = ~host
    dev_ns = np.where(dev, size / system.gpu.device_bw_GBps, 0.0)
    return {"kind": kind, "size_B": size, "ser_up_ns": ser_up, "ser_down_ns": ser_down,
            "dram_ns": dram_B / dram_rate_Bpns(system), "dev_ns": dev_ns,
            "need_tags": need_tags, "need_hdr": need_hdr, "need_data_B": need_data,
            "dram_B": dram_B, "wire": wire}


def translation_flags(stream: RequestStream, system: SystemConfig, row: np.ndarray,
                      arrival: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Per request (``row`` order): GPU TLB miss, and the IOTLB miss latency in ns.

    ``arrival`` orders the host reads as they reach the TLB (a sort key per
    request, e.g. launch and issue time from a first simulation); without it
    the order is :func:`hostlink.model.translation.issue_order`'s round robin."""
    from hostlink.model import translation as xl
    n = len(row)
    cfg = system.translation
    walk = np.zeros(n, dtype=bool)
    iommu_ns = np.zeros(n)
    if not cfg.enabled or n == 0:
        return walk, iommu_ns
    reads = np.flatnonzero((stream.space[row] == SPACE_HOST) & ~stream.is_write[row])
    if len(reads) == 0:
        return walk, iommu_ns
    if arrival is None:
        sub = stream.select(row[reads])
        resident = system.gpu.sm_count * system.gpu.max_warps_per_sm
        seq = reads[xl.issue_order(sub, resident)]
    else:
        seq = reads[np.lexsort((reads, arrival[reads]))]
    addr = stream.addr[row[seq]]
    walk[seq] = xl.translation_misses(addr // np.uint64(cfg.page_B), cfg)
    if cfg.iommu:
        io = xl.lru_misses(addr // np.uint64(cfg.iommu_page_B), cfg.iommu_iotlb_entries)
        iommu_ns[seq] = np.where(io, cfg.iommu_miss_lat_ns, 0.0)
    return walk, iommu_ns


def pages_fit(stream: RequestStream, system: SystemConfig) -> bool:
    """True when the host pages the stream reads fit in the TLB (and IOTLB): then only
    first touches miss, whatever the order, and one simulation pass suffices."""
    cfg = system.translation
    if not cfg.enabled:
        return True
    sel = (stream.space == SPACE_HOST) & ~stream.is_write
    addr = stream.addr[sel]
    if len(np.unique(addr // np.uint64(cfg.page_B))) > cfg.tlb_entries:
        return False
    if cfg.iommu and len(np.unique(addr // np.uint64(cfg.iommu_page_B))) > cfg.iommu_iotlb_entries:
        return False
    return True


def build_inputs(stream: RequestStream, system: SystemConfig, *, translation: bool | None = None,
                 arrival: np.ndarray | None = None, lay: dict | None = None,
                 costs: dict | None = None) -> DesInputs:
    """The engines' inputs for ``stream`` on ``system``.

    ``translation``: model TLB/IOTLB misses (default: ``system.translation.enabled``);
    ``arrival``: the order reads reach the TLB (see :func:`translation_flags`);
    ``lay`` and ``costs``: results of :func:`layout` and :func:`request_costs`
    to reuse between passes."""
    lay = layout(stream, system) if lay is None else lay
    row = lay["row"]
    costs = request_costs(stream, system, row) if costs is None else costs
    link = system.link
    tags = tag_limit(system)
    hdrs = link.cpl_buffer_hdrs or UNLIMITED
    data = link.cpl_buffer_B or UNLIMITED
    for name, limit, need in (("link.tags / gpu.max_outstanding_host_reads", tags, "need_tags"),
                              ("link.cpl_buffer_hdrs", hdrs, "need_hdr"),
                              ("link.cpl_buffer_B", data, "need_data_B")):
        if len(row) and costs[need].max() > limit:
            raise ConfigError(f"{name} = {limit} is less than one read needs "
                              f"({int(costs[need].max())}): no read could ever be issued")
    use_xl = system.translation.enabled if translation is None else translation
    if use_xl:
        walk, iommu_ns = translation_flags(stream, system, row, arrival)
    else:
        walk, iommu_ns = np.zeros(len(row), dtype=bool), np.zeros(len(row))
    cfg = system.translation
    return DesInputs(
        row=row, inst_ptr=lay["inst_ptr"], warp_ptr=lay["warp_ptr"], cta_ptr=lay["cta_ptr"],
        launch_ptr=lay["launch_ptr"], launch_slots=lay["launch_slots"],
        kind=costs["kind"], size_B=costs["size_B"], ser_up_ns=costs["ser_up_ns"],
        ser_down_ns=costs["ser_down_ns"], dram_ns=costs["dram_ns"], dev_ns=costs["dev_ns"],
        need_tags=costs["need_tags"], need_hdr=costs["need_hdr"],
        need_data_B=costs["need_data_B"], walk=walk, iommu_ns=iommu_ns,
        tags=tags, cpl_hdrs=int(hdrs), cpl_data_B=int(data), rtt_ns=float(link.rtt_ns),
        device_lat_ns=float(system.gpu.device_lat_ns),
        loads_in_flight=int(system.gpu.loads_in_flight_per_warp),
        walkers=int(cfg.walkers), walk_ns=float(cfg.miss_lat_ns),
        launch_overhead_ns=system.launch_overhead_us * 1e3,
        level_sync_ns=system.level_sync_us * 1e3,
        host_path_ns=float(system.gpu.host_path_ns),
        sm_count=int(system.gpu.sm_count),
        issue_gap_ns=issue_gaps_ns(system),
        sm_request_ns=float(system.gpu.sm_request_ns),
        leads=line_leads(stream, row, lay["inst_ptr"]),
        issue_lines=None if stream.lines is None else stream.lines[row].astype(np.int64),
        inst_waits=(None if stream.waits is None
                    else stream.waits[row][lay["inst_ptr"][:-1]].astype(np.bool_)),
        extra={"dram_B": costs["dram_B"], "wire_B": costs["wire"]})
