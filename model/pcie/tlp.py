"""The TLP packetiser: reads and writes of (address, bytes) into TLPs and wire bytes.

Every timing model uses this module to count packets and bytes; the analytic
model calls :func:`packetize_reads` for per-request totals, and a
discrete-event model calls :func:`expand_reads` for the individual TLPs
(with the same byte counts) and only adds time. All functions take NumPy
arrays and broadcast their inputs against each other: addresses and sizes
against link parameters, so one call can cover many requests and many link
configurations.

Directions are named from the GPU: "up" is GPU to host (MRd, MWr), "down"
is host to GPU (CplD).

Rules (PCI Express Base Specification rev. 5.0: request rules §2.2.7, data
return and the read completion boundary §2.3.1.1; sizes from
:mod:`hostlink.model.pcie.spec`):
- A read of N bytes at address A becomes MRd TLPs that neither exceed MRRS
  nor cross a 4 KiB boundary. The requester splits at MRRS-aligned addresses
  (ASSUMPTION: the usual DMA-engine split; it never crosses 4 KiB because
  MRRS <= 4096 divides it).
- The completer answers each MRd with CplD TLPs. A completion that does not
  finish its request must end on a read-completion-boundary (RCB) aligned
  address, and none may carry more than MPS (counted in whole DWs). Two
  completer policies: ``cpl_split="mps"`` (default) returns the largest
  completions those rules allow, greedily from the start; ``"rcb"`` returns
  one completion per RCB-aligned block (what some root complexes do). The
  default is an ASSUMPTION supported by a reported measurement (its original
  source is not recorded): an RTX 5090 at Gen3 x16 copies host-to-device at
  13.69 GB/s, above what 64 B or 128 B completions allow at 8 B framing (11.9
  and 13.5 GB/s).
- Writes become posted MWr TLPs split at MPS-aligned addresses (never
  crossing 4 KiB); no completions.
- Payloads travel in whole DWs: a request that starts or ends inside a DW
  carries the whole DW (the byte enables mask it). ``payload_B`` counts the
  bytes asked; ``*_data_B`` counts the DW-padded bytes on the wire.
- Non-flit wire bytes per TLP: framing (+ sequence + LCRC) + header + ECRC
  digest + padded payload. Flit mode: header + OHC + digest + padded payload,
  packed back to back into the 236 TLP bytes of 256 B flits, so each TLP
  costs 256/236 of its bytes. A flit-mode request whose first or last DW is
  partial carries one OHC-A DW for its byte enables.
- Completion flow-control credits: one header credit per CplD; data credits
  in units of 16 B (4 DW) per CplD, rounded up per TLP.
"""
from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from hostlink.model.errors import ConfigError
from hostlink.model.pcie import spec

_PAGE_MASK = spec.PAGE_4K_B - 1


@dataclass(frozen=True)
class TlpFormat:
    """Link parameters that shape TLPs, resolved to broadcastable arrays."""
    mps_B: np.ndarray
    mrrs_B: np.ndarray
    rcb_B: np.ndarray
    req_hdr_B: np.ndarray      # MRd / MWr header (3DW or 4DW)
    ecrc_B: np.ndarray         # 0 or 4 per TLP
    framing_B: np.ndarray      # per-TLP framing in non-flit mode (0 in flit mode)
    flit: np.ndarray           # bool
    cpl_chunk_B: np.ndarray    # largest completion: MPS (policy "mps") or RCB ("rcb")
    cpl_greedy: np.ndarray     # bool: policy "mps" (largest legal completions)

    @classmethod
    def resolve(cls, gen=3, mps_B=256, mrrs_B=512, rcb_B=64, addr_64bit=True, ecrc=False,
                framing_B=None, flit_mode=None, cpl_split="mps") -> "TlpFormat":
        """Check and resolve parameters. ``framing_B``: None or NaN entries take
        the generation's default. ``cpl_split``: "mps" or "rcb" (or an array of them)."""
        gen = spec.check_choice("link.gen", gen, spec.GEN_CHOICES)
        mps = spec.check_choice("link.mps_B", mps_B, spec.MPS_CHOICES).astype(np.int64)
        mrrs = spec.check_choice("link.mrrs_B", mrrs_B, spec.MRRS_CHOICES).astype(np.int64)
        rcb = spec.check_choice("link.rcb_B", rcb_B, spec.RCB_CHOICES).astype(np.int64)
        flit = spec.resolve_flit_mode(gen, flit_mode)
        default = spec.default_framing_B(gen, flit)
        if framing_B is None:
            framing = default
        else:
            given = np.asarray(framing_B, dtype=np.float64)
            spec.check_range("link.framing_B", np.nan_to_num(given, nan=0.0), 0.0, 64.0)
            framing = np.where(np.isnan(given), default, given)
        framing = np.where(flit, 0.0, framing)
        split = spec.check_choice("link.cpl_split", cpl_split, ("mps", "rcb"))
        chunk = np.where(split == "rcb", rcb, mps)
        return cls(mps_B=mps, mrrs_B=mrrs, rcb_B=rcb,
                   req_hdr_B=spec.header_B("MRd", addr_64bit).astype(np.int64),
                   ecrc_B=np.where(np.asarray(ecrc, dtype=bool), spec.ECRC_B, 0).astype(np.int64),
                   framing_B=framing.astype(np.float64), flit=np.asarray(flit, dtype=bool),
                   cpl_chunk_B=chunk.astype(np.int64), cpl_greedy=np.asarray(split == "mps"))

    def expand_dims(self, axis: int = -1) -> "TlpFormat":
        """The same format with a new axis (to broadcast configurations against requests)."""
        return TlpFormat(**{f.name: np.expand_dims(getattr(self, f.name), axis)
                            for f in fields(self)})

    def wire_B(self, tlp_B) -> np.ndarray:
        """Wire bytes of TLP bytes (header + OHC + digest + padded payload) without
        framing: in flit mode their share of the flits; otherwise unchanged."""
        return np.where(self.flit, np.asarray(tlp_B) * (spec.FLIT_B / spec.FLIT_TLP_B), tlp_B)


