"""The configuration schema: one frozen dataclass per part of a system.

A system is a PCIe link, a host memory, a GPU, a UVM driver policy and an
address-translation model, as gem5's standard library composes a board from
parts with one role each. Each field states its unit in its name, its range
and its provenance; defaults are the values most presets share, and every
value that is an assumption rather than a spec or a measurement says so.

References: PCI Express Base Specification rev. 5.0 (rates, MPS/MRRS/RCB
ranges; tag widths, §2.2.6.2) and rev. 6.0 (14-bit tags in flit mode); Intel
R-Tile Avalon Streaming IP for PCI Express User Guide (10-bit tags 256-1023
usable); the open NVIDIA UVM driver, NVIDIA/open-gpu-kernel-modules
kernel-open/nvidia-uvm (driver defaults); the seeds (emogi_vldb2020 §3.3:
RTT 1.0-1.6 us on PCIe 3.0).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from hostlink.model.config.fields import param, power_of_two

# Every field below is one param() declaration (doc, range, provenance); the
# declarations repeat in shape on purpose: one key, one declaration.
LANE_CHOICES = (1, 2, 4, 8, 16)
GEN_CHOICES = (1, 2, 3, 4, 5, 6)


@dataclass(frozen=True)
class LinkConfig:
    """A PCIe link between the GPU (requester) and the host root complex."""
    name: str = param("custom", doc="preset name")
    gen: int = param(3, doc="PCIe generation", choices=GEN_CHOICES)
    lanes: int = param(16, doc="link width in lanes", choices=LANE_CHOICES)
    mps_B: int = param(256, doc="max payload size", ge=128, le=4096, check=power_of_two)
    mrrs_B: int = param(512, doc="max read request size", ge=128, le=4096, check=power_of_two)
    rcb_B: int = param(64, doc="read completion boundary of the completer", choices=(64, 128))
    tags: int = param(256, doc="outstanding non-posted read requests the tag field allows",
                      ge=1, le=16384)
    rtt_ns: float = param(1000.0, doc="unloaded round trip of a read: request leaves the "
                          "requester until its completion arrives", gt=0, le=1e6,
                          provenance="seed")
    addr_64bit: bool = param(True, doc="MRd/MWr use 4DW headers (64-bit addresses)")
    ecrc: bool = param(False, doc="end-to-end CRC digest (4 B per TLP)")
    framing_B: float | None = param(None, doc="per-TLP framing, sequence number and LCRC bytes "
                                    "in non-flit mode; None = the generation's default",
                                    ge=0, le=64, optional=True)
    flit_mode: bool | None = param(None, doc="Gen6 flit mode; None = on for Gen6, off below",
                                   optional=True)
    cpl_split: str = param("mps", doc="how the completer splits a read's data: 'mps' = the "
                           "largest completions MPS and RCB alignment allow, 'rcb' = one per RCB "
                           "block", choices=("mps", "rcb"), provenance="assumption")
    cpl_buffer_B: int = param(0, doc="requester completion buffer in bytes (0 = unlimited)", ge=0)
    cpl_buffer_hdrs: int = param(0, doc="requester completion header slots (0 = unlimited)", ge=0)
    dllp_overhead: float | None = param(None, doc="fraction of link time spent on DLLPs; "
                                        "None = derived from the spec's ACK/UpdateFC cadence",
                                        ge=0, lt=1, optional=True)
    rtt_at_full_link_ns: float = param(0.0, doc="growth of a read's round trip with the "
                                       "downstream link's load: the round trip is rtt_ns plus "
                                       "this times the link's utilisation (0: it does not grow)",
                                       ge=0, le=1e5, provenance="assumption")

    def __post_init__(self) -> None:
        _check_link(self)

    @property
    def uses_flit_mode(self) -> bool:
        return self.gen >= 6 if self.flit_mode is None else bool(self.flit_mode)


def max_tags(gen: int, flit_mode: bool) -> int:
    """Largest usable tag count: 8-bit extended tags (256) up to Gen3, 10-bit (768
    usable) from Gen4, 14-bit (16384) in flit mode (PCIe Base Spec rev. 5.0
    §2.2.6.2 and rev. 6.0; Intel R-Tile PCIe IP User Guide for tags 256-1023)."""
    if flit_mode:
        return 16384
    return 768 if gen >= 4 else 256


def _check_link(link: LinkConfig) -> None:
    from hostlink.model.errors import ConfigError
    flit = link.uses_flit_mode
    if flit and link.gen < 6:
        raise ConfigError(f"link.flit_mode: flit mode needs PCIe 6 or later, not gen {link.gen}")
    if link.gen >= 6 and link.flit_mode is False:
        raise ConfigError("link.flit_mode: PCIe 6 at 64 GT/s always runs in flit mode")
    limit = max_tags(link.gen, flit)
    if link.tags > limit:
        raise ConfigError(f"link.tags: {link.tags} tags exceed the {limit} that PCIe gen "
                          f"{link.gen}{' (flit mode)' if flit else ''} allows")


@dataclass(frozen=True)
class HostMemoryConfig:
    """Host DRAM behind the root complex that serves the GPU's reads."""
    name: str = param("custom", doc="preset name")
    dram_type: str = param("DDR4", doc="DRAM standard", choices=("DDR3", "DDR4", "DDR5", "HBM", "LPDDR5"))
    channels: int = param(1, doc="memory channels serving the GPU's reads", ge=1, le=64)
    transfer_rate_MTps: float = param(2400.0, doc="data rate per pin", gt=0, le=20000)
    channel_width_bits: int = param(64, doc="data bits per channel (DDR5: two 32-bit "
                                    "subchannels count as one 64-bit channel)", choices=(16, 32, 64, 128))
    burst_B: int = param(64, doc="bytes one DRAM access delivers (DDR4 BL8 x 64 bit; DDR5 BL16 x 32 bit)",
                         ge=8, le=1024, check=power_of_two)
    efficiency: float = param(1.0, doc="sustained fraction of peak bandwidth for streaming reads",
                              gt=0, le=1, provenance="assumption")
    serve_GBps: float | None = param(None, doc="bytes of whole bursts a second the host "
                                     "serves to the device's reads at most (its root complex "
                                     "and memory fabric), where that is below the DRAM's "
                                     "sustained peak; None = the DRAM's", gt=0, le=1e5,
                                     optional=True, provenance="measured")
    numa_nodes: int = param(1, doc="NUMA nodes of the host", ge=1, le=64)
    cpu_load_lat_ns: float = param(100.0, doc="a host thread's wait for the first cache line "
                                   "of a row it reads from DRAM, the thread alone: host "
                                   "threads reading rows (a CPU gather)", gt=0, le=1e5,
                                   provenance="assumption")
    cpu_line_ns: float = param(10.0, doc="one host thread's time for each further line of a "
                               "row, up to cpu_stream_after_B into the row (the 10 L1 fill "
                               "buffers of a Skylake-era core at cpu_load_lat_ns each)",
                               gt=0, le=1e4, provenance="assumption")
    cpu_stream_line_ns: float = param(6.4, doc="one host thread's time for each line of a row "
                                      "past cpu_stream_after_B, once the core's prefetchers "
                                      "stream the row (64 B at an assumed 10 GB/s a core)",
                                      gt=0, le=1e4, provenance="assumption")
    cpu_stream_after_B: int = param(1024, doc="bytes into a row after which its lines come at "
                                    "cpu_stream_line_ns", ge=64, le=1 << 20,
                                    provenance="assumption")
    cpu_thread_load: float = param(0.0, doc="fraction each further host thread adds to every "
                                   "thread's time per row (threads sharing cores and the "
                                   "memory system's queues)", ge=0, le=10,
                                   provenance="assumption")
    cpu_dram_GBps: float | None = param(None, doc="bytes a second the host's threads move to "
                                        "and from DRAM at most, where that is below the "
                                        "DRAM's sustained peak; None = the DRAM's", gt=0,
                                        le=1e5, optional=True, provenance="measured")


