"""UVM first-touch and oversubscription model: assumptions, references, entry point.

What the model does
-------------------
The host-space requests of a RequestStream are accesses to one managed
allocation that starts resident in host memory (the CPU wrote the graph).
Each launch runs its warps: at most ``resident_warps`` at once (default
``gpu.sm_count * gpu.max_warps_per_sm``), later warps starting as earlier ones
finish. A warp runs its instructions in program order until one touches a
page that is not resident on the GPU; it then queues one fault per distinct
missing page of that instruction and stalls (replayable far faults; one
instruction in flight per warp). When every runnable warp has stalled or
finished, the driver fetches a batch of up to ``fault_batch_size`` fault
entries, oldest first, services it, and replays: warps whose pages arrived
run on. The driver's default replay policy is ``batch_flush``
(``uvm_gpu_replayable_faults.c``): after a batch the fault buffer is flushed,
so entries beyond the batch are dropped and their warps fault again on replay
only if their page is still missing; a fault is counted when a batch fetches
it. Hits cost nothing but device-memory time; the batches are serviced
one after another by one CPU thread and are not overlapped with the kernel
(UVMSmart's default, and the seeds: "the entire management process is
single-threaded", emogi_vldb2020 §2.2).

Fault order (``fault_order="sm_interleaved"``, default). The SMs run at once,
so the fault buffer fills in time order, SM by SM, not warp by warp: the
runnable warps are taken (and their faults queued) as the k-th warp of every
SM before the (k+1)-th of any, CTAs dealt to the SMs round robin (CTA c on SM
c mod ``gpu.sm_count``, the CTA size from the stream's launch records) and a
CTA's warps in order. An assumption about the hardware's scheduling; it
decides which pages share the oldest 256 entries: a random first touch moves
its prefetched pages in more, smaller runs than warp order gives, and a BFS
batch spans more neighbour lists. With it, the costs below fitted on first
touch without advice carry over to ReadMostly first touch
(tests/model/test_uvm_readmostly.py checks how far); taken warp by warp, no
non-negative batch, block and run costs fit random first touch (the H200's
``first_run`` experiment, ``validation/experiments/first_run/runs/h200``).
``fault_order="warp"`` takes the warps in index order (the model before this
option).

Duplicate faults. A batch's entries for a page already in that batch are
duplicates: several warps fault on a page before it arrives. With
``duplicates="derived"`` (default) they come from the warps themselves and
fill batch slots as on the hardware; the published figure
(``uvm.duplicate_fault_fraction``, 80-92% at batch 256, Allen & Ge SC'21) is
a check on the result, not an input. ``duplicates="published"`` instead
imposes it: a batch holds ``ceil(batch * (1 - fraction))`` distinct pages and
the duplicate count is ``unique * fraction / (1 - fraction)``.

Prefetch (open NVIDIA driver ``uvm_perf_prefetch.c``, enabled by default).
Per VA block (``va_block_B``, 2 MB) of a batch: the pages counted present are
those resident on the GPU plus the faulted ones; every big page
(``prefetch_block_B``, 64 KB) holding a fault is filled whole ("fault
granularity grows to big pages unless thrashing"); then for each faulted page
the subtrees of the binary tree over the block's pages that contain it are
visited bottom-up (4 KB, 8 KB, ..., 2 MB) and the largest one whose present
count exceeds ``prefetch_threshold`` of its size (the driver's
``counter * 100 > pages * 51``) is fetched whole. A VA block is a managed
buffer's part of a 2 MB-aligned region, so a buffer's last block may hold
fewer pages; its tree spans those alone (the levels of the next power of two,
each clipped to the block), and a buffer under 2 MB can come over whole on
its first fault. Where the caller names the buffers (``managed``) their last
blocks are so cut, each buffer taken to start on a VA block (an assumption:
the managed allocator's alignment is not measured); else every block is
whole. Pages already resident are
not moved again. With ``prefetch = false`` (the module parameter
``uvm_perf_prefetch_enable=0``) only the faulted 4 KB pages move. Not
modelled: the driver's first-touch shortcut (a block resident nowhere,
faulted by its preferred location, is populated whole: it does not apply to
data the CPU initialised) and the minimum-faults tunable (default 1).

Service time of a batch (``service="curve"``, default):
``batch_base_us`` (fetch, sort, replay), plus ``block_us`` for every VA
block the batch services (the driver services a batch block by block:
locking, residency and prefetch masks, chunk allocation, the copy push, the
GPU page-table update), plus ``copy_page_us`` for every page it copies to the
GPU, migrated or read-duplicated (the driver copies a prefetched run in many
small pieces: the ``uvm_counters`` experiment, validation/experiments/uvm_counters/),
plus ``move_run_us`` for every contiguous run of pages within a VA block that
it moves off the host and ``move_page_us`` for every such page (the CPU
unmapping below; a read-duplicated page pays neither), plus ``fault_us`` for
every distinct page it fetches a fault for and, once per simulation,
``first_fault_us`` with the first batch, plus, for every contiguous run of
pages migrated within a VA block,
``size / BW(size)`` with the transfer-rate curve ``BW(s) = (2a/pi) atan(k
s_KB)`` (UVMSmart, a = ``transfer_peak_GBps``, k = ``transfer_shape_per_KB``,
s in units of 1024 B: the source counts in 4 KB pages of 4096 B). UVMSmart
fitted ``a = 12`` to a 16 GB/s (PCIe 3.0 x16) link; a is scaled by the link's
raw rate over PCIe 3.0 x16's 15.75 GB/s (``scale_to_link=True``; an
assumption) so that faster links migrate faster while the per-batch cost
stays. ``block_us``, ``copy_page_us``, ``move_page_us``, ``move_run_us``,
``fault_us`` and ``first_fault_us`` are fields of the system's ``uvm`` section
(default 0, the model before they were added; keywords of :func:`simulate_uvm`
override them); ``hostlink validate calibrate`` fits ``block_us``,
``copy_page_us``, ``move_page_us`` and ``first_fault_us`` with
``batch_base_us`` from dense and sparse first touch without advice and with
ReadMostly (its docstring says why these four). Costs per contiguous run or
per fault fitted on first touch do not carry over to BFS, whose batches span
many more neighbour lists; costs per page do (the ``uvm_counters`` experiment
shows why: the driver moves pages in small copies, not one copy per run).
``raised_fault_us`` (``uvm.raised_fault_us``, default 0, fitted by no calibration step) is charged
for every fault the warps raise on a page that no queued fault is pending for
(``UvmResult.faults_raised``: warps that miss on a page whose fault is queued
wait on it, as the GPU's TLBs coalesce misses in flight), with the next
batch, whether or not the prefetcher brings the page before a batch fetches
the fault. Why it exists: sparse first touch that moves every page takes a
time that grows with the lines touched, where the faults a batch fetches stay
flat in the model. A cost per raised fault (or per fetched fault,
``fault_us``) closes part of the first-touch fit's residual but makes the
held-out traversals worse: a cost per fault fitted on first touch does not
carry over to a BFS level's scattered lists, so calibrate keeps the per-page
form (the ``uvm_faults`` experiment; its ``cost_forms.py`` compares the forms
on the same cases). A run's one-off cost (``first_fault_us``; the
``uvm_sizes`` experiment measures it) is what small traversals (a few MB of
edges) lose most without. It is smaller where the managed buffer is: a first
touch of one line costs less in a buffer of one VA block than in larger ones
on both validated GPUs (the ``uvm_alloc`` experiment), and so does the first
launch of first touch split over launches (``uvm_launches``). A run of
back-to-back launches whose managed buffers each lie within one VA block
therefore pays ``uvm.launches_one_block_first_fault_us`` where it is set and
the caller knows the buffers' size (``managed``: a traversal's edge list and
weights, a first touch's buffer). Assumption: one value below the VA block, none
between it and the larger buffers the other cost is fitted on.

Moving a page off the host unmaps it from the CPU. A migrating service
(``uvm_va_block_make_resident_copy`` in the open driver's ``uvm_va_block.c``)
first unmaps every processor's mapping of the pages it moves
(``uvm_va_block_unmap_mask``); for the CPU, ``block_unmap_cpu`` calls the
kernel's ``unmap_mapping_range`` once per contiguous subregion of them, and
each call zaps the PTEs and shoots down the CPU TLBs (inter-processor
interrupts, costly in a virtual machine): a cost per contiguous run moved,
which random first touch, its prefetched pages scattered over many runs,
pays far more often than a sequential front. Explicit prefetching
(:func:`prefetch_time_s`) unmaps whole ranges before it copies
(``uvm_migrate.c``, ``uvm_perf_migrate_cpu_preunmap_enable``) and pays
neither cost. ``service="linear"`` uses
Allen & Ge's fit instead: ``batch_base_us + migrate_per_KB_us * KB`` over
all pages moved in the batch, both directions. The two are alternatives, not
added: the linear fit (0.7-1.3 us/KB on Titan V) caps migration near 1 GB/s,
below the 9 GB/s the seed measured for UVM BFS on a V100 (emogi_vldb2020
§5.3.2), so the curve is the default.

Explicit prefetch (``cudaMemPrefetchAsync`` of host-resident managed memory
to the GPU, :func:`prefetch_time_s`): the driver migrates the range VA block
by VA block (``uvm_migrate.c``), each block's pages in one transfer of the
block's size at the same curve; no fault batches, no per-block fault-service
cost.

Capacity and eviction. The managed data may occupy ``capacity_B`` (argument),
else ``uvm.gpu_memory_available_GiB``, else ``gpu.memory_GiB``; it is held in
chunks of ``evict_chunk_B`` (2 MB root chunks; one VA block per chunk). A
chunk is allocated when the first page of its range migrates; when all
chunks are in use, the least recently used one is evicted: its resident pages
that the host does not hold (every migrated page; under ReadMostly only pages
the GPU wrote) are written back as contiguous D2H transfers timed like
migrations, and the eviction happens inside the batch that needed the room.
"Recently used" is what the driver sees: the GPU does not report hits, so a
chunk moves to the LRU tail when it becomes resident (``uvm_pmm_gpu.c``
``uvm_pmm_gpu_mark_root_chunk_used``, called from ``block_set_resident_processor``);
``lru="migrate"`` also refreshes it on every batch that migrates into it.
The chunks of the VA block being serviced are not evicted (the driver pins
chunks it is populating), so the capacity must hold at least one VA block;
a chunk populated earlier in the same batch may be evicted, and the warps
waiting on it fault again.
Oversubscription = touched pages' bytes / capacity. Because hits are invisible
to the driver, its list is close to first-in first-out, which admits Belady's
anomaly, and which faults share a batch depends on what is resident: for some
access patterns a larger capacity evicts more (tests/model/test_uvm.py checks
the bounds that always hold and exact counts for cyclic sweeps).

Thrashing (``uvm_perf_thrashing.c`` defaults: 3 events, the window from
``thrash_window_us``): a chunk re-migrated within ``thrash_window_us`` of its
eviction counts a thrashing event; ``thrash_events`` consecutive events mark
it thrashing, after which faults in it are serviced page by page (no growth to
big pages, no prefetch), as the driver does for thrashing pages. The driver's
further remedies (throttling, pinning to a remote mapping) are not modelled.
The clock for the window is the accumulated service time.

ReadMostly (``cudaMemAdviseSetReadMostly``): read faults duplicate pages; the
host keeps its copy, so evicting a read-only copy costs no write-back. A
write to a duplicated page faults again (counted as ``write_upgrades``; no
data moves) and the GPU copy becomes the only one. Duplicating pays the
batch, block and transfer costs but no move cost: the CPU's mappings were
already downgraded when the advice was applied. Setting read duplication on a
range calls ``uvm_va_block_make_resident_read_duplicate`` for the pages
already resident (``uvm_policy.c``), which revokes the CPU's write access
(``block_prep_read_duplicate_mapping``; the CPU's write revocation is an
unmap and a read-only remap, ``block_revoke_cpu_write``); a fault then finds
the pages read-only on the CPU and leaves the CPU's page tables alone. The
advice call itself pays for that revocation on memory the CPU has written
(the ``uvm_probe`` experiment measures it). With the costs fitted on
migrating first touch, ReadMostly's sequential front keeps the per-batch and
per-block costs of its many batches, while its random first touch (few
batches) loses most of its cost, the per-run unmapping (the H200's
``first_run`` experiment measured both, with and without advice). SetAccessedBy on
CPU-resident data, on x86 without ATS (access-counter migration off): no
faults, no migration; every host request is a remote zero-copy read or write,
returned in ``remote`` for the zero-copy model. ReadMostly wins if both are
set (emogi_vldb2020 §3.1: other advice overrides SetAccessedBy).

Read amplification = bytes migrated host to device / ``unique_B``, the
distinct bytes the host requests cover (a bitmap of 32 B sectors; exact byte
ranges when requests are off the sector grid). The seed's figure divides by
the dataset size instead, which equals ``unique_B`` when the traversal reads
every neighbour list.

Device time: every request's bytes (host-space after migration, and
device-space) read at ``gpu.device_bw_GBps``; a lower bound that ignores
latency. ``time_s = service_time_s + device_time_s``; launch overhead and
level synchronisation belong to the caller.

Not modelled: the copy engine splits a run where fault-driven and prefetched
pages meet (``block_copy_resident_pages_between`` starts a new copy when the
cause changes; CUPTI shows mostly 4-64 KiB copies), and it copies while the
driver services the batch's next block; both are folded into the fitted
costs.

Other assumptions: the allocation is 2 MB aligned, so VA blocks are whole
(prefetch may reach pages of a touched block that the kernel never asks for,
as the driver's does inside a block); a request crossing a page boundary
faults on both pages; requests are reads unless ``is_write``; the simulation is
deterministic; ``seed`` (optional) also shuffles the order in which runnable
warps run between batches, to test sensitivity to the GPU's scheduling.

References: the open NVIDIA kernel modules (NVIDIA/open-gpu-kernel-modules,
kernel-open/nvidia-uvm: uvm_perf_prefetch.c, uvm_pmm_gpu.c,
uvm_perf_thrashing.c, uvm_gpu_replayable_faults.c, uvm_va_block.c,
uvm_policy.c, uvm_migrate.c); Allen & Ge, "In-Depth
Analyses of Unified Virtual Memory System for GPU Accelerated Computing",
SC'21 (tallendev/uvm-eval); Ganguly et al., UVMSmart
(DebashisGanguly/gpgpu-sim_UVMSmart); the seeds emogi_vldb2020 §2.2, §5.3.4.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from hostlink.model.config.schema import LinkConfig, SystemConfig
from hostlink.model.errors import ConfigError
from hostlink.model.geometry import SECTOR_B, SECTOR_SHIFT
from hostlink.model.pcie.spec import raw_GBps
from hostlink.model.units import GiB
from hostlink.model.uvm import core
from hostlink.model.uvm.result import UvmLaunch, UvmResult
from hostlink.model.workload import SPACE_HOST, RequestStream

SERVICE_MODELS = ("curve", "linear")
FAULT_ORDERS = ("sm_interleaved", "warp")
DUPLICATE_MODELS = ("derived", "published")
LRU_RULES = ("populate", "migrate")

# The transfer-rate curve's a was fitted on PCIe 3.0 x16 (15.75 GB/s raw).
CURVE_REFERENCE_LINK_GBps = float(raw_GBps(3, 16))


def link_raw_GBps(link: LinkConfig) -> float:
    """Raw data rate of a link in GB/s per direction (after line encoding)."""
    return float(raw_GBps(link.gen, link.lanes))


def transfer_bw_GBps(size_B: float | np.ndarray, peak_GBps: float,
                     shape_per_KB: float) -> float | np.ndarray:
    """UVMSmart's transfer-rate curve ``(2a/pi) atan(k s_KB)``, s in units of 1024 B."""
    return (2.0 * peak_GBps / math.pi) * np.arctan(shape_per_KB * np.asarray(size_B) / 1024.0)


