"""``hostlink graph gen|info|convert`` and ``hostlink trace gen``.

- ``graph gen {kron,rmat,urand} --scale S --degree D [--seed N] --out PREFIX``
  writes EMOGI's binary CSR PREFIX.bel.col / .bel.dst / .bel.val (the files
  the CUDA harness reads); ``graph gen grid --dims WxH[xZ] [--ids local]``
  a 2-D or 3-D grid (:mod:`hostlink.traces.graphs.grid`), ``graph gen road
  --dims WxH [--mean-degree 2.5]`` a road-like graph, ``graph gen dataset
  --name NAME`` a graph carried in traces/graphs/data/
  (:mod:`hostlink.traces.graphs.families`);
- ``graph info GRAPH`` prints V, E and degree statistics;
- ``graph convert SRC --out PREFIX`` turns a Matrix Market, SNAP or GAP file
  into the binary CSR;
- ``trace gen --kernel K --variant VAR --graph GRAPH --out DIR`` emulates a
  kernel of gpu_kernels/KERNELS.md (``--kernel gather``: a GNN feature gather,
  :mod:`hostlink.traces.cli_gather`) and writes its trace, in the binary store
  (default: hostlink.traces.store) or as an Accel-Sim folder (``--format
  accelsim``), with the regions beside it in ``regions.toml`` (the format of
  ``hostlink trace stats --regions``).

GRAPH is a binary CSR prefix (PREFIX, PREFIX.bel or PREFIX.bel.col) or any
file :func:`hostlink.traces.graphs.read_graph` reads. Heavy imports happen in
the handlers so ``hostlink --help`` stays fast.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from hostlink.traces.folder_regions import REGIONS_FILE

KERNEL_CHOICES = ("bfs", "sssp", "cc", "pagerank")
VARIANT_CHOICES = ("naive", "merged", "merged_aligned", "chunked", "balanced")
#: gather (hostlink.traces.cli_gather) beside the traversal kernels
GEN_KERNELS = KERNEL_CHOICES + ("gather",)
#: from this scale on, generate out of core: in memory, the generator holds every edge
#: (tests/bench/results/emulator.json records its peak at scale 22)
STREAM_FROM_SCALE = 25
#: hostlink.traces.graphs.families.KINDS, named here so that building the parser imports no NumPy
GRAPH_KINDS = ("kron", "rmat", "urand", "grid", "road", "dataset")
PATTERN_HELP = "read only which edges exist, not their values (e.g. a matrix with negative values)"


# ------------------------------------------------------------------- graphs
def register_graph_commands(sub) -> None:
    gen = sub.add_parser("gen", help="generate a GAP-style kron, rmat or urand graph, a grid, "
                                     "a road-like graph or a carried dataset (EMOGI binary CSR)")
    gen.add_argument("kind", choices=GRAPH_KINDS)
    gen.add_argument("--scale", type=int, help="2**scale vertices (kron, rmat, urand)")
    gen.add_argument("--dims", help="grid: WxH or XxYxZ vertices; road: WxH")
    gen.add_argument("--ids", choices=("shuffled", "local"), default=None,
                     help="grid, road: vertex ids shuffled by the seed (default) or in "
                          "locality order")
    gen.add_argument("--no-shuffle", action="store_true", help="grid, road: as --ids local")
    gen.add_argument("--mean-degree", type=float, default=None,
                     help="road: average degree (default 2.5)")
    gen.add_argument("--name", help="dataset: a graph of traces/graphs/data/ (e.g. luxembourg_osm)")
    gen.add_argument("--degree", type=int, default=16, help="sampled edges per vertex (default 16)")
    gen.add_argument("--seed", type=int, default=None, help="random seed (default GAP's 27491095)")
    gen.add_argument("--no-weights", action="store_true", help="do not write PREFIX.bel.val")
    gen.add_argument("--out", required=True, metavar="PREFIX",
                     help="writes PREFIX.bel.col, PREFIX.bel.dst, PREFIX.bel.val")
    gen.add_argument("--stream", action="store_true",
                     help="build out of core in bounded memory (the default from scale "
                          f"{STREAM_FROM_SCALE}; another sampler: hostlink.traces.graphs.stream_gen)")
    gen.add_argument("--json", action="store_true", help="print a JSON summary")
    gen.set_defaults(func=_graph_gen)

    info = sub.add_parser("info", help="vertex, edge and degree statistics of a graph")
    info.add_argument("graph", metavar="GRAPH")
    info.add_argument("--symmetric", action="store_true",
                      help="also check that every edge has its reverse (sorts the edges)")
    info.add_argument("--json", action="store_true")
    info.add_argument("--pattern-only", action="store_true", help=PATTERN_HELP)
    info.set_defaults(func=_graph_info)

    conv = sub.add_parser("convert", help="convert Matrix Market, SNAP or GAP .el/.wel to EMOGI binary CSR")
    conv.add_argument("source", metavar="SRC")
    conv.add_argument("--out", required=True, metavar="PREFIX")
    conv.add_argument("--symmetrize", action="store_true", help="add the reverse of every edge")
    conv.add_argument("--json", action="store_true")
    conv.add_argument("--pattern-only", action="store_true", help=PATTERN_HELP)
    conv.set_defaults(func=_graph_convert)


def _print(obj: dict, as_json: bool) -> None:
    if as_json:
        sys.stdout.write(json.dumps(obj, sort_keys=False) + "\n")
        return
    width = max(len(k) for k in obj)
    for k, v in obj.items():
        if isinstance(v, float):
            v = f"{v:.4g}"
        elif isinstance(v, (dict, list)):
            v = json.dumps(v)
        sys.stdout.write(f"{k:<{width}}  {v}\n")


def _graph_gen(args) -> int:
    from hostlink.model.cli.progress import step
    from hostlink.traces.graphs import DEFAULT_SEED, generate, write_bel
    from hostlink.model.errors import HostlinkError
    seed = DEFAULT_SEED if args.seed is None else args.seed
    t0 = time.perf_counter()
    if args.kind in ("grid", "road", "dataset"):
        from hostlink.traces.graphs.families import GraphParamError, build_graph
        if args.kind == "dataset" and args.name is None:
            raise HostlinkError("graph gen dataset: --name is required")
        if args.kind != "dataset" and args.dims is None:
            raise HostlinkError(f"graph gen {args.kind}: --dims "
                                f"{'WxH' if args.kind == 'road' else 'WxH or XxYxZ'} is required")
        params = {"dims": args.dims, "ids": "local" if args.no_shuffle else args.ids,
                  "mean_degree": args.mean_degree} if args.kind != "dataset" else \
            {"name": args.name}
        if args.kind == "grid":
            params.pop("mean_degree")
        with step(f"generating {args.kind} {args.dims or args.name}"):
            try:
                csr = build_graph(args.kind, seed=seed, weighted=not args.no_weights,
                                  label=Path(args.out).name, **params)
            except GraphParamError as exc:
                raise HostlinkError(f"graph gen {args.kind}: --{exc.key.replace('_', '-')}: "
                                    f"{exc}") from None
    elif args.scale is None:
        raise HostlinkError(f"graph gen {args.kind}: --scale is required")
    elif args.stream or args.scale >= STREAM_FROM_SCALE:
        from hostlink.model.cli.progress import bar
        from hostlink.traces.graphs.stream_gen import stream_generate
        with bar(f"generating {args.kind} graph, scale {args.scale}, out of core") as update:
            stats = stream_generate(args.kind, args.scale, args.degree, seed, prefix=args.out,
                                    weighted=not args.no_weights, progress=update)
        stats.update(seed=seed, generate_s=round(time.perf_counter() - t0, 3))
        _print(stats, args.json)
        return 0
    else:
        with step(f"generating {args.kind} graph, scale {args.scale}"):
            csr = generate(args.kind, args.scale, args.degree, seed, weighted=not args.no_weights,
                           name=Path(args.out).name)
    gen_s = time.perf_counter() - t0
    with step(f"writing {args.out}"):
        paths = write_bel(csr, args.out)
    stats = csr.degree_stats()
    stats.update(seed=seed, generate_s=round(gen_s, 3),
                 files=[str(p) for p in paths.values()])
    _print(stats, args.json)
    return 0


def _graph_stats(csr) -> dict:
    """Degree statistics without the in-memory array sizes and the id width
    (properties of how the graph was loaded, not of the graph)."""
    stats = csr.degree_stats()
    for key in ("id_bytes", "offsets_size_B", "edges_size_B", "weights_size_B", "directed"):
        stats.pop(key, None)
    return stats


def _graph_info(args) -> int:
    from hostlink.traces.graphs import read_graph
    csr = read_graph(args.graph, id_bytes=8, pattern_only=args.pattern_only)
    stats = _graph_stats(csr)
    if args.symmetric:
        stats["symmetric"] = csr.is_symmetric()
    _print(stats, args.json)
    return 0


def _graph_convert(args) -> int:
    from hostlink.traces.graphs import read_graph, write_bel
    csr = read_graph(args.source, symmetrize=args.symmetrize, id_bytes=8,
                     pattern_only=args.pattern_only)
    paths = write_bel(csr, args.out)
    stats = _graph_stats(csr)
    stats["directed"] = csr.directed
    stats["files"] = [str(p) for p in paths.values()]
    _print(stats, args.json)
    return 0


# ------------------------------------------------------------------- traces
def _chunk_rows(text: str) -> int:
    """``--chunk-rows``: at least the emulator's least chunk (imported only when given)."""
    from hostlink.model.cli.argtypes import int_at_least
    from hostlink.traces.emulator.core import MIN_CHUNK_ROWS
    return int_at_least(MIN_CHUNK_ROWS)(text)


