"""Rendering a report: ``report.md`` and its three plots.

``report.md`` names the measured run, the system, the fidelity and the command
that made it, then gives the MAPE per group with its target and verdict, the
MAPE of a traversal run's graphs against the family targets with the effect
behind each graph that misses, the calibrated parameters, each group's worst
cases with the diagnosis of a group that misses
(:mod:`hostlink.validation.report_diagnose`), the twins' run time and the cases
without a prediction. The plots (matplotlib, Agg, in the style of
:mod:`hostlink.model.plot_style`) are predicted against measured with y = x (a
panel per unit), the error by group and the MAPE per group with its target.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from hostlink.validation.report_diagnose import diagnose, family_effects
from hostlink.validation.report_judge import (FAMILY_TARGET_PCT, NOT_FITTED,
                                              UNTARGETED_DIAGNOSE_PCT, GroupStats, family_table)
from hostlink.validation.twins import TRAVERSAL_PRIMARY


def _fmt(x: float, digits: int = 3) -> str:
    if x is None:
        return "derived"
    if not np.isfinite(x):
        return "n/a"
    return f"{x:.{digits}g}"


def _fmt_us(x: float) -> str:
    """A launch time in us: three figures, whole microseconds from 100 up."""
    if not np.isfinite(x):
        return "n/a"
    return f"{x:,.0f}" if x >= 100 else f"{x:.3g}"


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


def bound_table(timings: dict[str, dict], annotated: pd.DataFrame) -> pd.DataFrame:
    """Per case with a named bound (a microbenchmark twin's, in ``timings``): its group,
    primary metric's measured, predicted and error, and the bound."""
    named = {c: t["bound"] for c, t in timings.items() if t.get("bound")}
    rows = annotated[annotated["primary"] & annotated["case"].isin(named)]
    if not len(rows):
        return pd.DataFrame(columns=["group", "case", "measured", "predicted", "error_pct",
                                     "unit", "bound"])
    out = rows[["group", "case", "measured", "predicted", "error_pct", "unit"]].copy()
    out["bound"] = out["case"].map(named)
    return out.reset_index(drop=True)


#: how the per-graph section names the placements of FAMILY_TARGET_PCT
_PLACEMENT_NAMES = {"zerocopy": "zero-copy", "uvm": "UVM", "device": "device memory"}


def family_section(annotated: pd.DataFrame) -> list[str]:
    """The report's lines judging its traversal cases per graph (none without them)."""
    table = family_table(annotated)
    if not len(table):
        return []
    targets = ", ".join(f"{_PLACEMENT_NAMES.get(k, k)} {v:g}%"
                        for k, v in FAMILY_TARGET_PCT.items())
    lines = ["## MAPE per graph", "",
             "The traversal cases of each graph in each placement (zero-copy: every host "
             "memory mode that migrates nothing), judged on kernel time against the targets "
             f"a graph family is held to: {targets}. Launch: the median of the cases' "
             "measured mean launch times. Band: how far nine in ten cases of that launch "
             "length moved on a second lease of the same GPU (hostlink.model.bands).", "",
             "| graph | placement | cases | MAPE % | bias % | worst % | target % | launch us "
             "| band % | verdict |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in table.itertuples():
        known = np.isfinite(r.target_pct)
        verdict = ("meets" if r.mape_pct <= r.target_pct else "**misses**") if known else "-"
        band = f"±{r.band_pct:.1f}" if np.isfinite(r.band_pct) else "-"
        lines.append(f"| {r.graph} | {r.placement} | {r.cases} | {_fmt(r.mape_pct)} | "
                     f"{r.bias_pct:+.1f} | {r.worst_pct:+.1f} | "
                     f"{_fmt(r.target_pct) if known else '-'} | {_fmt_us(r.launch_us)} | "
                     f"{band} | {verdict} |")
    lines.append("")
    effects = family_effects(table)
    if effects:
        lines += ["Where a graph misses its target, the effect the model lacks by the sign "
                  "of its error:", ""]
        lines += [f"- {t}" for t in effects]
        lines.append("")
    return lines


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
                     "predicted, not fitted, and so are the cases of these groups that no "
                     f"fit used (reported as `<group>{NOT_FITTED}`, held out)")
        chain = calibration.get("chain") or []
        if len(chain) > 1:
            lines.append("- calibration chain, each link fitted on its own run from the one before: "
                         + " -> ".join(f"`{link.get('results_dir', '')}`" for link in chain))
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
    lines += family_section(annotated)
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
        if s.passed is False or (s.target_pct is None and s.mape_pct > UNTARGETED_DIAGNOSE_PCT):
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
    bounds = bound_table(timings or {}, annotated)
    if len(bounds):
        lines += ["## What binds each case", "",
                  "The bound the model names for each microbenchmark case: the link, "
                  "requests in flight, translation, the host's serve rate, UVM service, "
                  "device memory, issue or launch.", ""]
        for group, g in bounds.groupby("group", sort=False):
            counts = ", ".join(f"{b} {n}" for b, n in g["bound"].value_counts().items())
            lines += [f"### `{group}`: {counts}", "",
                      "| case | measured | predicted | error % | bound |",
                      "|---|---:|---:|---:|---|"]
            for _, r in g.iterrows():
                lines.append(f"| `{r['case']}` | {_fmt(r['measured'], 4)} {r['unit']} | "
                             f"{_fmt(r['predicted'], 4)} {r['unit']} | {r['error_pct']:+.1f} | "
                             f"{r['bound']} |")
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


def figure_error_by_group(prim: pd.DataFrame, *, system: str | None = None,
                          workload: str | None = None):
    """Each case's error in its primary metric, a row per group, with the group's median."""
    from hostlink.model import plot_style as style

    groups = sorted(prim["group"].unique())
    fig = style.new_figure(style.FIG_W_IN, max(3.5, 0.3 * len(groups) + 1.8))
    ax = fig.add_subplot()
    for i, g in enumerate(groups):
        e = prim[prim["group"] == g]["error_pct"].to_numpy()
        jitter = (np.arange(len(e)) % 7 - 3) * 0.05
        ax.plot(e, i + jitter, linestyle="none", marker="o", markersize=3, alpha=0.7,
                color=style.COLOURS[0], label="case" if i == 0 else "_case")
        if len(e):
            ax.plot([np.median(e)] * 2, [i - 0.3, i + 0.3], color="black", lw=1.5,
                    label="median of the group" if i == 0 else "_median")
    ax.axvline(0, color="black", lw=0.8, label="_zero")
    _group_axes(ax, groups, "error (%) = 100 (predicted - measured) / measured",
                "error of each case's primary metric (%)", system, workload)
    return fig


MAPE_STATUS = (("meets its target", "#2ca02c"), ("misses its target", "#d62728"),
               ("calibration or no target", "#7f7f7f"))


def figure_mape_by_group(stats: list[GroupStats], *, system: str | None = None,
                         workload: str | None = None):
    """Each group's MAPE as a bar coloured by its verdict, with its target as a tick."""
    from hostlink.model import plot_style as style

    fig = style.new_figure(style.FIG_W_IN, max(3.5, 0.3 * len(stats) + 1.8))
    ax = fig.add_subplot()
    status = [2 if s.passed is None else 0 if s.passed else 1 for s in stats]
    for k, (label, colour) in enumerate(MAPE_STATUS):
        rows = [i for i, st in enumerate(status) if st == k]
        if rows:
            ax.barh(rows, [stats[i].mape_pct for i in rows], color=colour, label=label)
    first = True
    for i, s in enumerate(stats):
        if s.target_pct:
            ax.plot([s.target_pct] * 2, [i - 0.4, i + 0.4], color="black", lw=1.5,
                    label="target" if first else "_target")
            first = False
    _group_axes(ax, [s.group for s in stats], "MAPE (%)", "MAPE of the primary metric (%)",
                system, workload)
    return fig


def _group_axes(ax, groups: list[str], xlabel: str, title: str, system, workload) -> None:
    """The axes of a figure with a row per case group: the groups down the side, the
    first on top as in the tables, a grid along x and the legend outside."""
    from hostlink.model import plot_style as style

    ax.set_yticks(range(len(groups)))
    ax.set_yticklabels(groups, fontsize="small")
    ax.invert_yaxis()
    ax.set_xlabel(xlabel)
    ax.set_ylabel("case group")
    ax.set_title(style.title(title, system=system, workload=workload, detail="by group"),
                 fontsize="medium")
    ax.grid(True, axis="x", alpha=0.3)
    style.legend_outside(ax)


def plots(annotated: pd.DataFrame, stats: list[GroupStats], out_dir: Path, *,
          system: str | None = None, workload: str | None = None) -> list[Path]:
    """The three figures of the report, as PNG files in ``out_dir``: predicted against
    measured (primary metrics; a panel per unit), error by group, MAPE per group."""
    from hostlink.model import plot_style as style
    from hostlink.model.plots import plot_predicted_vs_measured

    out_dir.mkdir(parents=True, exist_ok=True)
    prim = annotated[annotated["primary"]]
    figures = {
        "predicted_vs_measured.png": plot_predicted_vs_measured(
            prim, system=system, workload=workload),
        "error_by_group.png": figure_error_by_group(prim, system=system, workload=workload),
        "mape_by_group.png": figure_mape_by_group(stats, system=system, workload=workload),
    }
    return [style.save(fig, out_dir / name) for name, fig in figures.items()]