def curve_peak_GBps(system: SystemConfig, scale_to_link: bool = True) -> float:
    """The transfer curve's asymptote a on ``system``'s link (scaled from PCIe 3.0 x16)."""
    peak = float(system.uvm.transfer_peak_GBps)
    if scale_to_link:
        peak *= link_raw_GBps(system.link) / CURVE_REFERENCE_LINK_GBps
    return peak


def prefetch_time_s(size_B: float, system: SystemConfig, *, scale_to_link: bool = True,
                    call_us: float | None = None) -> float:
    """Time of ``cudaMemPrefetchAsync`` moving ``size_B`` bytes of host-resident managed
    memory (2 MB aligned) to the GPU: one transfer per VA block at the transfer curve,
    plus ``call_us`` once per call (the driver's fixed work per prefetch; None: the
    system's ``uvm.prefetch_call_us``)."""
    if call_us is None:
        call_us = system.uvm.prefetch_call_us
    if size_B < 0:
        raise ConfigError(f"prefetch_time_s: size_B must be >= 0, not {size_B}")
    if call_us < 0:
        raise ConfigError(f"prefetch_time_s: call_us must be >= 0, not {call_us}")
    u = system.uvm
    full, rest = divmod(int(size_B), int(u.va_block_B))
    peak = curve_peak_GBps(system, scale_to_link)
    t_ns = 0.0
    for n, size in ((full, u.va_block_B), (1 if rest else 0, rest)):
        if n:
            bw = float(transfer_bw_GBps(size, peak, u.transfer_shape_per_KB))
            t_ns += n * size / bw
    return t_ns * 1e-9 + call_us * 1e-6


