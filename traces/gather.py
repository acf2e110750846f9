"""GNN feature gathering: the row ids, the gather kernel's warp loads and its requests.

A minibatch of a graph neural network gathers the feature rows of its sampled
nodes from a table of ``table_rows`` rows of ``row_B`` bytes (Min's dissertation,
2022, ch. 3, "Framework Integration"). This module emulates the gather kernel of
``gpu_kernels/micro/gather.cu`` and hands its warp instructions to the coalescer
(:func:`hostlink.traces.coalescer.iter_coalesced`), chunk by chunk.

The kernel: warp ``w`` of ``W`` copies rows ``w, w + W, ...`` of the id list;
each lane moves ``lane_B`` bytes (4, 8 or 16) per instruction, so one warp
instruction covers ``32 * lane_B`` bytes. A warp loads the row's id (8 B, device
memory), then issues the row's host loads :data:`UNROLL` at a time, each group
followed by its stores into the output buffer in device memory. The sample a
prediction times takes each such group as one instruction (:func:`merge_unrolled`).

- ``naive``: the warp starts at the row's first byte. A row that does not start
  on a 128 B line (``row_B`` not a multiple of 128) makes every instruction
  straddle two lines: two PCIe requests where one would do.
- ``aligned``: the warp starts at the 128 B line at or below the row's start and
  masks the lanes outside the row, the "circular shift" of the dissertation's
  Listing 3.2 (ch. 3.3.2): for 480 B rows the second row's four naive
  instructions send 8 requests, the aligned ones 5 (its Figure 3.5 example).

Row ids:

- ``uniform``: ``splitmix64(seed << 32 | i) mod table_rows`` for the i-th row,
  the hash :func:`hostlink.traces.graphs.generators.splitmix64` (the CUDA program
  computes the same);
- ``sampled``: GraphSAGE-style neighbour sampling (Hamilton et al., NeurIPS
  2017; the fan-outs 10,25 of DGL's example): minibatches of ``batch`` seed
  vertices drawn uniformly among those with an edge; each layer draws
  ``fanout`` neighbours of every frontier vertex (with replacement; DGL draws
  without replacement where the degree allows, an approximation here); a
  minibatch gathers its distinct vertices in order of first appearance, so
  ids repeat across minibatches as the graph's skew makes them. Vertex ``v``'s
  row is ``v * (table_rows // V)``: a graph of V vertices spreads over the
  whole table.

Assumptions: the table starts on a 2 MiB boundary (an allocation that large is
page aligned); ``row_B`` is a multiple of 4 B and of ``lane_B`` (a lane's
vector load must be aligned); the grid is one CTA of ``warps_per_cta`` warps
per ``max_warps_per_sm / warps_per_cta`` slots of every SM (full occupancy).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import numpy as np

from hostlink.model.errors import HostlinkError
from hostlink.model.geometry import LINE_B
from hostlink.model.workload import RequestStream
from hostlink.traces.schema import (LOCATION_DEVICE, LOCATION_HOST, OP_LOAD, OP_STORE,
                                    SPACE_GLOBAL, WARP_SIZE, InstTable, KernelLaunch, Region)

VARIANTS = ("naive", "aligned")
LANE_WIDTHS_B = (4, 8, 16)
ID_KINDS = ("uniform", "sampled")
#: where the emulated table and output live (2 MiB aligned, far apart)
TABLE_BASE = 1 << 40
OUT_BASE = 1 << 46
IDS_BASE = 1 << 47
THREADS_PER_CTA = 256
#: rows of the id list one emulated chunk holds, at most
CHUNK_ROWS = 1 << 14
#: loads a warp of the gather kernel issues before it stores them (gather.cu's kUnroll)
UNROLL = 4


class GatherError(HostlinkError):
    """A gather's parameters do not make a kernel run."""


