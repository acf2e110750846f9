"""The zero-copy discrete-event model: a compiled engine and its SimPy reference.

Public API
----------
``simulate(stream, system, *, engine="fast", record=False, nbins=1024,
translation=None) -> (DesInputs, DesOutput)``: replay a
:class:`~hostlink.model.workload.RequestStream` on a
:class:`~hostlink.model.config.SystemConfig`. ``engine`` is ``"fast"``
(Numba, :mod:`hostlink.model.des.fast`) or ``"reference"`` (SimPy,
:mod:`hostlink.model.des.reference`, small inputs only). With translation on
and more host pages than the TLB holds, the order in which reads reach the TLB
matters: a first pass without translation gives that order (issue times), and
the second pass uses the misses it implies (one step towards the fixed point).

A stream of more than :data:`GROUP_REQUESTS` requests is simulated a group of
whole launches at a time (:func:`simulate_in_groups`): the GPU is idle between
launches, so the engine carries only the clock, its statistics and its
bandwidth bins from one group to the next, and the inputs held are one group's,
plus those of the first groups that fit :data:`GROUP_INPUTS_KEPT_B`, kept for
the loaded round trip's next pass (:class:`KeptGroups`). The numbers are those
of one whole run: where the host pages fit the TLB, a page's first touch is a
miss in the group that touches it first; where they do not, each group's first
run gives its reads' order, and the TLB and IOTLB carry from group to group
what they hold (:class:`hostlink.model.translation.LruCarry`).

The model and its assumptions are stated in :mod:`hostlink.model.des.events`;
:mod:`hostlink.model.des.inputs` turns the packetiser's and the DRAM model's
byte counts into service times. :func:`hostlink.model.predict.predict` wraps
this into a :class:`~hostlink.model.result.Prediction`.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from hostlink.model.des.events import (DEVICE_READ, DEVICE_WRITE, HOST_READ, HOST_WRITE,
                                       STAT, STAT_NAMES, DesInputs, DesOutput)
from hostlink.model.des.inputs import (build_inputs, layout, pages_fit, request_costs,
                                       translation_flags)
from hostlink.model.des.miniature import miniature
from hostlink.model.translation import LruCarry

ENGINES = ("fast", "reference")

__all__ = ["DEVICE_READ", "DEVICE_WRITE", "ENGINES", "GROUP_REQUESTS", "HOST_READ",
           "HOST_WRITE", "STAT", "STAT_NAMES", "DesInputs", "DesOutput", "build_inputs",
           "KeptGroups", "launch_groups", "run", "simulate", "simulate_in_groups"]

#: Streams of more requests than this are simulated in groups of launches of at most
#: about this many requests each (a launch is never split): the engines' inputs take
#: about 80 B a request, so a group's are about 340 MB.
GROUP_REQUESTS = 1 << 22

#: Bytes of the groups' inputs kept with a stream between the loaded round trip's
#: passes (:mod:`hostlink.model.loaded_rtt`), which change only ``rtt_ns``: the first
#: groups that fit are kept (about 20 B a request; kron21's BFS, 10 M requests, fits
#: whole), the rest are built again on every pass.
GROUP_INPUTS_KEPT_B = 256 << 20


def run(inputs: DesInputs, *, engine: str = "fast", record: bool | str = False,
        nbins: int = 1024) -> DesOutput:
    """Run one engine on prepared inputs; ``record`` keeps per-request times (True) or
    the times the requests were issued alone ("ready"; the reference engine keeps
    all three)."""
    if engine == "fast":
        from hostlink.model.des import fast
        return fast.run(inputs, record=record, nbins=nbins)
    if engine == "reference":
        from hostlink.model.des import reference
        return reference.run(inputs, nbins=nbins)
    raise ValueError(f"engine must be one of {', '.join(ENGINES)}, not {engine!r}")


def _round_trip_free_key(system) -> tuple:
    """What the engines' inputs other than ``rtt_ns`` depend on: every part of
    ``system`` the engines read, the link's round trip left out (the loaded round
    trip's passes change only it)."""
    from hostlink.model.stream_memo import system_key_without_uvm
    link = dataclasses.replace(system.link, rtt_ns=0.0, rtt_at_full_link_ns=0.0)
    return tuple(link if part is system.link else part
                 for part in system_key_without_uvm(system))