@dataclass(frozen=True)
class ReadPackets:
    """Per-read totals (arrays broadcast from the inputs)."""
    n_mrd: np.ndarray          # MRd TLPs (tags the read occupies)
    n_cpld: np.ndarray         # CplD TLPs (completion header credits)
    payload_B: np.ndarray      # bytes asked
    cpl_data_B: np.ndarray     # DW-padded completion payload on the wire
    cpl_credit_B: np.ndarray   # completion data credits, in bytes (16 B units per CplD)
    up_tlp_B: np.ndarray       # MRd TLP bytes (headers, OHC, digests)
    down_tlp_B: np.ndarray     # CplD TLP bytes (headers, digests, padded payload)
    up_wire_B: np.ndarray      # wire bytes GPU -> host
    down_wire_B: np.ndarray    # wire bytes host -> GPU

    @property
    def down_efficiency(self) -> np.ndarray:
        """Bytes asked per completion wire byte."""
        return self.payload_B / self.down_wire_B


@dataclass(frozen=True)
class WritePackets:
    """Per-write totals."""
    n_mwr: np.ndarray
    payload_B: np.ndarray
    data_B: np.ndarray         # DW-padded payload on the wire
    up_tlp_B: np.ndarray
    up_wire_B: np.ndarray

    @property
    def up_efficiency(self) -> np.ndarray:
        return self.payload_B / self.up_wire_B


def request_span(addr, size_B) -> tuple[np.ndarray, np.ndarray]:
    """Start and end offsets of requests within their 4 KiB page (end may pass it).

    Every boundary the packetiser splits at (DW, RCB, MPS, MRRS, 4 KiB) divides
    4096, so the offset in the page is all that matters."""
    addr = np.asarray(addr)
    size = np.asarray(size_B)
    if addr.dtype.kind not in "iu" or size.dtype.kind not in "iu":
        if not (np.all(np.mod(addr, 1) == 0) and np.all(np.mod(size, 1) == 0)):
            raise ConfigError("request addr and size_B must be whole bytes")
    if np.any(addr < 0):
        raise ConfigError("request addr must be >= 0")
    if np.any(size < 1):
        raise ConfigError(f"request size_B must be >= 1 B (got {np.min(size)})")
    if addr.dtype.kind == "u":
        start = (addr & np.uint64(_PAGE_MASK)).astype(np.int64)
    else:
        start = (addr.astype(np.int64) & _PAGE_MASK)
    return start, start + size.astype(np.int64)


def _pieces(s, e, align, chunk, greedy=False):
    """Split [s, e) into TLP pieces; returns (count, end of the first piece, start
    of the last piece). ``align`` and ``chunk`` are powers of two, ``chunk`` a
    multiple of ``align``, both of 4 (so the arithmetic is masks and shifts).

    Block split (``greedy`` False): one piece per ``align``-aligned block of
    ``chunk`` bytes (MRRS for MRds, MPS for MWrs, RCB for "rcb" completions).
    Greedy (completions, policy "mps"): each piece as large as allowed: at most
    ``chunk`` bytes in whole DWs, and ending on an ``align`` (RCB) boundary
    unless it is the last."""
    lo = s & -spec.DW_B
    hi = _ceil(e, spec.DW_B)
    boundary = (lo + chunk) & -np.asarray(align)
    single = np.where(greedy, hi - lo <= chunk, e <= boundary)
    first_end = np.where(single, e, boundary)
    shift = _log2(chunk)
    n = np.where(single, 1, 1 + ((hi - first_end + chunk - 1) >> shift))
    last_start = np.where(single, s, first_end + ((n - 2) << shift))
    return n, first_end, last_start


