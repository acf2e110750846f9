"""Judging a report: summaries, groups, targets, MAPE and verdicts.

The summary holds one row per (case, metric) measured and predicted, with
columns ``case, metric, unit, measured, predicted, error_pct``. ``measured`` is
the median over the case's repetitions (for traversal cases: over sources and
repetitions), ``predicted`` the median of the twin's values over the same
repetitions, and ``error_pct = 100 (predicted - measured) / measured``
(positive: the model predicts more than was measured; for a time that is
slower, for a bandwidth faster).

Per group (:func:`hostlink.validation.twins.case_group`) a report gives the
mean absolute percentage error (MAPE) of the primary metric of its cases
(:data:`hostlink.validation.twins.PRIMARY_METRIC`; traversal cases: kernel
time), its bias (mean signed error) and its worst cases. The targets are the
validation's acceptance: microbenchmark groups NOT used for calibration
<= 10 %, traversal zero-copy <= 15 %, UVM first touch (held-out uvm_touch
groups and the traversal UVM group) <= 25 %; the gather: zero-copy <= 10 %, the CPU
gather plus copy <= 15 %, UVM first touch <= 25 %. Groups used for calibration are
listed with their fit residual and no target; the cases of such a group that
no fit used are judged as held out (:func:`mark_not_fitted`).

Traversal cases are also judged per graph (:func:`family_table`): in each
placement, a graph family is held to :data:`FAMILY_TARGET_PCT` (zero-copy <= 10 %,
UVM and device memory <= 20 %), stricter than the group targets, which pool the
families.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from hostlink.validation.calibration_chain import same_run_dir
from hostlink.validation.report_common import ReportError
from hostlink.validation.twins import case_group, params_from_name, primary_metric

SUMMARY_COLUMNS = ("case", "metric", "unit", "measured", "predicted", "error_pct")
MICRO_TARGET_PCT = 10.0
ZEROCOPY_TARGET_PCT = 15.0
UVM_TARGET_PCT = 25.0
#: a GNN feature gather by host threads plus one copy (its target)
CPU_GATHER_TARGET_PCT = 15.0
#: a group with no target (device-memory traversals) is diagnosed like one that misses
#: its target when its MAPE is above the loosest target
UNTARGETED_DIAGNOSE_PCT = UVM_TARGET_PCT
#: per graph of a traversal run, in each placement (the class of its traversal
#: group: zero-copy holds every host-memory mode that migrates nothing): the
#: acceptance of the graph-families validation (validation/experiments/families)
FAMILY_TARGET_PCT = {"zerocopy": 10.0, "uvm": 20.0, "device": 20.0}
FAMILY_COLUMNS = ("graph", "placement", "group", "cases", "mape_pct", "bias_pct",
                  "worst_pct", "target_pct", "launch_us", "band_pct")


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


#: suffix of the group that holds a calibration group's cases no fit used
NOT_FITTED = " (not fitted)"


def target_for(group: str, calibration_groups: set[str]) -> tuple[str, float | None]:
    """(role, target MAPE in percent or None) of a group.

    A calibration group's cases that no fit used (group ``<group> (not fitted)``,
    :func:`mark_not_fitted`) are predicted, not fitted: held out, with the target
    of their kind."""
    if group.startswith("micro/"):
        if group in calibration_groups:
            return "calibration", None
        base = group.removesuffix(NOT_FITTED)
        uvm = (base.startswith("micro/uvm_touch/")
               and not base.startswith("micro/uvm_touch/accessedby")) or base == "micro/gather/uvm"
        cpu = base == "micro/gather/cpu_gather"
        kinds = (["UVM first touch"] * uvm + ["CPU gather plus copy"] * cpu
                 + ["not fitted"] * (base != group))
        role = "held-out" + (f" ({', '.join(kinds)})" if kinds else "")
        return role, (UVM_TARGET_PCT if uvm else CPU_GATHER_TARGET_PCT if cpu
                      else MICRO_TARGET_PCT)
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


def fitted_cases(calibration: dict | None, results_dir) -> dict[str, set[str]]:
    """Per calibration group of ``results_dir``, the cases its fits used.

    From the record's own fits (their ``residuals_pct``: one entry per case a fit
    used) when the record was calibrated on ``results_dir``, and from the
    ``fitted_cases`` of every earlier link of its chain calibrated on
    ``results_dir`` (a run calibrated in the chain, then reported with a later
    link's system; the chain's last link is the record itself, whose fits speak
    for it); a group none of these names (a link recorded without its cases, or a
    record without residuals) is absent: all its cases count as fitted."""
    if not calibration:
        return {}
    out: dict[str, set[str]] = {}
    for link in (calibration.get("chain") or [])[:-1]:
        cases = link.get("fitted_cases") if isinstance(link, dict) else None
        if isinstance(cases, dict) and same_run_dir(link.get("results_dir", ""), results_dir):
            for group, names in cases.items():
                out.setdefault(group, set()).update(names)
    if calibration.get("results_dir") and same_run_dir(calibration["results_dir"], results_dir):
        for fit in calibration.get("fits") or []:
            residuals = fit.get("residuals_pct")
            if not isinstance(residuals, dict) or not residuals:
                continue
            for group in fit.get("groups") or []:
                out.setdefault(group, set()).update(residuals)
    return out


def mark_not_fitted(annotated: pd.DataFrame, fitted: dict[str, set[str]]) -> pd.DataFrame:
    """``annotated`` with the cases of a calibration group that none of its fits used
    moved to the group ``<group> (not fitted)`` (judged as held out, :func:`target_for`):
    a fit's selection (the plateau of a sweep, the regions past the L1) leaves the rest
    of its group predicted, and their errors are not a fit residual."""
    if not fitted:
        return annotated
    out = annotated.copy()
    out["group"] = [g + NOT_FITTED if g in fitted and c not in fitted[g] else g
                    for g, c in zip(out["group"], out["case"])]
    return out


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


def family_table(annotated: pd.DataFrame) -> pd.DataFrame:
    """Per (graph, placement) of the traversal cases judged on their primary metric:
    their count, MAPE, bias, largest signed error and target
    (:data:`FAMILY_TARGET_PCT`; NaN for a placement it does not name), the median of
    their measured mean launch times (``launch_us``: kernel time over launches, NaN
    without a launch count) and the mean of its cases' bands, within which a second
    lease moved cases of their launch length and kernel variant (``band_pct``,
    :func:`hostlink.model.bands.half_width_pct`), in graph order; columns
    :data:`FAMILY_COLUMNS`. Empty without traversal cases."""
    from hostlink.model.bands import half_width_pct, mean_launch_us, spread_pct
    prim = annotated[annotated["primary"] & annotated["group"].str.startswith("traversal/")]
    rows = []
    if not len(prim):
        return pd.DataFrame(rows, columns=list(FAMILY_COLUMNS))
    launches = annotated[annotated["metric"] == "iterations"].groupby("case")["measured"].first()
    graphs = [p.get("graph") if isinstance(p, dict) else None for p in prim["params"]]
    spread = None
    for (graph, group), d in prim.assign(graph=graphs).dropna(subset=["graph"]).groupby(
            ["graph", "group"], sort=True):
        e = d["error_pct"].to_numpy(dtype=float)
        e = e[np.isfinite(e)]
        if not len(e):
            continue
        placement = group.split("/", 1)[1]
        per = mean_launch_us(d["measured"], d["case"].map(launches))
        launch_us = float(np.median(per[np.isfinite(per)])) if np.isfinite(per).any() \
            else math.nan
        band = math.nan
        if placement in ("zerocopy", "uvm", "device"):
            # each case's band (its launch length, else the group's, and its variant), and
            # the group's their mean, as its MAPE is the mean of its cases' errors
            spread = spread or spread_pct()
            band = float(np.mean([
                half_width_pct(spread, placement, t if np.isfinite(t) else launch_us,
                               p.get("variant")) for p, t in zip(d["params"], per)]))
        rows.append({"graph": graph, "placement": placement, "group": group,
                     "cases": len(e), "mape_pct": mape(e), "bias_pct": float(e.mean()),
                     "worst_pct": float(e[np.argmax(np.abs(e))]),
                     "target_pct": FAMILY_TARGET_PCT.get(placement, math.nan),
                     "launch_us": launch_us, "band_pct": band})
    return pd.DataFrame(rows, columns=list(FAMILY_COLUMNS))


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
