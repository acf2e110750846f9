"""The instruction issue floor: no launch runs faster than its SMs can issue its warp instructions.

The memory models time a kernel by its requests alone; a kernel with few or
no memory instructions (the FFMA microbenchmarks) would otherwise take 0 s.
This module bounds each launch from below by the time its SMs need to issue
its warp instructions, every kind counted (arithmetic, control, memory):

- an SM has four schedulers (processing blocks), each issuing at most one
  warp instruction per clock: :data:`ISSUE_PER_SM_PER_CLK` = 4 (NVIDIA Tesla
  V100 GPU Architecture whitepaper, 2017, "Volta SM"; NVIDIA A100 Tensor Core
  GPU Architecture whitepaper, 2020, "A100 SM Architecture"; NVIDIA H100
  Tensor Core GPU Architecture whitepaper, 2022, "H100 SM Architecture": each
  SM partitioned into four processing blocks, each with its own warp
  scheduler and a dispatch unit of 32 threads per clock);
- a CTA runs on one SM, so a launch of ``ctas`` CTAs issues on at most
  ``min(ctas, gpu.sm_count)`` SMs;
- one warp issues at most one instruction per clock (it belongs to one
  scheduler).

So a launch of ``W`` warp instructions, the longest warp's ``w``, takes at
least ``max(W / (4 x min(ctas, sm_count)), w)`` clocks at ``gpu.clock_MHz``.
Where a launch's record states that some of its instructions were measured to
stall (``LaunchInfo.stall_sm_clocks``: the vertex tests of a traversal launch,
:mod:`hostlink.traces.scan_cost`), those SM clocks join the first term, spread
over the same SMs.

Tests and walks from host memory. A chunked or balanced traversal launch tests
every vertex of its graph and walks the lists of the few that are active; a
warp walks its active vertices' lists between its tests, and its later tests
wait for the walks. The tests' rate was measured in device memory, where a
walk's reads return about as fast as the tests' own. From host memory each of
a warp's walks in turn waits a round trip more, and its CTA holds its slot
that much longer. The tests' CTAs run in waves of the slots, so a CTA whose
wave ends before the last one can take some of that time without delaying the
launch. So where a launch's record holds its tests' stalls and its lists are
read from host memory, its floor is the tests' issue time plus the most that
any warp's dependent chain of memory instructions takes beyond the same chain
in device memory, less the share of the floor left after its CTA's wave
(:func:`hostlink.model.predict.host_walks_ns`), not the larger of the floor and
the walks. Measured (validation/experiments/families/runs/*/walks_per_warp.csv):
on luxembourg_osm's chunked launches (two waves), host memory adds 0.7, 1.8,
2.3 and 3.2 us on an H100 (1.9, 2.9, 3.6 and 4.3 on an H200) where one warp
walks 1, 2, 3 and 4 or more lists in turn, about 0.8-0.9 us a list, where the
presets' host load-to-use latency less a device access is 1.04-1.06 us; the
launches' own time in device memory grows by 0.2-0.4 us a list.

Assumptions: every other instruction issues in one clock (no replays, no
dependences, no latency: for them the floor is a bound, not an estimate); the
SMs run at the configured clock. The counts come from the trace a stream was coalesced
from (:func:`hostlink.traces.coalescer.coalesce`); a stream built without one
(the graph emulator's requests, synthetic streams) has none and gets no floor,
and a trace that records only some instructions is bounded by those.
"""
from __future__ import annotations

import numpy as np

ISSUE_PER_SM_PER_CLK = 4      # four schedulers x one warp instruction per clock (whitepapers above)
BOUND = "compute"             # the bound's name where the issue floor sets the time


