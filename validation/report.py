"""``hostlink validate report``: predicted twins against measurements, per case and per group.

For a measured run and a (calibrated) system, every case's twin is predicted
(:mod:`hostlink.validation.twins`) and compared with the measurement:

- ``summary.csv``: one row per (case, metric) measured and predicted, with
  columns ``case, metric, unit, measured, predicted, error_pct``; ``measured``
  is the median over the case's repetitions (for traversal cases: over sources
  and repetitions), ``predicted`` the median of the twin's values over the
  same repetitions, and ``error_pct = 100 (predicted - measured) / measured``
  (positive: the model predicts more than was measured; for a time that is
  slower, for a bandwidth faster);
- per group (:func:`hostlink.validation.twins.case_group`) the mean absolute
  percentage error (MAPE) of the primary metric of its cases
  (:data:`hostlink.validation.twins.PRIMARY_METRIC`; traversal cases: kernel
  time), its bias (mean signed error) and its worst cases;
- targets (the validation issue's acceptance): microbenchmark groups NOT used
  for calibration <= 10 %, traversal zero-copy <= 15 %, UVM first touch
  (held-out uvm_touch groups and the traversal UVM group) <= 25 %. Groups
  used for calibration are listed with their fit residual and no target;
- where a group misses its target, the report names the effect the model
  lacks, from the error's sign and from the case parameter it follows most
  closely (rank correlation), with the candidate effects of that group;
- plots (matplotlib, Agg): predicted against measured with y = x, error by
  group, MAPE per group with its target.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from hostlink.model.errors import HostlinkError
from hostlink.validation.twins import (PRIMARY_METRIC, TRAVERSAL_PRIMARY, case_group,
                                       params_from_name, primary_metric)

SUMMARY_COLUMNS = ("case", "metric", "unit", "measured", "predicted", "error_pct")
MICRO_TARGET_PCT = 10.0
ZEROCOPY_TARGET_PCT = 15.0
UVM_TARGET_PCT = 25.0


class ReportError(HostlinkError):
    """Inputs of a report that do not fit together."""


# ----------------------------------------------------------------------------
# The numbers


def summarise(measured: pd.DataFrame, predicted: pd.DataFrame) -> pd.DataFrame:
    """Median measured against median predicted for every (case, metric) both have.

    Both tables are tidy results (``case, metric, unit, value, rep``; other
    columns are ignored). Rows with a non-finite or zero measured median are
    dropped (no relative error exists for them).
    """
    def med(df: pd.DataFrame, name: str) -> pd.DataFrame:
        d = df[np.isfinite(df["value"].to_numpy(dtype=float))]
        return (d.groupby(["case", "metric", "unit"], sort=False)["value"].median()
                .rename(name).reset_index())

    m = med(measured, "measured")
    p = med(predicted, "predicted")
    out = m.merge(p, on=["case", "metric", "unit"], how="inner", sort=False)
    out = out[(out["measured"] != 0) & np.isfinite(out["predicted"])].copy()
    out["error_pct"] = (out["predicted"] - out["measured"]) / out["measured"] * 100.0
    return out[list(SUMMARY_COLUMNS)].reset_index(drop=True)


def mape(error_pct) -> float:
    """Mean absolute percentage error of a set of errors in percent (NaN when empty)."""
    e = np.asarray(error_pct, dtype=float)
    e = e[np.isfinite(e)]
    return float(np.mean(np.abs(e))) if len(e) else math.nan


def target_for(group: str, calibration_groups: set[str]) -> tuple[str, float | None]:
    """(role, target MAPE in percent or None) of a group."""
    if group.startswith("micro/"):
        if group in calibration_groups:
            return "calibration", None
        if group.startswith("micro/uvm_touch/") and not group.startswith("micro/uvm_touch/accessedby"):
            return "held-out (UVM first touch)", UVM_TARGET_PCT
        return "held-out", MICRO_TARGET_PCT
    if group == "traversal/zerocopy":
        return "traversal", ZEROCOPY_TARGET_PCT
    if group == "traversal/uvm":
        return "traversal", UVM_TARGET_PCT
    return "traversal" if group.startswith("traversal/") else "other", None


def annotate(summary: pd.DataFrame, cases: dict[str, dict]) -> pd.DataFrame:
    """The summary with ``group``, ``params`` and ``primary`` (the row is the case's judged metric)."""
    s = summary.copy()
    params = [cases.get(c) or params_from_name(c) for c in s["case"]]
    s["params"] = params
    s["group"] = [case_group(c, p) for c, p in zip(s["case"], params)]
    s["primary"] = [m == primary_metric(p) for m, p in zip(s["metric"], params)]
    return s


@dataclass
class GroupStats:
    group: str
    role: str
    target_pct: float | None
    n: int
    mape_pct: float
    bias_pct: float
    worst: pd.DataFrame
    metric: str

    @property
    def passed(self) -> bool | None:
        if self.target_pct is None or not np.isfinite(self.mape_pct):
            return None
        return self.mape_pct <= self.target_pct


def group_stats(annotated: pd.DataFrame, calibration_groups: set[str], n_worst: int = 3) -> list[GroupStats]:
    out = []
    prim = annotated[annotated["primary"]]
    for group, d in prim.groupby("group", sort=True):
        role, target = target_for(group, calibration_groups)
        order = d["error_pct"].abs().sort_values(ascending=False).index
        out.append(GroupStats(group, role, target, len(d), mape(d["error_pct"]),
                              float(d["error_pct"].mean()), d.loc[order[:n_worst]],
                              str(d["metric"].iloc[0])))
    return out


# ----------------------------------------------------------------------------
# What a group misses


#: Candidate effects per group: (when the model predicts too much, too little).
EFFECTS = {
    "micro/zc_read/coalesced": (
        "completions split at 64 B boundaries: a root complex that returns reads in 64 B "
        "units and merges only whole aligned 128 B lines sends a 96 B read 32 B off a line as "
        "32 + 64 B CplDs (the H200's 38 GB/s at offsets 32 and 96 against 43 GB/s at 64 fits "
        "that; the packetiser's 'mps' split sends one 96 B CplD)",
        "the GPU merging the two halves of a misaligned line (the model sends them as "
        "separate requests)"),
    "micro/zc_read/strided": (
        "cache hits the GPU does not get (sectors evicted between a lane's loads) or hits that "
        "cost nothing in the model",
        "L1 hits the cache model misses: its sets are indexed by address modulo the set count, "
        "so chunk strides of 512 B and 4 KiB fall in a few sets, and warps reach it in lockstep"),
    "micro/zc_read/random": (
        "translation misses beyond the TLB reach (large regions), or L1 hits that cost the "
        "model no time (4 KiB regions run at the L1's 628 GB/s, not infinitely fast)",
        "translation reach larger than configured (fewer misses)"),
    "micro/zc_warps": (
        "a per-warp issue cost of back-to-back loads (one warp's 4 loads take 1.33 us on the "
        "H200 against 1.22 us for one, about 37 ns per further load); the engines issue an "
        "instruction's loads at once (the round trip's growth with the link's load is in the "
        "twins' mean-field loaded round trip)",
        "more requests in flight per warp than the unroll (the hardware runs ahead)"),
    "micro/memcpy": (
        "the copy engine's per-copy setup cost (driver and engine start-up), which the model "
        "does not have",
        "larger copy-engine requests than 256 B"),
    "micro/ptr_chase": (
        "a latency shorter than the calibrated round trip for this stride (cache or TLB hits)",
        "TLB misses of the chase (translation miss cost or reach)"),
    "micro/uvm_touch": (
        "fault-service costs lower than the calibrated per-block and per-moved-page costs for "
        "this pattern (a read-duplicated sequential front costs the H200 about 24 us per "
        "batch, a migrating one 34 us: the split between the per-block and per-page costs "
        "fitted on migration does not carry over exactly)",
        "fault batches that the driver overlaps or that serve more faults than modelled"),
    "traversal/zerocopy": (
        "work of the warps beside their host loads: the visits' device-memory reads and "
        "atomics (the twins emit host loads only) and the issue cost of back-to-back loads "
        "(see micro/zc_warps); or a loaded round trip above the run's mean for launches "
        "busier than the average (one mean-field round trip serves every launch)",
        "host-memory sectors served by the GPU's caches that the cache model misses, more "
        "loads in flight per warp than the kernel's load-ahead, or a loaded round trip below "
        "the run's mean for its many quiet launches (one mean-field round trip serves every "
        "launch)"),
    "traversal/uvm": (
        "fault-service costs and thrashing the UVM model does not capture, and the device work "
        "of the visits",
        "prefetching or batching in the driver that the model under-credits"),
    "traversal/device": (
        "device-memory latency and atomics of the visits: the twins read only the edge list, "
        "at device bandwidth",
        "device-memory caching (L2 hits)"),
}


def _effects_for(group: str) -> tuple[str, str] | None:
    for key in sorted(EFFECTS, key=len, reverse=True):
        if group.startswith(key):
            return EFFECTS[key]
    return None


def _numeric_params(rows: pd.DataFrame) -> dict[str, np.ndarray]:
    out = {}
    keys = set()
    for p in rows["params"]:
        keys.update(k for k, v in p.items() if isinstance(v, (int, float)) and not isinstance(v, bool))
    for k in sorted(keys):
        vals = np.array([float(p.get(k, np.nan)) if isinstance(p.get(k), (int, float)) else np.nan
                         for p in rows["params"]])
        if np.isfinite(vals).sum() >= 3 and len(np.unique(vals[np.isfinite(vals)])) >= 3:
            out[k] = vals
    return out


def _spearman(x: np.ndarray, y: np.ndarray) -> float:
    ok = np.isfinite(x) & np.isfinite(y)
    if ok.sum() < 3:
        return math.nan
    rx = pd.Series(x[ok]).rank().to_numpy()
    ry = pd.Series(y[ok]).rank().to_numpy()
    if rx.std() == 0 or ry.std() == 0:
        return math.nan
    return float(np.corrcoef(rx, ry)[0, 1])


def diagnose(stats: GroupStats, rows: pd.DataFrame) -> list[str]:
    """Sentences on what the model lacks for a group (its primary-metric rows)."""
    lines = []
    e = rows["error_pct"].to_numpy(dtype=float)
    metric = stats.metric
    higher_is_faster = metric.endswith("GBps")
    over = stats.bias_pct > 0
    consistent = np.mean(np.sign(e) == np.sign(stats.bias_pct)) if len(e) else 0.0
    if len(e) and consistent >= 0.8 and abs(stats.bias_pct) >= 0.5 * stats.mape_pct:
        fast = over == higher_is_faster
        lines.append(f"The model is systematically too {'fast' if fast else 'slow'}: "
                     f"{metric} is {'over' if over else 'under'}-predicted by "
                     f"{abs(stats.bias_pct):.1f}% on average ({consistent:.0%} of cases share the sign).")
    else:
        lines.append(f"The errors scatter around a bias of {stats.bias_pct:+.1f}%: the model "
                     f"misses a dependence on the case rather than a constant.")
    best = None
    for k, vals in _numeric_params(rows).items():
        rho = _spearman(np.log(np.maximum(vals, 1e-12)), e)
        if np.isfinite(rho) and (best is None or abs(rho) > abs(best[1])):
            best = (k, rho)
    if best is not None and abs(best[1]) >= 0.6:
        lines.append(f"The error {'grows' if best[1] > 0 else 'falls'} with `{best[0]}` "
                     f"(rank correlation {best[1]:+.2f}).")
    for cat in ("variant", "graph", "kernel", "id_bytes", "pattern", "advice", "memory_mode"):
        vals = [p.get(cat) for p in rows["params"]]
        if len(set(map(str, vals))) < 2:
            continue
        by = pd.Series(e).groupby(pd.Series([str(v) for v in vals])).mean()
        if by.max() - by.min() >= max(5.0, 0.5 * stats.mape_pct):
            parts = ", ".join(f"{k} {v:+.1f}%" for k, v in by.sort_values().items())
            lines.append(f"Mean error by {cat}: {parts}.")
    eff = _effects_for(stats.group)
    if eff is not None:
        fast = (stats.bias_pct > 0) == higher_is_faster
        lines.append("Effect the model lacks, by the sign of the error: "
                     + (eff[0] if fast else eff[1]) + ".")
    return lines


# ----------------------------------------------------------------------------
# Output


def _fmt(x: float, digits: int = 3) -> str:
    if x is None:
        return "derived"
    if not np.isfinite(x):
        return "n/a"
    return f"{x:.{digits}g}"


def timing_table(timings: dict[str, dict], annotated: pd.DataFrame) -> pd.DataFrame:
    """Per traversal case: the twin's wall-clock seconds per source (emulation, model)
    against the measured kernel time, and their ratio."""
    rows = []
    kt = annotated[(annotated["metric"] == TRAVERSAL_PRIMARY)].set_index("case")["measured"]
    for case, t in timings.items():
        n = int(t.get("sources", 0))
        if not n or case not in kt.index:
            continue
        model_s = t.get("model_s", 0.0) / n
        kernel_s = float(kt[case]) * 1e-3
        rows.append((case, t.get("emulate_s", 0.0) / n, model_s, t.get("requests", 0) / n,
                     kernel_s * 1e3, model_s / kernel_s if kernel_s > 0 else math.nan))
    return pd.DataFrame(rows, columns=["case", "emulate_s", "model_s", "requests",
                                       "measured_kernel_ms", "model_over_kernel"])


def markdown(annotated: pd.DataFrame, stats: list[GroupStats], *, title: str, system_name: str,
             fidelity: str, calibration: dict | None, results_dir: str,
             unpredicted: list[str], timings: dict | None = None,
             notes: list[str] | None = None) -> str:
    lines = [f"# {title}", ""]
    lines += [f"- measured results: `{results_dir}`",
              f"- system: `{system_name}`; fidelity: {fidelity}",
              f"- cases compared: {annotated['case'].nunique()} "
              f"({int(annotated['primary'].sum())} judged on their primary metric)"]
    if calibration:
        used = ", ".join(f"`{g}`" for g in calibration.get("calibration_groups", [])) or "none"
        lines.append(f"- calibrated from microbenchmark groups: {used}; every other group is "
                     "predicted, not fitted")
        opts = calibration.get("model_options") or {}
        if opts:
            flat = ", ".join(f"`{g}.{k}` = {_fmt(v, 4)}" for g, d in sorted(opts.items())
                             for k, v in sorted(d.items()))
            lines.append(f"- model options beyond the system config (from the calibration "
                         f"record): {flat}")
    else:
        lines.append("- no calibration record: every microbenchmark group counts as held out")
    for note in notes or []:
        lines.append(f"- {note}")
    lines += ["", "error_pct = 100 (predicted - measured) / measured; MAPE = mean |error_pct| "
              "over a group's cases, on its primary metric (bandwidth for the zero-copy and "
              "memcpy benchmarks, latency for the pointer chase, time for UVM first touch and "
              "kernel time for traversals).", ""]
    lines += ["## MAPE per group", "",
              "| group | role | metric | cases | MAPE % | bias % | target % | verdict |",
              "|---|---|---|---:|---:|---:|---:|---|"]
    for s in stats:
        verdict = {True: "meets", False: "**misses**", None: "-"}[s.passed]
        if s.role == "calibration":
            verdict = "fit residual"
        lines.append(f"| `{s.group}` | {s.role} | {s.metric} | {s.n} | {_fmt(s.mape_pct)} | "
                     f"{s.bias_pct:+.1f} | {_fmt(s.target_pct) if s.target_pct else '-'} | {verdict} |")
    lines.append("")
    if calibration and calibration.get("fits"):
        lines += ["## Calibrated parameters", "",
                  "| key | base | calibrated | from | fit residual (MAPE %) | note |",
                  "|---|---:|---:|---|---:|---|"]
        for fit in calibration["fits"]:
            for key, val in fit.get("values", {}).items():
                base = fit.get("base", {}).get(key)
                note = fit.get("note", "")
                lines.append(f"| `{key}` | {_fmt(base, 5)} | {_fmt(val, 5)} | "
                             f"{', '.join(fit.get('groups', []))} | {_fmt(fit.get('mape_pct'))} | {note} |")
        lines.append("")
    lines += ["## Groups", ""]
    for s in stats:
        rows = annotated[annotated["primary"] & (annotated["group"] == s.group)]
        lines += [f"### `{s.group}`: MAPE {_fmt(s.mape_pct)}%"
                  + (f" (target {s.target_pct:g}%)" if s.target_pct else ""), ""]
        lines += ["| case | measured | predicted | error % |", "|---|---:|---:|---:|"]
        for _, r in s.worst.iterrows():
            lines.append(f"| `{r['case']}` | {_fmt(r['measured'], 4)} {r['unit']} | "
                         f"{_fmt(r['predicted'], 4)} {r['unit']} | {r['error_pct']:+.1f} |")
        lines.append("")
        if s.passed is False:
            lines += ["What the model lacks here:", ""]
            lines += [f"- {t}" for t in diagnose(s, rows)]
            lines.append("")
    if timings:
        tt = timing_table(timings, annotated)
        if len(tt):
            lines += ["## Model run time", "",
                      "Wall-clock seconds of the twin per source on this machine (emulating the "
                      "kernel's requests; predicting them at this fidelity), against the "
                      "measured kernel time of one run. A stream shared by memory modes is "
                      "emulated once.", "",
                      "| case | emulate s | model s | requests | measured kernel ms | "
                      "model / kernel |", "|---|---:|---:|---:|---:|---:|"]
            for _, r in tt.iterrows():
                lines.append(f"| `{r['case']}` | {r['emulate_s']:.1f} | {r['model_s']:.1f} | "
                             f"{r['requests']:.3g} | {_fmt(r['measured_kernel_ms'], 4)} | "
                             f"{r['model_over_kernel']:.3g} |")
            lines.append("")
    if unpredicted:
        lines += ["## Cases without a prediction", ""]
        lines += [f"- `{c}`" for c in unpredicted[:50]]
        if len(unpredicted) > 50:
            lines.append(f"- ... and {len(unpredicted) - 50} more")
        lines.append("")
    lines += ["## Plots", "", "![predicted against measured](plots/predicted_vs_measured.png)", "",
              "![error by group](plots/error_by_group.png)", "",
              "![MAPE per group](plots/mape_by_group.png)", ""]
    return "\n".join(lines)


def plots(annotated: pd.DataFrame, stats: list[GroupStats], out_dir: Path) -> list[Path]:
    """The three figures of the report, as PNG files in ``out_dir``."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir.mkdir(parents=True, exist_ok=True)
    prim = annotated[annotated["primary"]]
    groups = sorted(prim["group"].unique())
    cmap = plt.get_cmap("tab20")
    colour = {g: cmap(i % 20) for i, g in enumerate(groups)}
    paths = []

    metrics = sorted(prim["metric"].unique())
    fig, axes = plt.subplots(1, max(1, len(metrics)), figsize=(5.2 * max(1, len(metrics)), 4.8),
                             squeeze=False)
    for ax, metric in zip(axes[0], metrics):
        d = prim[prim["metric"] == metric]
        for g, dg in d.groupby("group"):
            ax.scatter(dg["measured"], dg["predicted"], s=18, color=colour[g], label=g)
        lo = float(np.nanmin(np.r_[d["measured"], d["predicted"]]))
        hi = float(np.nanmax(np.r_[d["measured"], d["predicted"]]))
        if lo > 0 and hi / lo > 20:
            from matplotlib.ticker import NullFormatter
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.xaxis.set_minor_formatter(NullFormatter())
            ax.yaxis.set_minor_formatter(NullFormatter())
        pad = (hi - lo) * 0.05 if hi > lo else abs(hi) * 0.05 + 1e-9
        ax.plot([lo - pad, hi + pad], [lo - pad, hi + pad], "k--", lw=1, label="y = x")
        unit = d["unit"].iloc[0]
        ax.set_xlabel(f"measured {metric} ({unit})")
        ax.set_ylabel(f"predicted {metric} ({unit})")
        ax.legend(fontsize=6, loc="best")
        ax.grid(True, alpha=0.3)
    fig.suptitle("Predicted against measured")
    fig.tight_layout()
    p = out_dir / "predicted_vs_measured.png"
    fig.savefig(p, dpi=110)
    plt.close(fig)
    paths.append(p)

    fig, ax = plt.subplots(figsize=(8, 0.45 * len(groups) + 1.5))
    for i, g in enumerate(groups):
        e = prim[prim["group"] == g]["error_pct"].to_numpy()
        jitter = (np.arange(len(e)) % 7 - 3) * 0.05
        ax.scatter(e, i + jitter, s=12, color=colour[g])
        if len(e):
            ax.plot([np.median(e)] * 2, [i - 0.3, i + 0.3], color="k", lw=1.5)
    ax.axvline(0, color="k", lw=0.8)
    ax.set_yticks(range(len(groups)))
    ax.set_yticklabels(groups, fontsize=8)
    ax.set_xlabel("error (%) = 100 (predicted - measured) / measured")
    ax.set_title("Error by group (bar: median)")
    ax.grid(True, axis="x", alpha=0.3)
    fig.tight_layout()
    p = out_dir / "error_by_group.png"
    fig.savefig(p, dpi=110)
    plt.close(fig)
    paths.append(p)

    fig, ax = plt.subplots(figsize=(8, 0.45 * len(stats) + 1.5))
    names = [s.group for s in stats]
    vals = [s.mape_pct for s in stats]
    cols = ["tab:gray" if s.passed is None else "tab:green" if s.passed else "tab:red" for s in stats]
    ax.barh(range(len(stats)), vals, color=cols)
    for i, s in enumerate(stats):
        if s.target_pct:
            ax.plot([s.target_pct] * 2, [i - 0.4, i + 0.4], color="k", lw=1.5)
    ax.set_yticks(range(len(stats)))
    ax.set_yticklabels(names, fontsize=8)
    ax.set_xlabel("MAPE (%)  (black tick: target; grey: calibration or no target)")
    ax.set_title("MAPE per group")
    ax.grid(True, axis="x", alpha=0.3)
    fig.tight_layout()
    p = out_dir / "mape_by_group.png"
    fig.savefig(p, dpi=110)
    plt.close(fig)
    paths.append(p)
    return paths


def write_summary(summary: pd.DataFrame, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    summary[list(SUMMARY_COLUMNS)].to_csv(path, index=False, float_format="%.6g")
    return path


def read_summary(path: str | Path) -> pd.DataFrame:
    path = Path(path)
    try:
        df = pd.read_csv(path)
    except (OSError, ValueError) as exc:
        raise ReportError(f"{path}: cannot read summary ({exc})") from None
    missing = [c for c in SUMMARY_COLUMNS if c not in df.columns]
    if missing:
        raise ReportError(f"{path}: missing column(s) {', '.join(missing)}")
    return df


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


def build_report(results_dir: str | Path, system_spec: str | Path, *, fidelity: str = "des",
                 out_dir: str | Path | None = None, calibration_path: str | Path | None = None,
                 graph_dir: str | Path | None = None, only: str | None = None,
                 max_requests: int | None = None, progress: bool = False,
                 notes: list[str] | None = None, max_sources: int | None = None) -> dict:
    """Predict every case of a run, write summary.csv, report.md and plots/; return the stats.

    The model options of the calibration record (``model_options``) are used; ``notes``
    are added to the report's header (how it was made). ``max_sources`` samples the
    traversal cases: each is predicted for its first sources only and compared with
    the measurements of those sources (the header says so)."""
    from hostlink.model.config import load_any_system
    from hostlink.validation.twins import load_run, predict_run

    run = load_run(results_dir)
    system = load_any_system(str(system_spec))
    calibration = load_calibration(calibration_path, system_spec)
    cal_groups = set(calibration.get("calibration_groups", [])) if calibration else set()
    kw = {} if max_requests is None else {"max_requests": max_requests}
    options = dict((calibration or {}).get("model_options") or {})
    timings: dict[str, dict] = {}
    predicted, failures = predict_run(run, system, fidelity=fidelity, graph_dir=graph_dir,
                                      only=only, progress=progress, options=options,
                                      timings=timings, max_sources=max_sources, **kw)
    from hostlink.validation.twins import sampled_measurements, selected
    measured = sampled_measurements(run, max_sources)
    measured = measured[[selected(c, only) for c in measured["case"]]]
    notes = list(notes or [])
    if max_sources is not None:
        notes.append(f"traversal cases sampled: the first {max_sources} source(s) of each BFS "
                     "and SSSP case, predicted and compared with the measurements of those "
                     "sources only")
    if max_requests is not None:
        notes.append(f"microbenchmark twins hold about {max_requests} requests each (a prefix "
                     "of their traffic; the steady-state bandwidth stands for the run)")
    summary = summarise(measured, predicted)
    if summary.empty:
        raise ReportError(f"{results_dir}: no case could be compared "
                          f"({len(failures)} twins failed)")
    out = Path(out_dir) if out_dir is not None else Path(results_dir)
    out.mkdir(parents=True, exist_ok=True)
    write_summary(summary, out / "summary.csv")
    ann = annotate(summary, run.cases)
    stats = group_stats(ann, cal_groups)
    unpredicted = sorted(set(measured["case"]) - set(summary["case"])
                         - {c for c in measured["case"].unique() if c.startswith("trace/")})
    unpredicted = [f"{c}: {failures[c]}" if c in failures else c for c in unpredicted]
    plots(ann, stats, out / "plots")
    md = markdown(ann, stats, title=f"Validation report: {run.experiment}",
                  system_name=getattr(system, "name", str(system_spec)), fidelity=fidelity,
                  calibration=calibration, results_dir=str(results_dir), unpredicted=unpredicted,
                  timings=timings, notes=notes)
    (out / "report.md").write_text(md)
    return {"summary": summary, "groups": stats, "unpredicted": unpredicted, "out": out,
            "timings": timing_table(timings, ann)}


def register_validate_commands(sub) -> None:
    """Hook for ``hostlink validate``: adds ``report`` (see cli_calibrate_report)."""
    from hostlink.validation.cli_calibrate_report import register_report
    register_report(sub)
