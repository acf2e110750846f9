"""``hostlink run``: the main job (what ``make run`` runs)."""
from __future__ import annotations


def register(subparsers) -> None:
    p = subparsers.add_parser("run", help="the main job: BFS variants on PCIe 3/4/5/6, "
                                          "zero-copy against UVM, with a report")
    p.add_argument("--out", default="out/main", help="output folder (default: out/main)")
    p.add_argument("--jobs", type=int, default=None, help="worker processes (default: all cores)")
    p.add_argument("--sweep", default=None, help="another sweep file of the same shape")
    p.add_argument("--quiet", action="store_true", help="no progress display")
    p.set_defaults(func=_run)


def _run(args) -> int:
    from rich.console import Console
    from rich.table import Table

    from hostlink.model.mainjob import MAIN_SWEEP, bandwidth_table, run_main_job
    result = run_main_job(args.out, jobs=args.jobs, progress=not args.quiet,
                          sweep_file=args.sweep or MAIN_SWEEP)
    console = Console()
    bw = bandwidth_table(result.summary)
    table = Table(title="BFS bandwidth, GB/s of useful bytes")
    table.add_column("mode")
    table.add_column("variant")
    for col in bw.columns:
        table.add_column(col, justify="right")
    for (mode, variant), row in bw.iterrows():
        table.add_row(str(mode), str(variant), *(f"{v:.2f}" for v in row))
    console.print(table)
    req = result.requests
    rt = Table(title="PCIe read requests by size")
    rt.add_column("variant")
    for col in req.columns:
        rt.add_column(str(col), justify="right")
    for variant, row in req.iterrows():
        rt.add_row(str(variant), *(f"{int(v):,}" for v in row))
    console.print(rt)
    console.print(result.sweep_summary)
    console.print(f"report: {result.out / 'report.md'}")
    return 0
