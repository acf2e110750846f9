"""``hostlink validate calibrate`` and ``hostlink validate report``.

``register_calibrate(sub)`` and ``register_report(sub)`` add the two
sub-commands to the ``validate`` group; :mod:`hostlink.validation.cli` calls
them through :func:`register_validate_commands`. The library modules import
no part of the CLI. Heavy imports happen inside the handlers.
"""
from __future__ import annotations

from pathlib import Path


def _cmd_calibrate(args) -> int:
    from hostlink.validation.calibrate import calibrate, format_summary

    only = [s for s in args.steps.split(",") if s] if args.steps else None
    skip = [s for s in args.skip_steps.split(",") if s] if args.skip_steps else None
    pool = [d for d in args.pool.split(",") if d] if args.pool else None
    cal = calibrate(args.results_dir, args.system, fidelity=args.fidelity, only=only, skip=skip,
                    max_requests=args.max_requests, progress=not args.quiet, pool=pool,
                    overrides=args.overrides)
    out = Path(args.out) if args.out else Path(args.results_dir) / "calibrated.toml"
    toml_path, json_path = cal.write(out, args.diagnostics)
    print(format_summary(cal))
    print(f"wrote {toml_path} and {json_path}")
    return 0


def _cmd_report(args) -> int:
    from hostlink.validation.report_build import build_report
    from hostlink.validation.report_common import ReportError

    if args.max_sources is not None and args.max_sources < 1:
        raise ReportError(f"--max-sources must be at least 1, not {args.max_sources}")
    if args.fresh and args.from_summary:
        raise ReportError("--fresh predicts every case again and --from-summary predicts none: "
                          "give one of them")
    if args.max_requests is not None and args.max_requests < 1:
        raise ReportError(f"--max-requests must be at least 1, not {args.max_requests}")
    res = build_report(args.results_dir, args.system, fidelity=args.fidelity, out_dir=args.out,
                       calibration_path=args.calibration, graph_dir=args.graph_dir, only=args.only,
                       max_requests=args.max_requests, max_sources=args.max_sources,
                       fresh=args.fresh, progress=not args.quiet, jobs=args.jobs,
                       from_summary=args.from_summary, overrides=args.overrides)
    if args.from_summary:
        print(f"  rendered again from {Path(res['out']) / 'summary.csv'}; nothing predicted")
    elif res["resumed"]:
        print(f"  {res['resumed']} cases taken from {res['predictions']}, "
              f"{res['predicted']} predicted now")
    for s in res["groups"]:
        verdict = ("fit" if s.role == "calibration" else
                   "-" if s.passed is None else "meets" if s.passed else "MISSES")
        target = f"<= {s.target_pct:g}%" if s.target_pct else ""
        print(f"  {s.group:36s} {s.n:4d} cases  MAPE {s.mape_pct:7.2f}%  bias {s.bias_pct:+7.2f}%  "
              f"{target:8s} {verdict}")
    if res["unpredicted"]:
        print(f"  {len(res['unpredicted'])} cases without a prediction (listed in report.md)")
    out = res["out"]
    print(f"wrote {out / 'summary.csv'}, {out / 'report.md'} and {out / 'plots'}/")
    return 0


def register_calibrate(sub) -> None:
    p = sub.add_parser("calibrate", help="fit device latencies, link, translation and UVM "
                                         "parameters to microbenchmarks")
    p.add_argument("results_dir", metavar="RESULTS_DIR", help="a measured run (hostlink validate run --out)")
    p.add_argument("--system", required=True, help="base system: preset name or TOML file")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a key of --system, e.g. --set link.rtt_ns='1.2 us' (repeatable)")
    p.add_argument("--out", default=None,
                   help="calibrated system TOML (default RESULTS_DIR/calibrated.toml)")
    p.add_argument("--diagnostics", default=None,
                   help="fit diagnostics JSON (default calibration.json beside --out)")
    p.add_argument("--fidelity", choices=("des", "analytic"), default="des",
                   help="model of the twins (default des)")
    p.add_argument("--steps", default=None, help="comma-separated steps to run (default all)")
    p.add_argument("--skip-steps", default=None,
                   help="comma-separated steps not to run (their points stay held out)")
    p.add_argument("--pool", default=None, metavar="DIR[,DIR...]",
                   help="other measured runs whose points each step fits together with "
                        "RESULTS_DIR's (a cost that differs from lease to lease; use with --steps)")
    p.add_argument("--max-requests", type=int, default=1 << 17,
                   help="requests per microbenchmark twin (default 131072)")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    p.set_defaults(func=_cmd_calibrate)


def register_report(sub) -> None:
    p = sub.add_parser("report", help="predict every case and compare with the measurements")
    p.add_argument("results_dir", metavar="RESULTS_DIR", help="a measured run (hostlink validate run --out)")
    p.add_argument("--system", required=True, help="system: calibrated TOML, preset name or file")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a key of --system, e.g. --set link.rtt_ns='1.2 us' (repeatable)")
    p.add_argument("--fidelity", choices=("des", "analytic"), default="des", help="default des")
    p.add_argument("--out", default=None, help="output directory (default RESULTS_DIR)")
    p.add_argument("--calibration", default=None,
                   help="calibration record (default calibration.json beside --system)")
    p.add_argument("--graph-dir", default=None,
                   help="where the run's graphs are (default RESULTS_DIR/graphs, else regenerated)")
    p.add_argument("--only", default=None, help="only cases whose name contains one of these comma-separated strings")
    p.add_argument("--max-requests", type=int, default=None,
                   help="requests per microbenchmark twin (default 1048576)")
    p.add_argument("--max-sources", type=int, default=None,
                   help="predict each BFS and SSSP case for its first N sources only, compared "
                        "with those sources' measurements (default all)")
    p.add_argument("--fresh", action="store_true",
                   help="predict every case again (default: reuse OUT/predictions.parquet where "
                        "it was made with the same settings)")
    p.add_argument("--from-summary", action="store_true",
                   help="predict nothing: render report.md and plots again from OUT's "
                        "summary.csv (after a change of how reports are judged or drawn)")
    p.add_argument("--jobs", type=int, default=1, metavar="N",
                   help="worker processes predicting the cases, same numbers as one "
                        "(default 1; 0 = one per CPU)")
    p.add_argument("--quiet", action="store_true", help="no progress display")
    p.set_defaults(func=_cmd_report)


def register_validate_commands(sub) -> None:
    """Hook for ``hostlink validate``: adds ``calibrate`` and ``report``."""
    register_calibrate(sub)
    register_report(sub)
