"""Benchmark: how far the analytic fidelity is from the DES on measured workloads.

For every traversal case of the committed first runs (validation/experiments/
first_run/runs/h200 and h100; the twins' workloads, :mod:`hostlink.validation.twin_traversal`,
first source of each case) and for the Accel-Sim traces under
``../shared/data/accelsim`` (zero-copy, UVM and device modes), this predicts the
kernel time with ``fidelity="analytic"`` and ``fidelity="des"`` on the
calibrated system each first run's report was made with (its report's header:
``made with ... --system <toml>``), and writes one row per case with the
kernel time of each fidelity. The target is agreement within 15% (the project's target, as in
tests/validation/test_fidelity_agreement.py). Prints a summary; writes the table to
tests/bench/results/fidelity_agreement.csv and the summary to
tests/bench/results/fidelity_agreement.json.

Usage: ``python tests/bench/bench_fidelity_agreement.py [--gpu h200] [--scale 14]
[--every N] [--baseline REV] [--reuse CSV] [--merge CSV ...]``: ``--every N`` takes
every N-th configuration (kernel, graph, variant, id width) with all its memory
modes; ``--baseline REV`` adds the analytic fidelity of model/predict.py at a git
revision; ``--reuse`` takes the DES column of an earlier table (the DES does not
move when the analytic fidelity does). Graphs are regenerated from the runs'
manifests where absent (kept in the graph cache, :func:`graph_cache_dir`).
"""
from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

import numpy as np
from hostlink.validation.data_tree import run_dir as first_run_dir

ROOT = Path(__file__).resolve().parents[2]
RESULTS = Path(__file__).resolve().parent / "results"
TARGET = 0.15
TRACE_DIR = ROOT.parent / "shared" / "data" / "accelsim"
TRACE_MODES = ("zerocopy", "uvm", "device")


def report_system(run_dir: Path) -> Path:
    """The calibrated system a committed report was made with (its 'made with' line)."""
    text = (run_dir / "report.md").read_text()
    m = re.search(r"made with `hostlink validate report \S+ --system (\S+)`", text)
    if not m:
        raise SystemExit(f"{run_dir / 'report.md'}: no 'made with' line")
    return ROOT / m.group(1)