def register_trace_commands(sub) -> None:
    from hostlink.model.cli.argtypes import int_at_least
    from hostlink.traces.cli_gather import add_arguments
    gen = sub.add_parser("gen", help="emulate a traversal kernel or a feature gather and write "
                         "its memory trace")
    gen.add_argument("--kernel", required=True, choices=GEN_KERNELS)
    gen.add_argument("--variant", required=True, choices=VARIANT_CHOICES + ("aligned",))
    gen.add_argument("--graph", metavar="GRAPH",
                     help="binary CSR prefix, or a .mtx/.el/.wel/SNAP file (a traversal's "
                          "graph; a gather's with --ids sampled)")
    gen.add_argument("--source", type=int, default=None,
                     help="BFS/SSSP source (default: the lowest vertex id with degree > 0)")
    gen.add_argument("--id-bytes", type=int, choices=(4, 8), default=8,
                     help="neighbour id width the kernel reads (default 8, as predict --graph)")
    gen.add_argument("--memory", default="zerocopy",
                     help="memory mode of the edge list: zerocopy (default), uvm, device, ...")
    gen.add_argument("--iterations", type=int_at_least(1), default=10,
                     help="PageRank iterations (default 10)")
    gen.add_argument("--include-device", action="store_true",
                     help="also trace the device-array accesses (offsets, labels, ...)")
    gen.add_argument("--format", choices=("store", "accelsim"), default="store",
                     help="binary store (default) or Accel-Sim traceg folder")
    gen.add_argument("--chunk-rows", type=_chunk_rows, default=None,
                     help="warp instructions per chunk, at least 64 (bounds memory)")
    gen.add_argument("--out", required=True, metavar="DIR")
    gen.add_argument("--overwrite", action="store_true", help="replace an existing store at DIR")
    gen.add_argument("--json", action="store_true", help="print a JSON summary")
    gen.add_argument("--pattern-only", action="store_true", help=PATTERN_HELP)
    add_arguments(gen)
    gen.set_defaults(func=_trace_gen)


