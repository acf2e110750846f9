"""``hostlink predict``: time and bandwidth of a trace on a system.

``hostlink predict --system NAME_OR_TOML --trace DIR --mode MODE [--fidelity
{des,analytic}] [--set KEY=VALUE ...] [--json] [--out DIR]``

The default fidelity is ``des``, the one the validation reports use; ``analytic``
is its closed-form counterpart (:mod:`hostlink.model.analytic_launch`), within
15% of it on the committed first-run traversal cases and the Accel-Sim traces
(``tests/bench/bench_fidelity_agreement.py``), except device-memory kernels whose
warps wait on their own stores: the DES queues a store at device memory, the
closed forms do not (PageRank on the H100, up to 24% low). The summary says so.

The trace (an Accel-Sim folder or a trace store; a gem5 packet trace is taken
as the requests it holds) is coalesced into requests
(device sectors included unless ``--host-only``; the GPU's L1 and L2 filter
them as the system's GPU does by default: host reads too where
``gpu.caches_host_reads``; ``--no-caches`` turns them off, ``--caches`` and
``--cache-host`` choose explicitly) and predicted
by :func:`hostlink.model.predict.predict`. ``--out DIR`` writes
``prediction.json``, the tidy rows (``rows.csv``) and the resolved system
(``system.toml``).
"""
from __future__ import annotations

import argparse

MODES = ("zerocopy", "uvm_accessedby", "uvm", "uvm_readmostly", "device")   # as hostlink.model.predict.MODES
GATHER_MODES = ("uvm_warm", "cpu_gather")     # a gather's trace only (hostlink.model.gather_run)
FIDELITIES = ("analytic", "des")
#: which fidelity to trust, and why (the agreement: tests/bench/results/fidelity_agreement.json)
FIDELITY_NOTES = {
    "des": "des, the discrete-event model the validation reports are made with",
    "analytic": "analytic, closed forms within 15% of des on the committed first-run "
                "traversals and the Accel-Sim traces, except kernels in device memory "
                "that wait on their own stores (PageRank on the H100: up to 24% low, as "
                "the closed forms charge a store no wait at device memory); take des for "
                "those and for numbers you report",
}
SUMMARY_KEYS = ("time_s", "bw_GBps", "link_bw_GBps", "requests", "requests_by_size_B",
                "outstanding_mean", "outstanding_peak", "read_amplification", "bound")


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "predict", help="predict time and bandwidth of a trace (zero-copy, UVM or device)",
        description="Coalesce a memory trace into requests and predict its run time, bandwidth, "
                    "request sizes, outstanding reads and read amplification on a system.")
    p.add_argument("--system", required=True, metavar="NAME_OR_TOML",
                   help="system preset name, system preset file or resolved system file")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--trace", metavar="DIR",
                     help="trace folder: Accel-Sim (kernelslist.g) or a trace store; "
                          "or a gem5 packet trace file")
    src.add_argument("--graph", metavar="GRAPH",
                     help="a graph (binary CSR prefix, .mtx/.el/.wel/SNAP file): predict a "
                          "traversal program's whole run on it (--kernel, --variant), as the "
                          "validation twins do; no trace is written")
    p.add_argument("--kernel", choices=("bfs", "sssp", "cc", "pagerank"), default="bfs",
                   help="with --graph: the traversal program (default bfs)")
    p.add_argument("--variant", default="merged_aligned",
                   help="with --graph: naive, merged, merged_aligned (default), chunked, balanced")
    p.add_argument("--source", type=int, default=None,
                   help="with --graph: BFS/SSSP source (default the lowest id with an edge)")
    p.add_argument("--id-bytes", type=int, choices=(4, 8), default=8,
                   help="with --graph: neighbour id width (default 8)")
    p.add_argument("--load-ahead", type=int, choices=(1, 4), default=1,
                   help="with --graph: the program's load-ahead (default 1)")
    p.add_argument("--iterations", type=int, default=10,
                   help="with --graph: PageRank's iterations (default 10)")
    p.add_argument("--sample", type=_fraction, metavar="FRACTION|auto",
                   help="with --graph and --kernel bfs: predict from a sample of the launches "
                        "(CTAs of wide levels, a share of narrow ones) with a 95%% interval "
                        "(hostlink.traces.sampled); auto: as few as the interval needs")
    p.add_argument("--mode", choices=MODES + GATHER_MODES, default="zerocopy",
                   help="where the host arrays live and how they move (default zerocopy; "
                        "uvm_warm and cpu_gather: a gather's trace only)")
    p.add_argument("--fidelity", choices=FIDELITIES, default="des",
                   help="des (default): the discrete-event model, the one the validation "
                        "reports use; analytic: closed forms, within 15%% of des on the "
                        "committed first-run traversals and the Accel-Sim traces (device-"
                        "memory kernels that wait on their stores excepted: take des), "
                        "for quick looks and wide sweeps")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a system key, e.g. --set link.rtt_ns='1.2 us' (repeatable)")
    p.add_argument("--link", metavar="PRESET",
                   help="keep the system's host, GPU and driver and swap in this link preset's "
                        "generation, width and tags (e.g. gen4_x16; the same as --set link=...)")
    p.add_argument("--regions", metavar="TOML",
                   help="regions file naming the host-resident address ranges of the trace")
    p.add_argument("--memcpy-location", choices=("device", "host"), default="device",
                   help="where an Accel-Sim trace's MemcpyHtoD buffers live (default device; "
                        "host makes them zero-copy arrays)")
    p.add_argument("--host-only", action="store_true",
                   help="predict the host requests only (leave device sectors out)")
    p.add_argument("--no-caches", action="store_true",
                   help="no L1/L2 filtering at all (default: as the system's GPU caches)")
    p.add_argument("--caches", action="store_true",
                   help="filter sectors through the GPU's L1 (per SM) and L2 (sizes from the system)")
    p.add_argument("--cache-host", action="store_true",
                   help="with --caches, let host memory sectors hit in the caches too")
    p.add_argument("--json", action="store_true", help="print the whole prediction as JSON")
    p.add_argument("--out", metavar="DIR",
                   help="write prediction.json, rows.csv and the resolved system.toml here")
    p.set_defaults(func=_predict)