def prefetch_pages(resident: np.ndarray, faulted: np.ndarray, *, threshold: float = 0.51,
                   big_page_pages: int = 16) -> np.ndarray:
    """Pages of one VA block the driver migrates for one batch's faults.

    ``resident`` and ``faulted`` are boolean masks over the block's pages. The
    result holds the faulted pages plus what the tree prefetcher adds, minus
    pages already resident. ``big_page_pages = 1`` disables the growth to big pages.
    """
    resident = np.asarray(resident, dtype=bool)
    faulted = np.asarray(faulted, dtype=bool) & ~resident
    n = resident.shape[0]
    if faulted.shape != resident.shape:
        raise ValueError("resident and faulted masks differ in length")
    if n & (n - 1) or big_page_pages < 1 or n % big_page_pages:
        raise ValueError("the block's page count must be a power of two, a multiple of the big page")
    tree = (resident | faulted).astype(np.uint8)
    offs = np.flatnonzero(faulted)
    for big in np.unique(offs // big_page_pages):
        tree[big * big_page_pages:(big + 1) * big_page_pages] = 1
    out = np.zeros(n, dtype=np.uint8)
    core.prefetch_region_mask(tree, offs.astype(np.int64), float(threshold), out)
    out = out.astype(bool) | faulted
    return out & ~resident


def remote_requests(stream: RequestStream) -> RequestStream:
    """What SetAccessedBy on CPU-resident managed memory sends over PCIe: every host request."""
    return stream.select(stream.space == SPACE_HOST)


#: bytes of sector bitmap :func:`unique_bytes` may take whatever the ranges' count
SECTOR_MAP_MIN_B = 64 << 20


def unique_bytes(addr: np.ndarray, size_B: np.ndarray) -> int:
    """Distinct bytes covered by the ranges [addr, addr + size_B)."""
    n = addr.shape[0]
    if n == 0:
        return 0
    addr = np.asarray(addr, dtype=np.uint64)
    size = np.asarray(size_B, dtype=np.uint64)
    lo, top = int(addr.min()) & ~(SECTOR_B - 1), int(addr.max()) + int(size.max())
    sectors = (top - lo) >> SECTOR_SHIFT
    if top < (1 << 62) and sectors // 8 <= max(SECTOR_MAP_MIN_B, 8 * n):
        # ranges of whole sectors (a coalesced stream's) on a bitmap of the sectors they
        # span, no larger than the sort's 8 B keys: no sort
        got = core.covered_sectors_B(addr.view(np.int64), size.view(np.int64), lo,
                                     np.zeros(sectors // 64 + 1, dtype=np.uint64))
        if got >= 0:
            return int(got)
    if int(addr.max()) < (1 << 48) and int(size.max()) <= 1 << 16:
        # one sort of a packed key: address in the high bits, size - 1 in the low 16
        key = (addr << np.uint64(16)) | (size - np.uint64(1))
        key.sort()
        s = key >> np.uint64(16)
        e = s + (key & np.uint64(0xFFFF)) + np.uint64(1)
    else:
        order = np.argsort(addr)
        s = addr[order]
        e = s + size[order]
    return int(core.covered_bytes(s.view(np.int64), e.view(np.int64)))


def sm_interleaved_warps(host: RequestStream, sm_count: int) -> np.ndarray:
    """Warp labels that sort each launch's warps in the order their faults reach the
    fault buffer: the k-th warp of every SM before the (k+1)-th warp of any SM, CTAs
    dealt to the SMs round robin (CTA c on SM c mod ``sm_count``), a CTA's warps in
    order. Without launch records every warp is its own CTA and the order is the
    warps' own."""
    return _interleaved_labels(host.launches, host.launch, host.warp, sm_count)


def _interleaved_labels(launches, launch: np.ndarray, warp: np.ndarray,
                        sm_count: int) -> np.ndarray:
    """:func:`sm_interleaved_warps` of the rows with these launch and warp columns."""
    wpc = np.array([max(1, i.warps_per_cta) for i in launches] or [1], dtype=np.int64)
    per = wpc[np.minimum(launch.astype(np.int64), len(wpc) - 1)]
    w = warp.astype(np.int64)
    cta = w // per
    rank = (cta // sm_count) * per + w % per
    return rank * sm_count + cta % sm_count


def _in_fault_order(stream: RequestStream, rows: np.ndarray | None,
                    sm_count: int) -> RequestStream:
    """The stream's rows ``rows`` (its host requests; None: every row) with their warps
    relabelled by :func:`sm_interleaved_warps` and in (launch, new label, instruction)
    order, taken from ``stream`` in one gather. Rows already grouped by warp move as
    whole runs (no sort of the rows)."""
    def col(name):
        return getattr(stream, name) if rows is None else getattr(stream, name)[rows]
    launch_h, warp_h = col("launch"), col("warp")
    key = _interleaved_labels(stream.launches, launch_h, warp_h, sm_count)
    if int(key.max()) >= 1 << 32:
        raise ConfigError(f"simulate_uvm: warp label {int(key.max())} does not fit the "
                          "request stream's 32-bit warp column")
    n = len(key)
    launch = launch_h.astype(np.int64)
    new = np.ones(n, dtype=bool)
    new[1:] = (launch_h[1:] != launch_h[:-1]) | (warp_h[1:] != warp_h[:-1])
    del launch_h, warp_h
    starts = np.flatnonzero(new)
    lens = np.diff(np.append(starts, n))
    order = np.lexsort((key[starts], launch[starts]))
    sl, sk = launch[starts][order], key[starts][order]
    grouped = not np.any((sl[1:] == sl[:-1]) & (sk[1:] == sk[:-1]))
    if grouped:
        s, ln = starts[order], lens[order]
        idx = np.repeat(s - (np.cumsum(ln) - ln), ln) + np.arange(n)
    else:
        idx = np.lexsort((col("inst"), key, launch))
    del launch
    out = stream.select(idx if rows is None else rows[idx])
    return dataclasses.replace(out, warp=key[idx].astype(stream.warp.dtype))


def _log2_exact(value: int, what: str) -> int:
    if value < 1 or value & (value - 1):
        raise ConfigError(f"{what} must be a power of two, not {value}")
    return value.bit_length() - 1


# Largest VA-block range mapped through a lookup table (8 TB of address space at 2 MB).
_MAX_BLOCK_TABLE = 1 << 22


def _prepare(host: RequestStream, page_shift: int, block_shift: int):
    """Accesses (a request spanning two pages gives two) on dense page numbers, the
    instruction, warp and launch index arrays, the dense page count and the distinct
    bytes the requests cover (None where they are not in 32 B sectors)."""
    cols = (host.addr, host.size_B, host.launch, host.warp, host.inst)
    (a_min, last_max, in_order, aligned, n_span, max_span, n_inst, n_warp,
     n_launch) = core.scan_requests(*cols, page_shift)
    if max_span > 1:
        raise ConfigError("a request spans more than two pages; requests are at most 128 B")
    if not in_order:
        # stable: a warp's requests of one instruction keep their order
        host = host.select(np.lexsort((host.inst, host.warp, host.launch)))
        cols = (host.addr, host.size_B, host.launch, host.warp, host.inst)
        *_, n_inst, n_warp, n_launch = core.scan_requests(*cols, page_shift)
    blk_lo = int(a_min) >> block_shift
    blk_hi = int(last_max) >> block_shift
    if blk_hi - blk_lo + 1 <= _MAX_BLOCK_TABLE:
        present = np.zeros(blk_hi - blk_lo + 1, dtype=np.int64)
        core.mark_blocks(host.addr, host.size_B, block_shift, blk_lo, present)
        rank = np.cumsum(present) - 1
        block_ids = np.flatnonzero(present).astype(np.int64) + blk_lo
    else:
        # a sparse address space: move every touched VA block next to the previous one
        # (offsets within blocks kept; a request reaching into the next block touches it,
        # so that block follows directly), then map as above
        blocks = np.unique(np.concatenate([
            host.addr >> np.uint64(block_shift),
            (host.addr + (host.size_B.astype(np.uint64) - np.uint64(1))) >> np.uint64(block_shift)]))
        new_block = np.searchsorted(blocks, host.addr >> np.uint64(block_shift)).astype(np.uint64)
        offset = host.addr & np.uint64((1 << block_shift) - 1)
        cols = ((new_block << np.uint64(block_shift)) | offset,) + cols[1:]
        blk_lo = 0
        rank = np.arange(blocks.shape[0], dtype=np.int64)
        block_ids = blocks.astype(np.int64)
    sector_words = -(-(1 << (page_shift - 5)) // 64) if aligned else 0
    (dense, acc_write, inst_ptr, warp_ptr, launch_ptr, launch_ids, n_pages,
     covered_B) = core.build_accesses(*cols, host.is_write, page_shift, block_shift - page_shift,
                                      blk_lo, rank, len(host) + n_span, n_inst, n_warp,
                                      n_launch, sector_words)
    uniq_B = covered_B if aligned else unique_bytes(host.addr, host.size_B)
    return (dense, acc_write, inst_ptr, warp_ptr, launch_ptr, launch_ids, n_pages, uniq_B,
            block_ids)


def block_valid_pages(block_ids: np.ndarray, managed, page_shift: int,
                      block_shift: int) -> np.ndarray:
    """Pages of each VA block ``block_ids`` (block numbers of the stream's addresses)
    that the prefetch tree spans: those up to the last byte of a managed buffer of
    ``managed`` ((start, bytes) pairs) in the block, so a buffer's last block spans
    its own pages alone (the driver's VA block is the buffer's part of the 2
    MiB-aligned region, and its tree spans that block's pages: ``uvm_perf_prefetch.c``
    in the open driver); the whole block where no buffer is known there."""
    block_pages = 1 << (block_shift - page_shift)
    valid = np.full(len(block_ids), block_pages, dtype=np.int64)
    if not managed or not len(block_ids):
        return valid
    first = block_ids.astype(np.int64) << block_shift
    last = first + (1 << block_shift)
    top = np.zeros(len(block_ids), dtype=np.int64)
    for start, size in managed:
        start, end = int(start), int(start) + int(size)
        inside = (start < last) & (end > first)
        top = np.where(inside, np.maximum(top, np.minimum(end, last)), top)
    known = top > 0
    valid[known] = -(-(top[known] - first[known]) >> page_shift)
    return valid


# Streams of up to this many host requests keep their prepared accesses
# (hostlink.model.stream_memo): a calibration predicts them on every evaluation.
# Larger ones (traversals, predicted once or twice) do not: the arrays would add
# about three quarters of the stream's own memory while it lives.
PREPARED_MEMO_MAX_REQUESTS = 1 << 22


def _fault_accesses(stream: RequestStream, host_rows: np.ndarray | None, fault_order: str,
                    sm_count: int, page_shift: int, block_shift: int):
    """:func:`_prepare` of the stream's host requests (rows ``host_rows``; None: every
    row) in the fault order asked for; kept with ``stream`` while it is small."""
    def compute():
        if fault_order == "sm_interleaved":
            ordered = _in_fault_order(stream, host_rows, sm_count)
        else:
            ordered = stream if host_rows is None else stream.select(host_rows)
        return _prepare(ordered, page_shift, block_shift)

    n_host = len(stream) if host_rows is None else len(host_rows)
    if n_host > PREPARED_MEMO_MAX_REQUESTS:
        return compute()
    from hostlink.model.stream_memo import memoized
    return memoized(stream, "uvm_accesses", (fault_order, sm_count, page_shift, block_shift),
                    compute)


#: rows counted at a time by :func:`_per_launch_bytes` (bounds its float copies)
LAUNCH_BYTES_BATCH_ROWS = 1 << 22


def _per_launch_bytes(stream: RequestStream) -> tuple[np.ndarray, np.ndarray]:
    """Request bytes and rows per launch, ``LAUNCH_BYTES_BATCH_ROWS`` rows at a time:
    the bytes are whole numbers, so the float sums are exact in any order."""
    n = int(stream.launch.max()) + 1 if len(stream) else 0
    total_B = np.zeros(n)
    rows = np.zeros(n, dtype=np.int64)
    for r0 in range(0, len(stream), LAUNCH_BYTES_BATCH_ROWS):
        launch = stream.launch[r0:r0 + LAUNCH_BYTES_BATCH_ROWS]
        total_B += np.bincount(launch, weights=stream.size_B[r0:r0 + LAUNCH_BYTES_BATCH_ROWS],
                               minlength=n)
        rows += np.bincount(launch, minlength=n)
    return total_B, rows


def largest_buffer_B(managed) -> int | None:
    """Bytes of the largest of ``managed``'s (start, bytes) buffers; None where unknown."""
    return max((int(size) for _, size in managed), default=None) if managed else None


def first_fault_cost_us(uvm, back_to_back: bool, managed_B: int | None = None) -> float:
    """A run's one-off cost of its first fault batch: for a run of back-to-back
    launches, ``uvm.launches_one_block_first_fault_us`` where set and the run's largest
    managed buffer (``managed_B``, where known) lies within one VA block, else
    ``uvm.launches_first_fault_us`` where set; else ``uvm.first_fault_us``."""
    if back_to_back and uvm.launches_one_block_first_fault_us is not None \
            and managed_B is not None and 0 < managed_B <= uvm.va_block_B:
        return float(uvm.launches_one_block_first_fault_us)
    if back_to_back and uvm.launches_first_fault_us is not None:
        return float(uvm.launches_first_fault_us)
    return float(uvm.first_fault_us)


def simulate_uvm(stream: RequestStream, system: SystemConfig, *, read_mostly: bool = False,
                 accessed_by: bool = False, capacity_B: float | None = None,
                 service: str = "curve", duplicates: str = "derived", lru: str = "populate",
                 scale_to_link: bool = True, resident_warps: int | None = None,
                 seed: int | None = None, block_us: float | None = None,
                 move_page_us: float | None = None, move_run_us: float | None = None,
                 fault_us: float | None = None, first_fault_us: float | None = None,
                 copy_page_us: float | None = None, raised_fault_us: float | None = None,
                 fault_order: str = "sm_interleaved", back_to_back: bool = False,
                 managed=None) -> UvmResult:
    """Simulate a request stream on managed memory (see the module docstring).

    Keyword options: ``service`` ("curve" | "linear") picks the batch service
    model, ``duplicates`` ("derived" | "published") the duplicate-fault model,
    ``lru`` ("populate" | "migrate") when a chunk becomes most recently used,
    ``scale_to_link`` scales the transfer curve to the link's raw rate,
    ``resident_warps`` overrides the concurrent warp count, ``seed`` shuffles
    the run order of runnable warps between batches (None: no shuffle),
    ``fault_order`` ("sm_interleaved" | "warp") the order in which the
    warps' faults reach the fault buffer, ``block_us`` the driver time per VA
    block a batch services, ``copy_page_us`` per page it copies to the GPU
    (migrated or read-duplicated), ``move_page_us`` per page and ``move_run_us``
    per contiguous run of pages it moves off the host, ``fault_us`` per distinct
    page a batch fetches a fault for, ``raised_fault_us`` per fault the warps
    raise on a page no queued fault is pending for, and ``first_fault_us`` once,
    with the first batch (see the module docstring). The driver costs given as None
    take the system's (``uvm.block_us`` and so on); ``first_fault_us`` takes
    ``uvm.launches_first_fault_us`` where ``back_to_back`` (a run of launches one
    after another whose pages went to the GPU and back) and that is set, else
    ``uvm.first_fault_us``. ``managed``: the run's managed buffers as (start
    address, bytes) pairs, where known; a run of back-to-back launches whose buffers
    each lie within one VA block pays ``uvm.launches_one_block_first_fault_us``
    (:func:`first_fault_cost_us`), and a buffer's last VA block spans its pages
    alone (:func:`block_valid_pages`). Each buffer is taken to start on a VA block.
    """
    uvm, gpu = system.uvm, system.gpu
    block_us = uvm.block_us if block_us is None else block_us
    move_page_us = uvm.move_page_us if move_page_us is None else move_page_us
    move_run_us = uvm.move_run_us if move_run_us is None else move_run_us
    fault_us = uvm.fault_us if fault_us is None else fault_us
    copy_page_us = uvm.copy_page_us if copy_page_us is None else copy_page_us
    raised_fault_us = uvm.raised_fault_us if raised_fault_us is None else raised_fault_us
    if first_fault_us is None:
        first_fault_us = first_fault_cost_us(uvm, back_to_back, largest_buffer_B(managed))
    for name, value in (("block_us", block_us), ("move_page_us", move_page_us),
                        ("move_run_us", move_run_us), ("fault_us", fault_us),
                        ("first_fault_us", first_fault_us), ("copy_page_us", copy_page_us),
                        ("raised_fault_us", raised_fault_us)):
        try:
            ok = math.isfinite(float(value)) and float(value) >= 0
        except (TypeError, ValueError):
            ok = False
        if not ok:
            raise ConfigError(f"simulate_uvm: {name} must be a number >= 0, not {value!r}")
    for name, value, allowed in (("service", service, SERVICE_MODELS),
                                 ("duplicates", duplicates, DUPLICATE_MODELS),
                                 ("lru", lru, LRU_RULES),
                                 ("fault_order", fault_order, FAULT_ORDERS)):
        if value not in allowed:
            raise ConfigError(f"simulate_uvm: {name}='{value}' is not one of {', '.join(allowed)}")
    if capacity_B is None:
        gib = uvm.gpu_memory_available_GiB if uvm.gpu_memory_available_GiB is not None \
            else gpu.memory_GiB
        capacity_B = gib * GiB
    if not capacity_B > 0:
        raise ConfigError(f"simulate_uvm: capacity_B must be > 0, not {capacity_B}")
    if resident_warps is None:
        resident_warps = gpu.sm_count * gpu.max_warps_per_sm
    if resident_warps < 1:
        raise ConfigError(f"simulate_uvm: resident_warps must be >= 1, not {resident_warps}")
    page_shift = _log2_exact(uvm.page_B, "uvm.page_B")
    block_shift = _log2_exact(uvm.va_block_B, "uvm.va_block_B")
    big_shift = _log2_exact(uvm.prefetch_block_B, "uvm.prefetch_block_B")
    chunk_shift = _log2_exact(uvm.evict_chunk_B, "uvm.evict_chunk_B")
    if not page_shift <= big_shift <= block_shift:
        raise ConfigError("uvm.prefetch_block_B must lie between uvm.page_B and uvm.va_block_B")
    if not page_shift <= chunk_shift <= block_shift:
        raise ConfigError("uvm.evict_chunk_B must lie between uvm.page_B and uvm.va_block_B")
    capacity_chunks = int(capacity_B // uvm.evict_chunk_B)
    if capacity_chunks * uvm.evict_chunk_B < uvm.va_block_B:
        raise ConfigError(f"simulate_uvm: capacity {capacity_B:.0f} B is smaller than one "
                          f"{uvm.va_block_B} B VA block")

    is_host = stream.space == SPACE_HOST
    host_rows = None if is_host.all() else np.flatnonzero(is_host)
    n_host = len(stream) if host_rows is None else len(host_rows)
    total_B = int(stream.size_B.sum(dtype=np.int64))
    device_B = total_B - int(stream.size_B[is_host].sum(dtype=np.int64))
    del is_host
    dev_Bps = gpu.device_bw_GBps * 1e9
    mode = "read_mostly" if read_mostly else ("accessed_by" if accessed_by else "migrate")

    if mode == "accessed_by":
        host = stream if host_rows is None else stream.select(host_rows)
        uniq_B = unique_bytes(host.addr, host.size_B)
        launches = np.unique(stream.launch)
        per = []
        for lid in launches:
            sel = (stream.launch == lid) & (stream.space != SPACE_HOST)
            t = float(stream.size_B[sel].sum(dtype=np.int64)) / dev_Bps
            per.append(UvmLaunch(int(lid), t, 0.0, t, 0, 0, 0, 0, 0, 0, 0, 0, 0))
        touched = np.unique(host.addr >> np.uint64(page_shift)).shape[0] * uvm.page_B
        return UvmResult(mode=mode, time_s=device_B / dev_Bps, service_time_s=0.0,
                         h2d_time_s=0.0, d2h_time_s=0.0, device_time_s=device_B / dev_Bps,
                         faults=0, faults_unique=0, faults_duplicate=0, write_upgrades=0,
                         batches=0, h2d_B=0, prefetched_B=0, d2h_B=0, evictions=0,
                         thrashing_events=0, thrashing_chunks=0, unique_B=uniq_B,
                         touched_B=int(touched), capacity_B=int(capacity_B),
                         host_requests=len(host), remote=remote_requests(stream),
                         per_launch=tuple(per))

    if n_host:
        (dense, acc_write, inst_ptr, warp_ptr, launch_ptr, launch_ids, n_pages,
         uniq_B, block_ids) = _fault_accesses(stream, host_rows, fault_order, gpu.sm_count,
                                              page_shift, block_shift)
    else:
        dense, acc_write = np.zeros(0, np.int64), np.zeros(0, np.bool_)
        inst_ptr = warp_ptr = launch_ptr = np.zeros(1, np.int64)
        launch_ids, n_pages, uniq_B = np.zeros(0, np.int64), 0, 0
        block_ids = np.zeros(0, np.int64)
    if duplicates == "published":
        frac = uvm.duplicate_fault_fraction
        unique_cap = max(1, math.ceil(uvm.fault_batch_size * (1.0 - frac)))
        dup_per_unique = frac / (1.0 - frac)
    else:
        unique_cap, dup_per_unique = 0, 0.0
    peak = curve_peak_GBps(system, scale_to_link)
    stats, touched = core.simulate_faults(
        dense, acc_write, inst_ptr, warp_ptr, launch_ptr,
        n_pages, 1 << (block_shift - page_shift), 1 << (big_shift - page_shift),
        1 << (chunk_shift - page_shift), capacity_chunks,
        uvm.fault_batch_size, unique_cap, dup_per_unique,
        uvm.prefetch, float(uvm.prefetch_threshold), read_mostly, lru == "migrate",
        service == "linear", float(uvm.batch_base_us), float(uvm.migrate_per_KB_us),
        float(uvm.page_B), float(peak), float(uvm.transfer_shape_per_KB),
        uvm.thrash_events, float(uvm.thrash_window_us), int(resident_warps),
        -1 if seed is None else int(seed),
        block_valid_pages(block_ids, managed, page_shift, block_shift),
        float(block_us), float(move_page_us),
        float(move_run_us), float(fault_us), float(first_fault_us), float(copy_page_us),
        float(raised_fault_us))

    # device time per launch: all of the launch's request bytes at device bandwidth
    launch_bytes, launch_rows = _per_launch_bytes(stream)
    all_launch = np.flatnonzero(launch_rows)
    bytes_per_launch = launch_bytes[all_launch]
    row_of = {int(lid): k for k, lid in enumerate(launch_ids)}
    per = []
    page_B = uvm.page_B
    for k, lid in enumerate(all_launch):
        dev_t = float(bytes_per_launch[k]) / dev_Bps
        r = row_of.get(int(lid))
        s = stats[r] if r is not None else np.zeros(core.N_STATS)
        svc = float(s[core.ST_SERVICE_US]) * 1e-6
        per.append(UvmLaunch(
            launch=int(lid), time_s=svc + dev_t, service_time_s=svc, device_time_s=dev_t,
            faults=float(s[core.ST_FAULTS]), faults_unique=float(s[core.ST_UNIQUE]),
            faults_duplicate=float(s[core.ST_DUP]), batches=int(s[core.ST_BATCHES]),
            h2d_B=int(s[core.ST_H2D_PAGES]) * page_B,
            prefetched_B=int(s[core.ST_PREF_PAGES]) * page_B,
            d2h_B=int(s[core.ST_D2H_PAGES]) * page_B, evictions=int(s[core.ST_EVICT]),
            thrashing_events=int(s[core.ST_THRASH]), faults_raised=float(s[core.ST_RAISED])))
    tot = stats.sum(axis=0) if stats.shape[0] else np.zeros(core.N_STATS)
    service_s = float(tot[core.ST_SERVICE_US]) * 1e-6
    device_s = total_B / dev_Bps
    return UvmResult(
        mode=mode, time_s=service_s + device_s, service_time_s=service_s,
        h2d_time_s=float(tot[core.ST_H2D_US]) * 1e-6, d2h_time_s=float(tot[core.ST_D2H_US]) * 1e-6,
        device_time_s=device_s, faults=float(tot[core.ST_FAULTS]),
        faults_unique=float(tot[core.ST_UNIQUE]), faults_duplicate=float(tot[core.ST_DUP]),
        write_upgrades=int(tot[core.ST_UPGRADES]), batches=int(tot[core.ST_BATCHES]),
        h2d_B=int(tot[core.ST_H2D_PAGES]) * page_B, prefetched_B=int(tot[core.ST_PREF_PAGES]) * page_B,
        d2h_B=int(tot[core.ST_D2H_PAGES]) * page_B, evictions=int(tot[core.ST_EVICT]),
        thrashing_events=int(tot[core.ST_THRASH]), thrashing_chunks=int(tot[core.ST_THRASH_CHUNKS]),
        unique_B=uniq_B, touched_B=int(touched.sum()) * page_B, capacity_B=int(capacity_B),
        host_requests=n_host, block_services=int(tot[core.ST_BLOCK_SVC]),
        migration_runs=int(tot[core.ST_RUNS]), move_runs=int(tot[core.ST_MOVE_RUNS]),
        driver_time_s=float(tot[core.ST_DRIVER_US]) * 1e-6,
        faults_raised=float(tot[core.ST_RAISED]),
        remote=None, per_launch=tuple(per))
