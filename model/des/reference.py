"""The SimPy reference of the zero-copy discrete-event model: readable, for small inputs.

The model is stated in :mod:`hostlink.model.des.events`; this file writes it
the plain SimPy way (a process per request, a ``Resource`` per
first-come-first-served server, a credit pool for tags and completion
credits; warps and CTAs are bookkeeping at each completion) so that it can be
read against that statement. The
compiled engine (:mod:`hostlink.model.des.fast`) must give the same times;
the tests compare the two request by request. It runs at some ten thousand
requests per second: use it on small streams only.
"""
from __future__ import annotations

from collections import deque

import numpy as np
import simpy

from hostlink.model.des.events import (DEVICE_ATOMIC, DEVICE_READ, DEVICE_WRITE, HOST_READ,
                                       HOST_WRITE, L2_TURN, READ_KINDS, STAT, STAT_NAMES,
                                       DesInputs, DesOutput)


#: the dispatcher's priority: after SimPy's own events of the same instant (NORMAL)
AFTER_THE_INSTANT = simpy.events.NORMAL + 1


class CreditPool:
    """Tags, completion headers and completion data bytes, granted first come first served.

    A read waits until all three are free for it; nobody overtakes the read at
    the head of the queue (head-of-line blocking, as a requester's in-order
    request queue behaves)."""

    def __init__(self, env: simpy.Environment, tags: int, hdrs: int, data_B: int):
        self.env = env
        self.free = [tags, hdrs, data_B]
        self.queue: deque = deque()
        self.held = 0
        self.peak = 0

    def get(self, need: tuple[int, int, int]) -> simpy.Event:
        event = self.env.event()
        self.queue.append((need, event))
        self._grant()
        return event

    def put(self, need: tuple[int, int, int]) -> None:
        for k in range(3):
            self.free[k] += need[k]
        self.held -= 1
        self._grant()

    def _grant(self) -> None:
        while self.queue:
            need, event = self.queue[0]
            if any(self.free[k] < need[k] for k in range(3)):
                return
            self.queue.popleft()
            for k in range(3):
                self.free[k] -= need[k]
            self.held += 1
            self.peak = max(self.peak, self.held)
            event.succeed()


