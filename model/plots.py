"""The common figures of hostlink, drawn from sweep results or a validation summary.

Functions return :class:`matplotlib.figure.Figure` objects built without
pyplot (so they work under any backend: notebooks show them inline, scripts
save them through the Agg canvas with :func:`save`). Inputs are a sweep
results folder (:func:`hostlink.model.sweep.load_results`), a wide results
DataFrame, or a validation ``summary.csv`` (columns ``case, metric, unit,
measured, predicted, error_pct``).

Figures:
- bandwidth against request size, PCIe generation, tags or RTT
  (:func:`plot_bw_vs`): one line per combination of the other parameters the
  sweep varied;
- zero-copy against UVM (:func:`plot_zerocopy_vs_uvm`): grouped bars, one
  group per combination of the other varied parameters, one bar per mode;
- predicted against measured (:func:`plot_predicted_vs_measured`): log-log
  scatter with the y = x line and +-10 % / +-25 % bands, one colour per case
  group.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from hostlink.model.errors import HostlinkError

KIND_AXES = {"bw-vs-size": "size_B", "bw-vs-gen": "link.gen", "bw-vs-tags": "link.tags",
             "bw-vs-rtt": "link.rtt_ns"}
AXIS_LABELS = {"size_B": "request size (B)", "link.gen": "PCIe generation",
               "link.tags": "outstanding read tags", "link.rtt_ns": "read round trip (ns)",
               "link.lanes": "lanes"}
METRIC_LABELS = {"bw_GBps": "bandwidth (GB/s)", "time_s": "time (s)"}
# Columns that describe a run rather than a parameter of it.
_NOT_PARAMS = {"run_id", "experiment", "case", "model_kind", "rep", "config_json",
               "workload_json", "axes", "git_sha", "host", "created_utc", "bound"}
MAX_LINES = 24
# Categorical parameters drawn in their natural order, not alphabetically.
MODE_ORDER = ("zerocopy", "uvm_accessedby", "uvm", "uvm_readmostly", "device")  # model.predict.MODES
ORDERS = {"workload.variant": ("naive", "merged", "merged_aligned", "chunked", "balanced"),
          "workload.kernel": ("bfs", "sssp", "cc", "pagerank"),
          "mode": MODE_ORDER, "workload.mode": MODE_ORDER}
MODE_STYLES = {"zerocopy": "-", "uvm_accessedby": (0, (5, 1)), "uvm": "--",
               "uvm_readmostly": "-.", "device": ":"}


class PlotError(HostlinkError):
    """Results that cannot make the figure asked for."""


def _new_figure(width: float = 6.4, height: float = 4.2) -> Figure:
    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def save(fig: Figure, path: str | Path, dpi: int = 120) -> Path:
    """Write a figure (PNG, SVG or PDF by the suffix) and return its path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    FigureCanvasAgg(fig)
    fig.savefig(path, dpi=dpi)
    return path


def mean_request_size(sizes_json: Any, fractions_json: Any) -> float:
    """Mean request size of a size mix written as JSON lists (NaN if not a mix)."""
    try:
        sizes = json.loads(sizes_json) if isinstance(sizes_json, str) else sizes_json
        fracs = json.loads(fractions_json) if isinstance(fractions_json, str) else fractions_json
        return float(np.dot(sizes, fracs))
    except (TypeError, ValueError):
        return float("nan")


def load_wide(source: str | Path | pd.DataFrame, experiment: str | None = None) -> pd.DataFrame:
    """Wide results (one row per run, one column per metric) with derived columns:
    ``size_B`` (mean request size of a size mix)."""
    if isinstance(source, pd.DataFrame):
        df = source
        if "metric" in df.columns and "value" in df.columns:
            from hostlink.model.sweep.store import to_wide
            df = to_wide(df)
    else:
        from hostlink.model.sweep.store import load_results
        df = load_results(source, experiment=experiment, wide=True)
    if experiment is not None and "experiment" in df.columns:
        df = df[df["experiment"] == experiment]
    if df.empty:
        where = f" for experiment '{experiment}'" if experiment else ""
        raise PlotError(f"{source if not isinstance(source, pd.DataFrame) else 'results'}: "
                        f"no results{where}")
    df = df.copy()
    if "workload.sizes_B" in df.columns and "size_B" not in df.columns:
        fr = df["workload.fractions"] if "workload.fractions" in df.columns else None
        df["size_B"] = [mean_request_size(s, f) for s, f in
                        zip(df["workload.sizes_B"], fr if fr is not None else [[1.0]] * len(df))]
    return df


