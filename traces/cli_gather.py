"""``hostlink trace gen --kernel gather``: emulate a GNN feature gather and write its trace.

The gather's parameters (:mod:`hostlink.traces.gather`): ``--row-bytes F`` (a
multiple of 4), ``--table-bytes`` or ``--table-rows`` (uniform ids; sampled ids
default to one row per vertex of ``--graph``), ``--rows M``, ``--variant
naive|aligned``, ``--lane-bytes 4|8|16``, ``--ids uniform|sampled`` with
``--graph``, ``--fanouts 10,25`` and ``--batch`` for sampling, ``--seed``. The trace
goes to ``--out`` as the other kernels' do (streamed: one chunk in memory at a
time), with ``gather.toml`` beside it (:mod:`hostlink.traces.gather_record`) for
``hostlink predict --trace``.
"""
from __future__ import annotations

import time
from pathlib import Path

from hostlink.model.errors import HostlinkError


def add_arguments(gen) -> None:
    g = gen.add_argument_group("gather (--kernel gather)")
    g.add_argument("--row-bytes", type=int, default=None, help="bytes per feature row, a "
                   "multiple of 4")
    g.add_argument("--table-bytes", default=None, help="table size, e.g. '16 GiB' (or "
                   "--table-rows)")
    g.add_argument("--table-rows", type=int, default=None, help="rows of the table")
    g.add_argument("--rows", type=int, default=1 << 20, help="rows gathered (default 2**20)")
    g.add_argument("--lane-bytes", type=int, choices=(4, 8, 16), default=4,
                   help="bytes each lane moves per instruction (default 4)")
    g.add_argument("--ids", choices=("uniform", "sampled"), default="uniform",
                   help="row ids: uniform random (default) or neighbour sampling of --graph")
    g.add_argument("--fanouts", default="10,25", help="sampled ids: neighbours per layer "
                   "(default 10,25)")
    g.add_argument("--batch", type=int, default=1024, help="sampled ids: seed vertices per "
                   "minibatch (default 1024)")
    g.add_argument("--seed", type=int, default=1, help="seed of the row ids (default 1)")
    g.add_argument("--host-threads", type=int, default=16,
                   help="threads of the CPU-gather path predict times (default 16)")
    g.add_argument("--system", default="h200-pcie5", help="system whose GPU sizes the grid "
                   "(default h200-pcie5)")


def _table_rows(args, csr) -> int:
    from hostlink.model.units import UnitError, parse_quantity
    if args.table_bytes is not None and args.table_rows is not None:
        raise HostlinkError("give --table-bytes or --table-rows, not both")
    if args.table_rows is not None:
        return args.table_rows
    if args.table_bytes is not None:
        try:
            size = parse_quantity(args.table_bytes, "table_B")
        except UnitError as exc:
            raise HostlinkError(f"--table-bytes: {exc}") from None
        return int(size) // args.row_bytes
    if csr is not None:
        return csr.num_vertices
    raise HostlinkError("--kernel gather needs --table-bytes or --table-rows")


def gather_gen(args) -> int:
    from hostlink.model.cli.progress import step
    from hostlink.model.config import load_any_system
    from hostlink.traces.cli_gen import _print, write_trace
    from hostlink.traces.gather import GatherSpec, host_request_counts, ids_function, warp_trace
    from hostlink.traces.gather_record import write_gather_record
    t0 = time.perf_counter()
    if args.row_bytes is None:
        raise HostlinkError("--kernel gather needs --row-bytes")
    if args.variant not in ("naive", "aligned"):
        raise HostlinkError(f"--variant {args.variant}: a gather is naive or aligned")
    try:
        fanouts = tuple(int(f) for f in args.fanouts.split(","))
    except ValueError:
        raise HostlinkError(f"--fanouts {args.fanouts}: not a list of integers") from None
    csr, graph = None, ""
    if args.ids == "sampled":
        if not args.graph:
            raise HostlinkError("--ids sampled needs --graph")
        from hostlink.traces.graphs import read_graph
        csr, graph = read_graph(args.graph), str(Path(args.graph).resolve())
    gpu = load_any_system(args.system).gpu
    spec = GatherSpec(args.row_bytes, _table_rows(args, csr), args.rows, args.variant,
                      args.lane_bytes)
    ids_of = ids_function(args.ids, spec, seed=args.seed, csr=csr, fanouts=fanouts,
                          batch=args.batch)
    with step(f"emulating the gather ({args.variant}, {spec.row_B} B rows) to {args.out}"):
        written = write_trace(warp_trace(spec, ids_of, gpu), Path(args.out), args.format,
                              overwrite=args.overwrite)
    written.append(str(write_gather_record(
        Path(args.out), row_B=spec.row_B, table_rows=spec.table_rows, rows=spec.rows,
        variant=spec.variant, lane_B=spec.lane_B, ids=args.ids, seed=args.seed, graph=graph,
        fanouts=list(fanouts), batch=args.batch, host_threads=args.host_threads)))
    with step("counting host requests"):
        counts = host_request_counts(spec, ids_of, gpu)
    summary = {"kernel": "gather", "variant": spec.variant, "row_B": spec.row_B,
               "table_B": spec.table_B, "rows": spec.rows, "lane_B": spec.lane_B,
               "ids": args.ids, "host_requests": sum(counts.values()),
               "requests_by_size_B": {str(k): v for k, v in sorted(counts.items())},
               "host_requested_B": sum(k * v for k, v in counts.items()),
               "format": args.format, "out": str(args.out),
               "elapsed_s": round(time.perf_counter() - t0, 3)}
    if not args.json:
        summary["files"] = len(written)
    _print(summary, args.json)
    return 0