class _Launch:
    """One kernel launch, simulated from time 0 in its own environment.

    Requests are SimPy processes; warps and CTAs are bookkeeping done at the
    moment a request completes (the warp scheduler reacts within the instant),
    so that nothing else happening at the same time can slip in between."""

    def __init__(self, x: DesInputs, launch: int, stats: np.ndarray, ready: np.ndarray,
                 granted: np.ndarray, done: np.ndarray, released: np.ndarray):
        self.x = x
        self.env = simpy.Environment()
        self.stats, self.ready, self.granted, self.done = stats, ready, granted, done
        self.released = released           # per host read: its credits returned
        self.credits = CreditPool(self.env, x.tags, x.cpl_hdrs, x.cpl_data_B)
        self.up = simpy.Resource(self.env, capacity=1)
        self.dram = simpy.Resource(self.env, capacity=1)
        self.down = simpy.Resource(self.env, capacity=1)
        self.device = simpy.Resource(self.env, capacity=1)
        self.shared_ns = x.warp_shared_ns       # the L2's shared words (None: not written)
        self.shared_free = 0.0                  # when their server is next free
        self.walkers = simpy.Resource(self.env, capacity=max(x.walkers, 1))
        self.free_slots = int(x.launch_slots[launch])
        self.next_cta, self.last_cta = x.launch_ptr[launch], x.launch_ptr[launch + 1]
        self.warps_left = {}               # CTA -> warps not finished
        self.next_inst = {}                # warp -> next instruction to issue
        self.in_flight = {}                # warp -> instructions in flight
        self.requests_left = {}            # instruction -> requests not done
        self.last_done = 0.0               # last request completion
        self.waits = x.waits_per_inst()    # instruction -> issues only with none in flight
        # the SM issue stage: free CTA slots (popped from the end: slot 0 first), the
        # slot of each running CTA, when each SM and warp may next let a request leave
        self.slots = list(range(self.free_slots - 1, -1, -1))
        self.cta_slot = {}
        self.sm_free = [0.0] * max(int(x.sm_count), 1)
        self.sm_last = [0.0] * max(int(x.sm_count), 1)
        self.leads = x.leads_per_request()
        self.lines = x.lines_per_request()
        self.warp_free = {}
        self.sm_turn = x.sm_turn_ns()
        self.l2 = x.l2_lines        # None: no line is the L2's
        self.spreads = x.atomic_spread_ns >= 0 and x.line_index is not None
        self.staged = x.has_issue_stage
        self.cta_start = x.cta_start_ns          # None: every CTA may start at once
        self.slot_freed = None                   # what the dispatcher waits on for a slot

    def run(self) -> float:
        """The kernel's time: its last completion (writes complete when they leave the GPU)."""
        if self.cta_start is None:
            self.schedule([])
        else:
            self.env.process(self.dispatcher())
        self.env.run()
        return self.last_done

    # -- occupancy and issue ---------------------------------------------------------
    def dispatcher(self):
        """Start each CTA once a slot is free and its time has come, after every
        other event of that moment (an event of a lower priority than SimPy's)."""
        env = self.env
        while self.next_cta < self.last_cta:
            if self.free_slots == 0:
                self.slot_freed = env.event()
                yield self.slot_freed
                continue
            wake = env.event()
            wake._ok, wake._value = True, None
            env.schedule(wake, priority=AFTER_THE_INSTANT,
                         delay=max(0.0, float(self.cta_start[self.next_cta]) - env.now))
            yield wake
            self.schedule([], dispatching=True)

    def schedule(self, ready: list[int], dispatching: bool = False) -> None:
        """Start CTAs into free slots (where the dispatcher paces them, those whose
        time has passed, or has come where ``dispatching``), then let the ready warps
        issue, round robin."""
        x = self.x
        while self.free_slots > 0 and self.next_cta < self.last_cta:
            if self.cta_start is not None:
                t = self.cta_start[self.next_cta]
                if not (t < self.env.now or (dispatching and t <= self.env.now)):
                    break
            c = self.next_cta
            self.next_cta += 1
            self.free_slots -= 1
            self.cta_slot[c] = self.slots.pop()
            warps = range(x.cta_ptr[c], x.cta_ptr[c + 1])
            self.warps_left[c] = len(warps)
            for w in warps:
                self.next_inst[w] = x.warp_ptr[w]
                self.in_flight[w] = 0
                ready.append(w)
        issued = True
        while issued:
            issued = False
            for w in ready:
                i = self.next_inst[w]
                if (self.in_flight[w] < x.loads_in_flight and i < x.warp_ptr[w + 1]
                        and not (self.waits[i] and self.in_flight[w] > 0)):
                    self.next_inst[w] += 1
                    self.in_flight[w] += 1
                    self.issue(i, w)
                    issued = True

    def issue(self, i: int, w: int) -> None:
        """Start the requests of instruction ``i`` of warp ``w``: each leaves the SM
        (the issue stage) and then takes its path."""
        x = self.x
        now = self.env.now
        self.requests_left[i] = x.inst_ptr[i + 1] - x.inst_ptr[i]
        paths = {HOST_READ: self.host_read, DEVICE_READ: self.device_read,
                 HOST_WRITE: self.host_write, DEVICE_WRITE: self.device_write,
                 DEVICE_ATOMIC: self.device_atomic}
        c = int(np.searchsorted(x.cta_ptr, w, side="right")) - 1
        sm = self.cta_slot[c] % max(int(x.sm_count), 1)
        t = max(now, self.warp_free.get(w, 0.0))
        charged = None     # the last request that passed the issue stage
        for r in range(x.inst_ptr[i], x.inst_ptr[i + 1]):
            if not (self.staged and x.kind[r] in READ_KINDS):
                self.env.process(self.leave_sm(paths[x.kind[r]], r, i, None, 0.0))
                continue
            if charged is not None and self.leads[r]:
                t += self.span(r, self.line(r) - 1, 2)
            charged = r
            self.stats[STAT["sum_issue_ns"]] += t - now
            self.env.process(self.leave_sm(paths[x.kind[r]], r, i, sm, t - now))
            t += self.span(r, self.line(r), self.lines[r])     # its other lines
        if charged is not None:
            last = self.line(charged) + self.lines[charged] - 1
            self.warp_free[w] = t + self.span(charged, last, 2)

    def line(self, r: int) -> int:
        """The lines of request ``r``'s instruction before it (read only for device
        atomics whose lines spread)."""
        if self.spreads and self.x.kind[r] == DEVICE_ATOMIC:
            return int(self.x.line_index[r])
        return 0

    def span(self, r: int, j: int, n: int) -> float:
        """Time from the arrival at the SM of line ``j`` of ``r``'s instruction to that of
        line ``j + n - 1`` (:mod:`hostlink.model.des.events`)."""
        x = self.x
        if x.kind[r] == DEVICE_ATOMIC and x.atomic_spread_ns >= 0:
            return x.atomic_spread_ns * (np.log2(j + n) - np.log2(j + 1.0))
        return (n - 1) * x.issue_gap_ns[x.kind[r]]

    def leave_sm(self, path, r: int, i: int, sm: int | None, delay: float):
        """Request ``r`` reaches SM ``sm``'s queue after ``delay``, leaves it first come
        first served, then takes ``path`` (``sm`` None: no issue stage, it leaves at once)."""
        env = self.env
        if sm is not None:
            yield env.timeout(delay)
            if self.leads[r]:
                # its last line arrives k - 1 gaps after its first, leaves after k turns
                more = self.lines[r] - 1
                x = self.x
                turn = max(env.now, self.sm_free[sm])
                smt = self.sm_turn[L2_TURN if self.l2 is not None and self.l2[r]
                                   else x.kind[r]]
                leave = max(env.now + self.span(r, self.line(r), self.lines[r]),
                            turn + more * smt)
                self.sm_free[sm] = turn + (more + 1) * smt
                self.sm_last[sm] = leave
            else:   # leaves with its line's first request, which reached the SM just before
                leave = self.sm_last[sm]
            if leave > env.now:
                self.stats[STAT["sum_issue_ns"]] += leave - env.now
                yield env.timeout(leave - env.now)
        self.ready[r] = env.now
        if self.x.kind[r] != HOST_READ:
            self.granted[r] = env.now
        yield from path(r, i)

    def complete(self, r: int, i: int) -> None:
        """Request ``r`` of instruction ``i`` is done (a read's data is back, a write
        has left the GPU): retire the instruction, the warp, the CTA as they finish."""
        x = self.x
        self.done[r] = self.last_done = self.env.now
        self.requests_left[i] -= 1
        if self.requests_left[i]:
            return
        w = int(np.searchsorted(x.warp_ptr, i, side="right")) - 1
        self.in_flight[w] -= 1
        if self.next_inst[w] < x.warp_ptr[w + 1]:
            self.schedule([w])
        elif self.in_flight[w] == 0:
            if self.shared_ns is not None and self.shared_ns[w] > 0:
                self.shared_writes(w)
            else:
                self.warp_done(w)

    def shared_writes(self, w: int) -> None:
        """Warp ``w``'s writes to its launch's shared words, served in turn (first come
        first served, so their end is known now); its CTA's slot and its SM's later
        reads wait for them."""
        x = self.x
        c = int(np.searchsorted(x.cta_ptr, w, side="right")) - 1
        sm = self.cta_slot[c] % max(int(x.sm_count), 1)
        end = max(self.env.now, self.shared_free) + float(self.shared_ns[w])
        self.shared_free = end
        self.sm_free[sm] = max(self.sm_free[sm], end)
        self.env.process(self.served(w, end - self.env.now))

    def served(self, w: int, delay: float):
        yield self.env.timeout(delay)
        self.last_done = self.env.now
        self.warp_done(w)

    def warp_done(self, w: int) -> None:
        """Warp ``w`` has finished: retire its CTA once its last warp has."""
        x = self.x
        c = int(np.searchsorted(x.cta_ptr, w, side="right")) - 1
        self.warps_left[c] -= 1
        if self.warps_left[c] == 0:
            self.free_slots += 1
            self.slots.append(self.cta_slot[c])
            self.schedule([])
            if self.slot_freed is not None and not self.slot_freed.triggered:
                self.slot_freed.succeed()

    # -- the paths of a request ----------------------------------------------------
    def serve(self, server: simpy.Resource, duration: float, stat: str):
        with server.request() as turn:
            yield turn
            self.stats[STAT[stat]] += duration
            yield self.env.timeout(duration)

    def host_read(self, r: int, i: int):
        x, env = self.x, self.env
        if x.walk[r]:
            with self.walkers.request() as walker:
                yield walker
                self.stats[STAT["walks"]] += 1
                self.stats[STAT["sum_walk_wait_ns"]] += env.now - self.ready[r]
                yield env.timeout(x.walk_ns)
            self.ready[r] = env.now
        need = (int(x.need_tags[r]), int(x.need_hdr[r]), int(x.need_data_B[r]))
        yield self.credits.get(need)
        self.granted[r] = env.now
        self.stats[STAT["sum_wait_ns"]] += env.now - self.ready[r]
        yield from self.serve(self.up, x.ser_up_ns[r], "busy_up_ns")
        yield env.timeout(x.rtt_ns * 0.5)              # MRd flight to the host
        yield from self.serve(self.dram, x.dram_ns[r], "busy_dram_ns")
        yield from self.serve(self.down, x.ser_down_ns[r], "busy_down_ns")
        yield env.timeout(x.rtt_ns * 0.5)              # CplD flight back
        if x.iommu_miss[r] and x.iommu_miss_ns > 0:
            yield env.timeout(x.iommu_miss_ns)         # IOTLB miss at the root complex
        self.stats[STAT["sum_lat_ns"]] += env.now - self.granted[r]
        self.stats[STAT["host_reads"]] += 1
        self.released[r] = env.now
        self.credits.put(need)
        if x.host_path_ns > 0:
            yield env.timeout(x.host_path_ns)          # GPU-internal way to the warp, no credit
        self.complete(r, i)

    def host_write(self, r: int, i: int):
        """A posted write: done for the warp once its MWr has left the GPU."""
        x, env = self.x, self.env
        # the zero-time step a read takes through the credit pool, so that
        # reads and writes reach the link in the order they were issued
        yield env.timeout(0)
        yield from self.serve(self.up, x.ser_up_ns[r], "busy_up_ns")
        self.complete(r, i)
        yield env.timeout(x.rtt_ns * 0.5)
        yield from self.serve(self.dram, x.dram_ns[r], "busy_dram_ns")

    def device_read(self, r: int, i: int):
        """A device read: its latency after its service, more where the L2 misses it."""
        yield from self.serve(self.device, self.x.dev_ns[r], "busy_dev_ns")
        missed = self.x.l2_misses is not None and self.x.l2_misses[r]
        yield self.env.timeout(self.x.device_lat_ns + (self.x.dram_extra_ns if missed else 0.0))
        self.complete(r, i)

    def device_atomic(self, r: int, i: int):
        """An atomic that returns: a device read whose data takes ``atomic_extra_ns`` more."""
        yield from self.serve(self.device, self.x.dev_ns[r], "busy_dev_ns")
        yield self.env.timeout(self.x.device_lat_ns + self.x.atomic_extra_ns)
        self.complete(r, i)

    def device_write(self, r: int, i: int):
        yield from self.serve(self.device, self.x.dev_ns[r], "busy_dev_ns")
        self.complete(r, i)


