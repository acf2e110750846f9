"""Address translation of zero-copy host reads: GPU TLB and an optional IOMMU.

A zero-copy read of pinned host memory is translated twice on its way out:
the GPU's MMU maps the virtual address to a system physical (bus) address,
and on hosts with an IOMMU in translating mode the root complex maps that
bus address to a host physical address. A miss in either translation cache
costs a page walk; walks run a few at a time, so a scattered access pattern
that misses often can be bound by translation rather than by the link.

Model
-----
- Each cache is a fully associative LRU over pages: the GPU's last-level TLB
  with ``tlb_entries`` entries of ``page_B`` bytes, and the IOTLB with
  ``iommu_iotlb_entries`` entries of ``iommu_page_B``. A request misses when
  its page is not among the ``entries`` most recently used distinct pages
  (reuse distance >= entries), or on first touch. Requests that straddle
  a page boundary are rare (<= 128 B requests at 32 B alignment) and are
  translated by the page of their first byte.
- A warp's read of the page its previous host read touched does not reach
  the last-level TLB: the SM's first-level TLB holds that translation, or the
  miss merges into the walk already under way for it (GPU TLBs keep pending
  misses and serve later ones to the same page from one walk; Power, Hill and
  Wood, "Supporting x86-64 address translation for 100s of GPU lanes", HPCA
  2014, §4; Pichai, Hsu and Bhattacharjee, "Architectural support for address
  translation on GPUs", ASPLOS 2014). So a warp reading a 4 KiB row through 32
  line requests walks once, not 32 times (:func:`warp_page_repeats`). Only the
  warp's own last page counts: the first level's size and sharing between an
  SM's warps are not modelled.
- A miss adds ``miss_lat_ns`` (``iommu_miss_lat_ns``) to that request's
  round trip. ``walkers`` walks proceed at once, so the caches sustain at most
  ``walkers / miss_lat_ns`` misses per ns; with a fraction ``m`` of requests
  missing and ``S`` bytes per request, translation bounds the bandwidth at
  ``S * walkers / (m * miss_lat_ns)`` B/ns, i.e. GB/s (:func:`translation_bound_GBps`).
  The IOMMU's concurrent walks are not in the configuration; they default to
  ``walkers`` (an assumption, keyword ``iommu_walkers``).
- The order in which requests reach the TLB is the order in which warps issue
  them, not the per-warp order of a RequestStream; :func:`issue_order`
  approximates it by letting the resident warps issue one instruction each in
  turn (round robin), warps beyond the resident count following in waves.

Calibration. Random 128 B lines over growing regions measure the reach and
the walk throughput: for independent uniform references the LRU miss rate is
``1 - E page_B / R`` (:func:`uniform_miss_rate`), so two regions on the
walker-bound side fix the reach (:func:`reach_from_two_regions`) and the
deeper one ``walkers / miss_lat_ns`` (the ``first_run`` experiment's random
lines; a dependent pointer chase over a region past the reach checks the walk
latency). Bandwidth alone fixes only the ratio of walkers to walk latency;
``walkers`` is kept and the latency fitted. The data do not say which
translation cache has that reach: the GPU's last-level TLB over 2 MB pages and
a host IOTLB over 2 MB pages (the VM's IOMMU) would look the same, and one
level describes both; a second, smaller level whose misses hit in the first
would cost latency only (a few tens of ns, hidden at these loads) and is not
modelled.

Managed memory on the host. Managed memory the GPU reads where it lies on the
host (``cudaMemAdviseSetAccessedBy``, nothing migrating) is mapped by the
UVM driver, not as pinned memory is, and its misses do not bind alike:
random lines past the reach run several times faster over it than over pinned
memory, while a dependent chase over either grows alike (the
``accessedby_reach`` experiment, ``validation/experiments/accessedby_reach/``).
The same reach and walk latency serve both; the walks in flight differ
(``managed_walkers``), and :func:`managed_host_view` gives the system as such
memory is translated.

A flushed L2. A benchmark that flushes the GPU's L2 before each timed kernel
also evicts the page-table entries the walks read, so a short kernel past the
reach walks slower than a long one, and at the long one's rate when no flush
comes before it (the ``gather_walks`` experiment). The flushed kernel's extra
time grows with the distinct page-table spans its walks touch, about the same
per span over 1 to 16 GiB when a span is :data:`PAGE_TABLE_SPAN_B` (a 64 B line
of 8 B entries of 4 KiB pages). :func:`cold_span_time_ns` charges
``cold_span_ns`` for each; the walks' own rate is the long kernels'. A run that
starts with a warm L2 (a training loop's next minibatch) pays none of it.

Assumptions (no public figures exist for the reach or the miss cost of host
mappings on NVIDIA GPUs; every parameter of ``TranslationConfig`` is marked an
assumption and is calibrated from the random-line microbenchmark in the
validation): a single shared last-level TLB, fully associative with true LRU;
no translation prefetching; L1 TLBs are not modelled (their misses that hit in
the last level cost little next to a PCIe round trip); walk latency is fixed
(no page-walk cache). With ``enabled = false`` nothing misses.

References: the open NVIDIA UVM driver (NVIDIA/open-gpu-kernel-modules,
kernel-open/nvidia-uvm/uvm_va_block.c: remote mappings are not cached); the
IOMMU's IOTLB and its walk latency are those of the host platform (Intel VT-d,
AMD-Vi), also assumptions here.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, replace

import numba
import numpy as np

from hostlink.model.config.schema import TranslationConfig
from hostlink.model.errors import ConfigError
from hostlink.model.workload import SPACE_HOST, RequestStream

__all__ = ["TranslationResult", "issue_order", "issue_permutation", "lru_misses",
           "managed_host_view", "LruCarry",
           "warp_keys_of", "warp_page_repeats",
           "reach_from_two_regions",
           "translation_bound_GBps", "translation_misses", "simulate_translation",
           "cold_span_time_ns", "PAGE_TABLE_SPAN_B",
           "stream_translation", "uniform_miss_rate"]


@numba.njit(cache=True)
def _lru_misses(ids: np.ndarray, n_ids: int, entries: int) -> np.ndarray:
    """Fully associative LRU over dense ids 0..n_ids-1: a doubly linked list in arrays."""
    n = ids.shape[0]
    miss = np.zeros(n, dtype=np.bool_)
    prev = np.full(n_ids, -1, dtype=np.int64)
    nxt = np.full(n_ids, -1, dtype=np.int64)
    present = np.zeros(n_ids, dtype=np.bool_)
    head = -1
    tail = -1
    count = 0
    for i in range(n):
        p = ids[i]
        if present[p]:
            if p != head:
                # unlink p, then push it at the head
                a = prev[p]
                b = nxt[p]
                nxt[a] = b
                if b >= 0:
                    prev[b] = a
                else:
                    tail = a
                prev[p] = -1
                nxt[p] = head
                prev[head] = p
                head = p
            continue
        miss[i] = True
        present[p] = True
        prev[p] = -1
        nxt[p] = head
        if head >= 0:
            prev[head] = p
        head = p
        if tail < 0:
            tail = p
        count += 1
        if count > entries:
            victim = tail
            tail = prev[victim]
            nxt[tail] = -1
            present[victim] = False
            prev[victim] = -1
            count -= 1
    return miss


@numba.njit(cache=True)
def _last_distinct(ids: np.ndarray, n_ids: int, entries: int) -> np.ndarray:
    """Positions of the last ``entries`` distinct ids of a sequence, each at its last
    occurrence, in the sequence's order: what an LRU cache of ``entries`` holds after
    it, least recently used first."""
    seen = np.zeros(n_ids, dtype=np.bool_)
    out = np.empty(min(entries, n_ids), dtype=np.int64)
    k = 0
    for i in range(ids.shape[0] - 1, -1, -1):
        if k == out.shape[0]:
            break
        if not seen[ids[i]]:
            seen[ids[i]] = True
            out[k] = i
            k += 1
    return out[:k][::-1].copy()


class LruCarry:
    """What a fully associative LRU cache holds between two parts of one key sequence
    (``keys``, least recently used first): :func:`lru_misses` of the parts in turn,
    each with the carry, flags what it flags on the whole sequence."""

    def __init__(self):
        self.keys = np.zeros(0, dtype=np.uint64)


def lru_misses(keys: np.ndarray, entries: int, carry: LruCarry | None = None) -> np.ndarray:
    """Miss flags of a fully associative LRU cache of ``entries`` over a key sequence;
    ``carry``: the cache as the sequence before these keys left it, updated to what
    they leave (:class:`LruCarry`)."""
    if entries < 1:
        raise ConfigError(f"TLB entries must be >= 1, not {entries}")
    keys = np.asarray(keys)
    if keys.size == 0:
        return np.zeros(0, dtype=np.bool_)
    held = 0 if carry is None else len(carry.keys)
    if held:
        # the held keys, least recently used first, rebuild the cache as it was
        keys = np.concatenate([carry.keys.astype(keys.dtype, copy=False), keys])
    n_ids, ids = dense_ids(keys)
    miss = _lru_misses(ids, n_ids, int(entries))[held:]
    if carry is not None:
        carry.keys = keys[_last_distinct(ids, n_ids, int(entries))].astype(np.uint64)
    return miss


def dense_ids(keys: np.ndarray) -> tuple[int, np.ndarray]:
    """Distinct keys numbered 0, 1, ...: their count and each key's number."""
    lo, hi = int(keys.min()), int(keys.max())
    span = hi - lo + 1
    if span <= max(1 << 22, 2 * keys.shape[0]):
        # a lookup table over the key range: no sort
        table = np.full(span, -1, dtype=np.int64)
        rel = (keys - keys.dtype.type(lo)).astype(np.int64)
        table[rel] = 0
        present = table == 0
        table[present] = np.arange(int(present.sum()), dtype=np.int64)
        return int(present.sum()), table[rel]
    uniq, ids = np.unique(keys, return_inverse=True)
    return int(uniq.shape[0]), ids.astype(np.int64).reshape(-1)


