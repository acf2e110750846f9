"""``hostlink advise``: which kernel variant and which memory placement for a graph.

``hostlink advise --graph PATH --system NAME_OR_TOML [--set KEY=VALUE ...] [--kernel K] [--source S]
[--id-bytes 4|8] [--modes M ...] [--variants V ...] [--fidelity des|analytic]
[--jobs N] [--json] [--out DIR]``

Predicts every variant x mode with :func:`hostlink.model.advice.advise` (predict's
own run of the graph, as ``hostlink predict --graph``) and prints a table (a row
per variant, a column per mode: time and useful GB/s), the winner, each other
option's slowdown against it and the bound predict names for each. ``device`` is
left out, with the reason, when the run's arrays do not fit the GPU's memory.
``--out DIR`` writes ``advice.json`` and ``advice.csv`` (one row per option).
This module only formats; the ranking is :mod:`hostlink.model.advice`'s.
"""
from __future__ import annotations

import sys

from hostlink.model.advice import KERNELS, MODES, VARIANTS
from hostlink.model.cli.argtypes import int_at_least


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "advise", help="which kernel variant and memory placement for a graph: "
                       "every variant x mode predicted and ranked",
        description="Predict a traversal of a graph in every kernel variant and memory mode "
                    "and say which wins and by how much.")
    p.add_argument("--graph", required=True, metavar="PATH",
                   help="a graph (binary CSR prefix, .mtx/.el/.wel/SNAP file)")
    p.add_argument("--system", required=True, metavar="NAME_OR_TOML",
                   help="system preset name, system preset file or resolved system file")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a system key, e.g. --set gpu.memory_GiB=16 (repeatable)")
    p.add_argument("--kernel", choices=KERNELS, default="bfs",
                   help="the traversal program (default bfs)")
    p.add_argument("--source", type=int_at_least(0), default=None,
                   help="BFS/SSSP source (default the lowest id with an edge)")
    p.add_argument("--id-bytes", type=int, choices=(4, 8), default=8,
                   help="neighbour id width (default 8)")
    p.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES), metavar="MODE",
                   help=f"memory modes to compare (default all: {' '.join(MODES)})")
    p.add_argument("--variants", nargs="+", choices=VARIANTS, default=list(VARIANTS),
                   metavar="VARIANT",
                   help=f"kernel variants to compare (default all: {' '.join(VARIANTS)})")
    p.add_argument("--fidelity", choices=("analytic", "des"), default="des",
                   help="des (default, as hostlink predict) or analytic (closed forms, quicker)")
    p.add_argument("--jobs", type=int_at_least(1), default=1,
                   help="worker processes, a variant each (default 1; each holds one "
                        "variant's requests)")
    p.add_argument("--json", action="store_true", help="print the advice as JSON")
    p.add_argument("--out", metavar="DIR", help="write advice.json and advice.csv here")
    p.set_defaults(func=_advise)


def _advise(args) -> int:
    import json
    from pathlib import Path

    from hostlink.model.advice import advise, write_advice
    from hostlink.model.cli.predict import graph_of
    from hostlink.model.cli.progress import bar, note_first_compile, step
    from hostlink.model.predict import resolve_system

    system = resolve_system(args.system, args.overrides)
    with step(f"reading {args.graph}"):
        csr = graph_of(args.graph, args.kernel, args.id_bytes)
    note_first_compile()
    with bar(f"advising on {args.graph}") as update:
        advice = advise(csr, system, kernel=args.kernel, variants=args.variants,
                        modes=args.modes, source=args.source, id_bytes=args.id_bytes,
                        fidelity=args.fidelity, jobs=args.jobs,
                        progress=lambda done, total, label: update(done, total))
    if args.out:
        write_advice(args.out, advice)
    if args.json:
        print(json.dumps(advice.to_dict(), indent=2, sort_keys=True))
        return 0
    _print(advice)
    if args.out:
        print(f"wrote {Path(args.out) / 'advice.json'}, advice.csv")
    return 0


def _print(advice) -> None:
    from rich.console import Console
    from rich.table import Table
    from hostlink.model.advice import verdict
    # a pipe or a file gets the table at full width, as a terminal of 120 columns would
    console = Console(width=None if sys.stdout.isatty() else 120, highlight=False, markup=False)
    a = advice
    console.print(f"{a.kernel} on {a.graph} ({a.vertices:,} vertices, {a.edges:,} edges, "
                  f"{a.id_bytes} B ids, source {a.source}) on {a.system}, {a.fidelity}")
    times, bws = a.table("time_s"), a.table("bw_GBps")
    table = Table(title="time in ms / useful GB/s")
    table.add_column("variant")
    for mode in times.columns:
        table.add_column(mode, justify="right")
    for variant, row in times.iterrows():
        table.add_row(variant, *("-" if row[m] != row[m] else
                                 f"{row[m] * 1e3:.4g} / {bws.loc[variant, m]:.3g}"
                                 for m in times.columns))
    console.print(table)
    w = a.winner
    console.print(f"winner: {w.name}, {w.time_s * 1e3:.4g} ms, {w.bw_GBps:.3g} GB/s"
                  + (f" (bound: {w.bound})" if w.bound else ""))
    width = max(len(o.name) for o in a.options)
    for i, o in enumerate(a.options[1:], start=2):
        console.print(f"  {i:2d}. {o.name:<{width}}  {o.slowdown:6.2f}x slower  "
                      f"{o.time_s * 1e3:9.4g} ms" + (f"  bound: {o.bound}" if o.bound else ""))
    console.print(verdict(a))
    if a.device_fits:
        console.print(f"the run's arrays take {_size(a.footprint_B)} of the GPU's "
                      f"{a.device_capacity_B / 2**30:.4g} GiB: device memory holds them")
    for mode, why in a.skipped.items():
        console.print(f"{mode}: left out: {why}")


def _size(n_B: int) -> str:
    """Bytes in GB, MB or kB (1e9, 1e6, 1e3 B), to three significant figures."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n_B >= scale:
            return f"{n_B / scale:.3g} {unit}"
    return f"{n_B} B"