def _cache_config(system, args):
    if not args.caches:
        if args.cache_host:
            raise argparse.ArgumentTypeError("--cache-host needs --caches")
        return None
    from hostlink.traces.cache import CacheConfig
    # the GPU's own L1 (what the shared-memory carve-out leaves, hashed sets) and L2
    return CacheConfig.from_gpu(system.gpu)


def _counted(system, args) -> str:
    """What the host read requests were counted after (trace stats counts before any cache)."""
    if args.no_caches:
        return "no caches (as trace stats counts by default)"
    if args.caches:
        return "after the L1 and L2" + (", host reads cached" if args.cache_host else "")
    from hostlink.traces.cache import host_read_cache
    if host_read_cache(system.gpu) is None:
        return "no caches (the GPU does not cache host reads)"
    return (f"after the L1 of {system.gpu.name} (trace stats --system {system.name} counts "
            "the same; --no-caches: before it)")


def _write_rows(path: Path, rows: list[dict]) -> None:
    """The tidy rows as CSV, a missing value left empty (as pandas writes NaN); the csv
    module spares the command pandas' import, half a second of a small prediction."""
    import csv
    import math
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]) if rows else [], lineterminator="\n")
        writer.writeheader()
        for row in rows:
            writer.writerow({k: "" if isinstance(v, float) and math.isnan(v) else v
                             for k, v in row.items()})