def simulate(stream, system, *, engine: str = "fast", record: bool = False, nbins: int = 1024,
             translation: bool | None = None, keep_inputs: bool = True,
             share: float = 1.0) -> tuple[DesInputs, DesOutput]:
    """Simulate ``stream`` on ``system``; returns the inputs used and the output.
    ``share`` < 1: on a miniature of that share of the machine
    (:mod:`hostlink.model.des.miniature`; the inputs returned are the whole
    machine's).

    The inputs are built once per stream and system less the link's round trip
    (:mod:`hostlink.model.stream_memo`): the passes of the loaded round trip
    (:mod:`hostlink.model.loaded_rtt`) change only ``link.rtt_ns``, and a pass
    then costs the engine's run alone. Where the TLB order comes from a first
    run (pages that do not fit), only the layout and the costs are shared."""
    from hostlink.model.stream_memo import memoized
    key = _round_trip_free_key(system)
    use_xl = system.translation.enabled if translation is None else translation
    if engine == "fast" and not record and len(stream) > GROUP_REQUESTS:
        groups = launch_groups(stream, GROUP_REQUESTS)
        if groups is not None and len(groups) > 1:
            kept = (memoized(stream, "des_group_inputs", (key, bool(use_xl)), KeptGroups, keep=1)
                    if keep_inputs else None)
            return simulate_in_groups(stream, system, groups, translation=use_xl, nbins=nbins,
                                      kept=kept, share=share,
                                      tlb_order=use_xl and not pages_fit(stream, system))

    def prepared():
        lay = layout(stream, system)
        costs = request_costs(stream, system, lay["row"])
        fits = not use_xl or pages_fit(stream, system)
        inputs = (build_inputs(stream, system, translation=use_xl, lay=lay, costs=costs)
                  if fits else None)
        return lay, costs, inputs

    lay, costs, inputs = (memoized(stream, "des_inputs", (key, bool(use_xl)), prepared, keep=1)
                          if keep_inputs else prepared())
    rtt = {"rtt_ns": float(system.link.rtt_ns)}
    if inputs is not None:
        inputs = dataclasses.replace(inputs, **rtt)
    else:
        from hostlink.model.progress import PART, stage
        stage(PART, f"the TLB's order, {len(stream) / 1e6:.1f} M requests")
        inputs = build_inputs(stream, system, translation=False, lay=lay, costs=costs)
        out = run(miniature(inputs, share), engine=engine, record="ready", nbins=nbins)
        arrival = inputs.global_ns(out.launch_start_ns(inputs), out.ready_ns)
        del out
        stage(PART, f"with TLB misses, {len(stream) / 1e6:.1f} M requests")
        # the same inputs but the misses, which the order implies
        walk, iommu = translation_flags(stream, system, lay["row"], arrival)
        del arrival
        inputs = dataclasses.replace(inputs, walk=walk, iommu_miss=iommu)
    return inputs, run(miniature(inputs, share), engine=engine, record=record, nbins=nbins)


def launch_groups(stream, max_requests: int) -> list[tuple[int, int, int, int]] | None:
    """Consecutive groups of whole launches of at most ``max_requests`` requests each
    (a launch of more is a group of its own), as (first launch, launch after the
    last, first row, row after the last); None where the stream's rows are not in
    launch order."""
    launch = stream.launch
    n = len(launch)
    if n == 0:
        return None
    if n > 1 and bool(np.any(launch[1:] < launch[:-1])):
        return None
    n_launch = max(len(stream.launches), int(launch[-1]) + 1)
    # rows before each launch: starts[L] .. starts[L + 1] are launch L's
    starts = np.searchsorted(launch, np.arange(n_launch + 1, dtype=np.int64)).astype(np.int64)
    groups = []
    first = 0
    while first < n_launch:
        # the last launch end whose rows stay within max_requests of the group's start
        end = int(np.searchsorted(starts, starts[first] + max_requests, side="right")) - 1
        end = min(max(end, first + 1), n_launch)
        groups.append((first, end, int(starts[first]), int(starts[end])))
        first = end
    return groups


