"""Time of the CPU-gather-plus-copy path: host threads gather rows, one copy moves them.

The DMA-based path that PyTorch and DGL took for a GNN's node features (Min's
dissertation, 2022, ch. 3.4.1, "DMA-based": "uses CPU to gather node features
into a contiguous buffer", multithreaded, then an asynchronous copy): ``threads``
host threads copy the minibatch's rows from the feature table into a pinned
staging buffer, then one cudaMemcpy moves the buffer over the link
(:func:`hostlink.model.copy_engine.copy_time_ns`). The two run one after the
other, as one minibatch's gather and copy do.

The gather takes the longer of two terms:

- ``host_serve``: the DRAM bytes it moves at the host's sustained DRAM rate
  (:func:`hostlink.model.dram.sustained_GBps`): the bursts the rows touch (a row
  that does not start on a burst reads the partial bursts whole) plus the
  staging buffer written twice (a store that misses reads its line first,
  write-allocate, then writes it back);
- ``host_threads``: each of ``threads`` threads keeps ``host.cpu_fill_buffers``
  cache-line misses in flight over ``host.cpu_load_lat_ns`` (Little's law).

The two host values are system config fields (assumptions until the
validation's ``cpu_gather`` cases fit them: no public figure pins them for a
given host; the defaults are the 10 L1 fill buffers of Skylake-era cores, Intel
64 and IA-32 Architectures Optimization Reference Manual, and a 100 ns loaded
DRAM latency). Assumptions: no per-row cost beyond the lines; 64 B cache lines
(x86); the staging buffer is pinned (no second copy by the driver); the gather
and the copy do not overlap.
"""
from __future__ import annotations

from hostlink.model.errors import ConfigError

CACHE_LINE_B = 64  # an x86 core's cache line (Intel SDM vol. 3A, "Memory Cache Control")


def thread_rate_GBps(host) -> float:
    """One thread's gather rate on ``host``: its misses in flight over their latency, GB/s."""
    return host.cpu_fill_buffers * CACHE_LINE_B / host.cpu_load_lat_ns


def row_read_B(row_B: int, lead_B: int, burst_B: int) -> int:
    """DRAM bytes a row of ``row_B`` starting ``lead_B`` into a burst reads."""
    return -(-(lead_B + row_B) // burst_B) * burst_B


def mean_row_read_B(row_B: int, burst_B: int) -> float:
    """DRAM bytes a row reads, averaged over rows placed back to back in the table
    (row k starts at ``k * row_B``; the offsets repeat every burst)."""
    from math import gcd
    period = burst_B // gcd(row_B, burst_B)
    return sum(row_read_B(row_B, (k * row_B) % burst_B, burst_B) for k in range(period)) / period


def gather_terms_ns(system, rows: int, row_B: int, threads: int = 16) -> dict[str, float]:
    """The gather's two terms and the copy's time, ns, with ``threads`` host threads."""
    from hostlink.model.copy_engine import copy_time_ns
    from hostlink.model.dram import sustained_GBps
    if rows < 0 or row_B < 1 or threads < 1:
        raise ConfigError("cpu gather: rows must be >= 0, row_B and threads >= 1")
    host = system.host
    dram_GBps = float(sustained_GBps(host.channels, host.transfer_rate_MTps,
                                     host.channel_width_bits, host.efficiency))
    gathered_B = rows * row_B
    dram_B = rows * mean_row_read_B(row_B, host.burst_B) + 2 * gathered_B
    lines = rows * mean_row_read_B(row_B, CACHE_LINE_B) / CACHE_LINE_B
    per_thread = CACHE_LINE_B / thread_rate_GBps(host)            # ns per line
    threads_ns = lines * per_thread / threads
    return {"host_serve": dram_B / dram_GBps, "host_threads": threads_ns,
            "copy": copy_time_ns(system, gathered_B, True) if gathered_B else 0.0,
            "dram_B": dram_B}


def cpu_gather_time(system, rows: int, row_B: int, threads: int = 16) -> tuple[float, str, dict]:
    """(time ns, bound, terms) of gathering ``rows`` rows of ``row_B`` and copying them:
    the bound is the gather's larger term, or ``link`` where the copy takes longer."""
    terms = gather_terms_ns(system, rows, row_B, threads)
    gather_ns = max(terms["host_serve"], terms["host_threads"])
    gather_bound = "host_serve" if terms["host_serve"] >= terms["host_threads"] else "host_threads"
    bound = "link" if terms["copy"] > gather_ns else gather_bound
    return gather_ns + terms["copy"], bound, dict(terms, gather=gather_ns)