@dataclass(frozen=True)
class GpuConfig:
    """The GPU: its parallelism, caches, device memory and host-read limits."""
    name: str = param("custom", doc="preset name")
    arch: str = param("volta", doc="architecture", choices=("pascal", "volta", "turing", "ampere", "ada",
                                                            "hopper", "blackwell", "gcn"))
    sm_count: int = param(80, doc="streaming multiprocessors", ge=1, le=1024, provenance="datasheet")
    max_warps_per_sm: int = param(64, doc="resident warps per SM", ge=1, le=128, provenance="datasheet")
    registers_per_sm: int = param(65536, doc="32-bit registers per SM, which the resident "
                                  "warps share (64 K on every NVIDIA SM from Pascal to "
                                  "Hopper: their architecture whitepapers)", ge=1,
                                  provenance="datasheet")
    l1_B: int = param(128 * 1024, doc="L1 data cache per SM (combined with shared memory)",
                      ge=0, provenance="datasheet")
    l2_B: int = param(6 * 1024**2, doc="L2 cache", ge=0, provenance="datasheet")
    memory_GiB: float = param(16.0, doc="device memory capacity", gt=0, provenance="datasheet")
    device_bw_GBps: float = param(900.0, doc="device memory bandwidth", gt=0, provenance="datasheet")
    device_lat_ns: float = param(500.0, doc="load-to-use latency of a device load served by "
                                 "the L2 (past the L1): every device request of a request "
                                 "stream (the twins' device arrays fit the L2)", gt=0,
                                 provenance="assumption")
    l1_hit_ns: float = param(30.0, doc="load-to-use latency of a device load served by the "
                             "SM's L1", gt=0, le=1e4, provenance="assumption")
    dram_lat_ns: float = param(600.0, doc="load-to-use latency of a device load that misses "
                               "the L2 and is served by device DRAM", gt=0, le=1e5,
                               provenance="assumption")
    clock_MHz: float = param(1380.0, doc="SM boost clock", gt=0, provenance="datasheet")
    max_outstanding_host_reads: int = param(256, doc="the GPU's own limit on outstanding "
                                            "host reads; no public figure exists", ge=1,
                                            provenance="assumption")
    loads_in_flight_per_warp: int = param(1, doc="independent loads a warp keeps in flight "
                                          "in the traversal kernels (a dependent loop issues one)",
                                          ge=1, le=64, provenance="assumption")
    host_path_ns: float = param(0.0, doc="GPU-internal latency of a host read outside the "
                                "PCIe tag window (SM, L1, crossbar, L2 and hub to the PCIe "
                                "controller and back): a warp's load-to-use latency of a host "
                                "read is this plus the link round trip (link.rtt_ns, during "
                                "which the tag is held); 0: all of it counted in link.rtt_ns",
                                ge=0, le=1e6, provenance="assumption")
    max_request_B: int = param(128, doc="largest read request an SM issues over PCIe",
                               choices=(32, 64, 128, 256), provenance="seed")
    launch_ns: float = param(0.0, doc="GPU time of a launch beyond its CTAs' work, as a pair "
                             "of CUDA events around it measures it (0: not modelled)", ge=0,
                             provenance="assumption")
    copy_setup_ns: float = param(0.0, doc="time a cudaMemcpy between pinned host and device "
                                 "memory takes beyond its transfer, back to back in a stream (the "
                                 "copy engine's and driver's per-copy cost; 0: not modelled)", ge=0,
                                 provenance="assumption")
    cta_dispatch_ns: float = param(0.0, doc="time between CTA dispatches: a launch of n CTAs "
                                   "takes at least n times this (0: not modelled)", ge=0,
                                   provenance="assumption")
    shared_write_ns: float = param(0.0, doc="time the L2 takes per write to one word that "
                                   "every warp of a launch writes (a reduction to one counter, "
                                   "a store to one flag): such writes are served one after "
                                   "another, and a launch ends only once they are done (0: "
                                   "not modelled)", ge=0, le=1e4, provenance="assumption")
    request_gap_ns: float = param(0.0, doc="time between two device-memory lines a warp's "
                                  "reads send leaving it: each line of a load beyond the first "
                                  "costs the warp this much (0: a load's requests leave "
                                  "together; stores and reductions are not charged)", ge=0,
                                  le=1e4, provenance="assumption")
    host_request_gap_ns: float = param(0.0, doc="the same for host-memory lines (zero-copy "
                                       "reads)", ge=0, le=1e4,
                                       provenance="assumption")
    sm_request_ns: float = param(0.0, doc="time between two read lines leaving one SM, "
                                 "whatever warp sends them (0: unlimited)", ge=0, le=1e4,
                                 provenance="assumption")
    sm_l2_request_ns: float | None = param(None, doc="the same for device read lines the L2 "
                                           "holds (sm_request_ns then stands for the lines "
                                           "DRAM serves); the request-stream models replay "
                                           "the L2 (l2_B) over the device reads to tell them "
                                           "apart, and a read the L2 misses waits "
                                           "dram_lat_ns (hostlink.model.l2_lines). None: no "
                                           "replay, every line takes sm_request_ns and every "
                                           "read device_lat_ns", ge=0, le=1e4,
                                           optional=True, provenance="assumption")
    atomic_extra_ns: float = param(0.0, doc="time a device atomic whose old value its warp "
                                   "waits for (ATOM, not a RED reduction) takes beyond a load "
                                   "of the same line that the L2 serves (device_lat_ns): the "
                                   "L2's read-modify-write (0: charged as a load)", ge=0, le=1e4,
                                   provenance="assumption")
    atomic_spread_ns: float | None = param(None, doc="what such an atomic of k device lines "
                                           "waits beyond one of a single line, per doubling "
                                           "of k (it waits for its slowest line: "
                                           "atomic_spread_ns * log2(k) more); its lines take "
                                           "the SM's turns of atomic_sm_ns, not "
                                           "sm_request_ns. None: its lines leave as a "
                                           "load's do (request_gap_ns apart, taking the SM's "
                                           "turns of sm_request_ns)", ge=0, le=1e4,
                                           optional=True, provenance="assumption")
    atomic_sm_ns: float = param(0.0, doc="time one line of such an atomic holds its SM's "
                                "issue stage, where atomic_spread_ns is set: the SM lets out "
                                "at most one atomic line per atomic_sm_ns, whatever warp "
                                "sends it (0: unlimited)", ge=0, le=1e4,
                                provenance="assumption")
    random_load_ns: float = param(0.0, doc="issue time of a warp load whose lanes read random "
                                  "lines (a hash of the index per lane): the read kernel's own "
                                  "cost per load, beside the memory it waits for (0: free)",
                                  ge=0, le=1e4, provenance="assumption")
    random_chain_ns: float = param(0.0, doc="a warp's time per dependent load of such random "
                                   "lines: its chain's floor (0: none)", ge=0, le=1e5,
                                   provenance="assumption")
    cv_line_ns: float = param(0.0, doc="time an ld.cv (cache-volatile) read of a host line "
                              "holds that line: a read of the same line waits for it (0: not "
                              "modelled)", ge=0, le=1e5, provenance="assumption")
    cv_line_gap_ns: float = param(0.0, doc="what each further line read at once adds to such "
                                  "a read's hold (0: nothing)", ge=0, le=1e3,
                                  provenance="assumption")
    caches_host_reads: bool = param(True, doc="zero-copy loads allocate in L1/L2, so a thread "
                                    "walking a list sends a new 32 B request only when it "
                                    "crosses a 32 B boundary (EMOGI §3.3); false: every load "
                                    "sends its own request", provenance="seed")