def _launch_slice(stream, first: int, end: int, r0: int, r1: int):
    """Rows ``r0:r1`` of ``stream`` (launches ``first:end``) as a stream of their own,
    its launches numbered from 0 (views of the columns but the launch's)."""
    from hostlink.model.workload import OPTIONAL_COLUMNS, REQUEST_DTYPES, RequestStream
    cols = {k: getattr(stream, k)[r0:r1] for k in REQUEST_DTYPES}
    cols["launch"] = (cols["launch"] - np.uint32(first)).astype(np.uint32)
    opt = {k: None if getattr(stream, k) is None else getattr(stream, k)[r0:r1]
           for k in OPTIONAL_COLUMNS}
    return RequestStream(**cols, launches=tuple(stream.launches[first:end]), **opt)


def _first_touches(flags: np.ndarray, pages: np.ndarray, seen: np.ndarray) -> tuple[
        np.ndarray, np.ndarray]:
    """``flags`` (a group's misses, each its page's first touch in the group) less the
    pages an earlier group touched (``seen``, sorted), and ``seen`` with the group's."""
    hit = np.flatnonzero(flags)
    if len(hit):
        flags = flags.copy()
        flags[hit[np.isin(pages[hit], seen)]] = False
        seen = np.union1d(seen, pages[hit])
    return flags, seen


class KeptGroups:
    """The inputs of a stream's first groups, kept for the next pass on a system that
    differs in ``link.rtt_ns`` alone, up to :data:`GROUP_INPUTS_KEPT_B` bytes. Each
    group keeps the TLB's and IOTLB's pages seen by the end of it, so that a group
    built again after it starts from them; and the L2 as the last kept group left it
    (``l2_state``, where its lines are replayed), for the same reason."""

    def __init__(self, budget_B: int | None = None):
        self.budget_B = GROUP_INPUTS_KEPT_B if budget_B is None else int(budget_B)
        self.groups: dict[int, tuple] = {}
        self.size_B = 0
        self.l2_state = None

    def get(self, i: int):
        """(inputs, pages seen by the TLB, by the IOTLB) of group ``i``, or None."""
        kept = self.groups.get(i)
        if kept is None:
            return None
        inputs, seen_tlb, seen_iommu = kept
        if inputs.row is None:      # kept without its identity row order
            inputs = dataclasses.replace(inputs, row=np.arange(len(inputs.kind),
                                                               dtype=np.int64))
        return inputs, seen_tlb, seen_iommu

    def offer(self, i: int, inputs: DesInputs, seen_tlb, seen_iommu, l2_state=None) -> None:
        """Keep group ``i`` if it fits what is left of the budget (with every group
        before it kept, so that the kept ones are a prefix); ``l2_state``: the L2 at
        its end (copied if kept)."""
        if i != len(self.groups):
            return
        row = inputs.row
        if len(row) and row[0] == 0 and row[-1] == len(row) - 1 and \
                bool(np.all(np.diff(row) == 1)):
            inputs = dataclasses.replace(inputs, row=None)
        size = sum(v.nbytes for v in vars(inputs).values() if isinstance(v, np.ndarray))
        size += seen_tlb.nbytes + seen_iommu.nbytes
        if self.size_B + size <= self.budget_B:
            self.groups[i] = (inputs, seen_tlb, seen_iommu)
            self.size_B += size
            self.l2_state = None if l2_state is None else l2_state.copy()


def _in_tlb_order(part, inputs: DesInputs, system, share: float, nbins: int,
                  tlbs: tuple) -> DesInputs:
    """``inputs`` of the launches ``part`` (built without translation) with the TLB and
    IOTLB misses of its reads in the order a run without translation sends them,
    the caches as ``tlbs`` hold them (updated)."""
    from hostlink.model.des import fast
    first = fast.run(miniature(inputs, share), record="ready", nbins=nbins)
    arrival = inputs.global_ns(first.launch_start_ns(inputs), first.ready_ns)
    del first
    walk, iommu = translation_flags(part, system, inputs.row, arrival, tlbs)
    return dataclasses.replace(inputs, walk=walk, iommu_miss=iommu)


