"""Summary statistics of a trace: instructions, sectors, requests and bytes.

Computed in one streaming pass (one chunk in memory at a time) with the
coalescer (:mod:`hostlink.traces.coalescer`, device sectors included):
- ``warp_insts``: warp instructions, also by operation, by space, and by
  operation and space;
- ``lane_accesses``: active lanes of the global and local memory instructions
  (the ones the coalescer turns into sectors);
- ``sectors``: distinct 32 B sectors touched per such instruction, summed,
  host and device (before any cache);
- ``requests_by_size_B``: host-memory read requests by size in bytes
  (loads and atomics; after the caches when a cache is given);
  ``host_writes_by_size_B`` the same for stores;
- ``useful_B``/``requested_B``: bytes lanes asked for and bytes requested,
  over host reads, and per kind in ``bytes``.

:func:`request_stats` gives the request keys alone for a request stream (a
gem5 packet trace read back: :mod:`hostlink.traces.gem5_trace`).
"""
from __future__ import annotations

import numpy as np

from hostlink.model.workload import SPACE_DEVICE, SPACE_HOST, RequestStream
from hostlink.traces.cache import CacheConfig
from hostlink.traces.coalescer import iter_coalesced, popcount32
from hostlink.traces.schema import (OP_ATOMIC, OP_LOAD, OP_NAMES, OP_STORE, SPACE_GLOBAL,
                                    SPACE_LOCAL, SPACE_NAMES, Region, WarpTrace)


def _add_hist(hist: dict[int, int], sizes: np.ndarray) -> None:
    values, counts = np.unique(sizes, return_counts=True)
    for v, c in zip(values.tolist(), counts.tolist()):
        hist[v] = hist.get(v, 0) + c


def trace_stats(trace: WarpTrace, *, regions: list[Region] | None = None,
                cache: CacheConfig | None = None, cache_host: bool = False) -> dict:
    """The statistics above as a JSON-ready dict (sizes as string keys)."""
    nop, nsp = len(OP_NAMES), len(SPACE_NAMES)
    op_space = np.zeros((nop, nsp), dtype=np.int64)
    lanes = 0
    sectors_host = sectors_device = 0
    hist_read: dict[int, int] = {}
    hist_write: dict[int, int] = {}
    kinds = {k: {"requests": 0, "useful_B": 0, "requested_B": 0}
             for k in ("host_read", "host_write", "device_read", "device_write")}
    for part in iter_coalesced(trace, regions, cache=cache, cache_host=cache_host,
                               include_device=True):
        insts = part.insts
        op_space += np.bincount(insts.op.astype(np.int64) * nsp + insts.space,
                                minlength=nop * nsp)[:nop * nsp].reshape(nop, nsp)
        mem = ((insts.width_B > 0)
               & np.isin(insts.op, (OP_LOAD, OP_STORE, OP_ATOMIC))
               & np.isin(insts.space, (SPACE_GLOBAL, SPACE_LOCAL)))
        lanes += int(popcount32(insts.mask[mem]).sum())
        sectors_host += part.sectors_host
        sectors_device += part.sectors_device
        req = part.requests
        for name, space, write in (("host_read", SPACE_HOST, False),
                                   ("host_write", SPACE_HOST, True),
                                   ("device_read", SPACE_DEVICE, False),
                                   ("device_write", SPACE_DEVICE, True)):
            sel = (req.space == space) & (req.is_write == write)
            k = kinds[name]
            k["requests"] += int(sel.sum())
            k["useful_B"] += int(req.useful_B[sel].sum(dtype=np.int64))
            k["requested_B"] += int(req.size_B[sel].sum(dtype=np.int64))
            if name == "host_read":
                _add_hist(hist_read, req.size_B[sel])
            elif name == "host_write":
                _add_hist(hist_write, req.size_B[sel])
        # Cache hits credit the request that filled the sector; where that request
        # came out in an earlier chunk, the credit arrives here (reads only: stores
        # do not allocate).
        for name, space in (("host_read", SPACE_HOST), ("device_read", SPACE_DEVICE)):
            kinds[name]["useful_B"] += int(part.late_useful_B[part.late_space == space]
                                           .sum(dtype=np.int64))
    by_op = {OP_NAMES[i]: int(op_space[i].sum()) for i in range(nop)}
    by_space = {SPACE_NAMES[j]: int(op_space[:, j].sum()) for j in range(nsp)}
    by_op_space = {OP_NAMES[i]: {SPACE_NAMES[j]: int(op_space[i, j])
                                 for j in range(nsp) if op_space[i, j]}
                   for i in range(nop) if op_space[i].any()}
    hr = kinds["host_read"]
    return {
        "launches": len(trace.launches),
        "warp_insts": int(op_space.sum()),
        "warp_insts_by_op": by_op,
        "warp_insts_by_space": by_space,
        "warp_insts_by_op_space": by_op_space,
        "lane_accesses": lanes,
        "sectors": {"host": sectors_host, "device": sectors_device,
                    "total": sectors_host + sectors_device},
        "requests_by_size_B": {str(k): v for k, v in sorted(hist_read.items())},
        "host_writes_by_size_B": {str(k): v for k, v in sorted(hist_write.items())},
        "host_read_requests": hr["requests"],
        "useful_B": hr["useful_B"],
        "requested_B": hr["requested_B"],
        "efficiency": hr["useful_B"] / hr["requested_B"] if hr["requested_B"] else None,
        "bytes": kinds,
        "cache": None if cache is None else {
            "l1_size_B": cache.l1_size_B, "l2_size_B": cache.l2_size_B,
            "l1_ways": cache.l1_ways, "l2_ways": cache.l2_ways, "sm_count": cache.sm_count,
            "cache_host": cache_host},
    }