@dataclass(frozen=True)
class UvmConfig:
    """UVM driver policy (defaults: the open NVIDIA UVM driver and published measurements)."""
    name: str = param("custom", doc="preset name")
    page_B: int = param(4096, doc="migration page", check=power_of_two, ge=4096)
    fault_batch_size: int = param(256, doc="faults serviced per batch", ge=1, le=4096)
    batch_base_us: float = param(50.0, doc="fixed service time of a fault batch", ge=0,
                                 provenance="measured")
    migrate_per_KB_us: float = param(1.0, doc="service time per KB migrated in a batch "
                                     "(0.7-1.3 measured)", ge=0, provenance="measured")
    duplicate_fault_fraction: float = param(0.85, doc="fraction of fetched faults that are "
                                            "duplicates at full batches (80-92% measured)",
                                            ge=0, lt=1, provenance="measured")
    prefetch: bool = param(True, doc="tree prefetcher enabled")
    prefetch_block_B: int = param(65536, doc="leaf block of the prefetch tree", check=power_of_two)
    va_block_B: int = param(2 * 1024**2, doc="VA block the prefetch tree spans", check=power_of_two)
    prefetch_threshold: float = param(0.51, doc="fraction of a subtree resident before the "
                                      "prefetcher fetches the rest", gt=0, le=1)
    evict_chunk_B: int = param(2 * 1024**2, doc="eviction granularity (LRU)", check=power_of_two)
    transfer_peak_GBps: float = param(12.0, doc="asymptote a of the transfer-rate curve "
                                      "BW(s) = (2a/pi) atan(k s_KB)", gt=0, provenance="measured")
    transfer_shape_per_KB: float = param(0.07292, doc="k of the transfer-rate curve", gt=0,
                                         provenance="measured")
    thrash_events: int = param(3, doc="migrations within the window that mark thrashing", ge=1)
    thrash_window_us: float = param(500.0, doc="thrashing detection window", gt=0)
    gpu_memory_available_GiB: float | None = param(None, doc="device memory UVM may fill; "
                                                   "None = the GPU's capacity", gt=0, optional=True)
    block_us: float = param(0.0, doc="driver time per VA block a fault batch services",
                            ge=0, le=1e4, provenance="assumption")
    copy_page_us: float = param(0.0, doc="driver time per page a batch copies to the GPU "
                                "(migrated or read-duplicated)", ge=0, le=1e3,
                                provenance="assumption")
    move_page_us: float = param(0.0, doc="driver time per page a batch moves off the host "
                                "(a read-duplicated page does not pay it)", ge=0, le=1e3,
                                provenance="assumption")
    move_run_us: float = param(0.0, doc="driver time per contiguous run of pages a batch "
                               "moves off the host", ge=0, le=1e4, provenance="assumption")
    fault_us: float = param(0.0, doc="driver time per distinct page a batch fetches a fault "
                            "for", ge=0, le=1e3, provenance="assumption")
    raised_fault_us: float = param(0.0, doc="driver time per fault the warps raise on a page "
                                   "no queued fault is pending for", ge=0, le=1e3,
                                   provenance="assumption")
    first_fault_us: float = param(0.0, doc="one-off cost of a run's first fault batch when a "
                                  "single launch follows the host's set-up of the buffer (the "
                                  "driver's fault servicing waking up)", ge=0, le=1e5,
                                  provenance="assumption")
    launches_first_fault_us: float | None = param(None, doc="the same one-off cost in a run "
                                                  "of back-to-back launches whose pages went "
                                                  "to the GPU and back (a traversal, first "
                                                  "touch split over launches); None: "
                                                  "first_fault_us", ge=0, le=1e5,
                                                  optional=True, provenance="assumption")
    launches_one_block_first_fault_us: float | None = param(
        None, doc="the same one-off cost of back-to-back launches where each managed buffer "
                  "of the run lies within one VA block (va_block_B) and its size is known; "
                  "None: launches_first_fault_us", ge=0, le=1e5, optional=True,
        provenance="assumption")
    prefetch_call_us: float = param(0.0, doc="fixed cost of one cudaMemPrefetchAsync call "
                                    "beyond its transfer", ge=0, le=1e5,
                                    provenance="assumption")


