"""``hostlink validate ...``: the command group of hostlink.validation.

``validate run`` and ``validate uvm-counters`` are defined here; ``validate
calibrate`` and ``validate report`` come from
:mod:`hostlink.validation.cli_calibrate_report`, ``validate repeat``, ``validate
sass`` and ``validate launches`` from :mod:`hostlink.validation.repeatability`,
:mod:`hostlink.validation.sass` and :mod:`hostlink.validation.launches`
where those modules exist: each provides
``register_validate_commands(sub)`` adding its sub-commands to the group.

The module also runs on its own (``python -m hostlink.validation.cli run ...``),
which is how it runs on a GPU host where only the validation dependencies
(numpy, pandas, pyarrow; rich optional) are installed.
"""
from __future__ import annotations

import argparse
import importlib
import sys

OPTIONAL_MODULES = ("hostlink.validation.cli_calibrate_report",
                    "hostlink.validation.repeatability", "hostlink.validation.sass",
                    "hostlink.validation.launches", "hostlink.validation.multigpu",
                    "hostlink.validation.data_index")


def _optional(name: str):
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name == name:
            return None
        raise


def _cmd_run(args) -> int:
    from hostlink.validation import runner

    if args.reparse:
        meta = runner.reparse(args.out)
    else:
        meta = runner.run(args.manifest, args.out, build=not args.no_build, arch=args.arch,
                          graph_dir=args.graph_dir, only=args.only, dry_run=args.dry_run,
                          progress=not args.quiet, timeout_s=args.timeout_s)
    if args.dry_run:
        return 0
    failed = [j for j in meta["jobs"] if j.get("status") == "failed"]
    print(f"run {meta['run_id']}: {len(meta['jobs'])} jobs, {len(failed)} failed, "
          f"{meta['rows']} result rows, {meta['check_failures']} failed result checks, "
          f"{len(meta['missing_cases'])} cases missing; results in {args.out}")
    for j in failed:
        print(f"  failed: {j['id']}: {'; '.join(j.get('errors') or ['no message'])}", file=sys.stderr)
    return 1 if failed or meta["check_failures"] else 0


def _cmd_uvm_counters(args) -> int:
    import json

    import pandas as pd

    from hostlink.validation import uvm_counters

    counters = uvm_counters.read_uvm_counters(args.csv)
    if args.json:
        out = uvm_counters.summary(counters)
        if args.per_launch:
            table = uvm_counters.per_launch(counters).astype(object).where(lambda d: d.notna(), None)
            out["per_launch"] = table.to_dict(orient="records")
        print(json.dumps(out, indent=2))
        return 0
    print(uvm_counters.format_totals(counters))
    if args.per_launch:
        table = uvm_counters.per_launch(counters)
        table["kernel"] = [k if len(k) <= 60 else k[:57] + "..." for k in table["kernel"]]
        with pd.option_context("display.max_rows", None, "display.max_columns", None, "display.width", 250):
            print(table.to_string(index=False))
    return 0


def register(subparsers) -> None:
    validate = subparsers.add_parser("validate", help="measure on a GPU, calibrate, and compare with predictions")
    sub = validate.add_subparsers(dest="validate_command", metavar="VALIDATE_COMMAND")
    run = sub.add_parser("run", help="build the kernels and measure a manifest's cases on this CUDA host")
    run.add_argument("manifest", help="experiment manifest (TOML)")
    run.add_argument("--out", required=True, help="output directory (an interrupted run resumes here)")
    run.add_argument("--no-build", action="store_true", help="use the programs already in gpu_kernels/bin")
    run.add_argument("--arch", default=None, help="nvcc architecture, e.g. sm_90 (the Makefile's default otherwise)")
    run.add_argument("--graph-dir", default=None, help="where generated graphs go (default OUT/graphs)")
    run.add_argument("--only", default=None, help="run only the jobs whose id contains this string")
    run.add_argument("--dry-run", action="store_true", help="print the jobs' commands; run nothing")
    run.add_argument("--timeout-s", type=float, default=None, help="stop any one job after this many seconds")
    run.add_argument("--quiet", action="store_true", help="no progress display")
    run.add_argument("--reparse", action="store_true",
                     help="rebuild results and metadata of OUT from its raw files (MANIFEST is ignored)")
    run.set_defaults(func=_cmd_run)
    uvm = sub.add_parser("uvm-counters",
                         help="summarise the CSV of gpu_kernels' libuvm_counters.so (UVM faults and migrations)")
    uvm.add_argument("csv", metavar="CSV", help="the file HOSTLINK_UVM_COUNTERS_OUT named")
    uvm.add_argument("--json", action="store_true", help="print the summary as JSON")
    uvm.add_argument("--per-launch", action="store_true", help="also print one row per kernel launch")
    uvm.set_defaults(func=_cmd_uvm_counters)
    for name in OPTIONAL_MODULES:
        module = _optional(name)
        if module is not None and hasattr(module, "register_validate_commands"):
            module.register_validate_commands(sub)
    validate.set_defaults(func=lambda args: validate.print_help() or 2)


def main(argv: list[str] | None = None) -> int:
    """The ``validate`` group alone, for hosts without the rest of hostlink's dependencies."""
    from hostlink.model.errors import HostlinkError

    parser = argparse.ArgumentParser(prog="hostlink")
    sub = parser.add_subparsers(dest="command")
    register(sub)
    args = parser.parse_args(["validate", *(sys.argv[1:] if argv is None else argv)])
    try:
        return int(args.func(args) or 0)
    except HostlinkError as exc:
        sys.stderr.write(f"hostlink: error: {exc}\n")
        return 2
    except KeyboardInterrupt:
        sys.stderr.write("hostlink: interrupted\n")
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
