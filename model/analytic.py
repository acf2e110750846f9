"""The analytic model: closed-form bounds on GPU read bandwidth from host memory.

For a request-size histogram (sizes, their offsets in the page, counts; reads
and optionally posted writes) and a system, the model computes each bound a
steady stream of requests cannot exceed, and predicts the least of them:

- ``link_down``: the completion (host-to-GPU) direction: TLP capacity left
  after DLLPs and SKP ordered sets, times bytes asked per wire byte (framing,
  headers, digests, DW padding, flit packing: :mod:`hostlink.model.pcie.tlp`);
- ``link_up``: the request (GPU-to-host) direction, carrying MRd TLPs (and
  MWr TLPs with their data);
- ``tags``: Little's law, outstanding reads x bytes per read / RTT, with the
  reads in flight limited by the tag count (a read split into k MRds holds k
  tags);
- ``cpl_credits``: the same, with the reads in flight limited by the
  requester's completion buffer: header slots / CplDs per read and data bytes
  / completion credit bytes per read (0 = unlimited, as endpoints normally
  advertise);
- ``requester``: the same, limited by the GPU's own outstanding host reads
  (an ASSUMPTION until measured: no public per-GPU figure exists);
- ``dram``: the host DRAM's sustained bandwidth times bytes asked per byte
  its bursts fetch (:mod:`hostlink.model.dram`);
- ``translation``: page walks in flight over walk latency, per read that
  misses the TLB: ``walkers x bytes per read / (miss rate x miss_lat_ns)``
  (:mod:`hostlink.model.translation`); the miss rate is an input (0, the
  default, for streams whose pages stay within the TLB's reach).

Outputs also say which bound binds and how many reads must be in flight to
reach the link bound (``outstanding_to_saturate``).

Assumptions: the RTT is the loaded-but-unqueued round trip of one read while
it holds its tag, independent of the request size (serialisation on the link
is inside the link bound, not added to it); the GPU-internal part of a load's
latency (``gpu.host_path_ns``) holds no tag and so enters no bound here, only
a warp's chain of dependent loads (:func:`hostlink.model.predict.host_latency_ns`); every request in the histogram is independent (no
dependence between a warp's loads); the bounds combine as a minimum (a
roofline: near a knee the real bandwidth is lower). Writes are posted and hold
no tags; they share the link and the DRAM bounds with the reads.

Everything broadcasts: pass NumPy arrays for any link or host parameter and
get arrays of results of their broadcast shape (the histogram adds no axis).
GB/s = 1e9 B/s; 1 B/ns = 1 GB/s.
"""
from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from hostlink.model import dram as dram_model
from hostlink.model.errors import ConfigError
from hostlink.model.pcie import spec
from hostlink.model.pcie.tlp import TlpFormat, packetize_reads, packetize_writes

# The bounds, in the order that breaks ties (equal bounds report the earlier one).
BOUNDS = ("link_down", "link_up", "tags", "cpl_credits", "requester", "dram", "translation")
_BOUND_NAMES = np.asarray(BOUNDS)


