"""Host threads reading rows of host memory: the CPU-gather-plus-copy path and its reads alone.

The DMA-based path that PyTorch and DGL took for a GNN's node features (Min's
dissertation, 2022, ch. 3.4.1, "DMA-based": "uses CPU to gather node features
into a contiguous buffer", multithreaded, then an asynchronous copy): ``threads``
host threads copy the minibatch's rows from the feature table into a pinned
staging buffer, then one cudaMemcpy moves the buffer over the link
(:func:`hostlink.model.copy_engine.copy_time_ns`). The two run one after the
other, as one minibatch's gather and copy do. The same threads reading rows
without a staging buffer are :func:`host_read_time` (the ``host_read``
microbenchmark, which calibrates the thread model).

Reading rows takes the longer of two terms:

- ``host_serve``: the DRAM bytes it moves at the host's sustained DRAM rate
  (:func:`hostlink.model.dram.sustained_GBps`): the bursts the rows touch (a row
  that does not start on a burst reads the partial bursts whole), plus, when
  rows are copied, the staging buffer written twice (a store that misses reads
  its line first, write-allocate, then writes it back);
- ``host_threads``: each thread reads its rows one after another. A row's first
  cache line costs ``host.cpu_load_lat_ns`` (the row's address is known only as
  the thread reaches it). Its further lines cost ``host.cpu_line_ns`` each up to
  ``host.cpu_stream_after_B`` into the row, and ``host.cpu_stream_line_ns`` each
  beyond, where the core's prefetchers have picked up the row's stream (Intel's
  L2 streamer follows ascending accesses within a 4 KiB page and runs up to 20
  lines ahead: Intel 64 and IA-32 Architectures Optimization Reference Manual,
  "Data Prefetching"). Threads slow one another: each thread past the first adds
  ``host.cpu_thread_load`` of every thread's time per row (they share cores and
  the memory system's queues).

The host values are system config fields. No public figure pins them for a
given host (the defaults assume a 100 ns DRAM latency, a Skylake-era core's 10
L1 fill buffers and 10 GB/s of streamed reads a core); the ``host_read``
microbenchmark's random rows of several sizes, thread counts and both ops fix
them (the calibration step ``host_read``; ``host.cpu_stream_after_B`` stays an
assumption: host_read's rows of 1 and 4 KiB bracket it). ``host.cpu_dram_GBps``
caps the DRAM term where the host's threads move less than its DRAM's sustained
rate (a virtual machine's share of the socket, say). Assumptions: 64 B cache
lines (x86); no per-row cost beyond its lines; the stores of a copy cost the
threads nothing beyond their DRAM traffic (the store buffer drains them);
threads beyond the host's cores are not modelled apart from
``cpu_thread_load``; the table's size does not matter (no host TLB term); the
staging buffer is pinned (no second copy by the driver); the gather and the
copy do not overlap.
"""
from __future__ import annotations

from hostlink.model.errors import ConfigError

CACHE_LINE_B = 64  # an x86 core's cache line (Intel SDM vol. 3A, "Memory Cache Control")


def row_thread_ns(host, lines: float) -> float:
    """One thread's time alone to read a row of ``lines`` cache lines: the first line's
    miss latency, the lines up to ``cpu_stream_after_B`` at ``cpu_line_ns``, the rest
    at ``cpu_stream_line_ns``."""
    ramp_lines = host.cpu_stream_after_B / CACHE_LINE_B
    ramped = max(0.0, min(lines, ramp_lines) - 1.0)
    streamed = max(0.0, lines - max(ramp_lines, 1.0))
    return host.cpu_load_lat_ns + ramped * host.cpu_line_ns + streamed * host.cpu_stream_line_ns


def thread_load_factor(host, threads: int) -> float:
    """How much longer each of ``threads`` threads takes per row than one thread alone."""
    return 1.0 + host.cpu_thread_load * (threads - 1)


def row_read_B(row_B: int, lead_B: int, burst_B: int) -> int:
    """DRAM bytes a row of ``row_B`` starting ``lead_B`` into a burst reads."""
    return -(-(lead_B + row_B) // burst_B) * burst_B


def mean_row_read_B(row_B: int, burst_B: int) -> float:
    """DRAM bytes a row reads, averaged over rows placed back to back in the table
    (row k starts at ``k * row_B``; the offsets repeat every burst)."""
    from math import gcd
    period = burst_B // gcd(row_B, burst_B)
    return sum(row_read_B(row_B, (k * row_B) % burst_B, burst_B) for k in range(period)) / period


def read_terms_ns(system, rows: int, row_B: int, threads: int = 16, *,
                  copy: bool = False) -> dict[str, float]:
    """The two terms of ``threads`` host threads reading ``rows`` random rows of
    ``row_B`` (``copy``: into a staging buffer), ns, and the DRAM bytes they move."""
    from hostlink.model.dram import sustained_GBps
    if rows < 0 or row_B < 1 or threads < 1:
        raise ConfigError("host rows: rows must be >= 0, row_B and threads >= 1")
    host = system.host
    dram_GBps = float(sustained_GBps(host.channels, host.transfer_rate_MTps,
                                     host.channel_width_bits, host.efficiency))
    if host.cpu_dram_GBps is not None:
        dram_GBps = min(dram_GBps, host.cpu_dram_GBps)
    dram_B = rows * mean_row_read_B(row_B, host.burst_B) + (2 * rows * row_B if copy else 0)
    lines = mean_row_read_B(row_B, CACHE_LINE_B) / CACHE_LINE_B
    threads_ns = (-(-rows // threads) * row_thread_ns(host, lines)
                  * thread_load_factor(host, threads))
    return {"host_serve": dram_B / dram_GBps, "host_threads": threads_ns, "dram_B": dram_B}


def _bound(terms: dict) -> tuple[float, str]:
    if terms["host_serve"] >= terms["host_threads"]:
        return terms["host_serve"], "host_serve"
    return terms["host_threads"], "host_threads"


def host_read_time(system, rows: int, row_B: int, threads: int = 16, *,
                   copy: bool = False) -> tuple[float, str, dict]:
    """(time ns, bound, terms) of ``threads`` host threads reading ``rows`` random rows
    of ``row_B`` bytes (``copy``: each into its slot of a staging buffer)."""
    terms = read_terms_ns(system, rows, row_B, threads, copy=copy)
    time_ns, bound = _bound(terms)
    return time_ns, bound, terms


def gather_terms_ns(system, rows: int, row_B: int, threads: int = 16) -> dict[str, float]:
    """The gather's two terms and the copy's time, ns, with ``threads`` host threads."""
    from hostlink.model.copy_engine import copy_time_ns
    terms = read_terms_ns(system, rows, row_B, threads, copy=True)
    gathered_B = rows * row_B
    return dict(terms, copy=copy_time_ns(system, gathered_B, True) if gathered_B else 0.0)


def cpu_gather_time(system, rows: int, row_B: int, threads: int = 16) -> tuple[float, str, dict]:
    """(time ns, bound, terms) of gathering ``rows`` rows of ``row_B`` and copying them:
    the bound is the gather's larger term, or ``link`` where the copy takes longer."""
    terms = gather_terms_ns(system, rows, row_B, threads)
    gather_ns, gather_bound = _bound(terms)
    bound = "link" if terms["copy"] > gather_ns else gather_bound
    return gather_ns + terms["copy"], bound, dict(terms, gather=gather_ns)