def managed_host_view(system):
    """``system`` as managed memory left on the host (SetAccessedBy) is translated: its
    page walks in flight are ``translation.managed_walkers`` (the same reach and walk
    latency as pinned memory; see the module docstring)."""
    cfg = system.translation
    if cfg.managed_walkers == cfg.walkers:
        return system
    return replace(system, translation=replace(cfg, walkers=int(cfg.managed_walkers)))


def translation_misses(pages: np.ndarray, cfg: TranslationConfig,
                       warp_keys: np.ndarray | None = None, *,
                       repeats: np.ndarray | None = None,
                       carry: LruCarry | None = None) -> np.ndarray:
    """GPU TLB miss flags of a sequence of page numbers (addr // cfg.page_B), in the
    order they reach the TLB. With ``warp_keys`` (one key per request naming its
    warp), a warp's repeat of its previous page (:func:`warp_page_repeats`) hits
    without reaching the last-level TLB; ``repeats`` gives those flags where the
    caller has them already. ``carry``: the TLB as the reads before these left it
    (:class:`LruCarry`; a warp's reads all among these)."""
    pages = np.asarray(pages)
    if not cfg.enabled:
        return np.zeros(pages.shape[0], dtype=np.bool_)
    if repeats is None:
        if warp_keys is None:
            return lru_misses(pages, cfg.tlb_entries, carry)
        repeats = warp_page_repeats(pages, warp_keys)
    miss = np.zeros(pages.shape[0], dtype=np.bool_)
    reach = ~np.asarray(repeats, dtype=bool)
    if reach.any():
        miss[reach] = lru_misses(pages[reach], cfg.tlb_entries, carry)
    return miss