@dataclass(frozen=True)
class SizeHistogram:
    """Requests by size, offset in their 4 KiB page, and direction, with counts."""
    size_B: np.ndarray
    count: np.ndarray
    offset_B: np.ndarray
    is_write: np.ndarray

    def __post_init__(self) -> None:
        cols = {f.name: np.atleast_1d(np.asarray(getattr(self, f.name))) for f in fields(self)}
        try:
            shape = np.broadcast_shapes(*(c.shape for c in cols.values()))
        except ValueError as exc:
            raise ConfigError(f"size histogram: columns do not line up ({exc})") from None
        for name, col in cols.items():
            object.__setattr__(self, name, np.broadcast_to(col, shape))
        if shape[-1] == 0:
            raise ConfigError("size histogram: no requests")
        if np.any(self.size_B < 1) or np.any(np.mod(self.size_B, 1) != 0):
            raise ConfigError("size histogram: sizes must be whole bytes >= 1")
        if np.any(self.offset_B < 0):
            raise ConfigError("size histogram: offsets must be >= 0")
        if np.any(~(self.count >= 0)) or not np.all(self.count.sum(axis=-1) > 0):
            raise ConfigError("size histogram: counts must be >= 0 with a positive total")
        object.__setattr__(self, "size_B", self.size_B.astype(np.int64))
        object.__setattr__(self, "offset_B", self.offset_B.astype(np.int64) % spec.PAGE_4K_B)
        object.__setattr__(self, "count", self.count.astype(np.float64))
        object.__setattr__(self, "is_write", self.is_write.astype(bool))

    @classmethod
    def of(cls, size_B, count=1.0, offset_B=0, is_write=False) -> "SizeHistogram":
        return cls(size_B=np.asarray(size_B), count=np.asarray(count, dtype=np.float64),
                   offset_B=np.asarray(offset_B), is_write=np.asarray(is_write, dtype=bool))

    @classmethod
    def from_dict(cls, counts: dict[int, float], offset_B: int = 0) -> "SizeHistogram":
        """``{size_B: count}`` (for example :meth:`RequestStream.size_histogram`)."""
        if not counts:
            raise ConfigError("size histogram: no requests")
        sizes = np.fromiter(counts.keys(), dtype=np.int64)
        return cls.of(sizes, np.fromiter(counts.values(), dtype=np.float64), offset_B)

    @classmethod
    def from_stream(cls, stream, space: int | None = None, writes: bool = True) -> "SizeHistogram":
        """Group a RequestStream's host requests by (size, offset in page, write)."""
        from hostlink.model.workload import SPACE_HOST
        space = SPACE_HOST if space is None else space
        sel = stream.space == space
        if not writes:
            sel &= ~stream.is_write
        if not sel.any():
            raise ConfigError("size histogram: the request stream has no host requests")
        key = np.stack([stream.size_B[sel].astype(np.int64),
                        (stream.addr[sel] & np.uint64(spec.PAGE_4K_B - 1)).astype(np.int64),
                        stream.is_write[sel].astype(np.int64)], axis=1)
        uniq, counts = np.unique(key, axis=0, return_counts=True)
        return cls.of(uniq[:, 0], counts.astype(np.float64), uniq[:, 1], uniq[:, 2].astype(bool))

    @property
    def bytes_total(self) -> np.ndarray:
        return (self.count * self.size_B).sum(axis=-1)

    @property
    def mean_read_B(self) -> np.ndarray:
        reads = self.count * ~self.is_write
        return (reads * self.size_B).sum(axis=-1) / reads.sum(axis=-1)


@dataclass(frozen=True)
class AnalyticResult:
    """Arrays of the broadcast configuration shape. Bandwidths in GB/s of bytes asked."""
    bw_GBps: np.ndarray
    bound_index: np.ndarray
    bw_link_GBps: np.ndarray          # min of the two link directions
    bw_link_down_GBps: np.ndarray
    bw_link_up_GBps: np.ndarray
    bw_tags_GBps: np.ndarray
    bw_credits_GBps: np.ndarray
    bw_requester_GBps: np.ndarray
    bw_dram_GBps: np.ndarray
    bw_translation_GBps: np.ndarray   # inf where nothing misses the TLB
    raw_GBps: np.ndarray              # line rate per direction after encoding
    tlp_capacity_GBps: np.ndarray     # after DLLPs and SKP
    wire_efficiency_down: np.ndarray  # bytes read per completion-direction wire byte
    wire_efficiency_up: np.ndarray    # bytes written per request-direction wire byte
    #                                   (0 for reads only: requests carry no data)
    dram_efficiency: np.ndarray       # bytes asked per byte the DRAM bursts fetch
    outstanding_limit: np.ndarray     # reads in flight allowed (tags, credits, requester)
    outstanding_to_saturate: np.ndarray  # reads in flight to reach the link bound
    bytes_per_read: np.ndarray        # bytes moved (read and written) per read issued
    up_wire_B_per_read: np.ndarray
    down_wire_B_per_read: np.ndarray
    rtt_ns: np.ndarray

    @property
    def bound(self) -> np.ndarray:
        """The binding bound's name per configuration (see :data:`BOUNDS`)."""
        return _BOUND_NAMES[self.bound_index]

    @property
    def wire_efficiency(self) -> np.ndarray:
        """Efficiency of the data direction (completions carry the reads' data)."""
        return self.wire_efficiency_down

    @property
    def shape(self) -> tuple[int, ...]:
        return np.shape(self.bw_GBps)

    def item(self, index=()) -> dict:
        """One configuration's results as plain Python values (inf as float('inf'))."""
        out = {}
        for f in fields(self):
            out[f.name] = np.asarray(getattr(self, f.name))[index].item()
        out["bound"] = str(self.bound[index]) if self.shape else str(self.bound)
        out["wire_efficiency"] = out["wire_efficiency_down"]
        return out

    def to_frame(self):
        """A pandas DataFrame, one row per configuration (flattened)."""
        import pandas as pd
        cols = {f.name: np.broadcast_to(getattr(self, f.name), self.shape).ravel()
                for f in fields(self)}
        cols["bound"] = np.broadcast_to(self.bound, self.shape).ravel()
        return pd.DataFrame(cols)