def _predict(args) -> int:
    import json
    from pathlib import Path

    from hostlink.model.config import write_resolved
    from hostlink.model.errors import HostlinkError
    from hostlink.model.predict import predict, resolve_system

    overrides = ([f"link={args.link}"] if args.link else []) + args.overrides
    system = resolve_system(args.system, overrides)
    try:
        cache = _cache_config(system, args)
    except argparse.ArgumentTypeError as exc:
        raise HostlinkError(str(exc)) from None
    options = {"include_device": not args.host_only}
    if args.no_caches:
        if args.caches or args.cache_host:
            raise HostlinkError("--no-caches contradicts --caches/--cache-host")
        options.update(cache=None, cache_host=False)
    elif args.caches:  # explicit choice; otherwise predict() applies the GPU's default
        options.update(cache=cache, cache_host=bool(args.cache_host))
    trace_options = {"memcpy_location": args.memcpy_location}
    if args.regions:
        from hostlink.traces.store import load_regions
        trace_options["regions"] = load_regions(args.regions)
    if args.sample is not None:
        return _sampled(args, system)
    from hostlink.model.cli.progress import note_first_compile, step_with_stages
    note_first_compile()
    what = (f"coalescing {args.trace}" if args.trace else
            f"emulating {args.kernel} ({args.variant}) on {args.graph}")
    with step_with_stages(f"{what} and predicting ({args.fidelity})"):
        if args.graph:
            source = _graph_workload(args, system)
        else:
            from hostlink.traces.gather_record import read_gather_record, recorded_gather
            from hostlink.traces.workload_record import read_workload_record, traced_workload
            record = read_workload_record(Path(args.trace))
            gathered = read_gather_record(Path(args.trace))
            source = (recorded_gather(gathered, system.gpu) if gathered is not None else
                      args.trace if record is None else
                      traced_workload(args.trace, record, system, options, trace_options))
        pred = predict(source, system, mode=args.mode, fidelity=args.fidelity,
                       coalesce_options=options, trace_options=trace_options)
    if args.mode not in ("device",) + GATHER_MODES and pred.requested_B == 0 and args.trace:
        from hostlink.model.cli.notes import trace_reads_no_host, warn
        why = trace_reads_no_host(args.trace, trace_options.get("regions"), args.memcpy_location)
        warn(f"{args.trace}: " + (why or "no access of the trace falls in its host regions; "
                                  "nothing is read from the host") + ", so the link moves 0 B")
    data = pred.to_dict()
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "prediction.json").write_text(pred.to_json() + "\n", encoding="utf-8")
        case = f"{Path(args.trace or args.graph).name}:{args.mode}"
        _write_rows(out / "rows.csv", pred.to_rows(run_id=f"predict-{system.name}",
                                                   experiment="predict", case=case))
        write_resolved(system, out / "system.toml")
    if args.json:
        print(json.dumps(data, indent=2, sort_keys=True))
        return 0
    print(f"{pred.mode} ({pred.fidelity}) on {pred.system}: {pred.time_s * 1e3:.4g} ms over "
          f"{pred.launches} launch(es), bound: {pred.bound}")
    print(f"  bandwidth: {pred.bw_GBps:.3f} GB/s useful, {pred.link_bw_GBps:.3f} GB/s over the link")
    band = _band(pred, getattr(source, "variant", None))
    if band:
        print(f"  band: {band}")
    sizes = ", ".join(f"{k} B: {v}" for k, v in sorted(pred.requests_by_size_B.items())) or "none"
    print(f"  host read requests: {pred.requests} ({sizes}), {_counted(system, args)}")
    issue = pred.extra.get("issue") or {}
    if issue.get("launches"):
        print(f"  compute: instruction issue, not memory, sets {issue['launches']} of "
              f"{pred.launches} launch(es) (issue floor {issue['floor_s'] * 1e6:.4g} us in all)")
    for key in ("outstanding_mean", "outstanding_peak", "read_amplification"):
        value = data[key]
        print(f"  {key}: {'n/a' if value is None else f'{value:.4g}'}")
    print(f"  fidelity: {FIDELITY_NOTES[pred.fidelity]}")
    _print_launches(pred)
    if args.out:
        print(f"  wrote {Path(args.out) / 'prediction.json'}, rows.csv, system.toml")
    return 0