def request_stats(stream: RequestStream) -> dict:
    """The request part of :func:`trace_stats` (launches, host request counts by size,
    host bytes) for a stream that holds requests alone, as a gem5 packet trace does."""
    kinds = {}
    for name, write in (("host_read", False), ("host_write", True)):
        sel = (stream.space == SPACE_HOST) & (stream.is_write == write)
        kinds[name] = {"requests": int(sel.sum()),
                       "useful_B": int(stream.useful_B[sel].sum(dtype=np.int64)),
                       "requested_B": int(stream.size_B[sel].sum(dtype=np.int64))}
    hr = kinds["host_read"]
    return {
        "launches": max(len(stream.launches),
                        int(stream.launch.max()) + 1 if len(stream) else 0),
        "requests_by_size_B": {str(k): v for k, v in stream.size_histogram(SPACE_HOST).items()},
        "host_writes_by_size_B": {str(k): v for k, v in
                                  stream.size_histogram(SPACE_HOST, writes=True).items()},
        "host_read_requests": hr["requests"],
        "useful_B": hr["useful_B"],
        "requested_B": hr["requested_B"],
        "efficiency": hr["useful_B"] / hr["requested_B"] if hr["requested_B"] else None,
        "bytes": kinds,
    }


def write_stats(stats: dict, as_json: bool) -> None:
    """Print a trace's statistics to stdout: JSON, or a headline and the table."""
    import json
    import sys
    if as_json:
        sys.stdout.write(json.dumps(stats, indent=2) + "\n")
    else:
        sys.stdout.write(f"{stats['source']} ({stats['format']}, {stats['launches']} launches)\n")
        sys.stdout.write(format_stats(stats) + "\n")


def format_stats(stats: dict) -> str:
    """A readable table of :func:`trace_stats`' result."""
    out = []
    w = 28

    def row(label, value):
        out.append(f"  {label:<{w}} {value:>14}")

    if "warp_insts" in stats:  # request_stats' dicts hold requests alone
        out.append("Warp instructions")
        row("total", f"{stats['warp_insts']:,}")
        for op, spaces in stats["warp_insts_by_op_space"].items():
            for space, n in spaces.items():
                row(f"{op} / {space}", f"{n:,}")
        out.append("Memory (global and local)")
        row("lane accesses", f"{stats['lane_accesses']:,}")
        for k in ("host", "device", "total"):
            row(f"32 B sectors, {k}", f"{stats['sectors'][k]:,}")
    out.append("Host-memory read requests")
    if stats.get("counted"):
        out.append(f"  ({stats['counted']})")
    if stats["requests_by_size_B"]:
        for size, n in stats["requests_by_size_B"].items():
            row(f"{size} B", f"{n:,}")
    else:
        row("(none)", "")
    row("useful bytes", f"{stats['useful_B']:,}")
    row("requested bytes", f"{stats['requested_B']:,}")
    eff = stats["efficiency"]
    row("efficiency", "-" if eff is None else f"{100 * eff:.1f} %")
    if stats["host_writes_by_size_B"]:
        out.append("Host-memory write requests")
        for size, n in stats["host_writes_by_size_B"].items():
            row(f"{size} B", f"{n:,}")
    out.append("Requests by kind")
    for kind, v in stats["bytes"].items():
        row(kind.replace("_", " "), f"{v['requests']:,}")
    return "\n".join(out)