def _default_source(csr) -> int:
    import numpy as np
    from hostlink.traces.graphs import GraphError
    nz = np.flatnonzero(csr.degrees() > 0)
    if not len(nz):
        raise GraphError(f"graph '{csr.name}' has no edges: give --source")
    return int(nz[0])


def _result_summary(emu) -> dict:
    import numpy as np
    r = emu.result
    if emu.kernel in ("bfs", "sssp"):
        reached = r != np.uint32(0xFFFFFFFF)
        out = {"reached_vertices": int(reached.sum())}
        if reached.any():
            out["max_" + ("depth" if emu.kernel == "bfs" else "distance")] = int(r[reached].max())
        return out
    if emu.kernel == "cc":
        return {"components": int(len(np.unique(r)))}
    return {"rank_sum": float(np.sum(r, dtype=np.float64)), "rank_max": float(r.max())}


def write_trace(trace, out: Path, fmt: str, *, overwrite: bool = False) -> list[str]:
    """Write a WarpTrace to ``out`` as the binary store or an Accel-Sim folder
    (plus ``regions.toml``); returns the paths written."""
    from hostlink.traces.store import save_regions, write_store
    out = Path(out)
    if fmt == "accelsim":
        from hostlink.traces.accelsim import write_accelsim
        written = [str(p) for p in write_accelsim(trace, out)]
        return written + [str(save_regions(trace.regions, out / REGIONS_FILE))]
    write_store(trace, out, overwrite=overwrite)
    return [str(out)]


