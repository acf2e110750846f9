"""``hostlink validate report``: the command that builds a report.

For a measured run and a (calibrated) system, every case's twin is predicted
(:mod:`hostlink.validation.twins`; kept as it finishes,
:mod:`hostlink.validation.report_store`) and compared with the measurement
(:mod:`hostlink.validation.report_judge`); the result is written as
``summary.csv``, ``report.md`` and ``plots/``
(:mod:`hostlink.validation.report_render`). The report's header names the
``hostlink validate report`` command that makes it (:func:`report_command`).
With ``--jobs N`` the twins are predicted in N worker processes
(:mod:`hostlink.validation.parallel`) with the same numbers; this process alone
writes the stored predictions, as the cases arrive.
"""
from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pandas as pd

from hostlink.validation.calibration_chain import groups_fitted_on
from hostlink.validation.parallel import predict_parallel, resolve_jobs
from hostlink.validation.report_common import ReportError, case_order
from hostlink.validation.report_judge import (annotate, fitted_cases, group_stats, mark_not_fitted,
                                              read_summary, summarise, write_summary)
from hostlink.validation.report_progress import CaseProgress
from hostlink.validation.report_render import markdown, plots, timing_table
from hostlink.validation.report_store import (PREDICTIONS_PARQUET, PredictionStore,
                                              case_inputs_hash, prediction_key, stored_record)


def load_calibration(path: str | Path | None, system_path: str | Path | None) -> dict | None:
    """The calibration record: ``path``, else calibration.json beside the system file."""
    candidates = []
    if path is not None:
        candidates.append(Path(path))
    elif system_path is not None and Path(system_path).suffix == ".toml":
        candidates.append(Path(system_path).with_name("calibration.json"))
    for c in candidates:
        if c.is_file():
            try:
                return json.loads(c.read_text())
            except json.JSONDecodeError as exc:
                raise ReportError(f"{c}: not valid JSON ({exc.msg})") from None
        if path is not None:
            raise ReportError(f"{c}: no such calibration record")
    return None


DEFAULT_FIDELITY = "des"


def report_command(results_dir, system_spec, *, fidelity: str = DEFAULT_FIDELITY,
                   out_dir=None, calibration_path=None, graph_dir=None, only: str | None = None,
                   max_requests: int | None = None, max_sources: int | None = None,
                   overrides: list[str] | None = None) -> str:
    """The ``hostlink validate report`` command line that makes this report."""
    args = ["hostlink", "validate", "report", str(results_dir), "--system", str(system_spec)]
    for item in overrides or ():
        args += ["--set", str(item)]
    if fidelity != DEFAULT_FIDELITY:
        args += ["--fidelity", fidelity]
    for flag, value in (("--calibration", calibration_path), ("--graph-dir", graph_dir),
                        ("--only", only), ("--max-requests", max_requests),
                        ("--max-sources", max_sources), ("--out", out_dir)):
        if value is not None:
            args += [flag, str(value)]
    return " ".join(shlex.quote(a) for a in args)