@dataclass(frozen=True)
class TranslationConfig:
    """GPU address translation (and an optional IOMMU) for zero-copy host reads."""
    name: str = param("custom", doc="preset name")
    enabled: bool = param(True, doc="model translation costs")
    page_B: int = param(2 * 1024**2, doc="page size mapping pinned host memory in the GPU",
                        check=power_of_two, ge=4096, provenance="assumption")
    tlb_entries: int = param(2048, doc="last-level TLB entries the host mappings can use",
                             ge=1, provenance="assumption")
    miss_lat_ns: float = param(600.0, doc="page walk latency on a TLB miss", ge=0,
                               provenance="assumption")
    walkers: int = param(8, doc="page walks in flight at once", ge=1, provenance="assumption")
    managed_walkers: int = param(8, doc="page walks in flight at once for managed memory the GPU "
                                 "reads where it lies on the host (cudaMemAdviseSetAccessedBy), "
                                 "which the driver maps apart from pinned memory",
                                 ge=1, provenance="assumption")
    cold_span_ns: float = param(0.0, doc="time a run that starts with its L2 flushed spends "
                                "fetching the page-table entries of each PAGE_TABLE_SPAN_B "
                                "span of host memory its walks touch (the entries come from "
                                "DRAM, not the L2): what a benchmark's flush costs its kernel; "
                                "0 = none", ge=0, le=1e6, provenance="assumption")
    iommu: bool = param(False, doc="an IOMMU translates the GPU's DMA addresses")
    iommu_page_B: int = param(4096, doc="IOMMU mapping page", check=power_of_two, ge=4096,
                              provenance="assumption")
    iommu_iotlb_entries: int = param(256, doc="IOTLB entries", ge=1, provenance="assumption")
    iommu_miss_lat_ns: float = param(1000.0, doc="IOMMU walk latency", ge=0, provenance="assumption")