def outstanding_for(bw_GBps, bytes_per_request, rtt_ns) -> np.ndarray:
    """Little's law: requests in flight to sustain ``bw_GBps`` with ``rtt_ns`` round trips.

    1 GB/s = 1 B/ns, so N = bw x RTT / bytes."""
    return np.asarray(bw_GBps) * np.asarray(rtt_ns) / np.asarray(bytes_per_request)


def bw_for_outstanding(outstanding, bytes_per_request, rtt_ns) -> np.ndarray:
    """Little's law: GB/s sustained by ``outstanding`` requests of the given bytes."""
    return np.asarray(outstanding) * np.asarray(bytes_per_request) / np.asarray(rtt_ns)


def _limit(name: str, value) -> np.ndarray:
    """A count limit: 0 means unlimited (inf); negative is an error."""
    arr = np.asarray(value, dtype=np.float64)
    if np.any(~(arr >= 0)):
        raise ConfigError(f"{name}: {arr[~(arr >= 0)].flat[0]:g} must be >= 0 (0 = unlimited)")
    return np.where(arr == 0, np.inf, arr)


def _safe_div(num, den, empty=np.inf):
    """num / den, and ``empty`` where den is 0."""
    den = np.asarray(den, dtype=np.float64)
    ok = den > 0
    return np.where(ok, np.asarray(num) / np.where(ok, den, 1.0), empty)


_DEDUPE_MIN = 512   # configurations above which per-format results are computed once and gathered


def _sums_direct(hist: SizeHistogram, fmt: TlpFormat) -> dict:
    fmt_h = fmt.expand_dims(-1)
    w_rd = np.where(hist.is_write, 0.0, hist.count)
    rp = packetize_reads(hist.offset_B, hist.size_B, fmt_h)
    out = {"down_wire_B": (w_rd * rp.down_wire_B).sum(axis=-1),
           "up_wire_B": (w_rd * rp.up_wire_B).sum(axis=-1),
           "n_mrd": (w_rd * rp.n_mrd).sum(axis=-1),
           "n_cpld": (w_rd * rp.n_cpld).sum(axis=-1),
           "cpl_credit_B": (w_rd * rp.cpl_credit_B).sum(axis=-1)}
    if hist.is_write.any():
        w_wr = np.where(hist.is_write, hist.count, 0.0)
        wp = packetize_writes(hist.offset_B, hist.size_B, fmt_h)
        out["up_wire_B"] = out["up_wire_B"] + (w_wr * wp.up_wire_B).sum(axis=-1)
    return out