def simulate_in_groups(stream, system, groups, *, translation: bool,
                       nbins: int = 1024, kept: KeptGroups | None = None,
                       share: float = 1.0, tlb_order: bool = False
                       ) -> tuple[DesInputs, DesOutput]:
    """:func:`simulate` of ``stream`` (the fast engine, no per-request record) one group
    of ``groups`` (:func:`launch_groups`) at a time. With ``translation`` on, the host
    pages it reads fit the TLB (and IOTLB), so that only first touches miss; or, with
    ``tlb_order``, a first run of each group without translation gives the order its
    reads reach the TLB, and the misses follow from that order with the TLB as the
    groups before left it (as :func:`simulate` finds them for a whole run).
    ``kept``: groups' inputs from an earlier call on a system that differs in
    ``link.rtt_ns`` alone, which this call uses and adds to (:class:`KeptGroups`).
    ``share``: run on a miniature of that share of the machine
    (:func:`hostlink.model.des.miniature.miniature`). Returns the last group's inputs,
    their ``extra`` the whole run's wire and DRAM bytes, and the run's output."""
    from hostlink.model.des import fast
    from hostlink.model.progress import PART, stage
    from hostlink.model.workload import SPACE_HOST
    cfg = system.translation
    n_launch = groups[-1][1]
    carry = fast.Carry(nbins)
    kernel_ns = []
    wire = {"up": 0.0, "down": 0.0}
    dram_B = 0
    seen_tlb = np.zeros(0, dtype=np.uint64)
    seen_iommu = np.zeros(0, dtype=np.uint64)
    inputs = None
    rtt = {"rtt_ns": float(system.link.rtt_ns)}
    from hostlink.model.l2_lines import L2State, l2_config, replays
    l2_state = None             # the L2 the groups run so far left (where it is replayed)
    tlbs = (LruCarry(), LruCarry())     # the TLB and IOTLB the groups so far left
    if system.gpu.sm_l2_request_ns is not None and replays(stream):
        l2_state = L2State(l2_config(system.gpu))
    for i, (first, end, r0, r1) in enumerate(groups):
        which = f"launch {end}" if end - first == 1 else f"launches {first + 1}-{end}"
        stage(PART, f"{which} of {n_launch}, {(r1 - r0) / 1e6:.1f} M requests")
        found = None if kept is None else kept.get(i)
        part = None
        if found is not None:
            inputs, seen_tlb, seen_iommu = found
            inputs = dataclasses.replace(inputs, **rtt)
            if l2_state is not None and i + 1 == len(kept.groups):
                l2_state = kept.l2_state.copy()
        else:
            part = _launch_slice(stream, first, end, r0, r1)
            inputs = build_inputs(part, system, translation=translation and not tlb_order,
                                  l2_state=l2_state)
            if translation and not tlb_order:
                host = part.space[inputs.row] == SPACE_HOST
                addr = np.where(host, part.addr[inputs.row], np.uint64(0))
                walk, seen_tlb = _first_touches(inputs.walk, addr // np.uint64(cfg.page_B),
                                                seen_tlb)
                iommu, seen_iommu = _first_touches(
                    inputs.iommu_miss, addr // np.uint64(cfg.iommu_page_B), seen_iommu)
                inputs = dataclasses.replace(inputs, walk=walk, iommu_miss=iommu)
                del host, addr
            if kept is not None:
                kept.offer(i, inputs, seen_tlb, seen_iommu, l2_state)
        if tlb_order:
            if part is None:
                part = _launch_slice(stream, first, end, r0, r1)
            inputs = _in_tlb_order(part, inputs, system, share, nbins, tlbs)
        del part
        wire["up"] += inputs.extra["wire_B"]["up"]
        wire["down"] += inputs.extra["wire_B"]["down"]
        dram_B += int(inputs.extra["host_dram_B"])
        kernel_ns.append(fast.run(miniature(inputs, share), nbins=nbins,
                                  carry=carry).kernel_ns)
    inputs = dataclasses.replace(inputs, extra={"host_dram_B": dram_B, "wire_B": wire,
                                                "groups": len(groups)})
    return inputs, carry.output(np.concatenate(kernel_ns))
