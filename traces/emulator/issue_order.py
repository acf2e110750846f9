"""The walk kernels' issue order at a load-ahead, and the dependences between their loads.

gpu_kernels/traversal/walk.cuh reads a list in groups of ``load_ahead`` trips:
it issues the host loads of every trip of a group (``edges[i]``, and
``weights[i]`` for SSSP) before it visits the first neighbour, then visits
them one trip after another (each visit reads and updates the neighbour's
device state), and only then issues the next group. The emulator emits a
trace trip by trip (:mod:`hostlink.traces.emulator.emit`: a trip's host loads
and then its visit's device accesses), which is the kernel's order at
load-ahead 1; :func:`issue_order` reorders a device-inclusive trace into the
order at any load-ahead. Host loads do not depend on the load-ahead, so
host-only traces need no reordering.

:func:`walk_waits` marks what a warp must wait for before it issues an
instruction of such a stream (:attr:`hostlink.model.workload.RequestStream.waits`):

- a device access waits for every earlier access of its warp: a visit uses
  the neighbour id its trip loaded and the value it read (the update stores
  under a test of the loaded value), and the next visit's load follows the
  last one's store in program order; the prologue's loads (the vertex's
  active test, then its offsets) depend on each other in the same way;
- a host load that follows a device access waits too: the next group is
  issued after the visits of the last one, and a vertex's first trip after
  the offsets that bound it;
- the host loads of one group do not wait for each other: the warp keeps up
  to ``gpu.loads_in_flight_per_warp`` of them in flight.

Assumptions: a visit's device load waits for every load of its group, not only
its own trip's (the group's host loads were issued back to back and return
close together); a store completes for its warp once issued (the request-stream
models give it no latency), so what follows a store waits only for the loads
before it. A stream without device accesses (a twin that carries the edge
list alone) has no waits: its groups' boundaries are invisible there.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from hostlink.model.workload import SPACE_DEVICE, RequestStream
from hostlink.traces.emulator.program import Program
from hostlink.traces.schema import InstTable, WarpTrace


def _row_keys(table: InstTable, prog: Program, load_ahead: int) -> tuple[np.ndarray,
                                                                        np.ndarray]:
    """Row order of ``table`` at ``load_ahead``: units keep their order, a unit's
    prologue stays first, and within each group of trips the host loads of every
    trip come before the visits. Returns the order and, per row, whether it starts a
    block (a unit, or a group of trips within one): rows never move across a block's
    start, so a table cut there orders as its parts do."""
    n = len(table)
    pro_pcs = np.array([i.pc for i in prog.prologue], dtype=np.uint64)
    trip_pcs = np.array([i.pc for i in prog.trip], dtype=np.uint64)
    host_j = np.array([i.is_host_array for i in prog.trip], dtype=bool)
    pc = table.pc
    is_pro = np.isin(pc, pro_pcs)
    j = np.searchsorted(trip_pcs, pc)
    known = is_pro | ((j < len(trip_pcs)) & (trip_pcs[np.minimum(j, len(trip_pcs) - 1)] == pc))
    if not known.all():
        bad = int(pc[~known][0])
        raise ValueError(f"issue order: pc {bad:#x} is not an instruction of the kernel")
    j = np.where(is_pro, 0, j)
    new_warp = np.ones(n, dtype=bool)
    new_warp[1:] = (table.launch[1:] != table.launch[:-1]) | (table.cta[1:] != table.cta[:-1]) \
        | (table.warp[1:] != table.warp[:-1])
    # a unit starts at a warp's first row and at a prologue row after a trip row
    new_unit = new_warp
    new_unit[1:] |= is_pro[1:] & ~is_pro[:-1]
    unit = np.cumsum(new_unit) - 1
    new_trip = ~is_pro & (j == 0)
    trips_before = np.cumsum(new_trip)
    unit_first = np.flatnonzero(new_unit)
    base = (trips_before - new_trip)[unit_first]          # trips before each unit's first row
    trip = np.where(is_pro, -1, trips_before - 1 - base[unit])
    group = np.where(is_pro, -1, trip // max(1, load_ahead))
    part = (~is_pro & ~host_j[j]).astype(np.int64)      # 0: prologue or host load, 1: visit
    starts = new_unit | (new_trip & (trip % max(1, load_ahead) == 0))
    return np.lexsort((j, trip, part, group, unit)), starts


def issue_order(trace: WarpTrace, prog: Program, load_ahead: int) -> WarpTrace:
    """``trace`` (emitted trip by trip, with device accesses) in the kernel's order at
    ``load_ahead``. Its chunks are the trace's, cut where a unit or a group of trips
    starts (a group never spans two chunks): the rows held at once are a chunk's and
    the last group's before it, whatever the launch's size."""
    if load_ahead <= 1 or not prog.prologue:
        return trace

    def chunks():
        held = None         # rows of the current launch from its last block's start
        for chunk in trace.iter_chunks():
            if not len(chunk):
                continue
            for lv in np.unique(chunk.launch):
                part = chunk.select(np.flatnonzero(chunk.launch == lv))
                if held is not None and int(held.launch[0]) != int(lv):
                    yield held.select(_row_keys(held, prog, load_ahead)[0])
                    held = None
                piece = part if held is None else InstTable.concat([held, part])
                order, starts = _row_keys(piece, prog, load_ahead)
                cut = int(np.flatnonzero(starts)[-1])
                if cut > 0:
                    # the rows before the cut sort before every row after it
                    yield piece.select(order[:cut])
                    held = piece.select(np.arange(cut, len(piece)))
                else:
                    held = piece
        if held is not None:
            yield held.select(_row_keys(held, prog, load_ahead)[0])

    return WarpTrace(trace.launches, trace.opcodes, trace.regions, _Replay(chunks),
                     trace.memcpys)


class _Replay:
    """A re-iterable chunk source (each iteration reads the trace again)."""

    def __init__(self, make):
        self.make = make

    def __iter__(self):
        return self.make()


@njit(cache=True)
def _walk_waits(la, wa, ia, dev, order, out) -> None:
    """:func:`walk_waits` over the rows taken in ``order`` (None: row order): an
    instruction's rows are consecutive there; it waits when it or the warp's previous
    instruction touches device memory."""
    n = len(la)
    prev_dev = False
    start = 0
    while start < n:
        r0 = start if order is None else order[start]
        stop = start + 1
        inst_dev = dev[r0]
        while stop < n:
            r = stop if order is None else order[stop]
            if la[r] != la[r0] or wa[r] != wa[r0] or ia[r] != ia[r0]:
                break
            inst_dev = inst_dev or dev[r]
            stop += 1
        if start > 0:
            rp = start - 1 if order is None else order[start - 1]
            if la[rp] != la[r0] or wa[rp] != wa[r0]:
                prev_dev = False            # the warp's first instruction
        waits = inst_dev or prev_dev
        for k in range(start, stop):
            out[k if order is None else order[k]] = waits
        prev_dev = inst_dev
        start = stop


def walk_waits(stream: RequestStream) -> np.ndarray:
    """Per request, whether its instruction waits for every earlier instruction of its
    warp (see the module notes); the stream in (launch, warp, inst) order or not."""
    from hostlink.model.des.inputs import program_permutation

    n = len(stream)
    out = np.zeros(n, dtype=bool)
    if n == 0:
        return out
    _walk_waits(stream.launch, stream.warp, stream.inst, stream.space == SPACE_DEVICE,
                program_permutation(stream), out)
    return out
