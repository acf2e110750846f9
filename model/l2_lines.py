"""Which device reads the GPU's L2 serves, for the SM's issue stage and the latency.

An SM lets a device read line out about four times as fast when the L2 holds
it as when DRAM serves it: on an H100 with 32 or 64 warps per SM, random 8 B
reads per lane went out at 1.0 ns a line over 8 MiB (the L2 holds it) and
4.16 ns over 4 GiB (DRAM serves it; validation/experiments/scatter_l2/runs/h100).
And a load the L2 misses waits DRAM's latency, not the L2's (a device pointer
chase: ``gpu.dram_lat_ns`` against ``gpu.device_lat_ns``, calibrate step
device_latency). The request-stream models charge a line ``gpu.sm_l2_request_ns``
where the L2 serves it and ``gpu.sm_request_ns`` where it does not, and a read
that misses ``gpu.dram_lat_ns``. This module tells them apart by replaying the
L2 over a stream's device reads; the replay runs where ``gpu.sm_l2_request_ns``
is set.

Model: the shared L2 of :mod:`hostlink.traces.cache` (``gpu.l2_B``, 128 B lines
of four 32 B sectors, its ways, LRU, XOR-folded set index), kept across
launches. A stream's requests are the ones its L1 let pass (the coalescer
replays the L1), so each of them asks the L2. A line (a request that opens one,
:func:`hostlink.model.des.inputs.line_leads`, and the requests that follow it)
is the L2's when every sector of every request of it hits; a request misses
where any of its sectors does.

Assumptions:
- the reads reach the L2 in the stream's program order (launch, warp,
  instruction), not in a timed interleaving of the warps, as in the
  coalescer's caches;
- host reads do not use the L2 (a GPU's L2 keeps no zero-copy lines: random
  4 B loads over 1 MiB of host memory ran at the link's rate on an H200,
  validation/experiments/first_run; :func:`hostlink.traces.cache.host_read_cache`);
- stores and atomics neither look the L2 up nor fill it, and their lines keep
  their own turns and latencies;
- in a stream whose requests stand for lines (its ``lines`` column: the visit
  skeleton of a twin that carries no device arrays, above 2^24 edges or 2^26
  vertex tests, :mod:`hostlink.traces.emulator.visits`), the device requests
  stand for the dependent steps of a walk, not for lines the L2 could hold: they
  are not replayed and keep ``gpu.sm_request_ns`` a line and the L2's latency,
  which fit kron21's and urand21's BFS in device memory
  (validation/experiments/traversal_l1/README.md). Its host requests are the
  edge list's own lines: where the arrays live in device memory they are
  replayed, alone in the L2. A BFS reads each vertex's list once, so they miss
  where no neighbour's read brought their line in.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from hostlink.model.geometry import SECTOR_SHIFT
from hostlink.model.workload import SPACE_HOST, RequestStream
from hostlink.traces.cache import SET_FUNCTIONS, STAMP, WAY_FIELDS, CacheConfig, lookup_fill


def l2_config(gpu) -> CacheConfig:
    """The L2 alone of ``gpu`` (a GpuConfig), as the coalescer's caches lay it out."""
    return CacheConfig.from_gpu(gpu, l1=False, l2=True)


class L2State:
    """The L2's ways (tag, last use, sector states: :mod:`hostlink.traces.cache`'s
    layout) and its clock, carried from one part of a run to the next."""

    def __init__(self, config: CacheConfig):
        self.config = config
        self.set_fn = SET_FUNCTIONS.index(config.set_index)
        self.lines = np.full((1, max(config.l2_sets, 1), config.l2_ways, WAY_FIELDS), -1,
                             dtype=np.int64)
        self.lines[..., STAMP] = 0
        self.clock = np.zeros(1, dtype=np.int64)

    def copy(self) -> "L2State":
        other = L2State.__new__(L2State)
        other.config, other.set_fn = self.config, self.set_fn
        other.lines, other.clock = self.lines.copy(), self.clock.copy()
        return other


@dataclass(frozen=True)
class L2Replay:
    """What the L2 replay found, per request in the order it was given (bool)."""
    lines: np.ndarray    # the request opens a line the L2 serves (all its sectors hit)
    misses: np.ndarray   # the request is a device read some sector of which DRAM serves


def replays(stream: RequestStream, as_device: bool = False) -> bool:
    """Whether the L2 is replayed over some of ``stream``'s requests: over one whose
    requests stand for lines (the stream's ``lines``; see the module docstring) only
    where its host arrays live in device memory (``as_device``, or its ``stand_in``
    set)."""
    return stream.lines is None or as_device or stream.stand_in is not None


def stand_ins(stream: RequestStream) -> np.ndarray | None:
    """Per request, whether it stands for a walk's dependent step (see the module
    docstring); None where none does."""
    if stream.lines is None:
        return None
    if stream.stand_in is not None:
        return np.asarray(stream.stand_in, dtype=np.bool_)
    return stream.space != SPACE_HOST


def l2_served(stream: RequestStream, row: np.ndarray, leads: np.ndarray,
              config: CacheConfig, as_device: bool = False,
              state: L2State | None = None) -> L2Replay:
    """The L2's part in the device reads of ``stream``, in ``row`` order.

    ``leads``: per request in ``row`` order, whether it opens a line; ``config``:
    the L2 (:func:`l2_config`); ``as_device``: the host arrays live in device memory
    too; ``state``: the L2 as the run's earlier launches left it, which the replay
    continues and updates (None: an empty L2). Only the requests that open a line
    can be among the ``lines``; the ``misses`` are device reads."""
    n = len(row)
    out = np.zeros(n, dtype=np.bool_)
    missed = np.zeros(n, dtype=np.bool_)
    if n == 0 or config.l2_size_B == 0 or not replays(stream, as_device):
        return L2Replay(out, missed)
    state = L2State(config) if state is None else state
    atomic = (np.zeros(0, dtype=np.bool_) if stream.atomic is None
              else np.asarray(stream.atomic, dtype=np.bool_))
    skip = stand_ins(stream)
    _replay(np.asarray(row, dtype=np.int64), np.asarray(leads, dtype=np.bool_),
            np.asarray(stream.addr, dtype=np.uint64), stream.size_B, stream.space,
            np.asarray(stream.is_write, dtype=np.bool_), atomic,
            np.zeros(0, dtype=np.bool_) if skip is None else skip,
            -1 if as_device else SPACE_HOST, state.lines, state.clock, state.set_fn, out,
            missed)
    return L2Replay(out, missed)


@njit(cache=True)
def _replay(row, leads, addr, size_B, space, write, atomic, stand_in, host_space, l2, clock,
            set_fn, out, missed):
    has_atomic = atomic.shape[0] > 0
    has_stand_in = stand_in.shape[0] > 0
    lead = 0
    for i in range(row.shape[0]):
        r = row[i]
        takes = space[r] != host_space and not write[r] and not (has_atomic and atomic[r]) \
            and not (has_stand_in and stand_in[r])
        if leads[i]:
            lead = i
            out[i] = takes
        elif not takes:
            out[lead] = False
        if not takes:
            continue
        first = np.int64(addr[r] >> np.uint64(SECTOR_SHIFT))
        last = np.int64((addr[r] + np.uint64(size_B[r] - 1)) >> np.uint64(SECTOR_SHIFT))
        for s in range(first, last + 1):
            if lookup_fill(l2, clock, 0, s, set_fn) < 0:
                out[lead] = False
                missed[i] = True