def _band(pred, variant: str | None = None) -> str:
    """How far a second machine of the same kind would likely measure ``pred``'s time: its
    memory mode's band for the class of its mean launch time and, for a kernel variant
    with a band of its own, that variant's (hostlink.model.bands)."""
    import math

    from hostlink.model.bands import half_width_pct, mean_launch_us, spread_pct
    launch_us = float(mean_launch_us(pred.kernel_time_s * 1e3, pred.launches))
    spread = spread_pct()
    width_pct = half_width_pct(spread, pred.mode, launch_us, variant)
    if math.isnan(width_pct):       # no repeat measured the mode
        return ""
    half = width_pct / 100
    low, high = pred.time_s * max(0.0, 1 - half) * 1e3, pred.time_s * (1 + half) * 1e3
    mean = "no launch count" if math.isnan(launch_us) else \
        f"launches of {launch_us:.4g} us on average"
    if width_pct > half_width_pct(spread, pred.mode, launch_us):
        mean += f", the {variant} walk's own band"
    return (f"{low:.4g}-{high:.4g} ms on a second machine of the same kind (±{half * 100:.1f}%, "
            f"{mean}; nine in ten repeated cases)")


def _fraction(text: str):
    """``--sample``: 'auto' (None) or a fraction in (0, 1]."""
    if text == "auto":
        return "auto"
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is neither a fraction nor auto") from None
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"{value} is not in (0, 1]")
    return value


def _sampled(args, system) -> int:
    """``--sample``: the BFS predicted from samples of its launches, with its interval."""
    import json
    from pathlib import Path

    from hostlink.model.cli.progress import step, step_with_stages
    from hostlink.model.errors import HostlinkError
    from hostlink.traces.cli_gen import VARIANT_CHOICES, _default_source
    from hostlink.traces.graphs import read_bel, read_graph
    from hostlink.traces.graphs.readers import bel_paths
    from hostlink.traces.sampled import sampled_prediction
    if not args.graph:
        raise HostlinkError("--sample needs --graph (a trace is predicted whole)")
    if args.kernel != "bfs":
        raise HostlinkError(f"--sample: only bfs is sampled, not {args.kernel} (its launches "
                            "carry values from one to the next)")
    if args.variant not in VARIANT_CHOICES:
        raise HostlinkError(f"--variant {args.variant}: not one of {', '.join(VARIANT_CHOICES)}")
    if args.trace or args.regions or args.caches or args.no_caches or args.host_only:
        raise HostlinkError("--sample takes the GPU's own caches and no trace options")
    with step(f"mapping {args.graph}"):
        if bel_paths(args.graph)["col"].exists():   # mapped, not read: it may exceed memory
            csr = read_bel(args.graph, id_bytes=args.id_bytes, weights=False, mmap=True)
        else:
            csr = read_graph(args.graph, id_bytes=args.id_bytes)
    source = _default_source(csr) if args.source is None else args.source
    if not 0 <= source < csr.num_vertices:
        raise HostlinkError(f"--source {source}: the graph has {csr.num_vertices} vertices")
    with step_with_stages(f"sampling bfs ({args.variant}) on {args.graph} and predicting "
                          f"({args.fidelity})"):
        pred = sampled_prediction(csr, args.variant, system, source=source, mode=args.mode,
                                  fidelity=args.fidelity,
                                  fraction=None if args.sample == "auto" else args.sample,
                                  id_bytes=args.id_bytes, load_ahead=args.load_ahead)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "prediction.json").write_text(pred.to_json() + "\n", encoding="utf-8")
    if args.json:
        print(json.dumps(pred.to_dict(), indent=2, sort_keys=True))
        return 0
    s = pred.extra["sampled"]
    print(f"{pred.mode} ({pred.fidelity}) on {pred.system}: {pred.time_s * 1e3:.4g} ms over "
          f"{pred.launches} launch(es), sampled")
    print(f"  {s['confidence']:.0%} interval: {s['time_s_low'] * 1e3:.4g} to "
          f"{s['time_s_high'] * 1e3:.4g} ms (batch means of {s['groups']} groups)")
    print(f"  sample: {s['sample_edges_read']} of {s['edges_read']} edges read; "
          f"{s['wide_levels']} wide level(s) by CTAs, {s['narrow_levels_sampled']} of "
          f"{s['narrow_levels']} narrow levels" if s["narrow_levels"] else
          f"  sample: {s['sample_edges_read']} of {s['edges_read']} edges read; "
          f"{s['wide_levels']} wide level(s) by CTAs, narrow levels whole")
    if s.get("miniature_share"):
        sms = ", ".join(f"{round(x * system.gpu.sm_count)}" for x in s["miniature_share"])
        print(f"  each wide level's groups on a miniature of {sms} of the "
              f"{system.gpu.sm_count} SMs; {s['forced_walks']} long walk(s) in every group")
    print(f"  bandwidth: {pred.bw_GBps:.3f} GB/s useful (estimated)")
    if args.out:
        print(f"  wrote {Path(args.out) / 'prediction.json'}")
    return 0