def varying(df: pd.DataFrame, exclude: Iterable[str] = ()) -> list[str]:
    """Parameter columns with more than one value, in column order."""
    metrics = _metric_columns(df)
    out = []
    for col in df.columns:
        if col in _NOT_PARAMS or col in metrics or col in exclude:
            continue
        if df[col].astype(str).nunique(dropna=False) > 1:
            out.append(col)
    return out


def _metric_columns(df: pd.DataFrame) -> set[str]:
    if df.attrs.get("metrics"):
        return set(df.attrs["metrics"])
    param_like = set()
    for col in df.columns:
        if (("." in col and not col.startswith(("utilisation.", "bound.")))
                or col in ("fidelity", "system", "mode", "size_B")):
            param_like.add(col)
    return {c for c in df.columns if c not in param_like and c not in _NOT_PARAMS
            and pd.api.types.is_float_dtype(df[c])}


def _determined_by(df: pd.DataFrame, x: str, cols: list[str]) -> list[str]:
    """Columns that take one value per value of ``x`` (e.g. a preset zipped with gen)."""
    out = []
    for col in cols:
        if df.groupby(df[x].astype(str))[col].apply(lambda s: s.astype(str).nunique()).max() <= 1:
            out.append(col)
    return out


def _independent(df: pd.DataFrame, cols: list[str]) -> list[str]:
    """Drop columns that another kept column determines one to one (e.g. the JSON list
    of a size mix beside its mean size); numeric columns are kept first."""
    order = sorted(cols, key=lambda c: (not pd.api.types.is_numeric_dtype(df[c]),
                                        c.startswith("workload."), cols.index(c)))
    kept: list[str] = []
    for col in order:
        if not any(_determined_by(df, k, [col]) for k in kept):
            kept.append(col)
    return [c for c in cols if c in kept]


def _sort_key(col: str, value: Any):
    order = ORDERS.get(col)
    if order is not None and value in order:
        return (0, order.index(value), "")
    if isinstance(value, (int, float, np.integer, np.floating)) and not pd.isna(value):
        return (1, float(value), "")
    return (2, 0.0, str(value))


def _ordered_groups(data: pd.DataFrame, cols: list[str]) -> list[tuple[tuple, pd.DataFrame]]:
    """Groups of ``data`` by ``cols``, in each column's natural order."""
    if not cols:
        return [((), data)]
    groups = [((k if isinstance(k, tuple) else (k,)), g)
              for k, g in data.groupby(cols, dropna=False, sort=False)]
    return sorted(groups, key=lambda kg: [_sort_key(c, v) for c, v in zip(cols, kg[0])])


def _label(row: pd.Series, cols: list[str]) -> str:
    parts = []
    for c in cols:
        v = row[c]
        if isinstance(v, float) and v.is_integer():
            v = int(v)
        name = c.split(".", 1)[1] if c.startswith("workload.") else c
        parts.append(f"{name}={v}")
    return ", ".join(parts)


def _need(df: pd.DataFrame, cols: Iterable[str], what: str) -> None:
    missing = [c for c in cols if c not in df.columns]
    if missing:
        raise PlotError(f"{what}: the results have no column {', '.join(repr(c) for c in missing)}"
                        f" (columns: {', '.join(map(str, df.columns))})")


