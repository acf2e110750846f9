"""What both discrete-event engines share: request kinds, the inputs they run on, their output.

The zero-copy discrete-event model replays a :class:`~hostlink.model.workload.RequestStream`
on a system. Both engines, the compiled one (:mod:`hostlink.model.des.fast`) and
the SimPy reference (:mod:`hostlink.model.des.reference`), read the same
:class:`DesInputs` and return the same :class:`DesOutput`, so tests can compare
them number for number.

The model (one kernel launch at a time, each from local time 0; launches do not overlap)
---------------------------------------------------------------------------------------
- Occupancy: a launch's CTAs start in id order while CTA slots are free
  (``slots = sm_count`` x the CTAs an SM holds by its warp slots and registers,
  :mod:`hostlink.model.occupancy`); a CTA frees its
  slot when its last warp has finished. CTAs and warps that issue no memory
  request take no time (compute is not modelled). The dispatcher starts no
  more than one CTA every ``gpu.cta_dispatch_ns`` (``cta_start_ns``: CTA k of
  the grid may start from ``k x cta_dispatch_ns`` after its launch's start,
  measured with empty kernels, the ``launch_latency`` experiment): a CTA
  starts at the first moment a slot is free and its time has come, after the
  other events of that moment. So the active vertices of the grid's last
  CTAs start their walks late, and their round trips run past the grid's
  dispatch.
- Warps: each warp issues its memory instructions in program order, at most
  ``loads_in_flight`` at once; an instruction completes when all its requests
  have; the next instruction issues at the moment one completes. An instruction
  marked to wait (``inst_waits``, from the stream's ``waits``: it depends on the
  warp's earlier loads) issues only once the warp has none in flight.
- Host reads: a read may need a GPU address translation first (a TLB miss
  waits for one of ``walkers`` page walkers, ``walk_ns`` each, first come first
  served). It then waits, first come first served, until it can hold a tag, its
  completion headers (one per CplD) and its completion data bytes (credits).
  Holding them, its MRd TLP serialises on the upstream link, flies
  ``rtt_ns / 2``, is served by host DRAM (bytes of whole bursts at DRAM
  bandwidth), its CplD TLPs serialise on the downstream link, and fly
  ``rtt_ns / 2`` back (plus an IOMMU walk, ``iommu_miss_ns``, where the IOTLB missed);
  then the credits return. All three servers are first come first served, so
  the unloaded round trip of a read is ``rtt_ns`` plus its own serialisation
  and DRAM service, and everything beyond that is queueing. The data then
  takes ``host_path_ns`` (``gpu.host_path_ns``) more to reach the warp, holding
  no credit: a warp's unloaded load-to-use latency of a host read is
  ``host_path_ns + rtt_ns`` plus its service times, while tags and completion
  credits are held for the round trip alone.
- Host writes are posted: the MWr serialises upstream (in issue order with
  the reads) and its data then reaches DRAM, but the warp waits only until it
  has left the GPU.
- Device requests: one first-come-first-served server at device bandwidth;
  a read's data returns ``device_lat_ns`` after its service
  (``device_lat_ns + dram_extra_ns`` for one the L2 misses, ``l2_misses``), a write is done
  for the warp when served. An atomic whose old value the warp waits for (the
  stream's ``atomic``) is a read that returns ``device_lat_ns +
  atomic_extra_ns`` after its service (the L2's read-modify-write; measured
  where the L2 holds the line: the ``atomic_chase`` experiment,
  validation/experiments/atomic_chase/).
- The SM's issue stage: a CTA runs on one SM (its CTA slot modulo ``sm_count``;
  a CTA that starts takes the slot the last finished one freed, the first wave
  goes round robin over the SMs). The requests of one instruction reach their
  SM's queue one after another, each ``issue_gap_ns`` (by the request's kind)
  after the one before, and the warp's next instruction starts one gap after its
  last; the SM lets them leave first come first served in the order they reach
  it, at most one per ``sm_request_ns``, so the warps of one SM interleave (one
  per ``sm_l2_request_ns`` for a device read line that the L2 serves:
  ``l2_lines``, :mod:`hostlink.model.l2_lines`). What
  costs is a line: the requests an instruction sends to one 128 B line (a device
  line's sectors) leave together, with the first (``leads``); so do the
  requests a stream marks to follow their instruction's first (``follows``: the
  sector requests of an ``ld.cv`` load, whatever lines they read, measured to
  cost a warp's round next to nothing). A request that
  stands for k lines (``issue_lines``: a compact stream's one request for an
  instruction's scattered reads) takes k - 1 more gaps of its warp and k turns
  of its SM, and leaves with its last line (the SM's turns counted as work, not
  held: others' lines fill its warp's gaps). Reads alone pass the stage (loads
  and atomics that return data: what was measured); stores and reductions leave
  at once. An atomic's lines leave as a load's do unless ``atomic_spread_ns``
  is set (>= 0): then its line j (0-based, counting each request's lines)
  reaches the SM ``atomic_spread_ns * log2(j + 1)`` after its first, and each
  of its lines holds the SM for ``atomic_sm_ns``, not a load's turn: an atomic
  of k lines waits ``atomic_spread_ns * log2(k)`` more than one of a single
  line (measured for k = 1 to 32 lanes: the ``atomic_chase`` experiment), which
  is less than the turns fitted to loads through the L1 would give; and a few
  warps of one SM sending such atomics take no longer a round than one warp
  until the SM's own rate binds (the ``atomic_warps`` experiment).
  A request enters its path when it leaves its SM. The first request of
  an idle warp on an idle SM leaves at once, so neither cost changes an unloaded
  latency. Both 0 (the default): every request leaves the moment its instruction
  issues.
- Writes to a launch's shared words: the words every warp of a launch writes (a
  traversal's edge counter and ``changed`` flag) are served by the L2 one write
  after another, ``gpu.shared_write_ns`` each (the ``flag_writes`` experiment). A
  warp's such writes (``warp_shared_ns``: its launch's count times that cost,
  shared evenly among its warps) go, once its last instruction completes, to one
  first-come-first-served server; the warp holds its CTA's slot until they are
  served, and where the SM's issue stage costs time its SM lets no read out
  before then (the SM's path to the L2 waits behind them). The launch ends with
  the last of them. (Measured on grid3d's naive BFS, the GPU overlaps none of
  their service with the launch's other work; this overlaps about half.)
- Warps issue round robin; a request enters its path the moment it leaves its SM.
  Simultaneous events are taken in the order they were scheduled, as SimPy
  does; a launch ends with its last completion.

Where the GPU-internal path sits: a host read also crosses the GPU (SM, L1,
crossbar, L2 and hub to the PCIe controller) before its MRd takes a tag, and
back after its completion has returned it. The model puts the whole of that
path, ``host_path_ns``, after the credits return. For host reads alone this is
exact: splitting it into a part before the tag and a part after only shifts
every link event of a launch by the first part (a read joins the credit queue
``host_path_ns`` after the completion that freed its warp either way), so the
kernel time, the bandwidth and the tag window are the same. Putting it on one
side keeps host reads reaching the link in issue order with the posted writes
and the device requests, which take no GPU-internal delay in the model (a
write is done for its warp when its MWr leaves the GPU; ``device_lat_ns`` is a
device read's whole latency). ``sum_lat_ns`` and the bandwidth series count
the tag window and the link completions; ``done_ns`` is when the warp has the
data.

Assumptions: compute time between memory instructions is zero (the traversal
kernels are memory bound); CTAs take the slots as they free, whatever the SM
(the SM matters only to the issue stage); the link's DLLP and SKP share is taken
out of its rate, not sent as packets; DRAM is one server of the aggregate
bandwidth (no banks, rows or refresh); requests never reorder inside the root
complex; the round trip does not grow with load beyond the queueing modelled
here (the seed measured 1.0 to 1.6 us, emogi_vldb2020 §3.3).

References: emogi_vldb2020 §3.3 (tags bound outstanding reads, the round trip,
32 B reads against 64 B DRAM bursts); PCI Express Base Specification rev. 5.0
§2.6.1 (flow control: a requester reserves completion credits, so outstanding
= min(tags, completion headers, completion data)); the GPU's own outstanding
limit is not published and is fitted by the validation; the issue stage's costs,
the ``request_cost`` and ``request_share`` experiments (a warp's load of
32 sector requests against one line; 1 to 8 warps per SM); the byte counts are the packetiser's
(:mod:`hostlink.model.pcie.tlp`) and the DRAM model's (:mod:`hostlink.model.dram`).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

# Request kinds. DEVICE_ATOMIC: a device read whose instruction is an atomic that returns.
HOST_READ, HOST_WRITE, DEVICE_READ, DEVICE_WRITE, DEVICE_ATOMIC = 0, 1, 2, 3, 4
N_KINDS = 5
KIND_NAMES = {HOST_READ: "host_read", HOST_WRITE: "host_write", DEVICE_READ: "device_read",
              DEVICE_WRITE: "device_write", DEVICE_ATOMIC: "device_atomic"}
#: the kinds that return data to their warp and pass the SM's issue stage
READ_KINDS = (HOST_READ, DEVICE_READ, DEVICE_ATOMIC)
#: the index of :meth:`DesInputs.sm_turn_ns` past the kinds': a read line the L2 serves
L2_TURN = N_KINDS

# Indices into DesOutput.stats (the compiled engine returns a flat array).
STAT_NAMES = (
    "busy_up_ns",        # upstream link time spent serialising TLPs
    "busy_dram_ns",      # host DRAM busy time
    "busy_down_ns",      # downstream link time spent serialising TLPs
    "busy_dev_ns",       # device memory busy time
    "host_reads",        # host reads completed
    "sum_lat_ns",        # sum over host reads of (done - host_path - granted): time holding a tag
    "sum_wait_ns",       # sum over host reads of (granted - ready): waiting for credits
    "peak_outstanding",  # most host reads holding tags at once
    "walks",             # GPU TLB misses (page walks)
    "sum_walk_wait_ns",  # sum over walks of the time waiting for a walker
    "sum_issue_ns",      # sum over requests of the time from issue to leaving the SM
)
STAT = {name: i for i, name in enumerate(STAT_NAMES)}

UNLIMITED = np.iinfo(np.int64).max // 4


@dataclass(frozen=True)
class CostTable:
    """What a request costs, by cost class: requests of one kind, size and offset in
    their 4 KiB page cost the same (a device request's offset does not count), so the
    engines keep one int32 class per request (:attr:`DesInputs.cost_id`) and these
    columns once per class: a few hundred rows where the requests number hundreds of
    millions."""
    size_B: np.ndarray         # int64 (m,)
    ser_up_ns: np.ndarray      # float64 (m,): upstream wire time of the request's TLPs
    ser_down_ns: np.ndarray    # float64 (m,): downstream wire time (its CplDs)
    dram_ns: np.ndarray        # float64 (m,): host DRAM service time
    dev_ns: np.ndarray         # float64 (m,): device memory service time
    need_tags: np.ndarray      # int64 (m,): tags held (MRd count)
    need_hdr: np.ndarray       # int64 (m,): completion headers held (CplD count)
    need_data_B: np.ndarray    # int64 (m,): completion data credits held, in bytes
    dram_B: np.ndarray         # int64 (m,): bytes of the DRAM bursts the request touches

    def __len__(self) -> int:
        return len(self.size_B)


#: the per-request views of :class:`CostTable`'s columns that :class:`DesInputs` offers
PER_REQUEST_COSTS = ("size_B", "ser_up_ns", "ser_down_ns", "dram_ns", "dev_ns", "need_tags",
                     "need_hdr", "need_data_B")


@dataclass(frozen=True)
class DesInputs:
    """A request stream laid out for the engines, with every request's cost precomputed.

    Requests are in (launch, warp, instruction) order. ``inst_ptr`` delimits the
    requests of each instruction, ``warp_ptr`` the instructions of each warp,
    ``cta_ptr`` the warps of each CTA and ``launch_ptr`` the CTAs of each launch
    (only warps and CTAs with at least one request appear). ``row`` maps each
    request back to its row in the original stream. A request's costs are row
    ``cost_id[r]`` of ``costs``; ``x.ser_up_ns`` and the other names in
    :data:`PER_REQUEST_COSTS` give them per request (a copy, made once, for the
    reference engine and for inspection; the compiled engine reads the table).
    """
    row: np.ndarray            # int64 (n,)
    inst_ptr: np.ndarray       # int64 (n_inst + 1,)
    warp_ptr: np.ndarray       # int64 (n_warp + 1,)
    cta_ptr: np.ndarray        # int64 (n_cta + 1,)
    launch_ptr: np.ndarray     # int64 (n_launch + 1,)
    launch_slots: np.ndarray   # int64 (n_launch,): CTA slots of each launch
    kind: np.ndarray           # uint8 (n,): HOST_READ ...
    cost_id: np.ndarray        # int32 (n,): the request's row of ``costs``
    costs: CostTable
    walk: np.ndarray           # bool (n,): GPU TLB miss
    iommu_miss: np.ndarray     # bool (n,): IOTLB miss (adds ``iommu_miss_ns`` to its round trip)
    tags: int                  # tags (the least of the link's and the GPU's limits)
    cpl_hdrs: int              # completion header credits (UNLIMITED if not limited)
    cpl_data_B: int            # completion data credits in bytes (UNLIMITED if not limited)
    rtt_ns: float
    device_lat_ns: float
    loads_in_flight: int
    walkers: int
    walk_ns: float
    iommu_miss_ns: float       # added round trip of an IOTLB miss
    launch_overhead_ns: float
    level_sync_ns: float
    host_path_ns: float = 0.0  # GPU-internal latency of a host read after its credits return
    sm_count: int = 1          # SMs the CTA slots are spread over (slot modulo sm_count)
    # float64 (N_KINDS,), by kind: time between two lines leaving one warp (0: at once)
    issue_gap_ns: np.ndarray = field(default_factory=lambda: np.zeros(N_KINDS))
    sm_request_ns: float = 0.0  # time between two requests leaving one SM (0: unlimited)
    # the same for a read line the L2 serves (``l2_lines``; None: sm_request_ns)
    sm_l2_request_ns: float | None = None
    # bool (n,): the request opens a read line the L2 serves (None: none does)
    l2_lines: np.ndarray | None = None
    # bool (n,): a device read the L2 misses, which waits dram_extra_ns beyond
    # device_lat_ns (None: none does)
    l2_misses: np.ndarray | None = None
    dram_extra_ns: float = 0.0
    # bool (n,): the request opens a line of its instruction and pays the issue stage;
    # one that does not leaves with the request before it (None: every request opens one)
    leads: np.ndarray | None = None
    # int (n,): the lines a request stands for (the stream's ``lines``); None: one each
    issue_lines: np.ndarray | None = None
    # bool (n_inst,): the instruction issues only when its warp has none in flight
    inst_waits: np.ndarray | None = None
    # what a device atomic's data takes beyond a device read's (DEVICE_ATOMIC)
    atomic_extra_ns: float = 0.0
    # a device atomic's line j reaches its SM atomic_spread_ns * log2(j + 1) after its
    # first and takes an SM turn of atomic_sm_ns; < 0: its lines leave as a load's do
    atomic_spread_ns: float = -1.0
    atomic_sm_ns: float = 0.0
    # int32 (n,): per request, the lines of its instruction before it (each request
    # counting its ``issue_lines``); needed only where atomics spread (else None)
    line_index: np.ndarray | None = None
    # float64 (n_cta,): the earliest time from its launch's start at which each CTA may
    # start, its place in the launch's grid times the dispatcher's time per CTA
    # (gpu.cta_dispatch_ns); None: every CTA may start at once
    cta_start_ns: np.ndarray | None = None
    # float64 (n_warp,): the time the L2 takes to serve each warp's writes to the words
    # its launch's warps share (gpu.shared_write_ns each); None: no warp writes them
    warp_shared_ns: np.ndarray | None = None
    extra: dict = field(default_factory=dict)

    def __getattr__(self, name: str):
        # the per-request views of the cost table, expanded once on first use
        if name in PER_REQUEST_COSTS:
            table = self.__dict__.get("costs")
            if table is not None:
                view = getattr(table, name)[self.cost_id]
                self.__dict__[name] = view
                return view
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    @property
    def iommu_ns(self) -> np.ndarray:
        """Per request: the round trip an IOTLB miss adds (0 where it hit)."""
        return np.where(self.iommu_miss, self.iommu_miss_ns, 0.0)

    def waits_per_inst(self) -> np.ndarray:
        """``inst_waits``, all False where the stream marked no dependences."""
        n_inst = len(self.inst_ptr) - 1
        if self.inst_waits is None:
            return np.zeros(n_inst, dtype=np.bool_)
        return np.asarray(self.inst_waits, dtype=np.bool_)

    @property
    def has_issue_stage(self) -> bool:
        """Whether the SM's issue stage costs anything (a gap or an SM turn above 0)."""
        return (self.sm_request_ns > 0 or float(np.max(self.issue_gap_ns)) > 0
                or ((self.atomic_spread_ns > 0 or self.atomic_sm_ns > 0)
                    and bool(np.any(self.kind == DEVICE_ATOMIC))))

    def sm_turn_ns(self) -> np.ndarray:
        """By kind: the SM's time per line of a request leaving it (``sm_request_ns`` for
        reads, 0 for writes, which do not pass the stage, and ``atomic_sm_ns`` for device
        atomics whose lines spread, ``atomic_spread_ns`` >= 0); then, at index
        :data:`L2_TURN`, a read line's that the L2 serves (``l2_lines``)."""
        turn = np.zeros(N_KINDS + 1)
        for k in READ_KINDS:
            turn[k] = self.sm_request_ns
        if self.atomic_spread_ns >= 0:
            turn[DEVICE_ATOMIC] = self.atomic_sm_ns
        turn[L2_TURN] = (self.sm_request_ns if self.sm_l2_request_ns is None
                         else self.sm_l2_request_ns)
        return turn

    def l2_per_request(self) -> np.ndarray:
        """``l2_lines``, or one False where no line is the L2's (the engines read it only
        where it has a request's length)."""
        if self.l2_lines is None:
            return np.zeros(1, dtype=np.bool_)
        return np.asarray(self.l2_lines, dtype=np.bool_)

    def misses_per_request(self) -> np.ndarray:
        """``l2_misses``, or one False where no read is marked (as :meth:`l2_per_request`)."""
        if self.l2_misses is None:
            return np.zeros(1, dtype=np.bool_)
        return np.asarray(self.l2_misses, dtype=np.bool_)

    def shared_per_warp(self) -> np.ndarray:
        """``warp_shared_ns``, or one 0 where no warp writes a shared word (the engines
        read it only where it has a warp's length)."""
        if self.warp_shared_ns is None:
            return np.zeros(1, dtype=np.float64)
        return np.asarray(self.warp_shared_ns, dtype=np.float64)

    def line_index_per_request(self) -> np.ndarray:
        """``line_index``, or one 0 where it is not needed (the engines read it only for
        device atomics whose lines spread)."""
        if self.line_index is None:
            return np.zeros(1, dtype=np.int32)
        return np.asarray(self.line_index, dtype=np.int32)

    def leads_per_request(self) -> np.ndarray:
        """``leads``, all True where not given."""
        if self.leads is None:
            return np.ones(len(self.kind), dtype=np.bool_)
        return np.asarray(self.leads, dtype=np.bool_)

    def lines_per_request(self) -> np.ndarray:
        """``issue_lines``, all 1 where not given (int32: 4 B a request)."""
        if self.issue_lines is None:
            return np.ones(len(self.kind), dtype=np.int32)
        return np.asarray(self.issue_lines, dtype=np.int32)

    def __len__(self) -> int:
        return len(self.kind)

    @property
    def n_launches(self) -> int:
        return len(self.launch_slots)

    def requests_per_launch(self) -> np.ndarray:
        """Requests of each launch: a launch's CTAs, their warps, the warps' instructions
        and their requests are consecutive, so its requests start where its first
        CTA's first warp's first instruction's do."""
        first = self.inst_ptr[self.warp_ptr[self.cta_ptr[self.launch_ptr]]]
        return np.diff(first)

    def launch_of_request(self) -> np.ndarray:
        """Launch index of every request."""
        return np.repeat(np.arange(self.n_launches), self.requests_per_launch())

    def global_ns(self, starts_ns: np.ndarray, local_ns: np.ndarray) -> np.ndarray:
        """Per request, a time local to its launch (``local_ns``) plus its launch's start
        (``starts_ns``), in a new array: the launches' starts repeated, then the local
        times added in place, so no index per request is held."""
        out = np.repeat(np.asarray(starts_ns, dtype=np.float64), self.requests_per_launch())
        out += local_ns
        return out


@dataclass
class DesOutput:
    """What an engine returns. Times of requests are local to their launch."""
    kernel_ns: np.ndarray          # (n_launch,) time from a launch's start to its last completion
    stats: np.ndarray              # (len(STAT_NAMES),) see STAT_NAMES
    bw_bins_B: np.ndarray          # host-read payload bytes completed per time bin (global time)
    bin_ns: float                  # width of a bin
    ready_ns: np.ndarray | None = None    # per request: issued by its warp (or walk done)
    granted_ns: np.ndarray | None = None  # per request: credits held / service began
    done_ns: np.ndarray | None = None     # per request: completed (a host read: its data at
    #                                       the warp, host_path_ns after its credits return)

    def stat(self, name: str) -> float:
        return float(self.stats[STAT[name]])

    def launch_start_ns(self, inputs: DesInputs) -> np.ndarray:
        """Global start time of each launch's kernel: after its launch overhead and,
        from the second launch on, the level synchronisation (summed in the
        engines' order, so bin edges agree to the last bit)."""
        starts = np.zeros(len(self.kernel_ns))
        end = 0.0
        for k, kernel in enumerate(self.kernel_ns):
            starts[k] = end + inputs.launch_overhead_ns + (inputs.level_sync_ns if k > 0 else 0.0)
            end = starts[k] + kernel
        return starts

    def per_launch_ns(self, inputs: DesInputs) -> np.ndarray:
        """Each launch's share of the total: its overheads plus its kernel time."""
        gaps = np.full(len(self.kernel_ns), inputs.launch_overhead_ns)
        gaps[1:] += inputs.level_sync_ns
        return gaps + self.kernel_ns