def build_report(results_dir: str | Path, system_spec: str | Path, *, fidelity: str = "des",
                 out_dir: str | Path | None = None, calibration_path: str | Path | None = None,
                 graph_dir: str | Path | None = None, only: str | None = None,
                 max_requests: int | None = None, progress: bool = False,
                 notes: list[str] | None = None, max_sources: int | None = None,
                 fresh: bool = False, jobs: int = 1, from_summary: bool = False,
                 overrides: list[str] | None = None) -> dict:
    """Predict every case of a run, write summary.csv, report.md and plots/; return the stats.

    ``notes`` are added to the report's header after the command that makes the report
    (:func:`report_command`). ``max_sources`` samples the
    traversal cases: each is predicted for its first sources only and compared with
    the measurements of those sources (the header says so).

    Predictions are kept in OUT as they finish (:class:`PredictionStore`); a report
    started again in the same OUT with the same key predicts only the cases not yet
    done. ``fresh`` predicts every case again (the old files are kept as
    ``predictions.stale.*``). ``progress`` shows cases done and the time left on stderr.

    ``from_summary``: predict nothing; render report.md and plots/ again from OUT's
    summary.csv (a change of how a report is judged or drawn needs no new predictions).
    The header still names the command that made the numbers, and says that they were
    rendered again and with which model code they were predicted (from the stored
    prediction record, whose failures and run times are used where it names every
    case of the summary).

    ``jobs``: worker processes predicting the cases (:mod:`hostlink.validation.parallel`;
    0 = one per CPU); the numbers are those of one process (1, the default), the
    stored predictions are written by this process alone as cases arrive."""
    from hostlink.model.config import load_any_system
    from hostlink.validation.twins import load_run, sampled_measurements, selected

    run = load_run(results_dir)
    system = load_any_system(str(system_spec), overrides or None)
    calibration = load_calibration(calibration_path, system_spec)
    fitted = groups_fitted_on(calibration, results_dir) if calibration else []
    cal_groups = set(fitted)
    if calibration:
        calibration = {**calibration, "calibration_groups": fitted}
    out = Path(out_dir) if out_dir is not None else Path(results_dir)
    wanted = [c for c in run.measured["case"].unique() if selected(c, only)]
    command = report_command(results_dir, system_spec, fidelity=fidelity, out_dir=out_dir,
                             calibration_path=calibration_path, graph_dir=graph_dir, only=only,
                             max_requests=max_requests, max_sources=max_sources,
                             overrides=overrides)
    notes = ["made with `" + command + "`"] + list(notes or [])
    measured = sampled_measurements(run, max_sources)
    measured = measured[[selected(c, only) for c in measured["case"]]]

    if from_summary:
        summary_path = out / "summary.csv"
        if not summary_path.is_file():
            raise ReportError(f"{summary_path}: no summary to render again (make the report "
                              "without --from-summary first)")
        summary = read_summary(summary_path)
        summary = summary[[selected(c, only) for c in summary["case"]]].reset_index(drop=True)
        record = stored_record(out)
        entries = (record or {}).get("cases") or {}
        codes = (record or {}).get("code") or {}
        if record is None or not set(summary["case"]) <= set(entries):
            entries, codes = {}, {}
        wanted_set = set(wanted)
        entries = {c: e for c, e in entries.items() if c in wanted_set and isinstance(e, dict)}
        failures = {c: e["failure"] for c, e in entries.items() if e.get("failure")}
        timings = {c: dict(entries[c]["timing"])
                   for c in sorted(entries, key=lambda c: case_order(run, c))
                   if entries[c].get("timing")}
        notes.append("rendered again from its summary.csv by `" + command + " --from-summary`"
                     + ("; predicted with code sha256 " + ", ".join(
                         f"{kind} {h[:12]}" for kind, h in sorted(codes.items()) if h)
                        if codes else
                        "; no prediction record names every case, so the run times and "
                        "failures of the prediction run are not shown"))
        resumed, predicted_now, store_path, store_messages = len(wanted), 0, None, []
    else:
        summary, failures, timings, resumed, store = _predict_cases(
            run, system, out, wanted, measured, calibration=calibration, fidelity=fidelity,
            graph_dir=graph_dir, only=only, max_requests=max_requests,
            max_sources=max_sources, progress=progress, fresh=fresh, jobs=jobs)
        predicted_now, store_path, store_messages = (len(wanted) - resumed, store.parquet,
                                                     list(store.messages))

    if max_sources is not None:
        notes.append(f"traversal cases sampled: the first {max_sources} source(s) of each BFS "
                     "and SSSP case, predicted and compared with the measurements of those "
                     "sources only")
    if max_requests is not None:
        notes.append(f"microbenchmark twins hold about {max_requests} requests each (a prefix "
                     "of their traffic; the steady-state bandwidth stands for the run)")
    if summary.empty:
        raise ReportError(f"{results_dir}: no case could be compared "
                          f"({len(failures)} twins failed)")
    if not from_summary:
        write_summary(summary, out / "summary.csv")
    ann = mark_not_fitted(annotate(summary, run.cases), fitted_cases(calibration, results_dir))
    stats = group_stats(ann, cal_groups)
    unpredicted = sorted(set(measured["case"]) - set(summary["case"])
                         - {c for c in measured["case"].unique() if c.startswith("trace/")})
    unpredicted = [f"{c}: {failures[c]}" if c in failures else c for c in unpredicted]
    plots(ann, stats, out / "plots", system=getattr(system, "name", str(system_spec)),
          workload=f"validation run {run.experiment}")
    md = markdown(ann, stats, title=f"Validation report: {run.experiment}",
                  system_name=getattr(system, "name", str(system_spec)), fidelity=fidelity,
                  calibration=calibration, results_dir=str(results_dir), unpredicted=unpredicted,
                  timings=timings, notes=notes)
    (out / "report.md").write_text(md)
    return {"summary": summary, "groups": stats, "unpredicted": unpredicted, "out": out,
            "timings": timing_table(timings, ann), "resumed": resumed,
            "predicted": predicted_now, "predictions": store_path,
            "store_messages": store_messages}