def _trace_gen(args) -> int:
    from hostlink.model.cli.progress import note_first_compile, step
    from hostlink.traces.emulator import DEFAULT_CHUNK_ROWS, emulate
    from hostlink.traces.graphs import read_graph
    if args.kernel == "gather":
        from hostlink.traces.cli_gather import gather_gen
        return gather_gen(args)
    from hostlink.model.errors import HostlinkError
    if args.graph is None:
        raise HostlinkError(f"--kernel {args.kernel} needs --graph")
    if args.variant not in VARIANT_CHOICES:
        raise HostlinkError(f"--variant {args.variant}: a traversal is one of "
                            f"{', '.join(VARIANT_CHOICES)}")
    t0 = time.perf_counter()
    note_first_compile()
    with step(f"reading graph {args.graph}"):
        csr = read_graph(args.graph, id_bytes=args.id_bytes, pattern_only=args.pattern_only)
    source = _default_source(csr) if args.source is None else args.source
    with step(f"emulating {args.kernel} ({args.variant}) on {csr.num_vertices:,} vertices"):
        emu = emulate(csr, args.kernel, args.variant, source=source, id_bytes=args.id_bytes,
                      memory=args.memory, include_device=args.include_device,
                      iterations=args.iterations,
                      chunk_rows=args.chunk_rows or DEFAULT_CHUNK_ROWS)
    with step(f"writing the trace to {args.out}"):
        written = write_trace(emu.trace(), Path(args.out), args.format,
                              overwrite=args.overwrite)
    from hostlink.traces.workload_record import write_workload_record
    written.append(str(write_workload_record(
        Path(args.out), kernel=args.kernel, variant=args.variant, id_bytes=args.id_bytes,
        source=source, vertices=csr.num_vertices, load_ahead=1)))
    with step("counting host requests"):
        requests = emu.requests()
    summary = {
        "kernel": args.kernel, "variant": args.variant, "graph": csr.name,
        "vertices": csr.num_vertices, "edges": csr.num_edges, "source": source,
        "id_bytes": args.id_bytes, "memory": args.memory, "launches": len(emu.launches),
        "host_requests": len(requests),
        "requests_by_size_B": {str(k): v for k, v in requests.size_histogram().items()},
        "host_requested_B": int(requests.size_B.sum(dtype="int64")),
        "host_useful_B": int(requests.useful_B.sum(dtype="int64")),
    }
    summary.update(_result_summary(emu))
    summary.update(format=args.format, out=str(args.out),
                   elapsed_s=round(time.perf_counter() - t0, 3))
    if not args.json:
        summary["files"] = len(written)
    _print(summary, args.json)
    return 0
