"""Host DRAM: the bandwidth the GPU's reads can draw from host memory.

Model: peak = channels x transfer rate x channel width; the sustained peak is
that times an efficiency factor; the host serves the device's bursts at that
rate or at ``host.serve_GBps`` where that is set and lower; every request
costs whole bursts, so the useful bandwidth is that rate times (bytes asked /
bytes the bursts fetch). All functions broadcast over NumPy arrays.

Facts (shared/design/REFERENCE.md, the seeds):
- DDR4 and DDR5 deliver 64 B per access: DDR4 BL8 x 64-bit channel; DDR5
  BL16 x 32-bit subchannel (two subchannels make a 64-bit DIMM channel).
- A 32 B read still costs a 64 B burst: the seed's DDR4-2400 channel gives
  19.2 GB/s (2400 MT/s x 8 B) of sequential bandwidth, and 9.6 GB/s to
  32 B reads (emogi_vldb2020 §3.3).

- The host can serve the device's bursts slower than its DRAM delivers them:
  on an H200's host (8 channels of DDR5-4800, 307 GB/s peak) warp-coalesced
  zero-copy reads off the 128 B line, which touch three 64 B lines per 128 B
  read at every offset but 64 B, all ran at 34.7-35.9 GB/s with 4 B per lane
  (0.81-0.84 G lines a second), where 64 B off the line (two lines) ran at 41.3
  and aligned reads at 51.2 (validation/experiments/cpl_offsets/runs/h200). Where the
  limit sits (root complex, mesh, memory controller) the device cannot tell; it
  costs per burst, so ``host.serve_GBps`` caps the rate of bursts
  (:func:`served_GBps`; unset = the DRAM's own), fitted by calibrate step
  ``host_serve``.

Assumptions:
- ``efficiency`` (sustained fraction of peak for streaming reads: refresh,
  bank conflicts, read/write turnarounds) is an ASSUMPTION until measured;
  :data:`DEFAULT_EFFICIENCY` is 1.0 so that it never hides a bound silently;
  the system presets set their own.
- Bursts are aligned to their size; a request touching k bursts costs k
  bursts. No reuse between requests (no row-buffer or cache hits), so this
  is the bound for scattered fine-grained reads; sequential 32 B reads that
  share a burst would do better.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hostlink.model.errors import ConfigError

DEFAULT_EFFICIENCY = 1.0


@dataclass(frozen=True)
class DramType:
    """Per-channel organisation of a DRAM standard."""
    name: str
    channel_width_bits: int
    burst_length: int
    access_width_bits: int     # the (sub)channel one burst comes from

    @property
    def burst_B(self) -> int:
        return self.burst_length * self.access_width_bits // 8


DRAM_TYPES = {
    "DDR3": DramType("DDR3", 64, 8, 64),
    "DDR4": DramType("DDR4", 64, 8, 64),
    "DDR5": DramType("DDR5", 64, 16, 32),
}


def _positive(name: str, value) -> np.ndarray:
    arr = np.asarray(value, dtype=np.float64)
    if np.any(~(arr > 0)):
        raise ConfigError(f"{name}: {arr[~(arr > 0)].flat[0]:g} must be > 0")
    return arr


def peak_GBps(channels, transfer_rate_MTps, channel_width_bits=64) -> np.ndarray:
    """Peak bandwidth: channels x MT/s x bytes per transfer, in GB/s (1e9 B/s)."""
    ch = _positive("host.channels", channels)
    rate = _positive("host.transfer_rate_MTps", transfer_rate_MTps)
    width = _positive("host.channel_width_bits", channel_width_bits)
    return ch * rate * 1e6 * (width / 8.0) / 1e9


def bursts_touched(addr, size_B, burst_B) -> np.ndarray:
    """Aligned bursts a request of ``size_B`` bytes at ``addr`` touches."""
    burst = np.asarray(burst_B, dtype=np.int64)
    if np.any(burst < 1) or np.any(burst & (burst - 1)):
        raise ConfigError(f"host.burst_B: {np.asarray(burst_B).flat[0]} must be a power of two")
    size = np.asarray(size_B, dtype=np.int64)
    if np.any(size < 1):
        raise ConfigError("request size_B must be >= 1 B")
    start = np.asarray(addr).astype(np.uint64) % burst.astype(np.uint64)
    start = start.astype(np.int64)
    return (start + size + burst - 1) // burst


def read_efficiency(addr, size_B, burst_B) -> np.ndarray:
    """Bytes asked per byte the bursts fetch (<= 1)."""
    return np.asarray(size_B) / (bursts_touched(addr, size_B, burst_B) * np.asarray(burst_B))


def sustained_GBps(channels, transfer_rate_MTps, channel_width_bits=64,
                   efficiency=DEFAULT_EFFICIENCY) -> np.ndarray:
    eff = np.asarray(efficiency, dtype=np.float64)
    if np.any(~((eff > 0) & (eff <= 1))):
        raise ConfigError(f"host.efficiency: {eff[~((eff > 0) & (eff <= 1))].flat[0]:g} "
                          "must be in (0, 1]")
    return peak_GBps(channels, transfer_rate_MTps, channel_width_bits) * eff


def served_GBps(host) -> float:
    """Bytes of whole bursts a second the host serves to the device's reads: the DRAM's
    sustained peak, or ``host.serve_GBps`` where that is set and lower."""
    return float(_served(sustained_GBps(host.channels, host.transfer_rate_MTps,
                                        host.channel_width_bits, host.efficiency),
                         host.serve_GBps))


def _served(dram_GBps, serve_GBps):
    if serve_GBps is None:
        return dram_GBps
    return np.minimum(dram_GBps, _positive("host.serve_GBps", serve_GBps))


def effective_read_GBps(size_B, addr=0, *, channels, transfer_rate_MTps, channel_width_bits=64,
                        burst_B=64, efficiency=DEFAULT_EFFICIENCY, serve_GBps=None) -> np.ndarray:
    """Useful bandwidth for reads of ``size_B`` at ``addr``: the rate the host serves
    bursts at (sustained peak, or ``serve_GBps`` where lower) x burst efficiency.

    >>> float(effective_read_GBps(32, channels=1, transfer_rate_MTps=2400))
    9.6
    """
    return (_served(sustained_GBps(channels, transfer_rate_MTps, channel_width_bits, efficiency),
                    serve_GBps)
            * read_efficiency(addr, size_B, burst_B))


def host_memory_params(host) -> dict:
    """The keyword arguments of :func:`effective_read_GBps` from a HostMemoryConfig."""
    return {"channels": host.channels, "transfer_rate_MTps": host.transfer_rate_MTps,
            "channel_width_bits": host.channel_width_bits, "burst_B": host.burst_B,
            "efficiency": host.efficiency, "serve_GBps": host.serve_GBps}
