"""PCIe specification tables: rates, encodings, packet sizes, DLLP and SKP cadence, tags.

Every number here is from the PCI Express Base Specification (revisions 3.0
to 6.0; encodings and framing in chapter 4, flit mode in rev. 6.0 §4.2.3, tags
in §2.2.6.2) or from the source named beside it, unless it is marked
ASSUMPTION. Functions take NumPy arrays (or scalars) and broadcast,
so the analytic model can evaluate millions of link configurations at once.

Facts and choices:
- Rates and encodings: Gen1 2.5 GT/s and Gen2 5 GT/s use 8b/10b; Gen3 8,
  Gen4 16 and Gen5 32 GT/s use 128b/130b; Gen6 64 GT/s uses PAM4 with 1b/1b
  encoding and always runs in flit mode. GB/s = 1e9 B/s, per direction.
- Gen6 flit: 256 B = 236 B of TLP bytes + 6 B DLP + 8 B CRC + 6 B FEC. The
  DLP bytes carry ACK/NAK and flow-control updates, so flit mode has no
  separate DLLP traffic and no per-TLP framing, sequence number or LCRC.
- Per-TLP framing in non-flit mode (:data:`DEFAULT_FRAMING_B`). Gen1-2: STP
  1 + sequence number 2 + LCRC 4 + END 1 = 8 B. Gen3-5: the 4-symbol STP
  framing token + LCRC 4. The STP token of 128b/130b framing carries the
  TLP length, its CRC and parity, and the 12-bit TLP sequence number in its
  last two symbols, so the sequence number is not sent a second time: 8 B.
  Counting a 2 B sequence number beside the token gives 10 B (the figure in
  openucx/ucx PR #6416); pcie-bench/pcie-model uses 8 B for every
  generation. The default is 8 B; ``framing_B`` overrides it everywhere
  (pass 10 to reproduce the other reading).
- Headers: 3DW (12 B, 32-bit address) or 4DW (16 B, 64-bit address) for
  MRd/MWr; CplD is 3DW; the optional ECRC digest adds 4 B. Flit-mode base
  headers have the same sizes for these types; a request whose first or last
  DW is partially enabled carries a 1-DW OHC-A (byte enables). Completions of
  partial DWs carry no OHC in this model (a simplification).
- DLLPs (non-flit): 6 B (4 B content + 2 B CRC) plus 2 B of framing (SDP and
  END symbols at Gen1-2; the 2-symbol SDP token at Gen3-5) = 8 B on the wire.
- DLLP cadence: the spec tables of the Ack transmission latency limit and the
  UpdateFC transmission latency guideline (Base Spec rev 5.0, Tables 3-7..3-9
  and 2-46..2-48; the values as transcribed in pcie-bench/pcie-model) are in
  SYMBOL TIMES. One symbol time moves one byte on every lane, so an 8 B DLLP
  sent once per T symbol times costs 8 / (T * lanes) of the link, not 8 / T
  (the latter overstates the loss by the lane count: about 9.8% instead of
  about 0.9% at Gen3 x16, MPS 256). The model sends one Ack and one UpdateFC
  per interval in each direction (ASSUMPTION: the cadence is the spec's
  limit; real ports may send DLLPs more often). Override with
  ``dllp_overhead``. The spec's Ack factor drops from 2.5 to 1.0 at x8
  between MPS 256 and 512, so at x8 the interval, and with it the modelled
  bandwidth, dips slightly from MPS 256 to 512 (0.1% at Gen3, 0.5% at Gen1):
  that is the table, kept as it is.
- SKP ordered sets (clock compensation): 8b/10b sends a 4-symbol SKP OS
  every 1180-1538 symbol times (the model uses 1538); 128b/130b sends a
  16-symbol (one-block) SKP OS every 370-375 blocks (the model uses 375).
  ASSUMPTION: flit mode loses the same fraction as 128b/130b.
- Tags: 5-bit 32; 8-bit extended 256; 10-bit (Gen4+) 768 usable (tags
  256-1023, Intel R-Tile user guide); 14-bit (flit mode) 16384.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hostlink.model.errors import ConfigError


@dataclass(frozen=True)
class Generation:
    """One PCIe generation's signalling."""
    gen: int
    rate_GTps: float
    encoding: str
    payload_bits: int      # bits of data per code word
    code_bits: int         # bits on the wire per code word
    flit_mode: bool        # flit mode is mandatory at this rate

    @property
    def encoding_efficiency(self) -> float:
        return self.payload_bits / self.code_bits

    @property
    def raw_GBps_per_lane(self) -> float:
        """Data bytes per second per lane and direction after line encoding, in GB/s."""
        return self.rate_GTps * self.encoding_efficiency / 8.0