def plot_bw_vs(df: pd.DataFrame, x: str, metric: str = "bw_GBps", *, title: str | None = None,
               hue: list[str] | None = None, logx: bool | None = None,
               ax=None) -> Figure:
    """A metric against one parameter; a line per combination of the other varied ones."""
    _need(df, [x, metric], f"{metric} against {x}")
    data = df[df[x].notna() & df[metric].notna()]
    if data.empty:
        raise PlotError(f"no rows with both {x} and {metric}")
    if hue is None:
        others = varying(data, exclude=[x])
        hue = _independent(data, [c for c in others if c not in _determined_by(data, x, others)])
        if "experiment" in data.columns and data["experiment"].nunique() > 1:
            hue = ["experiment", *hue]
    fig = ax.figure if ax is not None else _new_figure()
    ax = ax if ax is not None else fig.add_subplot()
    # With a memory mode among the line keys: the line style shows the mode and the
    # colour the rest, so each colour pairs a zero-copy line with its UVM twin.
    mode_col = next((c for c in ("mode", "workload.mode") if c in hue), None)
    colour_cols = [c for c in hue if c != mode_col] if mode_col else hue
    groups = _ordered_groups(data, hue)
    if len(groups) > MAX_LINES:
        raise PlotError(f"{len(groups)} lines ({', '.join(hue)} vary): filter the results "
                        f"(e.g. --experiment) or pass hue=")
    colours: dict[tuple, str] = {}
    for key, g in groups:
        g = g.sort_values(x)
        xs = pd.to_numeric(g[x], errors="coerce")
        label = _label(g.iloc[0], hue) if hue else None
        style = {}
        if mode_col:
            ckey = tuple(g.iloc[0][c] for c in colour_cols)
            if ckey not in colours:
                colours[ckey] = f"C{len(colours) % 10}"
            style = {"color": colours[ckey],
                     "linestyle": MODE_STYLES.get(g.iloc[0][mode_col], "-")}
        ax.plot(xs, g[metric], marker="o", markersize=3.5, linewidth=1.4, label=label, **style)
    if logx is None:
        xs = pd.to_numeric(data[x], errors="coerce")
        logx = x == "link.tags" and xs.min() > 0 and xs.max() / xs.min() >= 16
    if logx:
        ax.set_xscale("log", base=2)
    ticks = sorted(pd.to_numeric(data[x], errors="coerce").dropna().unique())
    if x == "link.gen" or (logx and len(ticks) <= 12):
        ax.set_xticks(ticks)
        ax.set_xticklabels([f"{t:g}" for t in ticks])
        ax.minorticks_off()
    ax.set_xlabel(AXIS_LABELS.get(x, x))
    ax.set_ylabel(METRIC_LABELS.get(metric, metric))
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    if hue:
        ax.legend(fontsize="small", title=None, loc="best")
    ax.set_title(title or f"{METRIC_LABELS.get(metric, metric)} against {AXIS_LABELS.get(x, x)}",
                 fontsize="medium")
    return fig


def plot_zerocopy_vs_uvm(df: pd.DataFrame, metric: str = "bw_GBps", *,
                         title: str | None = None) -> Figure:
    """Grouped bars: one group per combination of the other varied parameters, a bar per mode."""
    _need(df, ["mode", metric], "zero-copy against UVM")
    data = df[df[metric].notna()]
    modes = [m for m in MODE_ORDER if m in set(data["mode"])]
    if "zerocopy" not in modes or len(modes) < 2:
        raise PlotError(f"zero-copy against UVM needs results of mode zerocopy and a UVM mode "
                        f"(found: {', '.join(sorted(set(data['mode'])))})")
    others = varying(data, exclude=["mode", "workload.mode"])
    others = _independent(data, [c for c in others
                                 if c not in _determined_by(data, "mode", others)])
    if "experiment" in data.columns and data["experiment"].nunique() > 1:
        others = ["experiment", *others]
    keys = (data[others].astype(str).agg(", ".join, axis=1) if others
            else pd.Series([""] * len(data), index=data.index))
    data = data.assign(_group=keys)
    group_names = [g["_group"].iloc[0] for _, g in _ordered_groups(data, others)] if others \
        else [""]
    fig = _new_figure(max(6.4, 0.9 * len(group_names) + 2), 4.2)
    ax = fig.add_subplot()
    width = 0.8 / len(modes)
    pos = np.arange(len(group_names))
    for i, mode in enumerate(modes):
        sub = data[data["mode"] == mode].groupby("_group")[metric].mean()
        vals = [sub.get(g, np.nan) for g in group_names]
        ax.bar(pos + (i - (len(modes) - 1) / 2) * width, vals, width, label=mode)
    ax.set_xticks(pos)
    ax.set_xticklabels([g.replace(", ", "\n") for g in group_names], fontsize="small")
    if others:
        ax.set_xlabel(" / ".join(c.split(".", 1)[-1] for c in others))
    ax.set_ylabel(METRIC_LABELS.get(metric, metric))
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize="small")
    ax.set_title(title or "zero-copy against UVM", fontsize="medium")
    return fig