def predictors(baseline: str | None) -> dict:
    """The predict() functions compared: the analytic and DES fidelities of this tree
    and, with ``baseline`` (a git revision), the analytic fidelity of model/predict.py
    at that revision (loaded beside this one: everything else is this tree's)."""
    import functools
    from hostlink.model import predict as current
    out = {"analytic": functools.partial(current.predict, fidelity="analytic"),
           "des": functools.partial(current.predict, fidelity="des")}
    if baseline:
        import importlib.util
        import subprocess
        import tempfile
        src = subprocess.run(["git", "-C", str(ROOT), "show", f"{baseline}:model/predict.py"],
                             check=True, capture_output=True, text=True).stdout
        path = Path(tempfile.mkdtemp()) / "predict_baseline.py"
        path.write_text(src)
        spec = importlib.util.spec_from_file_location("predict_baseline", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        out["baseline"] = functools.partial(mod.predict, fidelity="analytic")
    return out


def _with_predict(fn, call):
    """Run ``call()`` with hostlink.model.predict.predict replaced by ``fn`` (the twins
    import it when they run)."""
    from hostlink.model import predict as module
    saved = module.predict
    module.predict = lambda stream, system, mode="zerocopy", fidelity=None, **kw: fn(
        stream, system, mode=mode, **kw)
    try:
        return call()
    finally:
        module.predict = saved


def traversal_rows(gpu: str, scale: int | None, limit: int | None, preds: dict,
                   every: int = 1, reuse: dict | None = None, pattern: str | None = None):
    """Kernel ms of each fidelity per traversal case of a first run (every ``every``-th)."""
    from hostlink.model.config import load_any_system
    from hostlink.validation.twin_common import load_run
    from hostlink.validation.twin_traversal import GraphSource, predict_traversal
    run_dir = first_run_dir("first_run", gpu)
    run = load_run(run_dir)
    system = load_any_system(str(report_system(run_dir)))
    graphs = GraphSource(run)
    cases = [(c, p) for c, p in run.cases.items() if p.get("kind") == "traversal"
             and (scale is None or re.search(rf"\D{scale}$", p["graph"]))
             and (pattern is None or re.search(pattern, c))]
    # the memory modes of one configuration share its emulated stream: keep them
    # together, and sample configurations (every ``every``-th), not cases
    def config(params):
        return (params["graph"], params["kernel"], params["variant"], params["id_bytes"])
    configs = sorted({config(p) for _, p in cases})[::every]
    cases = sorted((cp for cp in cases if config(cp[1]) in set(configs)),
                   key=lambda cp: (config(cp[1]), cp[1]["memory_mode"]))[:limit]
    for case, params in cases:
        row = {"source": f"{gpu}/first_run", "case": case, "mode": params["memory_mode"]}
        known = (reuse or {}).get((row["source"], case, row["mode"]), {})
        for name, fn in preds.items():
            if f"{name}_ms" in known:
                row[f"{name}_ms"] = known[f"{name}_ms"]
                continue
            if fn is None:
                row[f"{name}_ms"] = float("nan")
                continue
            def call():
                rows = predict_traversal(case, params, system, graphs, max_sources=1)
                return next(v for m, v, _ in rows if m == "kernel_time_ms")
            row[f"{name}_ms"] = _with_predict(fn, call)
        yield row


def trace_rows(system_path: Path, preds: dict):
    """Kernel ms of each fidelity per shared Accel-Sim trace and mode."""
    from hostlink.model.config import load_any_system
    from hostlink.model.predict import as_stream
    system = load_any_system(str(system_path))
    for folder in sorted(p for p in TRACE_DIR.iterdir() if p.is_dir()):
        # the traces' MemcpyHtoD buffers as host arrays: what zero-copy would read
        stream = as_stream(str(folder), trace_options={"memcpy_location": "host"},
                           gpu=system.gpu)
        for mode in TRACE_MODES:
            row = {"source": "accelsim", "case": folder.name, "mode": mode}
            for name, fn in preds.items():
                row[f"{name}_ms"] = (float("nan") if fn is None else
                                     sum(fn(stream, system, mode=mode).per_launch_kernel_s) * 1e3)
            yield row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpu", action="append", choices=("h200", "h100"))
    ap.add_argument("--scale", type=int, default=14, help="graph scale (0: all)")
    ap.add_argument("--limit", type=int, default=None, help="first N cases per GPU")
    ap.add_argument("--case", metavar="REGEX", help="only the cases whose name matches")
    ap.add_argument("--every", type=int, default=1, help="every N-th configuration (a sample)")
    ap.add_argument("--traces-only", action="store_true")
    ap.add_argument("--no-traces", action="store_true")
    ap.add_argument("--baseline", metavar="REV",
                    help="also the analytic fidelity of model/predict.py at this git revision")
    ap.add_argument("--reuse", metavar="CSV",
                    help="take the des (and baseline) columns of an earlier table: the DES "
                         "does not change when the analytic fidelity does")
    ap.add_argument("--out", default=str(RESULTS / "fidelity_agreement.csv"))
    ap.add_argument("--merge", nargs="+", metavar="CSV",
                    help="only join earlier tables into --out and summarise them")
    args = ap.parse_args(argv)
    import pandas as pd
    if args.merge:
        df = pd.concat([pd.read_csv(f) for f in args.merge], ignore_index=True)
        df.to_csv(args.out, index=False)
        summary = summarise(df, [c[:-3] for c in df.columns
                                 if c.endswith("_ms") and c != "des_ms"])
        print(json.dumps(summary, indent=1))
        Path(args.out).with_suffix(".json").write_text(json.dumps(summary, indent=1) + "\n")
        return 0 if summary["analytic"]["all"]["within_15pct"] == len(df) else 1
    t0 = time.time()
    preds = predictors(args.baseline)
    reuse = {}
    if args.reuse:
        earlier = pd.read_csv(args.reuse)
        keep_cols = [c for c in earlier.columns if c in ("des_ms", "baseline_ms")]
        for rec in earlier.to_dict("records"):
            reuse[(rec["source"], rec["case"], rec["mode"])] = {c: rec[c] for c in keep_cols}
        if "baseline_ms" in earlier.columns and "baseline" not in preds:
            preds["baseline"] = None      # its column comes from the earlier table
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    rows = []

    def keep(row):
        rows.append(row)
        pd.DataFrame([row]).to_csv(out, mode="a" if len(rows) > 1 else "w",
                                   header=len(rows) == 1, index=False)
        print(" ".join(f"{v:.4g}" if isinstance(v, float) else str(v) for v in row.values()),
              flush=True)

    if TRACE_DIR.is_dir() and not args.no_traces:
        for row in trace_rows(report_system(ROOT / "validation/experiments/first_run/runs/h200"), preds):
            keep(row)
    if not args.traces_only:
        for gpu in args.gpu or ["h200", "h100"]:
            for row in traversal_rows(gpu, args.scale or None, args.limit, preds, args.every,
                                      reuse, args.case):
                keep(row)
    summary = summarise(pd.DataFrame(rows), [n for n in preds if n != "des"])
    summary["seconds"] = time.time() - t0
    print(json.dumps(summary, indent=1))
    out.with_suffix(".json").write_text(json.dumps(summary, indent=1) + "\n")
    return 0 if summary["analytic"]["all"]["within_15pct"] == len(rows) else 1


def summarise(df, names) -> dict:
    """Per source and memory mode: cases, how many agree within 15%, the largest
    relative difference and the median ratio, for each fidelity in ``names``."""
    summary = {}
    for name in names:
        ratio = df[f"{name}_ms"] / df["des_ms"]
        err = (ratio - 1).abs()
        part = {}
        for (src, mode), idx in df.groupby(["source", "mode"]).groups.items():
            part[f"{src}/{mode}"] = {"cases": len(idx),
                                     "within_15pct": int((err[idx] <= TARGET).sum()),
                                     "max_abs_rel": round(float(err[idx].max()), 4),
                                     "median_ratio": round(float(ratio[idx].median()), 4)}
        part["all"] = {"cases": len(df), "within_15pct": int((err <= TARGET).sum()),
                       "max_abs_rel": round(float(err.max()), 4)}
        summary[name] = part
    return summary


if __name__ == "__main__":
    sys.exit(main())