def warp_page_repeats(pages: np.ndarray, warp_keys: np.ndarray) -> np.ndarray:
    """True where a request's page is the page of the previous request of the same
    warp (same key), both in the given (issue) order."""
    pages = np.asarray(pages)
    keys = np.asarray(warp_keys)
    if pages.shape != keys.shape:
        raise ValueError(f"pages and warp_keys differ in shape: {pages.shape} vs {keys.shape}")
    out = np.zeros(pages.shape[0], dtype=np.bool_)
    if pages.shape[0] < 2:
        return out
    by_warp = np.argsort(keys, kind="stable")   # each warp's requests, in order
    k, p = keys[by_warp], pages[by_warp]
    out[by_warp[1:]] = (k[1:] == k[:-1]) & (p[1:] == p[:-1])
    return out


def warp_keys_of(stream: RequestStream, rows: np.ndarray | None = None) -> np.ndarray:
    """One key per request (of ``rows``, all by default) naming its warp across the
    stream's launches."""
    launch, warp = (stream.launch, stream.warp) if rows is None else \
        (stream.launch[rows], stream.warp[rows])
    return (launch.astype(np.int64) << np.int64(32)) | warp.astype(np.int64)


#: host memory whose page-table entries one cold fetch brings: a 64 B line of 8 B
#: entries of 4 KiB pages (the extra time of a flushed kernel grows with these spans
#: alike over 1 to 16 GiB, not with 16 or 64 KiB ones: validation/experiments/gather_walks/)
PAGE_TABLE_SPAN_B = 8 * 4096