GENERATIONS: dict[int, Generation] = {
    1: Generation(1, 2.5, "8b/10b", 8, 10, False),
    2: Generation(2, 5.0, "8b/10b", 8, 10, False),
    3: Generation(3, 8.0, "128b/130b", 128, 130, False),
    4: Generation(4, 16.0, "128b/130b", 128, 130, False),
    5: Generation(5, 32.0, "128b/130b", 128, 130, False),
    6: Generation(6, 64.0, "PAM4 1b/1b flit", 1, 1, True),
}
GEN_CHOICES = tuple(GENERATIONS)
LANE_CHOICES = (1, 2, 4, 8, 16)
MPS_CHOICES = (128, 256, 512, 1024, 2048, 4096)
MRRS_CHOICES = MPS_CHOICES
RCB_CHOICES = (64, 128)

# Flit layout (PCIe 6.0): 256 B flit = 236 TLP + 6 DLP + 8 CRC + 6 FEC.
FLIT_B = 256
FLIT_TLP_B = 236
FLIT_DLP_B = 6
FLIT_CRC_B = 8
FLIT_FEC_B = 6

# TLP header and digest sizes, bytes.
HDR_3DW_B = 12
HDR_4DW_B = 16
CPLD_HDR_B = 12
ECRC_B = 4
OHC_DW_B = 4          # one orthogonal-header-content DW (flit mode byte enables)
DW_B = 4
PAGE_4K_B = 4096      # requests must not cross a 4 KiB boundary
CREDIT_DATA_B = 16    # one flow-control data credit = 4 DW

# Non-flit per-TLP framing + sequence number + LCRC, bytes (see module docstring).
DEFAULT_FRAMING_B = {1: 8.0, 2: 8.0, 3: 8.0, 4: 8.0, 5: 8.0, 6: 0.0}
FRAMING_PARTS_B = {
    "gen1-2": {"STP": 1, "sequence": 2, "LCRC": 4, "END": 1},
    "gen3-5": {"STP token (carries the 12-bit sequence number)": 4, "LCRC": 4},
}

# DLLPs (non-flit): 4 B content + 2 B CRC + 2 B framing.
DLLP_B = 8
DLLPS_PER_INTERVAL = 2    # one Ack and one UpdateFC per cadence interval (ASSUMPTION)

# SKP ordered sets: (symbols per SKP OS, symbol times between them).
SKP_8B10B = (4, 1538)
SKP_128B130B = (16, 375 * 16)

# Ack / UpdateFC cadence in symbol times, indexed [rate group][lanes][MPS].
# The rows repeat in shape on purpose: they are the spec's tables as printed.
# Rate groups: 0 = 2.5 GT/s, 1 = 5 GT/s, 2 = 8 GT/s and above.
# Columns follow LANE_CHOICES (x1, x2, x4, x8, x16); rows follow MPS_CHOICES.
_DLLP_INTERVAL_SYMBOLS = np.array([
    [  # 2.5 GT/s
        [237, 416, 559, 1071, 2095, 4143],
        [128, 217, 289, 545, 1057, 2081],
        [73, 118, 154, 282, 538, 1050],
        [67, 107, 86, 150, 278, 534],
        [48, 72, 86, 150, 278, 534],
    ],
    [  # 5 GT/s
        [288, 467, 610, 1122, 2146, 4194],
        [179, 268, 340, 596, 1108, 2132],
        [124, 169, 205, 333, 589, 1101],
        [118, 158, 137, 201, 329, 585],
        [99, 123, 137, 201, 329, 585],
    ],
    [  # 8 GT/s and above
        [333, 512, 655, 1167, 2191, 4239],
        [224, 313, 385, 641, 1153, 2177],
        [169, 214, 250, 378, 634, 1146],
        [163, 203, 182, 246, 374, 630],
        [144, 168, 182, 246, 374, 630],
    ],
], dtype=np.float64)

