"""``hostlink trace stats`` and ``hostlink trace convert``.

- ``hostlink trace stats DIR [--json]``: DIR is an Accel-Sim trace folder or a
  trace store (told apart by what they hold); prints instructions by
  operation and space, sectors, host read requests by size, useful and
  requested bytes (:mod:`hostlink.traces.stats`), and what the requests were
  counted after (``counted``): before any cache by default, or with
  ``--system NAME`` through that GPU's L1 as ``hostlink predict`` counts
  them by default, so the two agree.
- ``hostlink trace convert SRC DST``: Accel-Sim folder to store, or store to
  Accel-Sim folder (``--to`` picks; default: the other format); ``--to gem5``
  writes the host requests as a gem5 packet trace (:mod:`hostlink.traces.gem5_cli`).
  ``stats`` also reads a gem5 packet trace (its requests alone).

Both take ``--regions FILE`` (a regions TOML, see hostlink.traces.store) and
``--memcpy-location {device,host}`` (where an Accel-Sim trace's MemcpyHtoD
destinations live).
"""
from __future__ import annotations

import sys

from hostlink.model.errors import ConfigError


def _size(text: str) -> int:
    from hostlink.model.units import UnitError, parse_quantity
    try:
        value = parse_quantity(text, "size_B")
    except UnitError as exc:
        raise ConfigError(f"size '{text}': {exc}") from None
    if value < 0 or value != int(value):
        raise ConfigError(f"size '{text}' is not a whole, non-negative number of bytes")
    return int(value)


COUNTED_RAW = ("before any cache; hostlink predict filters them through the GPU's L1 by "
               "default: --system NAME counts as it does")


def _add_source_args(p) -> None:
    p.add_argument("--regions", metavar="FILE",
                   help="regions TOML naming host and device address ranges")
    p.add_argument("--memcpy-location", choices=("device", "host"), default="device",
                   help="where an Accel-Sim trace's MemcpyHtoD destinations live (default: device)")


def _open(args, path):
    from hostlink.traces.folder_regions import with_folder_regions
    from hostlink.traces.store import load_regions, open_trace
    regions = load_regions(args.regions) if args.regions else None
    return open_trace(path, regions=with_folder_regions(path, regions),
                      memcpy_location=args.memcpy_location)


def _cmd_stats(args) -> int:
    from hostlink.traces.gem5_trace import reads_as_gem5
    if reads_as_gem5(args.dir):
        from hostlink.traces.gem5_cli import stats_of_gem5
        return stats_of_gem5(args)
    from hostlink.traces.cache import CacheConfig
    from hostlink.traces.stats import trace_stats, write_stats
    from hostlink.traces.store import trace_format
    trace = _open(args, args.dir)
    cache = None
    l1 = _size(args.l1_size) if args.l1_size else 0
    l2 = _size(args.l2_size) if args.l2_size else 0
    counted = COUNTED_RAW
    cache_host = args.cache_host
    if args.system:
        if l1 or l2 or args.cache_host:
            raise ConfigError("--system counts through that GPU's caches: give it or "
                              "--l1-size/--l2-size/--cache-host, not both")
        from hostlink.model.config import load_any_system
        from hostlink.traces.cache import host_read_cache
        system = load_any_system(args.system, args.overrides)
        cache = host_read_cache(system.gpu)   # what hostlink predict applies by default
        cache_host = cache is not None
        counted = (f"after the L1 of {system.gpu.name} ({system.name}), as hostlink predict "
                   "counts them" if cache is not None else
                   f"no cache ({system.gpu.name} does not cache host reads), as hostlink "
                   "predict counts them")
    elif args.overrides:
        raise ConfigError("--set overrides a system's keys: give --system NAME too")
    elif l1 or l2:
        cache = CacheConfig(l1_size_B=l1, l2_size_B=l2, sm_count=args.sm_count,
                            **({"l1_ways": args.l1_ways} if args.l1_ways else {}),
                            **({"l2_ways": args.l2_ways} if args.l2_ways else {}))
    elif args.cache_host:
        raise ConfigError("--cache-host needs a cache: give --l1-size and/or --l2-size")
    if cache is not None and not args.system:
        counted = (f"after the caches given (L1 {l1} B per SM, L2 {l2} B"
                   f"{', host reads cached' if cache_host else ', host reads bypass them'})")
    from hostlink.model.cli.progress import note_first_compile, step
    note_first_compile()
    with step(f"reading and coalescing {args.dir}"):
        stats = trace_stats(trace, cache=cache, cache_host=cache_host)
    stats = {"source": str(args.dir), "format": trace_format(args.dir), "counted": counted,
             **stats}
    write_stats(stats, args.json)
    return 0