@dataclass(frozen=True)
class HostLoopConfig:
    """The stream items a program's host loop puts between its timed launches, and
    what each costs on the GPU's timeline (:mod:`hostlink.model.host_loop`). The
    costs hold while the GPU is the bottleneck: each launch runs long enough (20 us
    and more measured) that the host has enqueued the items after it. Defaults:
    fitted on two leases of an H200's host (validation/experiments/host_loop/runs/h200, pooled
    with host_loop_repeat, 2026-11-29)."""
    launch_gap_us: float = param(1.50, doc="a kernel launch after the stream item before it, "
                                 "outside the launch's own events", ge=0, provenance="measured")
    memset_small_us: float = param(0.95, doc="a cudaMemsetAsync of at most memset_small_max_B "
                                   "bytes (a flag's reset)", ge=0, provenance="measured")
    memset_small_max_B: int = param(64, doc="largest memset priced as small (measured: 4 and "
                                    "64 B small, 16 KiB and more not)", ge=0, provenance="assumption")
    memset_us: float = param(2.79, doc="a larger cudaMemsetAsync beyond its bytes at the device "
                             "memory's bandwidth", ge=0, provenance="measured")
    copy_us: float = param(7.36, doc="a small cudaMemcpyAsync between device and pinned host "
                           "memory after a kernel (a flag's read-back)", ge=0, provenance="measured")
    copy_return_us: float = param(1.24, doc="a kernel or memset straight after such a copy, "
                                  "beyond its own cost", ge=0, provenance="measured")
    sync_us: float = param(5.12, doc="a cudaStreamSynchronize: from the stream's last item to "
                           "the next item the host enqueues", ge=0, provenance="measured")
    run_us: float = param(1.40, doc="once per run: the event pair around it", ge=0,
                          provenance="measured")


