"""Units: constants and the single parser for unit strings.

Conventions (followed across hostlink):
- every quantity carries its unit in its name: ``size_B``, ``lat_ns``,
  ``bw_GBps``, ``rate_GTps``; ``_bits`` for bits;
- GB/s means 1e9 bytes per second; GiB (2**30 B) is only for capacities;
- unit strings ("1.5 us", "64 KiB", "12 GB/s") are parsed here, once, at the
  config boundary; hot code sees plain floats in the unit of its name.
"""
from __future__ import annotations

import math
import re

KB = 1e3
MB = 1e6
GB = 1e9
KiB = 1024
MiB = 1024**2
GiB = 1024**3

NS_PER_S = 1e9
NS_PER_US = 1e3

# Scale of each unit relative to the base unit of its dimension.
_TIME_S = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9, "ps": 1e-12}
_SIZE_B = {"B": 1, "KB": KB, "MB": MB, "GB": GB, "TB": 1e12,
           "KiB": KiB, "MiB": MiB, "GiB": GiB, "TiB": 1024**4}
_BW_BPS = {"B/s": 1, "KB/s": KB, "MB/s": MB, "GB/s": GB, "TB/s": 1e12,
           "KiB/s": KiB, "MiB/s": MiB, "GiB/s": GiB}
_RATE = {"T/s": 1, "MT/s": 1e6, "GT/s": 1e9, "Hz": 1, "kHz": 1e3, "MHz": 1e6,
         "GHz": 1e9}

# Name suffix -> (dimension table, scale of the suffix's unit).
SUFFIX_UNITS: dict[str, tuple[dict[str, float], float]] = {
    "_s": (_TIME_S, 1.0), "_ms": (_TIME_S, 1e-3), "_us": (_TIME_S, 1e-6),
    "_ns": (_TIME_S, 1e-9),
    "_B": (_SIZE_B, 1), "_KiB": (_SIZE_B, KiB), "_MiB": (_SIZE_B, MiB),
    "_GiB": (_SIZE_B, GiB), "_KB": (_SIZE_B, KB),
    "_GBps": (_BW_BPS, GB), "_MBps": (_BW_BPS, MB),
    "_GTps": (_RATE, 1e9), "_MTps": (_RATE, 1e6), "_MHz": (_RATE, 1e6),
}

_QUANTITY = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*([^\s\d].*?)?\s*$")


class UnitError(ValueError):
    """A quantity whose unit does not fit where it is used."""


def unit_suffix(name: str) -> str | None:
    """The unit suffix of a key name (``rtt_ns`` -> ``_ns``), or None."""
    for suffix in sorted(SUFFIX_UNITS, key=len, reverse=True):
        if name.endswith(suffix):
            return suffix
    return None


def parse_quantity(text: str, key: str) -> float:
    """Parse ``"1.5 us"`` for a key named like ``rtt_ns`` into ``1500.0``.

    The key's suffix says the target unit; the string's unit must be of the
    same dimension. A bare number is taken in the key's unit.
    """
    suffix = unit_suffix(key)
    if suffix is None:
        raise UnitError(f"key '{key}' has no unit suffix, so '{text}' cannot be converted")
    match = _QUANTITY.match(text)
    if not match:
        raise UnitError(f"'{text}' is not a number with a unit")
    value = float(match.group(1))
    if not math.isfinite(value):
        raise UnitError(f"'{text}' is not a finite number")
    unit = match.group(2)
    table, target_scale = SUFFIX_UNITS[suffix]
    if unit is None:
        return value
    if unit not in table:
        known = ", ".join(sorted(table))
        raise UnitError(f"unit '{unit}' does not fit key '{key}' (expected one of: {known})")
    # Round off the binary noise of the scale factors (1.2 us -> 1200 ns, not 1199.999...).
    out = float(f"{value * table[unit] / target_scale:.12g}")
    if not math.isfinite(out):
        raise UnitError(f"'{text}' is too large for '{key}'")
    return out


def gbps(bytes_: float, seconds: float) -> float:
    """Bandwidth in GB/s (1e9 B/s) from bytes and seconds."""
    return bytes_ / seconds / GB