def _log2(x) -> np.ndarray:
    """Exponent of a power of two, as int64 (exact for the sizes used here)."""
    return (np.frexp(np.asarray(x, dtype=np.float64))[1] - 1).astype(np.int64)


def _ceil(x, unit):
    """Round up to a multiple of ``unit`` (a power of two)."""
    unit = np.asarray(unit)
    return (x + unit - 1) & -unit


def _partial_dw_tlps(s, e, n):
    """TLPs of a split request whose first or last DW is partially enabled."""
    head = (s % spec.DW_B) != 0
    tail = (e % spec.DW_B) != 0
    return np.where(n == 1, head | tail, head.astype(np.int64) + tail)


def packetize_reads(addr, size_B, fmt: TlpFormat | None = None, **link) -> ReadPackets:
    """MRd and CplD counts and bytes of reads of ``size_B`` bytes at ``addr``.

    ``fmt`` (a :class:`TlpFormat`) or the keyword arguments of
    :meth:`TlpFormat.resolve` give the link."""
    fmt = fmt if fmt is not None else TlpFormat.resolve(**link)
    s, e = request_span(addr, size_B)
    n_mrd, m_first_end, m_last_start = _pieces(s, e, fmt.mrrs_B, fmt.mrrs_B)
    chunk, greedy = fmt.cpl_chunk_B, fmt.cpl_greedy
    n_a, a_first_end, a_last_start = _pieces(s, m_first_end, fmt.rcb_B, chunk, greedy)
    single = n_mrd == 1
    if np.all(single):         # the usual case for SM requests: skip the multi-MRd terms
        n_cpld, last_start = n_a, a_last_start
    else:
        n_mid = -(-fmt.mrrs_B // chunk)
        n_b, _, b_last_start = _pieces(m_last_start, e, fmt.rcb_B, chunk, greedy)
        n_cpld = np.where(single, n_a, n_a + (n_mrd - 2) * n_mid + n_b)
        last_start = np.where(single, a_last_start, b_last_start)

    lo = s & -spec.DW_B
    hi = _ceil(e, spec.DW_B)
    cpl_data = hi - lo
    unit = spec.CREDIT_DATA_B
    first_dw = _ceil(a_first_end, spec.DW_B) - lo
    last_dw = hi - (last_start & -spec.DW_B)
    credit = np.where(n_cpld == 1, _ceil(cpl_data, unit),
                      _ceil(first_dw, unit) + (last_start - a_first_end) + _ceil(last_dw, unit))

    ohc = np.where(fmt.flit, _partial_dw_tlps(s, e, n_mrd), 0) * spec.OHC_DW_B
    up_tlp = n_mrd * (fmt.req_hdr_B + fmt.ecrc_B) + ohc
    down_tlp = n_cpld * (spec.CPLD_HDR_B + fmt.ecrc_B) + cpl_data
    return ReadPackets(
        n_mrd=n_mrd, n_cpld=n_cpld, payload_B=e - s, cpl_data_B=cpl_data, cpl_credit_B=credit,
        up_tlp_B=up_tlp, down_tlp_B=down_tlp,
        up_wire_B=fmt.wire_B(up_tlp) + n_mrd * fmt.framing_B,
        down_wire_B=fmt.wire_B(down_tlp) + n_cpld * fmt.framing_B)


def packetize_writes(addr, size_B, fmt: TlpFormat | None = None, **link) -> WritePackets:
    """Posted MWr counts and bytes of writes of ``size_B`` bytes at ``addr``."""
    fmt = fmt if fmt is not None else TlpFormat.resolve(**link)
    s, e = request_span(addr, size_B)
    n, _, _ = _pieces(s, e, fmt.mps_B, fmt.mps_B)
    data = _ceil(e, spec.DW_B) - (s & -spec.DW_B)
    ohc = np.where(fmt.flit, _partial_dw_tlps(s, e, n), 0) * spec.OHC_DW_B
    up_tlp = n * (fmt.req_hdr_B + fmt.ecrc_B) + ohc + data
    return WritePackets(n_mwr=n, payload_B=e - s, data_B=data, up_tlp_B=up_tlp,
                        up_wire_B=fmt.wire_B(up_tlp) + n * fmt.framing_B)


@dataclass(frozen=True)
class TlpList:
    """Individual TLPs, one row each, in issue order within each request."""
    request: np.ndarray        # index of the request (into the flattened inputs)
    kind: np.ndarray           # "MRd", "CplD" or "MWr"
    addr_offset_B: np.ndarray  # first byte asked, as an offset in the request's 4 KiB page
    payload_B: np.ndarray      # bytes asked that this TLP carries (0 for MRd)
    length_B: np.ndarray       # bytes the MRd asks for / DW-padded payload carried
    wire_B: np.ndarray         # wire bytes (framing or flit share included)
    parent: np.ndarray         # for CplD: the row of its MRd in ``mrd`` order; else -1

    def __len__(self) -> int:
        return len(self.request)


def _expand(s, e, align, chunk, greedy=False):
    """One row per piece of [s, e) (see :func:`_pieces`): (owner row, start, end)."""
    n, first_end, _ = _pieces(s, e, align, chunk, greedy)
    owner = np.repeat(np.arange(len(s)), n)
    k = np.arange(owner.size) - np.repeat(np.cumsum(n) - n, n)
    fe = first_end[owner]
    start = np.where(k == 0, s[owner], fe + (k - 1) * chunk[owner])
    end = np.minimum(e[owner], np.where(k == 0, fe, fe + k * chunk[owner]))
    return owner, start, end


def _flat_format(fmt: TlpFormat, shape) -> TlpFormat:
    return TlpFormat(**{f.name: np.broadcast_to(getattr(fmt, f.name), shape).ravel()
                        for f in fields(fmt)})


def _flat_requests(addr, size_B, fmt: TlpFormat | None, link: dict):
    """Requests' byte spans [s, e) and the format, broadcast together and flattened."""
    fmt = fmt if fmt is not None else TlpFormat.resolve(**link)
    s, e = request_span(addr, size_B)
    shape = np.broadcast_shapes(s.shape, *(np.shape(getattr(fmt, f.name)) for f in fields(fmt)))
    return (np.broadcast_to(s, shape).ravel(), np.broadcast_to(e, shape).ravel(),
            _flat_format(fmt, shape))


def expand_reads(addr, size_B, fmt: TlpFormat | None = None, **link) -> tuple[TlpList, TlpList]:
    """The MRd TLPs and the CplD TLPs of reads, one row per TLP.

    Inputs broadcast and are flattened (C order); ``request`` indexes the
    flattened requests. Sums per request equal :func:`packetize_reads`."""
    s, e, f = _flat_requests(addr, size_B, fmt, link)

    req, ms, me = _expand(s, e, f.mrrs_B, f.mrrs_B)
    partial = np.where(f.flit[req], ((ms % 4 != 0) | (me % 4 != 0)), False)
    mrd_tlp = f.req_hdr_B[req] + f.ecrc_B[req] + partial * spec.OHC_DW_B
    mrd_wire = np.where(f.flit[req], mrd_tlp * (spec.FLIT_B / spec.FLIT_TLP_B), mrd_tlp) \
        + f.framing_B[req]
    mrd = TlpList(request=req, kind=np.full(req.size, "MRd"), addr_offset_B=ms,
                  payload_B=np.zeros(req.size, np.int64), length_B=me - ms,
                  wire_B=mrd_wire, parent=np.full(req.size, -1))

    sub, cs, ce = _expand(ms, me, f.rcb_B[req], f.cpl_chunk_B[req], f.cpl_greedy[req])
    creq = req[sub]
    data = _ceil(ce, spec.DW_B) - (cs & -spec.DW_B)
    cpl_tlp = spec.CPLD_HDR_B + f.ecrc_B[creq] + data
    cpl_wire = np.where(f.flit[creq], cpl_tlp * (spec.FLIT_B / spec.FLIT_TLP_B), cpl_tlp) \
        + f.framing_B[creq]
    cpl = TlpList(request=creq, kind=np.full(creq.size, "CplD"), addr_offset_B=cs,
                  payload_B=ce - cs, length_B=data, wire_B=cpl_wire, parent=sub)
    return mrd, cpl


def expand_writes(addr, size_B, fmt: TlpFormat | None = None, **link) -> TlpList:
    """The MWr TLPs of writes, one row per TLP (sums equal :func:`packetize_writes`)."""
    s, e, f = _flat_requests(addr, size_B, fmt, link)
    req, ws, we = _expand(s, e, f.mps_B, f.mps_B)
    data = _ceil(we, spec.DW_B) - (ws & -spec.DW_B)
    partial = np.where(f.flit[req], ((ws % 4 != 0) | (we % 4 != 0)), False)
    tlp = f.req_hdr_B[req] + f.ecrc_B[req] + partial * spec.OHC_DW_B + data
    wire = np.where(f.flit[req], tlp * (spec.FLIT_B / spec.FLIT_TLP_B), tlp) + f.framing_B[req]
    return TlpList(request=req, kind=np.full(req.size, "MWr"), addr_offset_B=ws,
                   payload_B=we - ws, length_B=data, wire_B=wire,
                   parent=np.full(req.size, -1))