def _predict_cases(run, system, out: Path, wanted: list[str], measured: pd.DataFrame, *,
                   calibration: dict | None,
                   fidelity: str, graph_dir, only, max_requests, max_sources, progress: bool,
                   fresh: bool, jobs: int):
    """Predict the ``wanted`` cases not stored yet (:class:`PredictionStore`); returns
    (summary against ``measured``, failures, timings, cases resumed, the store)."""
    from hostlink.validation.twins import predict_run

    n_jobs = resolve_jobs(jobs)
    kw = {} if max_requests is None else {"max_requests": max_requests}
    out.mkdir(parents=True, exist_ok=True)
    store = PredictionStore(out, prediction_key(system, fidelity=fidelity,
                                                max_requests=max_requests,
                                                max_sources=max_sources))
    done = store.open(run, fresh=fresh)
    if progress:
        for m in store.messages:
            sys.stderr.write(f"{out / PREDICTIONS_PARQUET}: {m}\n")
    resumed = sum(c in done for c in wanted)
    bar = CaseProgress(len(wanted), resumed, enabled=progress,
                       classes={c: str(run.cases[c].get("kind", "")) for c in wanted
                                if c not in done})
    new_timings: dict[str, dict] = {}

    def on_case(case: str, rows: pd.DataFrame, failure: str | None,
                timing: dict | None = None) -> None:
        store.add(case, rows, failure, case_inputs_hash(run, case),
                  timing if timing is not None else new_timings.get(case),
                  code=store.code_for(run, case), options=store.options_for(run, case))
        bar.step(case, failure)

    try:
        if n_jobs == 1:
            predict_run(run, system, fidelity=fidelity, graph_dir=graph_dir, only=only,
                        progress=False, timings=new_timings,
                        max_sources=max_sources, skip_cases=done, on_case=on_case, **kw)
        else:
            predict_parallel(run, system, [c for c in wanted if c not in done], jobs=n_jobs,
                             on_case=on_case, fidelity=fidelity, graph_dir=graph_dir, only=only,
                             max_sources=max_sources, **kw)
    finally:
        bar.close()
        store.flush(force=True)
    wanted_set = set(wanted)
    failures = {c: f for c, f in store.failures().items() if c in wanted_set}
    stored_timings = store.timings()
    timings = {c: stored_timings[c] for c in sorted(stored_timings, key=lambda c: case_order(run, c))
               if c in wanted_set}
    return summarise(measured, store.table()), failures, timings, resumed, store