def bin_series(times_ns: np.ndarray, weights: np.ndarray, nbins: int) -> tuple[np.ndarray, float]:
    """Bytes per time bin, the bin width the smallest power of two (from 1 ns) that
    puts every time in one of ``nbins`` bins: what the compiled engine's doubling bins end at."""
    bins = np.zeros(nbins)
    width = 1.0
    if len(times_ns) == 0:
        return bins, width
    while int(times_ns.max() / width) >= nbins:
        width *= 2.0
    idx = (times_ns / width).astype(np.int64)
    np.add.at(bins, idx, weights.astype(np.float64))
    return bins, width


def run(inputs: DesInputs, *, record: bool = True, nbins: int = 1024) -> DesOutput:
    """Simulate ``inputs`` with SimPy. Per-request times are always recorded."""
    x = inputs
    n = len(x)
    stats = np.zeros(len(STAT_NAMES))
    ready, granted, done = np.full(n, np.nan), np.full(n, np.nan), np.full(n, np.nan)
    released = np.full(n, np.nan)
    kernel_ns = np.zeros(x.n_launches)
    peak = 0.0
    for launch in range(x.n_launches):
        sim = _Launch(x, launch, stats, ready, granted, done, released)
        kernel_ns[launch] = sim.run()
        peak = max(peak, sim.credits.peak)
    stats[STAT["peak_outstanding"]] = peak
    out = DesOutput(kernel_ns=kernel_ns, stats=stats, bw_bins_B=np.zeros(nbins), bin_ns=1.0)
    starts = out.launch_start_ns(x)
    host = x.kind == HOST_READ
    launch_of = x.launch_of_request()
    # the series counts completions on the link: when the credits return
    out.bw_bins_B, out.bin_ns = bin_series(starts[launch_of[host]] + released[host],
                                           x.size_B[host], nbins)
    out.ready_ns, out.granted_ns, out.done_ns = ready, granted, done
    return out