# Tag field widths and the outstanding non-posted requests they allow.
TAG_LIMITS = {5: 32, 8: 256, 10: 768, 14: 16384}

_GEN_RATE = np.array([np.nan] + [g.rate_GTps for g in GENERATIONS.values()])
_GEN_ENC = np.array([np.nan] + [g.encoding_efficiency for g in GENERATIONS.values()])
_GEN_FRAMING = np.array([np.nan] + [DEFAULT_FRAMING_B[g] for g in GENERATIONS])
_GEN_RATE_GROUP = np.array([0, 0, 1, 2, 2, 2, 2])


def check_choice(name: str, value, choices) -> np.ndarray:
    """``value`` as an array whose every element is one of ``choices``, or ConfigError."""
    arr = np.asarray(value)
    if arr.ndim == 0 and arr.item() in choices:    # one value (a system's): no array search
        return arr
    bad = ~np.isin(arr, np.asarray(choices))
    if bad.any():
        first = arr[bad].flat[0]
        first = first.item() if hasattr(first, "item") else first
        raise ConfigError(f"{name}: {first!r} is not one of "
                          f"{', '.join(str(c) for c in choices)}")
    return arr


def check_range(name: str, value, lo: float | None = None, hi: float | None = None,
                lo_open: bool = False, hi_open: bool = False) -> np.ndarray:
    """``value`` as a float array inside [lo, hi] (open ends as asked), or ConfigError."""
    arr = np.asarray(value, dtype=np.float64)
    bad = np.isnan(arr)
    if lo is not None:
        bad |= (arr <= lo) if lo_open else (arr < lo)
    if hi is not None:
        bad |= (arr >= hi) if hi_open else (arr > hi)
    if bad.any():
        first = arr[bad].flat[0]
        lo_s = "" if lo is None else f"{'>' if lo_open else '>='} {lo:g}"
        hi_s = "" if hi is None else f"{'<' if hi_open else '<='} {hi:g}"
        rule = " and ".join(s for s in (lo_s, hi_s) if s)
        raise ConfigError(f"{name}: {first:g} is out of range (must be {rule})")
    return arr


def resolve_flit_mode(gen, flit_mode=None) -> np.ndarray:
    """Flit mode per configuration: Gen6 always; ``None`` means the generation's default.

    Flit mode below Gen6 and non-flit Gen6 are errors (the config schema's rule)."""
    gen = check_choice("link.gen", gen, GEN_CHOICES)
    mandatory = gen >= 6
    if flit_mode is None:
        return mandatory
    flit = np.asarray(flit_mode, dtype=bool)
    if (flit & ~mandatory).any():
        raise ConfigError("link.flit_mode: flit mode needs PCIe 6 or later")
    if (mandatory & ~flit).any():
        raise ConfigError("link.flit_mode: PCIe 6 at 64 GT/s always runs in flit mode")
    return np.broadcast_to(flit, np.broadcast_shapes(flit.shape, gen.shape))


def rate_GTps(gen) -> np.ndarray:
    return _GEN_RATE[check_choice("link.gen", gen, GEN_CHOICES)]


def raw_GBps_per_lane(gen) -> np.ndarray:
    """Bytes per second per lane after line encoding (before framing, DLLPs, SKP), GB/s."""
    g = check_choice("link.gen", gen, GEN_CHOICES)
    return _GEN_RATE[g] * _GEN_ENC[g] / 8.0


def raw_GBps(gen, lanes) -> np.ndarray:
    """Raw link rate per direction after line encoding, GB/s (x16 Gen3: 15.75)."""
    lanes = check_choice("link.lanes", lanes, LANE_CHOICES)
    return raw_GBps_per_lane(gen) * lanes


def default_framing_B(gen, flit_mode=None) -> np.ndarray:
    """Per-TLP framing + sequence number + LCRC bytes; 0 in flit mode."""
    g = check_choice("link.gen", gen, GEN_CHOICES)
    flit = resolve_flit_mode(g, flit_mode)
    return np.where(flit, 0.0, _GEN_FRAMING[g])


def dllp_interval_symbols(gen, lanes, mps_B) -> np.ndarray:
    """The spec's Ack/UpdateFC cadence for a link, in symbol times."""
    g = check_choice("link.gen", gen, GEN_CHOICES)
    lanes = check_choice("link.lanes", lanes, LANE_CHOICES)
    mps = check_choice("link.mps_B", mps_B, MPS_CHOICES)
    lane_idx = np.log2(lanes).astype(np.intp)
    mps_idx = np.log2(mps).astype(np.intp) - 7
    return _DLLP_INTERVAL_SYMBOLS[_GEN_RATE_GROUP[g], lane_idx, mps_idx]