def _codes(values: np.ndarray) -> tuple[np.ndarray, int]:
    """Integer codes of an array's values (equal values, equal codes) and their range."""
    if values.dtype.kind in "biu":
        lo, hi = int(values.min()), int(values.max())
        if hi - lo < 1 << 16:
            return values.astype(np.int64) - lo, hi - lo + 1
    uniq, inv = np.unique(values, return_inverse=True)
    return inv.reshape(values.shape).astype(np.int64), len(uniq)


def _mostly_distinct(fmt: TlpFormat, names: list[str], shape, sample: int = 256) -> bool:
    """Whether most configurations have a TLP format of their own (judged on an
    evenly spaced sample), so that sharing formats would not pay."""
    size = int(np.prod(shape))
    pick = np.linspace(0, size - 1, min(sample, size)).astype(np.int64)
    where = np.unravel_index(pick, shape)
    cols = [np.broadcast_to(getattr(fmt, n), shape)[where].astype(np.float64) for n in names]
    distinct = len(np.unique(np.stack(cols, axis=1), axis=0))
    return distinct > len(pick) // 2


def _format_sums(hist: SizeHistogram, fmt: TlpFormat) -> dict:
    """Histogram-weighted packet totals per configuration.

    A sweep has many configurations but few distinct TLP formats: when the
    histogram is one-dimensional, each distinct format is packetised once and
    the totals are gathered back to the configurations."""
    names = [f.name for f in fields(fmt)]
    shape = np.broadcast_shapes(*(np.shape(getattr(fmt, n)) for n in names))
    size = int(np.prod(shape))
    if hist.size_B.ndim != 1 or size < _DEDUPE_MIN or _mostly_distinct(fmt, names, shape):
        return _sums_direct(hist, fmt)
    key = np.zeros(size, dtype=np.int64)
    scale = 1
    for n in names:
        col = np.asarray(getattr(fmt, n))
        if col.size == 1:
            continue
        codes, k = _codes(np.broadcast_to(col, shape).ravel())
        key += codes * scale
        scale *= k
    if scale <= 4 * size:
        present = np.zeros(scale, dtype=bool)
        present[key] = True
        inv = (np.cumsum(present) - 1)[key]
        n_formats = int(present.sum())
    else:
        _, inv = np.unique(key, return_inverse=True)
        n_formats = int(inv.max()) + 1
    first = np.empty(n_formats, dtype=np.int64)
    first[inv] = np.arange(size)   # any member stands for its format: all are equal
    reps = TlpFormat(**{n: np.broadcast_to(getattr(fmt, n), shape).ravel()[first]
                        if np.size(getattr(fmt, n)) > 1 else np.asarray(getattr(fmt, n))
                        for n in names})
    sums = _sums_direct(hist, reps)
    return {k: np.broadcast_to(v, (n_formats,))[inv].reshape(shape) for k, v in sums.items()}


def _fetched_B(hist: SizeHistogram, burst_B) -> np.ndarray:
    """Bytes the DRAM bursts fetch for the histogram, per burst size."""
    burst = np.asarray(burst_B)
    if hist.size_B.ndim == 1 and burst.size >= _DEDUPE_MIN:
        uniq, inv = np.unique(burst, return_inverse=True)
        per = _fetched_B(hist, uniq)
        return per[inv.reshape(burst.shape)]
    b = np.expand_dims(burst, -1)
    return (hist.count * dram_model.bursts_touched(hist.offset_B, hist.size_B, b) * b).sum(axis=-1)