class IssueCounter:
    """Warp instructions per launch and per warp, accumulated chunk by chunk.

    A trace's chunks come launch by launch (a kernel's trace after the one before
    it), so a launch's per-warp counts are reduced to its two numbers (total,
    longest warp) as soon as a chunk of a later launch arrives: the memory held is
    that of the launch in flight, not of the run. A chunk of a launch already
    reduced (a trace out of launch order) adds to its total, and its warps' counts
    of that chunk alone bound its longest warp from below."""

    # one int64 key per warp: launch (25 bits), CTA (32 bits), warp in its CTA (6 bits:
    # at most 1024 threads, 32 warps, per CTA; CUDA C++ Programming Guide, "Technical
    # Specifications per Compute Capability": maximum number of threads per block)
    _CTA_SHIFT, _LAUNCH_SHIFT = 6, 38

    COMPACT_KEYS = 1 << 20        # per-chunk counts kept before they are merged

    def __init__(self) -> None:
        self._keys: list[np.ndarray] = []
        self._counts: list[np.ndarray] = []
        self._pending = 0
        self._merged = 0              # keys after the last merge
        self._low = 0                 # launches below this one are reduced
        self._done: dict[int, list[int]] = {}     # launch -> [total, longest]

    def add(self, launch: np.ndarray, cta: np.ndarray, warp: np.ndarray) -> None:
        """Count one chunk's instructions (one row each) by launch, CTA and warp in the CTA."""
        if not len(launch):
            return
        launch = np.asarray(launch, np.int64)
        first = int(launch.min())
        if first > self._low:         # a later launch: the earlier ones are complete
            self._reduce_below(first)
        key = ((launch << self._LAUNCH_SHIFT)
               | (np.asarray(cta, np.int64) << self._CTA_SHIFT) | np.asarray(warp, np.int64))
        uniq, counts = np.unique(key, return_counts=True)
        self._keys.append(uniq)
        self._counts.append(counts)
        self._pending += len(uniq)
        if self._pending > max(self.COMPACT_KEYS, 2 * self._merged):
            self._compact()           # memory bounded by the distinct warps in flight

    def _compact(self) -> None:
        if len(self._keys) > 1:
            keys, inverse = np.unique(np.concatenate(self._keys), return_inverse=True)
            counts = np.bincount(inverse.reshape(-1), weights=np.concatenate(self._counts),
                                 minlength=len(keys)).astype(np.int64)
            self._keys, self._counts = [keys], [counts]
        self._pending = self._merged = len(self._keys[0]) if self._keys else 0

    def _reduce_below(self, launch: int | None) -> None:
        """Reduce the launches below ``launch`` (None: every launch) to their total and
        longest warp."""
        if launch is not None:
            self._low = launch
        if not self._keys:
            return
        self._compact()
        keys, per_warp = self._keys[0], self._counts[0]
        cut = len(keys) if launch is None else int(np.searchsorted(
            keys, np.int64(launch) << np.int64(self._LAUNCH_SHIFT)))
        if cut == 0:
            return
        done_l = keys[:cut] >> self._LAUNCH_SHIFT
        starts = np.flatnonzero(np.r_[True, done_l[1:] != done_l[:-1]])
        totals = np.add.reduceat(per_warp[:cut], starts)
        longest = np.maximum.reduceat(per_warp[:cut], starts)
        for li, tot, lon in zip(done_l[starts].tolist(), totals.tolist(), longest.tolist()):
            entry = self._done.setdefault(li, [0, 0])
            entry[0] += tot
            entry[1] = max(entry[1], lon)
        self._keys, self._counts = [keys[cut:]], [per_warp[cut:]]
        self._pending = self._merged = len(keys) - cut

    def per_launch(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """(warp instructions, those of the longest warp) for launches 0..n-1."""
        total = np.zeros(n, dtype=np.int64)
        longest = np.zeros(n, dtype=np.int64)
        self._reduce_below(None)
        for li, (tot, lon) in self._done.items():
            if li < n:
                total[li] += tot
                longest[li] = max(longest[li], lon)
        return total, longest


def issue_floor_ns(warp_insts, longest_warp_insts, ctas, gpu,
                   stall_sm_clocks=None) -> np.ndarray:
    """Per launch: the least time, ns, its SMs need to issue its warp instructions
    (and to wait out their known stalls, ``stall_sm_clocks``: SM clocks summed over
    the SMs; None: none)."""
    total = np.asarray(warp_insts, dtype=np.float64)
    longest = np.asarray(longest_warp_insts, dtype=np.float64)
    stall = (np.zeros_like(total) if stall_sm_clocks is None
             else np.asarray(stall_sm_clocks, dtype=np.float64))
    sms = np.clip(np.asarray(ctas, dtype=np.float64), 1.0, float(gpu.sm_count))
    clocks = np.maximum((total / ISSUE_PER_SM_PER_CLK + stall) / sms, longest)
    return clocks * 1e3 / float(gpu.clock_MHz)          # clocks / (MHz) = us; x 1e3 = ns


def stream_issue_floor_ns(stream, gpu, n: int) -> np.ndarray:
    """:func:`issue_floor_ns` of a RequestStream's launch records (0 where unknown)."""
    infos = list(stream.launches[:n])
    infos += [None] * (n - len(infos))
    total = [getattr(i, "warp_insts", 0) for i in infos]
    longest = [getattr(i, "longest_warp_insts", 0) for i in infos]
    ctas = [getattr(i, "ctas", 1) for i in infos]
    stall = [getattr(i, "stall_sm_clocks", 0.0) for i in infos]
    return issue_floor_ns(total, longest, ctas, gpu, stall)


def apply_issue_floor(kernel_ns: np.ndarray, floor_ns: np.ndarray) -> tuple[np.ndarray, dict]:
    """``max(kernel_ns, floor_ns)`` per launch (the floors: :func:`stream_issue_floor_ns`,
    with what walks from host memory add where a caller has them), and a summary:
    ``floor_s`` (the floors summed), ``launches`` (those whose floor exceeds their
    memory time) and ``binds`` (the floor sets more than half of the kernels' time)."""
    floor = np.asarray(floor_ns, dtype=np.float64)
    out = np.maximum(kernel_ns, floor)
    over = floor > kernel_ns
    binds = bool(over.any() and floor[over].sum() > 0.5 * out.sum())
    return out, {"floor_s": float(floor.sum()) * 1e-9, "launches": int(over.sum()),
                 "binds": binds}
