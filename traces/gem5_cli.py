"""``hostlink trace convert SRC DST --to gem5`` and ``trace stats`` of a gem5 packet trace.

- ``convert ... --to gem5``: SRC (an Accel-Sim folder or a trace store,
  coalesced into requests; or a gem5 packet trace, read as its requests) has
  its host requests written to the file DST (gzipped when DST ends in ``.gz``) by
  :func:`hostlink.traces.gem5_trace.write_gem5`. With ``--system`` the ticks
  are the discrete-event model's on that system
  (:func:`hostlink.traces.gem5_timing.des_ticks_ps`) and the requests pass
  the system's GPU caches as ``predict`` has them; without it, no caches and
  one request every ``--gap-ns`` (default 1 ns) in stream order.
- ``stats`` of a gem5 packet trace: the request counts and bytes
  (:func:`hostlink.traces.stats.request_stats`); instructions and sectors are
  not in such a file.
"""
from __future__ import annotations

import sys
from pathlib import Path

from hostlink.model.errors import ConfigError, TraceError


def source_stream(args, src, system=None):
    """The request stream of SRC and its regions (a gem5 trace's: those it was laid out
    from, if hostlink wrote it)."""
    from hostlink.traces.gem5_trace import (packet_regions, packet_stream, read_packets,
                                             reads_as_gem5)
    if reads_as_gem5(src):
        pk = read_packets(src)
        return packet_stream(pk, src), packet_regions(pk, src)
    from hostlink.model.predict import coalesce_defaults
    from hostlink.traces.coalescer import coalesce
    from hostlink.traces.store import load_regions, open_trace
    regions = load_regions(args.regions) if args.regions else None
    trace = open_trace(src, regions=regions, memcpy_location=args.memcpy_location)
    if system is None:  # no timing asked: host requests, no caches (as trace stats)
        return coalesce(trace, include_device=False), trace.regions
    # the stream predict times: device requests too, through the GPU's own caches
    return coalesce(trace, **coalesce_defaults(system.gpu)), trace.regions


def convert_to_gem5(args) -> int:
    from hostlink.traces.gem5_trace import write_gem5
    dst = Path(args.dst)
    if dst.is_dir():
        raise TraceError(f"{dst}: is a folder; a gem5 packet trace is one file")
    if dst.exists() and not args.overwrite:
        raise TraceError(f"{dst}: already exists (use --overwrite)")
    system = None
    if args.system:
        from hostlink.model.predict import resolve_system
        system = resolve_system(args.system, args.overrides)
    elif args.overrides:
        raise ConfigError("--set needs --system")
    stream, regions = source_stream(args, args.src, system)
    if system is None:
        summary = write_gem5(stream, dst, gap_ns=args.gap_ns, regions=regions,
                             obj_id=f"hostlink {Path(args.src).name}")
    else:
        from hostlink.traces.gem5_timing import des_ticks_ps
        summary = write_gem5(stream, dst, ticks_ps=des_ticks_ps(stream, system), regions=regions,
                             obj_id=f"hostlink {Path(args.src).name} on {system.name}",
                             timing=f"discrete-event model on {system.name}: each request "
                                    f"when it reaches the root complex")
    sys.stdout.write(f"wrote gem5 packet trace {dst}: {summary['packets']:,} packets "
                     f"({summary['reads']:,} reads, {summary['writes']:,} writes, "
                     f"{summary['bytes']:,} B) over {summary['last_tick'] / 1e6:.6g} us\n")
    return 0


def stats_of_gem5(args) -> int:
    from hostlink.traces.gem5_trace import read_gem5
    from hostlink.traces.stats import request_stats, write_stats
    if args.l1_size or args.l2_size or args.cache_host or args.regions:
        raise ConfigError(f"{args.dir}: a gem5 packet trace holds requests after the caches, "
                          "in physical addresses: --l1-size, --l2-size, --cache-host and "
                          "--regions do not apply")
    stats = {"source": str(args.dir), "format": "gem5", **request_stats(read_gem5(args.dir))}
    write_stats(stats, args.json)
    return 0


def add_convert_args(p) -> None:
    """The options ``convert --to gem5`` adds."""
    p.add_argument("--system", metavar="NAME_OR_TOML",
                   help="with --to gem5: tick each request by the discrete-event model on this "
                        "system (default: no timing, see --gap-ns)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="with --system: override a system key (repeatable)")
    p.add_argument("--gap-ns", type=float, default=1.0,
                   help="with --to gem5 and no --system: ns between requests (default 1)")