@dataclass(frozen=True)
class GatherSpec:
    """One gather: ``rows`` rows of ``row_B`` bytes from a table of ``table_rows`` rows."""
    row_B: int
    table_rows: int
    rows: int
    variant: str = "aligned"
    lane_B: int = 4

    def __post_init__(self) -> None:
        if self.variant not in VARIANTS:
            raise GatherError(f"gather variant must be one of {', '.join(VARIANTS)}, "
                              f"not '{self.variant}'")
        if self.lane_B not in LANE_WIDTHS_B:
            raise GatherError(f"gather lane_B must be 4, 8 or 16, not {self.lane_B}")
        if self.row_B < 4 or self.row_B % 4:
            raise GatherError(f"gather row_B must be a positive multiple of 4 B, not {self.row_B}")
        if self.row_B % self.lane_B:
            raise GatherError(f"gather row_B {self.row_B} is not a multiple of lane_B "
                              f"{self.lane_B} (a lane's vector load must be aligned)")
        if self.table_rows < 1 or self.rows < 1:
            raise GatherError("gather table_rows and rows must be >= 1")

    @property
    def table_B(self) -> int:
        return self.row_B * self.table_rows

    @property
    def block_B(self) -> int:
        """Bytes one warp instruction covers."""
        return WARP_SIZE * self.lane_B

    @property
    def gathered_B(self) -> int:
        return self.row_B * self.rows

    def insts_per_row(self) -> np.ndarray:
        """Warp load instructions of a row, by the row's byte offset within its 128 B line
        (index: ``(row * row_B) % 128 // 4``)."""
        lead = np.arange(0, LINE_B, 4) if self.variant == "aligned" else np.zeros(LINE_B // 4)
        return -(-(lead + self.row_B) // self.block_B)


def uniform_ids(n: int, table_rows: int, seed: int = 1, start: int = 0) -> np.ndarray:
    """Rows ``start .. start + n - 1`` of the uniform id list (see the module notes)."""
    from hostlink.traces.graphs.generators import splitmix64
    i = np.arange(start, start + n, dtype=np.uint64)
    return (splitmix64((np.uint64(seed) << np.uint64(32)) | i) % np.uint64(table_rows)).astype(
        np.int64)


def sampled_vertices(csr, n: int, fanouts: tuple[int, ...] = (10, 25), batch: int = 1024,
                     seed: int = 1) -> np.ndarray:
    """The first ``n`` vertex ids the minibatches of neighbour sampling gather."""
    if not fanouts or any(f < 1 for f in fanouts) or batch < 1:
        raise GatherError("sampling needs fan-outs >= 1 and a batch >= 1")
    offsets = csr.offsets.astype(np.int64)
    deg = np.diff(offsets)
    candidates = np.flatnonzero(deg > 0)
    if not len(candidates):
        raise GatherError(f"graph '{csr.name}' has no vertex with an edge to sample from")
    rng = np.random.default_rng([int(seed), 0x6A7])
    out, have = [], 0
    while have < n:
        frontier = rng.choice(candidates, size=min(batch, len(candidates)), replace=False)
        layers = [frontier]
        for f in fanouts:
            d = deg[frontier]
            live = frontier[d > 0]
            pick = (rng.random((len(live), f)) * deg[live][:, None]).astype(np.int64)
            frontier = csr.dst[(offsets[live][:, None] + pick).ravel()].astype(np.int64)
            layers.append(frontier)
        allv = np.concatenate(layers)
        _, first = np.unique(allv, return_index=True)
        nodes = allv[np.sort(first)]
        out.append(nodes)
        have += len(nodes)
    return np.concatenate(out)[:n]


def vertex_rows(vertices: np.ndarray, num_vertices: int, table_rows: int) -> np.ndarray:
    """Rows of the vertices' features: ``v * (table_rows // num_vertices)``."""
    if num_vertices > table_rows:
        raise GatherError(f"the graph's {num_vertices} vertices do not fit a table of "
                          f"{table_rows} rows")
    return np.asarray(vertices, dtype=np.int64) * (table_rows // num_vertices)


def grid_of(gpu) -> tuple[int, int]:
    """(CTAs, warps per CTA) of the gather kernel on ``gpu``: full occupancy."""
    wpc = THREADS_PER_CTA // WARP_SIZE
    return gpu.sm_count * max(1, gpu.max_warps_per_sm // wpc), wpc


def launch_of(spec: GatherSpec, gpu) -> KernelLaunch:
    ctas, _ = grid_of(gpu)
    return KernelLaunch(name=f"gather_{spec.variant}_{spec.lane_B}B", grid=(ctas, 1, 1),
                        block=(THREADS_PER_CTA, 1, 1))


def regions_of(spec: GatherSpec, where: str = LOCATION_HOST) -> list[Region]:
    """The table (in ``where``), the output buffer and the id list (device)."""
    return [Region("table", TABLE_BASE, spec.table_B, where),
            Region("out", OUT_BASE, spec.gathered_B, LOCATION_DEVICE),
            Region("ids", IDS_BASE, 8 * spec.rows, LOCATION_DEVICE)]


def _row_insts(spec: GatherSpec, ids: np.ndarray, first: int, warps: int,
               wpc: int) -> InstTable:
    """The warp instructions of id-list rows ``first .. first + len(ids) - 1`` in the
    kernel's program order: per row, the load of its id (8 B, device memory), then in
    groups of :data:`UNROLL` its host loads followed by their stores."""
    i = np.arange(first, first + len(ids), dtype=np.int64)
    src = TABLE_BASE + ids.astype(np.int64) * spec.row_B
    dst = OUT_BASE + i * spec.row_B
    start = (src & ~np.int64(LINE_B - 1)) if spec.variant == "aligned" else src
    n_inst = -(-(src + spec.row_B - start) // spec.block_B)
    row_of = np.repeat(np.arange(len(ids)), n_inst)
    k = np.arange(len(row_of)) - np.repeat(np.cumsum(n_inst) - n_inst, n_inst)
    lane = np.arange(WARP_SIZE, dtype=np.int64) * spec.lane_B
    a = start[row_of, None] + k[:, None] * spec.block_B + lane[None, :]
    inside = (a >= src[row_of, None]) & (a < src[row_of, None] + spec.row_B)
    bits = np.left_shift(np.uint64(1), np.arange(WARP_SIZE, dtype=np.uint64))
    mask = (inside.astype(np.uint64) * bits).sum(axis=1).astype(np.uint32)
    d = a - src[row_of, None] + dst[row_of, None]
    n, r = len(row_of), len(ids)
    # rows: id loads (r), host loads (n), stores (n); program order by these keys
    addrs = np.zeros((r + 2 * n, WARP_SIZE), dtype=np.uint64)
    addrs[:r] = (IDS_BASE + i * 8).astype(np.uint64)[:, None]
    addrs[r:r + n] = np.where(inside, a, 0).astype(np.uint64)
    addrs[r + n:] = np.where(inside, d, 0).astype(np.uint64)
    row_all = np.concatenate([np.arange(r), row_of, row_of])
    group = np.concatenate([np.full(r, -1), k // UNROLL, k // UNROLL])
    part = np.concatenate([np.zeros(r), np.zeros(n), np.ones(n)])
    order = np.lexsort((np.concatenate([np.zeros(r), k, k]), part, group, row_all))
    op = np.concatenate([np.full(r + n, OP_LOAD), np.full(n, OP_STORE)]).astype(np.uint8)[order]
    width = np.concatenate([np.full(r, 8), np.full(2 * n, spec.lane_B)])[order]
    masks = np.concatenate([np.full(r, 0xFFFFFFFF, dtype=np.uint32), mask, mask])[order]
    gw = i[row_all[order]] % warps
    pc = np.concatenate([np.full(r, 0x10), np.full(n, 0x20), np.full(n, 0x30)])[order]
    opcode = np.concatenate([np.full(r, 0), np.full(n, 0), np.full(n, 1)])[order]
    return InstTable(launch=np.zeros(len(order), np.uint32), cta=gw // wpc, warp=gw % wpc,
                     pc=pc, opcode=opcode, op=op, space=np.full(len(order), SPACE_GLOBAL),
                     width_B=width, mask=masks, addrs=addrs[order])


def iter_insts(spec: GatherSpec, ids_of, gpu, rows: int | None = None) -> Iterator[InstTable]:
    """The kernel's warp instructions in chunks of whole rounds (every warp's next row), so
    each warp's instructions stay in program order across chunks. ``ids_of(start, n)``
    gives rows ``start .. start + n - 1`` of the id list; ``rows``: stop after so many."""
    ctas, wpc = grid_of(gpu)
    warps = ctas * wpc
    total = spec.rows if rows is None else min(rows, spec.rows)
    step = max(warps, (CHUNK_ROWS // warps) * warps)
    for first in range(0, total, step):
        n = min(step, total - first)
        ids = np.asarray(ids_of(first, n), dtype=np.int64)
        if len(ids) != n or (n and (ids.min() < 0 or ids.max() >= spec.table_rows)):
            raise GatherError(f"gather ids {first}..{first + n - 1}: outside the table of "
                              f"{spec.table_rows} rows")
        yield _row_insts(spec, ids, first, warps, wpc)


def iter_requests(spec: GatherSpec, ids_of, gpu, *, rows: int | None = None,
                  include_device: bool = True, cache=None, cache_host: bool = False,
                  where: str = LOCATION_HOST) -> Iterator[RequestStream]:
    """The kernel's requests chunk by chunk, from the coalescer (bounded memory)."""
    from hostlink.traces.coalescer import iter_coalesced
    for chunk in iter_coalesced(iter_insts(spec, ids_of, gpu, rows), regions_of(spec, where),
                                launches=[launch_of(spec, gpu)], cache=cache,
                                cache_host=cache_host, include_device=include_device):
        yield chunk.requests


def stream_of(spec: GatherSpec, ids_of, gpu, *, rows: int | None = None, **kw) -> RequestStream:
    """The requests of the first ``rows`` rows (all by default) as one stream, from
    :func:`hostlink.traces.coalescer.coalesce` (which also counts the warps' issue)."""
    from hostlink.traces.coalescer import coalesce
    kw.setdefault("include_device", True)
    where = kw.pop("where", LOCATION_HOST)
    return coalesce(iter_insts(spec, ids_of, gpu, rows), regions_of(spec, where),
                    launches=[launch_of(spec, gpu)], **kw)


def host_request_counts(spec: GatherSpec, ids_of, gpu, rows: int | None = None) -> dict[int, int]:
    """Host read requests by size over the whole run (no caches), streamed."""
    counts: dict[int, int] = {}
    for part in iter_requests(spec, ids_of, gpu, rows=rows, include_device=False):
        for size, c in part.size_histogram().items():
            counts[size] = counts.get(size, 0) + c
    return counts


def ids_function(kind: str, spec: GatherSpec, *, seed: int = 1, csr=None,
                 fanouts: tuple[int, ...] = (10, 25), batch: int = 1024):
    """``ids_of(start, n)`` for the id kind (sampled ids need ``csr``; drawn once)."""
    if kind == "uniform":
        return lambda start, n: uniform_ids(n, spec.table_rows, seed, start)
    if kind != "sampled":
        raise GatherError(f"gather ids must be one of {', '.join(ID_KINDS)}, not '{kind}'")
    if csr is None:
        raise GatherError("sampled gather ids need a graph")
    rows = vertex_rows(sampled_vertices(csr, spec.rows, tuple(fanouts), batch, seed),
                       csr.num_vertices, spec.table_rows)
    return lambda start, n: rows[start:start + n]



def table_pages(spec: GatherSpec, ids_of, page_B: int, rows: int | None = None) -> int:
    """Distinct ``page_B`` pages of the table that the first ``rows`` rows touch, streamed."""
    return table_page_counts(spec, ids_of, (page_B,), rows)[0]


def table_page_counts(spec: GatherSpec, ids_of, pages_B: tuple[int, ...],
                      rows: int | None = None) -> tuple[int, ...]:
    """:func:`table_pages` for each of ``pages_B``, in one pass over the row ids."""
    seen = [np.zeros(-(-(TABLE_BASE % page_B + spec.table_B) // page_B), dtype=np.bool_)
            for page_B in pages_B]
    total = spec.rows if rows is None else min(rows, spec.rows)
    for first in range(0, total, 1 << 20):
        ids = np.asarray(ids_of(first, min(1 << 20, total - first)), dtype=np.int64)
        for page_B, marks in zip(pages_B, seen):
            base = TABLE_BASE % page_B
            lo = (base + ids * spec.row_B) // page_B
            hi = (base + ids * spec.row_B + spec.row_B - 1) // page_B
            marks[lo] = True
            marks[hi] = True
            for extra in range(1, int((hi - lo).max(initial=0))):
                inner = lo + extra
                marks[inner[inner < hi]] = True
    return tuple(int(marks.sum()) for marks in seen)


def merge_unrolled(stream: RequestStream) -> RequestStream:
    """The stream with each group of a warp's host loads issued back to back (the
    :data:`UNROLL` loads before their stores) as one instruction: the convention of the
    microbenchmark twins (:mod:`hostlink.validation.twin_micro`: loads a warp issues
    before it uses them are one instruction that completes with its last load, and the
    warp keeps one such instruction in flight). Requests of consecutive host-read
    instructions of a warp, with no other request between them, are one group."""
    from hostlink.model.workload import OPTIONAL_COLUMNS, REQUEST_DTYPES, SPACE_HOST
    if not len(stream):
        return stream
    read = (stream.space == SPACE_HOST) & ~stream.is_write
    same_warp = np.r_[False, (stream.warp[1:] == stream.warp[:-1])
                      & (stream.launch[1:] == stream.launch[:-1])]
    same_inst = np.r_[False, stream.inst[1:] == stream.inst[:-1]]
    both_read = np.r_[False, read[1:] & read[:-1]]
    new = np.cumsum(~(same_warp & (same_inst | both_read)))
    first = np.flatnonzero(~same_warp)              # each warp's first request
    base = np.repeat(new[first], np.diff(np.r_[first, len(new)]))
    cols = {k: getattr(stream, k) for k in REQUEST_DTYPES if k != "inst"}
    optional = {k: getattr(stream, k) for k in OPTIONAL_COLUMNS}
    return RequestStream(**cols, inst=new - base, launches=stream.launches, **optional)


def gather_workload(spec: GatherSpec, ids: str, gpu, *, seed: int = 1, csr=None,
                    fanouts: tuple[int, ...] = (10, 25), batch: int = 1024,
                    sample_rounds: int = 4, exact_counts: bool = True, page_B: int = 4096,
                    host_threads: int = 16, l2_flushed: bool = False):
    """The :class:`~hostlink.model.workload.Gather` of ``spec`` on ``gpu``: the requests of
    its first ``sample_rounds`` rows per warp (through the GPU's caches as it caches host
    reads), the whole run's request counts (``exact_counts``: streamed over every row,
    no caches), the ``page_B`` pages and page-table spans it touches; ``l2_flushed``:
    the run starts with the L2 flushed (the gather program's timed kernels)."""
    from hostlink.model.translation import PAGE_TABLE_SPAN_B
    from hostlink.model.predict import coalesce_defaults
    from hostlink.model.workload import Gather
    ids_of = ids_function(ids, spec, seed=seed, csr=csr, fanouts=fanouts, batch=batch)
    ctas, wpc = grid_of(gpu)
    sample_rows = min(spec.rows, max(1, sample_rounds) * ctas * wpc)
    opts = coalesce_defaults(gpu)
    stream = merge_unrolled(stream_of(spec, ids_of, gpu, rows=sample_rows, **opts))
    counts = host_request_counts(spec, ids_of, gpu) if exact_counts else {}
    pages, spans = table_page_counts(spec, ids_of, (page_B, PAGE_TABLE_SPAN_B))
    return Gather(stream=stream, rows=spec.rows, row_B=spec.row_B, table_B=spec.table_B,
                  sample_rows=sample_rows, variant=spec.variant, lane_B=spec.lane_B,
                  requests_by_size_B=tuple(sorted(counts.items())),
                  pages=pages, sample_pages=table_pages(spec, ids_of, page_B, sample_rows),
                  loads_in_flight=1, host_threads=host_threads, table_spans=spans,
                  l2_flushed=l2_flushed)


def warp_trace(spec: GatherSpec, ids_of, gpu, where: str = LOCATION_HOST):
    """The gather kernel's whole trace as a :class:`~hostlink.traces.schema.WarpTrace`
    whose chunks are emulated as they are read (one chunk in memory at a time)."""
    from hostlink.traces.schema import WarpTrace

    class _Chunks:
        def __iter__(self):
            return iter_insts(spec, ids_of, gpu)

    return WarpTrace(launches=[launch_of(spec, gpu)], opcodes=["LDG.E", "STG.E"],
                     regions=regions_of(spec, where), chunks=_Chunks())