@dataclass(frozen=True)
class SystemConfig:
    """A whole system: the parts, plus the costs that belong to none of them."""
    name: str = param("custom", doc="preset name")
    description: str = param("", doc="what this system is")
    link: LinkConfig = field(default_factory=LinkConfig)
    host: HostMemoryConfig = field(default_factory=HostMemoryConfig)
    gpu: GpuConfig = field(default_factory=GpuConfig)
    uvm: UvmConfig = field(default_factory=UvmConfig)
    translation: TranslationConfig = field(default_factory=TranslationConfig)
    host_loop: HostLoopConfig = field(default_factory=HostLoopConfig)
    launch_overhead_us: float = param(5.0, doc="kernel launch overhead per launch, for a stream "
                                      "without a program's host loop (host_loop prices one)", ge=0,
                                      provenance="assumption")
    level_sync_us: float = param(10.0, doc="host-device flag copy and sync between iterations, "
                                 "for a stream without a program's host loop",
                                 ge=0, provenance="assumption")
    provenance: dict = field(default_factory=dict)  # "section.key" -> source text
    #: sockets, switches and GPUs of a host with several (hostlink.model.config.topology)
    topology: "TopologyConfig | None" = None


SECTIONS = {"link": LinkConfig, "host": HostMemoryConfig, "gpu": GpuConfig,
            "uvm": UvmConfig, "translation": TranslationConfig, "host_loop": HostLoopConfig}
SYSTEM_SCALARS = ("name", "description", "launch_overhead_us", "level_sync_us")