def cold_span_time_ns(spans: int, table_B: float, cfg: TranslationConfig) -> float:
    """Extra time of a run that starts with its L2 flushed and touches ``spans``
    distinct :data:`PAGE_TABLE_SPAN_B` spans of a ``table_B`` host region: every span
    past the reach is walked at least once; inside the reach only the first touch of
    each translation page walks (at most one span a page)."""
    if not cfg.enabled or cfg.cold_span_ns <= 0 or spans <= 0:
        return 0.0
    walked = spans
    if table_B <= cfg.tlb_entries * cfg.page_B:
        walked = min(spans, -(-int(table_B) // cfg.page_B))
    return walked * cfg.cold_span_ns


def translation_bound_GBps(miss_rate: float, request_B: float, miss_lat_ns: float,
                           walkers: int) -> float:
    """Bandwidth translation allows: ``request_B * walkers / (miss_rate * miss_lat_ns)``.

    Infinite where nothing misses or a miss costs nothing."""
    if not 0 <= miss_rate <= 1:
        raise ValueError(f"miss_rate must lie in [0, 1], not {miss_rate}")
    if walkers < 1:
        raise ValueError(f"walkers must be >= 1, not {walkers}")
    if miss_rate == 0 or miss_lat_ns == 0:
        return float("inf")
    return request_B * walkers / (miss_rate * miss_lat_ns)


def uniform_miss_rate(region_B: float, entries: float, page_B: float) -> float:
    """Steady-state LRU miss rate of independent uniform references over ``region_B``
    bytes of ``page_B`` pages: ``1 - entries / pages`` (0 when they all fit). For such
    references every resident page is equally likely next, so the hit rate is the
    fraction of the pages the TLB holds, whatever the replacement order."""
    if region_B <= 0 or page_B <= 0 or entries < 0:
        raise ValueError("region_B and page_B must be > 0 and entries >= 0")
    pages = max(1.0, region_B / page_B)
    return max(0.0, 1.0 - entries / pages)


def reach_from_two_regions(region1_B: float, bw1_GBps: float, region2_B: float,
                           bw2_GBps: float) -> float | None:
    """The TLB reach (entries x page_B, bytes) that makes two walker-bound bandwidths of
    uniform random references over two regions what they are.

    Walker-bound bandwidth is ``S walkers / (m miss_lat_ns)``, so the ratio of two is
    the inverse ratio of their miss rates ``m = 1 - X / R``; with ``r = bw1 / bw2``,
    ``X = (r - 1) / (r / R1 - 1 / R2)``, which lies in ``[0, R1)`` whenever ``r > 1``.
    None when the two do not fit that form (the larger region not slower)."""
    if region1_B > region2_B:
        region1_B, bw1_GBps, region2_B, bw2_GBps = region2_B, bw2_GBps, region1_B, bw1_GBps
    if min(region1_B, bw1_GBps, bw2_GBps) <= 0 or region2_B <= region1_B:
        return None
    r = bw1_GBps / bw2_GBps
    den = r / region1_B - 1.0 / region2_B
    if r <= 1.0 or den <= 0:
        return None
    return (r - 1.0) / den


def issue_order(stream: RequestStream, resident_warps: int) -> np.ndarray:
    """Permutation of the stream's rows in approximate issue order
    (:func:`issue_permutation` of its columns)."""
    return issue_permutation(stream.launch, stream.warp, stream.inst, resident_warps)


def issue_permutation(launch: np.ndarray, warp: np.ndarray, inst: np.ndarray,
                      resident_warps: int) -> np.ndarray:
    """Permutation of requests (given by their launch, warp and instruction columns)
    in approximate issue order.

    Within a launch, warps ``k * resident_warps .. (k+1) * resident_warps - 1``
    form wave ``k``; a wave's warps issue their n-th instruction in turn
    before any issues its (n+1)-th; waves and launches follow each other. Ties keep
    the given order, so a warp's requests keep their order within an instruction.
    """
    if resident_warps < 1:
        raise ValueError(f"resident_warps must be >= 1, not {resident_warps}")
    if len(launch) == 0:
        return np.zeros(0, dtype=np.int64)
    launch, warp, inst = (np.ascontiguousarray(a) for a in (launch, warp, inst))
    if _in_launch_warp_order(launch, warp):
        # the streams' own order: only each wave's instructions are to be sorted
        return _by_inst_within_waves(launch, warp, inst, int(resident_warps))
    wave = warp.astype(np.int64) // resident_warps
    # np.lexsort sorts by the last key first.
    return np.lexsort((warp, inst, wave, launch))


#: a wave's instructions are counting-sorted while they span at most this many values
#: per row, plus the slack below (the counts' memory, not a measurement); else merge-sorted
COUNTING_SPAN_PER_ROW, COUNTING_SPAN_SLACK = 4, 1024


@numba.njit(cache=True)
def _in_launch_warp_order(launch, warp) -> bool:
    """True when the rows are sorted by launch, then warp (as streams are made)."""
    for i in range(1, launch.shape[0]):
        if launch[i] < launch[i - 1] or (launch[i] == launch[i - 1] and warp[i] < warp[i - 1]):
            return False
    return True


@numba.njit(cache=True)
def _by_inst_within_waves(launch, warp, inst, resident):
    """:func:`issue_permutation` of rows sorted by launch, then warp: the rows of each
    (launch, wave) run, stably sorted by instruction (a counting sort, or a merge sort
    where the run's instructions span far more values than it has rows)."""
    n = launch.shape[0]
    out = np.empty(n, dtype=np.int64)
    count = np.zeros(1024, dtype=np.int64)
    s = 0
    while s < n:
        wave = np.int64(warp[s]) // resident
        e = s + 1
        while e < n and launch[e] == launch[s] and np.int64(warp[e]) // resident == wave:
            e += 1
        lo = np.int64(inst[s])
        hi = lo
        for i in range(s + 1, e):
            lo = min(lo, np.int64(inst[i]))
            hi = max(hi, np.int64(inst[i]))
        span = hi - lo + 1
        if span > COUNTING_SPAN_PER_ROW * (e - s) + COUNTING_SPAN_SLACK:
            part = np.argsort(inst[s:e], kind="mergesort")
            for i in range(e - s):
                out[s + i] = s + part[i]
        else:
            if span + 1 > count.shape[0]:
                count = np.zeros(span + 1, dtype=np.int64)
            count[:span + 1] = 0
            for i in range(s, e):
                count[np.int64(inst[i]) - lo + 1] += 1
            count[0] = s
            for k in range(span):
                count[k + 1] += count[k]
            for i in range(s, e):
                c = np.int64(inst[i]) - lo
                out[count[c]] = i
                count[c] += 1
        s = e
    return out


@dataclass(frozen=True)
class TranslationResult:
    """Translation misses of a request sequence and what they cost."""
    requests: int
    bytes_B: int
    tlb_misses: int
    iommu_misses: int
    both_misses: int
    extra_lat_ns_mean: float      # added round-trip latency per request, mean over requests
    walk_busy_s: float            # time the busier walker pool needs for all its misses
    bound_GBps: float             # bandwidth the walkers allow for this sequence

    @property
    def tlb_miss_rate(self) -> float:
        return self.tlb_misses / self.requests if self.requests else 0.0

    @property
    def iommu_miss_rate(self) -> float:
        return self.iommu_misses / self.requests if self.requests else 0.0

    def to_dict(self) -> dict:
        d = asdict(self)
        d["tlb_miss_rate"] = self.tlb_miss_rate
        d["iommu_miss_rate"] = self.iommu_miss_rate
        return d


def simulate_translation(addr: np.ndarray, size_B: np.ndarray, cfg: TranslationConfig, *,
                         iommu_walkers: int | None = None,
                         warp_keys: np.ndarray | None = None) -> tuple[TranslationResult, np.ndarray]:
    """Translate a sequence of requests (given in the order they reach the TLB).

    ``warp_keys`` names each request's warp (see :func:`translation_misses`).
    Returns the summary and the per-request added latency in ns (0 on a hit in
    every cache), which a discrete-event model adds to each request's round trip.
    """
    addr = np.asarray(addr, dtype=np.uint64)
    size_B = np.asarray(size_B)
    if addr.shape != size_B.shape:
        raise ValueError(f"addr and size_B differ in shape: {addr.shape} vs {size_B.shape}")
    n = addr.shape[0]
    total_B = int(size_B.sum(dtype=np.int64))
    if iommu_walkers is not None and iommu_walkers < 1:
        raise ConfigError(f"iommu_walkers must be >= 1, not {iommu_walkers}")
    if n == 0 or not cfg.enabled:
        return (TranslationResult(n, total_B, 0, 0, 0, 0.0, 0.0, float("inf")),
                np.zeros(n, dtype=np.float64))
    tlb = translation_misses(addr // np.uint64(cfg.page_B), cfg, warp_keys)
    extra = np.where(tlb, cfg.miss_lat_ns, 0.0)
    n_tlb = int(tlb.sum())
    busy_ns = n_tlb * cfg.miss_lat_ns / cfg.walkers
    n_io = 0
    n_both = 0
    if cfg.iommu:
        io = lru_misses(addr // np.uint64(cfg.iommu_page_B), cfg.iommu_iotlb_entries)
        extra = extra + np.where(io, cfg.iommu_miss_lat_ns, 0.0)
        n_io = int(io.sum())
        n_both = int((io & tlb).sum())
        io_walkers = cfg.walkers if iommu_walkers is None else iommu_walkers
        busy_ns = max(busy_ns, n_io * cfg.iommu_miss_lat_ns / io_walkers)
    bound = float("inf") if busy_ns == 0 else total_B / busy_ns  # B/ns == GB/s
    res = TranslationResult(n, total_B, n_tlb, n_io, n_both, float(extra.mean()),
                            busy_ns * 1e-9, bound)
    return res, extra


def stream_translation(stream: RequestStream, cfg: TranslationConfig, resident_warps: int, *,
                       iommu_walkers: int | None = None) -> TranslationResult:
    """Translation of a stream's host requests in approximate issue order."""
    host = stream.select(stream.space == SPACE_HOST)
    order = issue_order(host, resident_warps)
    res, _ = simulate_translation(host.addr[order], host.size_B[order], cfg,
                                  iommu_walkers=iommu_walkers,
                                  warp_keys=warp_keys_of(host)[order])
    return res