def _cmd_convert(args) -> int:
    from hostlink.model.errors import TraceError
    from hostlink.traces.accelsim import KERNELSLIST, write_accelsim
    from hostlink.traces.store import trace_format, write_store
    if args.to == "gem5":
        from hostlink.traces.gem5_cli import convert_to_gem5
        return convert_to_gem5(args)
    if args.system or args.overrides:
        raise ConfigError("--system and --set apply to --to gem5 alone")
    trace = _open(args, args.src)
    to = args.to or ("accelsim" if trace_format(args.src) == "store" else "store")
    if to == "store":
        compression = None if args.compression == "none" else args.compression
        out = write_store(trace, args.dst, chunk_insts=args.chunk_insts, compression=compression,
                          overwrite=args.overwrite)
        sys.stdout.write(f"wrote trace store {out}\n")
    else:
        from pathlib import Path
        if (Path(args.dst) / KERNELSLIST).exists() and not args.overwrite:
            raise TraceError(f"{args.dst}: already holds an Accel-Sim trace (use --overwrite)")
        files = write_accelsim(trace, args.dst, xz=args.xz)
        sys.stdout.write(f"wrote {len(files)} files to {args.dst}\n")
    return 0


def register_trace_commands(sub) -> None:
    from hostlink.model.cli.argtypes import int_at_least
    p = sub.add_parser("stats", help="instructions, sectors and PCIe requests of a trace",
                       description="Summarise a trace (Accel-Sim folder or trace store).")
    p.add_argument("dir", metavar="DIR",
                   help="Accel-Sim trace folder, trace store folder or gem5 packet trace")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    _add_source_args(p)
    p.add_argument("--system", metavar="NAME_OR_TOML",
                   help="count host reads as hostlink predict does on this system (through "
                        "its GPU's L1); default: before any cache")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="with --system, override a system key, e.g. --set gpu.l1_B=65536 "
                        "(repeatable)")
    p.add_argument("--l1-size", metavar="SIZE", help="L1 per SM, e.g. '128 KiB' (default: none)")
    p.add_argument("--l2-size", metavar="SIZE", help="L2 size, e.g. '6 MiB' (default: none)")
    p.add_argument("--l1-ways", type=int_at_least(1),
                   help="L1 associativity (default 4, an assumption)")
    p.add_argument("--l2-ways", type=int_at_least(1),
                   help="L2 associativity (default 16, an assumption)")
    p.add_argument("--sm-count", type=int_at_least(1), default=1,
                   help="SMs, for the per-SM L1 (default 1)")
    p.add_argument("--cache-host", action="store_true",
                   help="let host-memory loads hit in the caches (default: they bypass them)")
    p.set_defaults(func=_cmd_stats)

    p = sub.add_parser("convert", help="convert between an Accel-Sim folder and a trace store, "
                                       "or write a gem5 packet trace",
                       description="Convert a trace between Accel-Sim text and the binary store, "
                                   "or write its host requests as a gem5 packet trace.")
    p.add_argument("src", metavar="SRC",
                   help="Accel-Sim trace folder or trace store (or, --to gem5, a gem5 trace)")
    p.add_argument("dst", metavar="DST", help="output folder (--to gem5: output file)")
    p.add_argument("--to", choices=("store", "accelsim", "gem5"),
                   help="output format (default: the other of store and accelsim)")
    _add_source_args(p)
    p.add_argument("--chunk-insts", type=int_at_least(1), default=1 << 16,
                   help="rows per store chunk (default 65536)")
    p.add_argument("--compression", choices=("zstd", "lz4", "none"), default="zstd",
                   help="store chunk compression (default zstd)")
    p.add_argument("--xz", action="store_true", help="write kernel-N.traceg.xz files")
    p.add_argument("--overwrite", action="store_true", help="replace a trace already at DST")
    from hostlink.traces.gem5_cli import add_convert_args
    add_convert_args(p)
    p.set_defaults(func=_cmd_convert)