def _graph_workload(args, system):
    """The traversal program's run on ``--graph`` (hostlink.traces.traversal)."""
    from hostlink.traces.cli_gen import VARIANT_CHOICES, _default_source
    from hostlink.traces.traversal import traversal_workload
    from hostlink.model.errors import HostlinkError
    if args.variant not in VARIANT_CHOICES:
        raise HostlinkError(f"--variant {args.variant}: not one of {', '.join(VARIANT_CHOICES)}")
    csr = graph_of(args.graph, args.kernel, args.id_bytes)
    source = _default_source(csr) if args.source is None else args.source
    if not 0 <= source < csr.num_vertices:
        raise HostlinkError(f"--source {source}: the graph has {csr.num_vertices} vertices")
    return traversal_workload(csr, args.kernel, args.variant, system.gpu, source=source,
                              id_bytes=args.id_bytes, load_ahead=args.load_ahead,
                              iterations=args.iterations)


def graph_of(path, kernel: str, id_bytes: int):
    """The graph at ``path`` as ``--graph`` reads it (``hostlink advise`` reads it so too)."""
    from pathlib import Path
    from hostlink.traces.graphs import read_graph
    text = str(path)
    if text.lower().endswith((".bel", ".bel.col", ".bel.dst", ".bel.val")) or \
            Path(text + ".bel.col").exists():
        # mapped, as the twins read it (GraphSource): its pages are the file's, and only
        # SSSP reads the weights; the emulator narrows the ids where --id-bytes is 4
        from hostlink.traces.graphs.readers import read_bel
        return read_bel(text, id_bytes=8, mmap=True, weights=kernel == "sssp")
    return read_graph(path, id_bytes=id_bytes)


def _print_launches(pred) -> None:
    """What bound each launch: a line per run of launches with the same bound."""
    bounds = pred.extra.get("launch_bounds") or []
    if len(bounds) < 2:
        return
    runs, start = [], 0
    for i in range(1, len(bounds) + 1):
        if i == len(bounds) or bounds[i] != bounds[start]:
            runs.append((start, i - 1, bounds[start]))
            start = i
    shown = ", ".join(f"{a}" + (f"-{b}" if b > a else "") + f": {name}" for a, b, name in runs[:12])
    more = f", ... ({len(runs) - 12} more runs)" if len(runs) > 12 else ""
    print(f"  bound per launch: {shown}{more}")