def evaluate(hist: SizeHistogram, *, gen, lanes, tags, rtt_ns, mps_B=256, mrrs_B=512,
             rcb_B=64, addr_64bit=True, ecrc=False, framing_B=None, flit_mode=None,
             cpl_split="mps", dllp_overhead=None, cpl_buffer_B=0, cpl_buffer_hdrs=0,
             requester_limit=0, dram_GBps=np.inf, dram_burst_B=64,
             tlb_miss_rate=0.0, walkers=8, walk_lat_ns=600.0) -> AnalyticResult:
    """Evaluate the bounds for every configuration of the broadcast parameters.

    ``dram_GBps`` is the host memory's sustained bandwidth (inf = no DRAM
    bound); ``requester_limit``, ``cpl_buffer_B`` and ``cpl_buffer_hdrs``: 0 =
    unlimited. ``framing_B`` and ``dllp_overhead``: None (or NaN entries) =
    from the spec tables. ``cpl_split``: "mps" or "rcb" (see the packetiser).
    ``tlb_miss_rate``: fraction of reads whose page misses the TLB (0 = no
    translation bound); ``walkers`` page walks of ``walk_lat_ns`` run at once."""
    if not isinstance(hist, SizeHistogram):
        raise ConfigError("evaluate: hist must be a SizeHistogram")
    tags_a = spec.check_range("link.tags", tags, 1.0)
    rtt = spec.check_range("link.rtt_ns", rtt_ns, 0.0, lo_open=True)
    dram_bw = spec.check_range("host.dram_GBps", dram_GBps, 0.0, lo_open=True)
    flit = spec.resolve_flit_mode(gen, flit_mode)
    fmt = TlpFormat.resolve(gen=gen, mps_B=mps_B, mrrs_B=mrrs_B, rcb_B=rcb_B,
                            addr_64bit=addr_64bit, ecrc=ecrc, framing_B=framing_B,
                            flit_mode=flit, cpl_split=cpl_split)
    dllp = None if dllp_overhead is None else np.asarray(dllp_overhead, dtype=np.float64)
    raw = spec.raw_GBps(gen, lanes)
    cap = spec.tlp_capacity_GBps(gen, lanes, mps_B, flit, dllp)

    w_all = hist.count
    w_rd = np.where(hist.is_write, 0.0, w_all)
    n_reads = w_rd.sum(axis=-1)
    bytes_all = (w_all * hist.size_B).sum(axis=-1)
    bytes_rd = (w_rd * hist.size_B).sum(axis=-1)
    bytes_wr = bytes_all - bytes_rd
    sums = _format_sums(hist, fmt)
    down, up = sums["down_wire_B"], sums["up_wire_B"]

    bw_down = _safe_div(cap * bytes_all, down)
    bw_up = _safe_div(cap * bytes_all, up)
    bw_link = np.minimum(bw_down, bw_up)

    # Per read issued (writes ride along in proportion to the histogram).
    per_read = _safe_div(1.0, n_reads)     # inf without reads: their bounds are inf
    with np.errstate(invalid="ignore"):
        bytes_per_read = bytes_all * per_read
        mrd_per_read = sums["n_mrd"] * per_read
        cpl_per_read = sums["n_cpld"] * per_read
        credit_per_read = sums["cpl_credit_B"] * per_read
        up_per_read, down_per_read = up * per_read, down * per_read

    with np.errstate(invalid="ignore", divide="ignore"):
        n_tags = tags_a / mrd_per_read
        n_credits = np.minimum(_limit("link.cpl_buffer_hdrs", cpl_buffer_hdrs) / cpl_per_read,
                               _limit("link.cpl_buffer_B", cpl_buffer_B) / credit_per_read)
    n_req = _limit("gpu.max_outstanding_host_reads", requester_limit)
    with np.errstate(invalid="ignore"):
        bw_tags = np.where(n_reads > 0, n_tags * bytes_per_read / rtt, np.inf)
        bw_credits = np.where(n_reads > 0, n_credits * bytes_per_read / rtt, np.inf)
        bw_req = np.where(n_reads > 0, n_req * bytes_per_read / rtt, np.inf)

    dram_eff = bytes_all / _fetched_B(hist, dram_burst_B)
    bw_dram = dram_bw * dram_eff

    miss = spec.check_range("translation.tlb_miss_rate", tlb_miss_rate, 0.0, 1.0)
    walks = spec.check_range("translation.walkers", walkers, 0.0, lo_open=True)
    walk_lat = spec.check_range("translation.miss_lat_ns", walk_lat_ns, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        bw_trans = np.where((n_reads > 0) & (miss * walk_lat > 0),
                            walks * bytes_per_read / (miss * walk_lat), np.inf)

    stack = np.broadcast_arrays(bw_down, bw_up, bw_tags, bw_credits, bw_req, bw_dram, bw_trans)
    stacked = np.stack(stack)
    idx = np.argmin(stacked, axis=0)
    bw = np.min(stacked, axis=0)
    shape = bw.shape

    def b(x):
        return np.broadcast_to(np.asarray(x, dtype=np.float64), shape)

    with np.errstate(invalid="ignore"):
        sat = np.where(n_reads > 0, outstanding_for(bw_link, bytes_per_read, rtt), 0.0)
    return AnalyticResult(
        bw_GBps=bw, bound_index=idx, bw_link_GBps=b(bw_link), bw_link_down_GBps=b(bw_down),
        bw_link_up_GBps=b(bw_up), bw_tags_GBps=b(bw_tags), bw_credits_GBps=b(bw_credits),
        bw_requester_GBps=b(bw_req), bw_dram_GBps=b(bw_dram),
        bw_translation_GBps=b(bw_trans), raw_GBps=b(raw),
        tlp_capacity_GBps=b(cap),
        wire_efficiency_down=b(_safe_div(bytes_rd, down, 0.0)),
        wire_efficiency_up=b(_safe_div(bytes_wr, up, 0.0)),
        dram_efficiency=b(dram_eff),
        outstanding_limit=b(np.minimum(np.minimum(n_tags, n_credits), n_req)),
        outstanding_to_saturate=b(sat), bytes_per_read=b(bytes_per_read),
        up_wire_B_per_read=b(up_per_read), down_wire_B_per_read=b(down_per_read),
        rtt_ns=b(rtt))


def link_params(link) -> dict:
    """The keyword arguments of :func:`evaluate` that a LinkConfig gives."""
    return {
        "gen": link.gen, "lanes": link.lanes, "tags": link.tags, "rtt_ns": link.rtt_ns,
        "mps_B": link.mps_B, "mrrs_B": link.mrrs_B, "rcb_B": link.rcb_B,
        "addr_64bit": link.addr_64bit, "ecrc": link.ecrc,
        "framing_B": np.nan if link.framing_B is None else link.framing_B,
        "flit_mode": link.uses_flit_mode,
        "dllp_overhead": np.nan if link.dllp_overhead is None else link.dllp_overhead,
        "cpl_buffer_B": link.cpl_buffer_B, "cpl_buffer_hdrs": link.cpl_buffer_hdrs,
        "cpl_split": getattr(link, "cpl_split", "mps"),
    }


def system_params(system) -> dict:
    """The keyword arguments of :func:`evaluate` for a SystemConfig."""
    host, gpu = system.host, system.gpu
    return {
        **link_params(system.link),
        "requester_limit": gpu.max_outstanding_host_reads,
        "dram_GBps": dram_model.served_GBps(host),
        "dram_burst_B": host.burst_B,
    }


def translation_params(system, tlb_miss_rate: float) -> dict:
    """The translation keywords of :func:`evaluate` for a SystemConfig and the
    miss rate of a stream (none when translation is disabled)."""
    tr = system.translation
    return {"tlb_miss_rate": tlb_miss_rate if tr.enabled else 0.0,
            "walkers": tr.walkers, "walk_lat_ns": tr.miss_lat_ns}


def predict_system(system, hist: SizeHistogram | dict | int, **overrides) -> AnalyticResult:
    """Evaluate a SystemConfig for a histogram (or ``{size_B: count}``, or one size).

    ``overrides`` replace any keyword of :func:`evaluate` (arrays broadcast)."""
    if isinstance(hist, dict):
        hist = SizeHistogram.from_dict(hist)
    elif not isinstance(hist, SizeHistogram):
        hist = SizeHistogram.of(hist)
    params = system_params(system)
    params.update(translation_params(system, 0.0))
    unknown = set(overrides) - set(params)
    if unknown:
        raise ConfigError(f"predict_system: unknown parameter(s) {', '.join(sorted(unknown))}")
    params.update(overrides)
    return evaluate(hist, **params)