def read_summary(source: str | Path | pd.DataFrame) -> pd.DataFrame:
    """A validation summary (``case, metric, unit, measured, predicted, error_pct``)."""
    if isinstance(source, pd.DataFrame):
        df = source
        where = "summary"
    else:
        where = str(source)
        try:
            df = pd.read_csv(source)
        except (OSError, ValueError) as exc:
            raise PlotError(f"{where}: cannot read the validation summary: {exc}") from None
    need = ("case", "metric", "measured", "predicted")
    missing = [c for c in need if c not in df.columns]
    if missing:
        raise PlotError(f"{where}: not a validation summary (missing column(s) "
                        f"{', '.join(missing)}; expected case, metric, unit, measured, "
                        "predicted, error_pct)")
    return df


def case_group(case: str) -> str:
    """The group of a validation case: ``micro/<benchmark>`` or ``<kernel> <memory mode>``
    (case names ``micro/<benchmark>/...`` and ``<kernel>/<graph>/<variant>/<mode>/<ids>``)."""
    parts = str(case).split("/")
    if parts[0] == "micro" and len(parts) > 1:
        return f"micro/{parts[1]}"
    if len(parts) >= 4:
        return f"{parts[0]} {parts[3]}"
    return parts[0]


def plot_predicted_vs_measured(source: str | Path | pd.DataFrame, *,
                               metric: str | None = None, title: str | None = None) -> Figure:
    """Predicted against measured, log-log, with y = x and +-10 %, +-25 % bands."""
    df = read_summary(source)
    if metric is not None:
        df = df[df["metric"] == metric]
    df = df[(df["measured"] > 0) & (df["predicted"] > 0)]
    if df.empty:
        raise PlotError(f"{source if not isinstance(source, pd.DataFrame) else 'summary'}: "
                        "no rows with positive measured and predicted values")
    fig = _new_figure(5.6, 5.0)
    ax = fig.add_subplot()
    groups = df.assign(_group=df["case"].map(case_group)).groupby("_group", sort=True)
    for name, g in groups:
        ax.scatter(g["measured"], g["predicted"], s=18, alpha=0.8, label=name)
    lo = float(min(df["measured"].min(), df["predicted"].min())) / 1.5
    hi = float(max(df["measured"].max(), df["predicted"].max())) * 1.5
    line = np.array([lo, hi])
    ax.plot(line, line, color="black", linewidth=1, label="y = x")
    for frac, style in ((0.10, ":"), (0.25, "--")):
        ax.plot(line, line * (1 + frac), color="grey", linestyle=style, linewidth=0.8,
                label=f"±{frac:.0%}")
        ax.plot(line, line * (1 - frac), color="grey", linestyle=style, linewidth=0.8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_aspect("equal")
    units = sorted(set(df["unit"])) if "unit" in df.columns else []
    unit = f" ({units[0]})" if len(units) == 1 else ""
    ax.set_xlabel(f"measured{unit}")
    ax.set_ylabel(f"predicted{unit}")
    err = (df["predicted"] - df["measured"]).abs() / df["measured"] * 100
    ax.set_title(title or f"predicted against measured: {len(df)} points, "
                          f"MAPE {err.mean():.1f} %", fontsize="medium")
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(fontsize="x-small", loc="upper left")
    return fig


def plot_kind(source: str | Path | pd.DataFrame, kind: str, *, experiment: str | None = None,
              metric: str = "bw_GBps") -> Figure:
    """One of the ``hostlink plot`` figures from a results folder or DataFrame."""
    if kind == "predicted-vs-measured":
        return plot_predicted_vs_measured(source)
    df = load_wide(source, experiment)
    if kind == "zerocopy-vs-uvm":
        return plot_zerocopy_vs_uvm(df, metric)
    if kind not in KIND_AXES:
        raise PlotError(f"unknown figure kind '{kind}' (one of: {', '.join([*KIND_AXES, 'zerocopy-vs-uvm', 'predicted-vs-measured'])})")
    x = KIND_AXES[kind]
    if x not in df.columns:
        hint = " (a sweep of workload.size_B on a sizes workload)" if x == "size_B" else ""
        raise PlotError(f"{kind}: the results have no '{x}' column{hint}")
    if df[x].astype(str).nunique() < 2:
        raise PlotError(f"{kind}: '{x}' takes a single value in these results; sweep it")
    return plot_bw_vs(df, x, metric)
