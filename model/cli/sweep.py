"""``hostlink sweep`` (run a design-space sweep), ``hostlink export`` (its results as
CSV) and ``hostlink plot`` (draw its figures).

``sweep ... --csv FILE`` and ``export RESULTS --csv FILE`` write the results
one row per point and a column per metric and parameter (the wide form of
:func:`hostlink.model.sweep.load_results`); ``export --long`` writes the tidy
rows (one per metric). CSV is for tools outside Python; the Parquet results
folder stays the record.
"""
from __future__ import annotations

from pathlib import Path

PLOT_KINDS = ("bw-vs-size", "bw-vs-gen", "bw-vs-tags", "bw-vs-rtt", "zerocopy-vs-uvm",
              "predicted-vs-measured")


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "sweep", help="run a design-space sweep (local processes or a Dask cluster)",
        description="Run every point of a sweep file; finished points in DIR are skipped, "
                    "so an interrupted sweep resumes where it stopped.")
    p.add_argument("sweep_file", metavar="SWEEP.toml", help="sweep file (see sim_configs/sweeps/)")
    p.add_argument("--out", required=True, metavar="DIR", help="results folder (created or resumed)")
    p.add_argument("--jobs", type=int, default=None, metavar="N",
                   help="local worker processes (default: the usable cores)")
    p.add_argument("--dask", metavar="ADDRESS", default=None,
                   help="run on an existing Dask cluster, e.g. tcp://10.0.0.5:8786")
    p.add_argument("--batch-size", type=int, default=None, metavar="N",
                   help="points per task (default: sized from the sweep)")
    p.add_argument("--dry-run", action="store_true",
                   help="check every point and print the plan; run nothing")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--csv", metavar="FILE", default=None,
                   help="also write this sweep's results as CSV, a row per point")
    p.add_argument("--link", metavar="PRESET", default=None,
                   help="every point on this link preset's generation, width and tags "
                        "(e.g. gen4_x16), the base system's host, GPU and driver kept")
    p.set_defaults(func=_sweep)

    e = subparsers.add_parser(
        "export", help="write sweep results as CSV (a row per point, a column per metric)")
    e.add_argument("results", metavar="RESULTS", help="sweep results folder (hostlink sweep --out)")
    e.add_argument("--csv", metavar="FILE", required=True, help="CSV file to write ('-': stdout)")
    e.add_argument("--experiment", default=None, help="only this sweep's points")
    e.add_argument("--long", action="store_true",
                   help="one row per metric (tidy form) instead of one per point")
    e.set_defaults(func=_export)

    q = subparsers.add_parser(
        "plot", help="draw a common figure from sweep results or a validation summary.csv")
    q.add_argument("results", metavar="RESULTS",
                   help="sweep results folder, or a validation summary.csv (or its folder) "
                        "for predicted-vs-measured")
    q.add_argument("--kind", required=True, choices=PLOT_KINDS, help="the figure to draw")
    q.add_argument("--out", metavar="FILE.png", default=None,
                   help="output image (default: RESULTS/plots/KIND.png)")
    q.add_argument("--experiment", default=None, help="only this sweep's points")
    q.add_argument("--metric", default="bw_GBps", help="metric on the y axis (default bw_GBps)")
    q.set_defaults(func=_plot)


def _sweep(args) -> int:
    import sys

    from hostlink.model.sweep import load_sweep, resolve_points, run_sweep
    from hostlink.model.sweep.spec import with_link
    spec = with_link(load_sweep(args.sweep_file), args.link)
    if args.dry_run:
        resolved = resolve_points(spec)
        ids = {rp.run_id for rp in resolved}
        workloads = {rp.workload_json for rp in resolved}
        print(f"sweep '{spec.name}': {len(resolved)} points ({len(ids)} distinct), "
              f"{len(workloads)} workload(s), fidelity {spec.fidelity}, base system {spec.system}")
        for axis in spec.axes:
            print(f"  axis {' + '.join(axis.keys)}: {len(axis)} values")
        for rp in resolved[:5]:
            print(f"  {rp.run_id}  {rp.point.case}")
        if len(resolved) > 5:
            print(f"  ... {len(resolved) - 5} more")
        return 0
    _warn_traces_without_host(spec)
    from hostlink.model.cli.progress import note_first_compile
    note_first_compile(quiet=args.quiet)
    report = run_sweep(spec, args.out, jobs=args.jobs, dask=args.dask,
                       batch_size=args.batch_size,
                       progress=not args.quiet and sys.stderr.isatty())
    print(report.summary())
    if args.csv:
        rows = export_csv(args.out, args.csv, experiment=spec.name)
        print(f"wrote {rows} rows to {args.csv}")
    return 0


def _warn_traces_without_host(spec) -> None:
    """A warning for each trace workload of ``spec`` that reads nothing from the host."""
    from hostlink.model.cli.notes import trace_reads_no_host, warn
    from hostlink.traces.store import load_regions
    seen = set()
    for point in spec.points():
        w = point.workload
        key = (w.get("path"), w.get("regions"), w.get("memcpy_location", "host"))
        if w.get("kind") != "trace" or w.get("mode") == "device" or key in seen:
            continue
        seen.add(key)
        path, regions, location = key
        if path is None or not Path(path).exists():
            continue          # the sweep's own check names it
        why = trace_reads_no_host(path, load_regions(regions) if regions else None, location)
        if why:
            warn(f"{spec.path}: trace {path}: {why}; its points predict 0 GB/s")


def export_csv(results, csv, *, experiment: str | None = None, long: bool = False) -> int:
    """Write a results folder's rows to ``csv`` (a path, or '-' for stdout); the row count."""
    import sys

    from hostlink.model.errors import HostlinkError
    from hostlink.model.sweep import load_results
    if not Path(results).is_dir():
        raise HostlinkError(f"{results}: no such results folder")
    table = load_results(results, experiment=experiment, wide=not long)
    if csv == "-":
        table.to_csv(sys.stdout, index=False)
    else:
        try:
            table.to_csv(csv, index=False)
        except OSError as exc:
            raise HostlinkError(f"{csv}: cannot write: {exc.strerror}") from None
    return len(table)


def _export(args) -> int:
    import sys
    rows = export_csv(args.results, args.csv, experiment=args.experiment, long=args.long)
    if args.csv != "-":
        print(f"wrote {rows} rows to {args.csv}")
    else:
        sys.stdout.flush()
    return 0


def _plot(args) -> int:
    from pathlib import Path

    from hostlink.model import plots
    src = Path(args.results)
    out = Path(args.out) if args.out else None
    if args.kind == "predicted-vs-measured":
        summary = src / "summary.csv" if src.is_dir() else src
        out = out or summary.parent / "plots" / "predicted-vs-measured.png"
        path = plots.save(plots.plot_predicted_vs_measured(summary), out)
    else:
        out = out or src / "plots" / f"{args.kind}.png"
        path = plots.save(plots.plot_kind(src, args.kind, experiment=args.experiment,
                                          metric=args.metric), out)
    print(path)
    return 0
