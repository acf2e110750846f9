"""``hostlink run``: the main job (what ``make run`` runs).

``--sweep FILE`` runs another sweep through the main job's report, which needs
that sweep's shape: graph traversals (its rows carry run times, request
counts and a kernel variant) in the report's two memory modes, zerocopy and
uvm (it sets the two side by side). The shape is checked on the sweep's points
before anything is computed; a sweep of another shape is refused with one line
that names ``hostlink sweep``, which runs any sweep.
"""
from __future__ import annotations

import sys


def check_main_shape(spec) -> None:
    """Raise a ConfigError unless every point of ``spec`` fits the main job's report:
    graph traversals in exactly the report's memory modes (zero-copy and UVM)."""
    from hostlink.model.errors import ConfigError
    from hostlink.model.mainjob import MODE_ORDER
    kinds, modes = set(), set()
    for point in spec.points():
        kinds.add(point.workload.get("kind"))
        modes.add(point.workload.get("mode", "zerocopy"))
    hint = f"(run it with: hostlink sweep {spec.path} --out DIR)"
    if kinds != {"graph"}:
        raise ConfigError(f"{spec.path}: hostlink run reports graph traversals "
                          f"(workload.kind = \"graph\"), this sweep runs "
                          f"{', '.join(sorted(map(str, kinds)))} {hint}")
    if modes != set(MODE_ORDER):
        raise ConfigError(f"{spec.path}: hostlink run sets {' beside '.join(MODE_ORDER)} and "
                          f"needs workload.mode to take these, this sweep has "
                          f"{', '.join(sorted(modes))} {hint}")


def register(subparsers) -> None:
    p = subparsers.add_parser("run", help="the main job: BFS variants on PCIe 3/4/5/6, "
                                          "zero-copy against UVM, with a report")
    p.add_argument("--out", default="out/main", help="output folder (default: out/main)")
    p.add_argument("--jobs", type=int, default=None, help="worker processes (default: all cores)")
    p.add_argument("--sweep", default=None, help="another sweep file of the same shape")
    p.add_argument("--quiet", action="store_true", help="no progress display")
    p.add_argument("--link", metavar="PRESET", default=None,
                   help="start every point from this link preset (e.g. gen4_x8: its width "
                        "and tags; the sweep's axes still set the generation)")
    p.set_defaults(func=_run)


def _run(args) -> int:
    from rich.console import Console
    from rich.table import Table

    from hostlink.model.mainjob import MAIN_SWEEP, bandwidth_table, run_main_job
    from hostlink.model.sweep import load_sweep
    from hostlink.model.cli.progress import enabled, note_first_compile
    check_main_shape(load_sweep(args.sweep or MAIN_SWEEP))
    note_first_compile(quiet=args.quiet)
    result = run_main_job(args.out, jobs=args.jobs, progress=enabled(args.quiet),
                          sweep_file=args.sweep or MAIN_SWEEP, link=args.link)
    # a pipe or a file gets the tables at full width, as a terminal of 120 columns would
    console = Console(width=None if sys.stdout.isatty() else 120)
    bw = bandwidth_table(result.summary)
    table = Table(title="BFS bandwidth, GB/s of useful bytes")
    table.add_column("mode")
    table.add_column("variant")
    for col in bw.columns:
        table.add_column(col, justify="right")
    for (mode, variant), row in bw.iterrows():
        table.add_row(str(mode), str(variant), *(f"{v:.2f}" for v in row))
    console.print(table)
    from hostlink.model.bands import spread_pct
    spread = spread_pct()
    walks = sorted({name for v in spread.values() for name in (v.get("by_variant") or {})})
    wider = "short launches" + "".join(f" and the {name} walk" for name in walks)
    console.print("a second machine of the same kind: within "
                  + ", ".join(f"{mode} ±{spread[mode]['half_width_pct']:.1f}%"
                              for mode in bw.index.unique(0) if mode in spread)
                  + f" (nine in ten repeated cases; wider for {wider}; the ranges are in "
                    "report.md)")
    console.print(_frame_table("PCIe read requests by size", "variant", result.requests,
                               lambda v: f"{int(v):,}"))
    if result.gather is not None:
        from hostlink.model.mainjob import gather_table
        console.print(_frame_table("GNN feature gather, GB/s of gathered rows", "row",
                                   gather_table(result.gather), _gbps))
    if result.advice is not None:
        from hostlink.model.advice import verdict
        console.print(_frame_table("Which variant and placement: time in ms "
                                   f"({result.advice.fidelity})", "variant",
                                   result.advice.table("time_s") * 1e3, lambda v: f"{v:.4g}"))
        console.print(verdict(result.advice))
    console.print(result.sweep_summary)
    console.print(f"report: {result.out / 'report.md'}")
    return 0


def _frame_table(title: str, index_name: str, frame, fmt) -> "Table":
    """A rich table of a data frame: its index, then its columns, each value ``fmt``-ed."""
    from rich.table import Table
    table = Table(title=title)
    table.add_column(index_name)
    for col in frame.columns:
        table.add_column(str(col), justify="right")
    for index, row in frame.iterrows():
        table.add_row(str(index), *(fmt(v) for v in row))
    return table


def _gbps(v: float) -> str:
    """A bandwidth to three significant figures, without an exponent up to 1e6."""
    return f"{v:,.0f}" if v >= 100 else f"{v:.3g}"