def dllp_overhead(gen, lanes, mps_B, flit_mode=None) -> np.ndarray:
    """Fraction of each direction's link time taken by Ack and UpdateFC DLLPs.

    ``DLLPS_PER_INTERVAL * DLLP_B / (interval_symbols * lanes)``: a symbol time
    carries one byte per lane. 0 in flit mode (DLLPs ride in the flits' DLP bytes)."""
    lanes_a = check_choice("link.lanes", lanes, LANE_CHOICES)
    flit = resolve_flit_mode(gen, flit_mode)
    frac = DLLPS_PER_INTERVAL * DLLP_B / (dllp_interval_symbols(gen, lanes_a, mps_B) * lanes_a)
    return np.where(flit, 0.0, frac)


def skp_overhead(gen) -> np.ndarray:
    """Fraction of link time taken by SKP ordered sets (same on every lane)."""
    g = check_choice("link.gen", gen, GEN_CHOICES)
    f8 = SKP_8B10B[0] / (SKP_8B10B[0] + SKP_8B10B[1])
    f128 = SKP_128B130B[0] / (SKP_128B130B[0] + SKP_128B130B[1])
    return np.where(g <= 2, f8, f128)


def flit_tlp_fraction(flit_mode) -> np.ndarray:
    """Share of the wire that carries TLP bytes: 236/256 in flit mode, else 1."""
    return np.where(np.asarray(flit_mode, dtype=bool), FLIT_TLP_B / FLIT_B, 1.0)


def tlp_capacity_GBps(gen, lanes, mps_B, flit_mode=None, dllp_overhead_frac=None) -> np.ndarray:
    """Wire bytes per second left for TLPs per direction, in GB/s.

    Wire bytes are those the packetiser counts (:mod:`hostlink.model.pcie.tlp`):
    in non-flit mode a TLP's framing, header, payload and digest; in flit mode
    its bytes scaled by 256/236, so the flit's DLP/CRC/FEC share is inside the
    TLP's wire bytes. What is left after SKP ordered sets and, in non-flit
    mode, DLLPs. ``dllp_overhead_frac`` (array; NaN entries = from the spec
    cadence) overrides the DLLP share."""
    flit = resolve_flit_mode(gen, flit_mode)
    spec = dllp_overhead(gen, lanes, mps_B, flit)
    if dllp_overhead_frac is None:
        dllp = spec
    else:
        given = check_range("link.dllp_overhead", np.nan_to_num(dllp_overhead_frac, nan=0.0),
                            0.0, 1.0, hi_open=True)
        dllp = np.where(np.isnan(dllp_overhead_frac), spec, given)
    return raw_GBps(gen, lanes) * (1.0 - dllp - skp_overhead(gen))


def tag_limit(bits: int) -> int:
    """Outstanding non-posted requests allowed by a tag field of ``bits`` bits."""
    if bits not in TAG_LIMITS:
        raise ConfigError(f"tag bits: {bits} is not one of {', '.join(map(str, TAG_LIMITS))}")
    return TAG_LIMITS[bits]


def max_tags(gen, flit_mode=None) -> np.ndarray:
    """The largest tag count a link allows: 8-bit (256) to Gen3, 10-bit (768) from
    Gen4, 14-bit (16384) in flit mode."""
    g = check_choice("link.gen", gen, GEN_CHOICES)
    flit = resolve_flit_mode(g, flit_mode)
    return np.where(flit, TAG_LIMITS[14], np.where(g >= 4, TAG_LIMITS[10], TAG_LIMITS[8]))


def header_B(kind: str, addr_64bit=True) -> np.ndarray:
    """Header bytes of an ``"MRd"``, ``"MWr"`` or ``"CplD"`` TLP."""
    if kind == "CplD":
        return np.asarray(CPLD_HDR_B)
    if kind in ("MRd", "MWr"):
        return np.where(np.asarray(addr_64bit, dtype=bool), HDR_4DW_B, HDR_3DW_B)
    raise ConfigError(f"TLP kind: {kind!r} is not one of MRd, MWr, CplD")
