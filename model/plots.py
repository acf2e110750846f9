"""The common figures of hostlink, drawn from sweep results or a validation summary.

Functions return :class:`matplotlib.figure.Figure` objects built without
pyplot (so they work under any backend: notebooks show them inline, scripts
save them through the Agg canvas with :func:`save`). Inputs are a sweep
results folder (:func:`hostlink.model.sweep.load_results`), a wide results
DataFrame, or a validation ``summary.csv`` (columns ``case, metric, unit,
measured, predicted, error_pct``). Size, series styles, legends and titles
come from :mod:`hostlink.model.plot_style`: every title names the metric, the
workload and the system; legends sit outside the axes.

Figures:
- bandwidth against request size, PCIe generation, tags or RTT
  (:func:`plot_bw_vs`): one line per combination of the other parameters the
  sweep varied, ticks at the values swept;
- zero-copy against UVM (:func:`plot_zerocopy_vs_uvm`): grouped bars, one
  group per combination of the other varied parameters, one bar per mode; a
  panel per value of one parameter when the groups are many;
- predicted against measured (:func:`plot_predicted_vs_measured`): a panel per
  unit, y = x with +-10 % / +-25 % bands, a colour per workload and a marker
  per memory mode.
"""
from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any, Iterable

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from hostlink.model import plot_style as style
from hostlink.model.errors import HostlinkError

KIND_AXES = {"bw-vs-size": "size_B", "bw-vs-gen": "link.gen", "bw-vs-tags": "link.tags",
             "bw-vs-rtt": "link.rtt_ns"}
AXIS_LABELS = {"size_B": "request size (B)", "link.gen": "PCIe generation",
               "link.tags": "outstanding read tags (count)", "link.rtt_ns": "read round trip (ns)",
               "link.lanes": "lanes (count)"}
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


def _new_figure(width: float = style.FIG_W_IN, height: float = style.FIG_H_IN) -> Figure:
    return style.new_figure(width, height)


def save(fig: Figure, path: str | Path, dpi: int = style.DPI) -> Path:
    """Write a figure (PNG, SVG or PDF by the suffix) and return its path."""
    return style.save(fig, path, dpi)


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


def _need(df: pd.DataFrame, cols: Iterable[str], what: str) -> None:
    missing = [c for c in cols if c not in df.columns]
    if missing:
        raise PlotError(f"{what}: the results have no column {', '.join(repr(c) for c in missing)}"
                        f" (columns: {', '.join(map(str, df.columns))})")


def _one_value(df: pd.DataFrame, col: str) -> Any:
    """The single value of ``col`` in ``df``, or None when it is absent or varies."""
    if col not in df.columns:
        return None
    vals = df[col].dropna().astype(str).unique()
    return df[col].dropna().iloc[0] if len(vals) == 1 else None


def describe_system(df: pd.DataFrame) -> str:
    """The system (preset or file name) the results were predicted for."""
    if "system" not in df.columns or df["system"].dropna().empty:
        return "not recorded"
    names = sorted(df["system"].dropna().astype(str).unique())
    return ", ".join(names)


def describe_workload(df: pd.DataFrame) -> str:
    """The workload the results ran, from its constant ``workload.*`` columns:
    e.g. ``BFS on kron scale 18 (degree 16, 8 B ids)`` or ``zero-copy reads``."""
    kind = _one_value(df, "workload.kind")
    if kind == "graph":
        kernel = _one_value(df, "workload.kernel")
        text = str(kernel).upper() if kernel is not None else "graph kernels"
        graph = _one_value(df, "workload.graph")
        if graph is not None:
            text += f" on {graph}"
            scale = _one_value(df, "workload.scale")
            if scale is not None:
                text += f" scale {int(scale)}"
        extra = []
        degree = _one_value(df, "workload.degree")
        if degree is not None:
            extra.append(f"degree {int(degree)}")
        ids = _one_value(df, "workload.id_bytes")
        if ids is not None:
            extra.append(f"{int(ids)} B ids")
        return text + (f" ({', '.join(extra)})" if extra else "")
    if kind == "sizes":
        size = _one_value(df, "size_B")
        mode = _one_value(df, "workload.mode")
        what = "zero-copy reads" if mode in (None, "zerocopy") else f"{mode} reads"
        return f"{size:g} B {what}" if size is not None else what
    if kind is not None:
        return str(kind) + (f" ({_one_value(df, 'experiment')})"
                            if _one_value(df, "experiment") is not None else "")
    exp = _one_value(df, "experiment")
    return f"experiment {exp}" if exp is not None else "workload not recorded"


def _value_text(v: Any) -> str:
    if isinstance(v, (float, np.floating)) and float(v).is_integer():
        return str(int(v))
    return str(v)


def _set_value_ticks(ax, values: list[float], *, rotate: bool = False) -> None:
    """Ticks at the values the results hold (e.g. 32/64/96/128 B), none between."""
    ax.set_xticks(values)
    ax.set_xticklabels([f"{t:g}" for t in values], rotation=30 if rotate else 0,
                       ha="right" if rotate else "center")
    ax.minorticks_off()


def plot_bw_vs(df: pd.DataFrame, x: str, metric: str = "bw_GBps", *, title: str | None = None,
               hue: list[str] | None = None, logx: bool | None = None,
               ax=None) -> Figure:
    """A metric against one parameter; a line per combination of the other varied ones.

    Each line has its own colour and marker (:func:`plot_style.series_style`); with a
    memory mode among the line keys the line style shows the mode and colour and
    marker the rest. On the categorical PCIe generation axis the lines are dodged
    sideways by up to 0.08 of a generation so that equal values stay visible."""
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
    mode_col = next((c for c in ("mode", "workload.mode") if c in hue), None)
    colour_cols = [c for c in hue if c != mode_col] if mode_col else hue
    groups = _ordered_groups(data, hue)
    if len(groups) > MAX_LINES:
        raise PlotError(f"{len(groups)} lines ({', '.join(hue)} vary): filter the results "
                        f"(e.g. --experiment) or pass hue=")
    colour_keys: dict[tuple, int] = {}
    for key, g in groups:
        ckey = tuple(g.iloc[0][c] for c in colour_cols)
        colour_keys.setdefault(ckey, len(colour_keys))
    dodge = x == "link.gen" and len(colour_keys) > 1
    step = 0.16 / (len(colour_keys) - 1) if dodge else 0.0
    for i, (key, g) in enumerate(groups):
        g = g.sort_values(x)
        xs = pd.to_numeric(g[x], errors="coerce")
        label = ", ".join(_value_text(g.iloc[0][c]) for c in hue) if hue else None
        k = colour_keys[tuple(g.iloc[0][c] for c in colour_cols)]
        if mode_col:
            st = style.series_style(k)
            st["linestyle"] = MODE_STYLES.get(g.iloc[0][mode_col], "-")
        else:
            st = style.series_style(i)
        if dodge:
            xs = xs + (k - (len(colour_keys) - 1) / 2) * step
        ax.plot(xs, g[metric], markersize=5, linewidth=1.4, label=label, **st)
    values = sorted(pd.to_numeric(data[x], errors="coerce").dropna().unique())
    if logx is None:
        logx = x == "link.tags" and values[0] > 0 and values[-1] / values[0] >= 16
    if logx:
        ax.set_xscale("log", base=2)
    if len(values) <= 12:
        _set_value_ticks(ax, values, rotate=len(values) > 8)
    ax.set_xlabel(AXIS_LABELS.get(x, x))
    ax.set_ylabel(METRIC_LABELS.get(metric, metric))
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    if hue:
        style.legend_outside(ax, title=", ".join(AXIS_LABELS.get(c, c.split(".", 1)[-1])
                                                 for c in hue))
    metric_text = METRIC_LABELS.get(metric, metric)
    ax.set_title(title or style.title(metric_text, system=describe_system(data),
                                      workload=describe_workload(data),
                                      detail=f"against {AXIS_LABELS.get(x, x)}"),
                 fontsize="medium")
    return fig


def mode_colour(mode: str) -> str:
    """A memory mode's colour, the same in every figure (its place in MODE_ORDER)."""
    i = MODE_ORDER.index(mode) if mode in MODE_ORDER else len(MODE_ORDER)
    return style.COLOURS[i % len(style.COLOURS)]


def plot_zerocopy_vs_uvm(df: pd.DataFrame, metric: str = "bw_GBps", *,
                         title: str | None = None) -> Figure:
    """Grouped bars: one group per combination of the other varied parameters, a bar per mode.

    More than 8 groups made of two or more parameters get a panel per value of the
    parameter with the fewest values (e.g. one per PCIe generation)."""
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
    n_groups = len(_ordered_groups(data, others)) if others else 1
    facet = None
    if len(others) >= 2 and n_groups > 8:
        facet = min(others, key=lambda c: data[c].astype(str).nunique())
    rest = [c for c in others if c != facet]
    panels = _ordered_groups(data, [facet]) if facet else [((), data)]
    ncols = 1 if len(panels) == 1 else 2
    nrows = -(-len(panels) // ncols)
    fig = _new_figure(style.FIG_W_IN, style.FIG_H_IN if nrows == 1 else 2.4 * nrows + 1.2)
    axes = fig.subplots(nrows, ncols, sharey=True, squeeze=False)
    width = 0.8 / len(modes)
    for ax, (pkey, pdata) in zip(axes.flat, panels):
        pdata = pdata.assign(_group=(pdata[rest].map(_value_text).agg(", ".join, axis=1)
                                     if rest else ""))
        names = [g["_group"].iloc[0] for _, g in _ordered_groups(pdata, rest)] if rest else [""]
        pos = np.arange(len(names))
        for i, mode in enumerate(modes):
            sub = pdata[pdata["mode"] == mode].groupby("_group")[metric].mean()
            ax.bar(pos + (i - (len(modes) - 1) / 2) * width, [sub.get(g, np.nan) for g in names],
                   width, label=mode, color=mode_colour(mode))
        rotate = max((len(n) for n in names), default=0) > 6
        ax.set_xticks(pos)
        ax.set_xticklabels(names, fontsize="small", rotation=30 if rotate else 0,
                           ha="right" if rotate else "center")
        if facet:
            ax.set_title(f"{AXIS_LABELS.get(facet, facet.split('.', 1)[-1])} "
                         f"{_value_text(pkey[0])}", fontsize="small")
        if rest:
            ax.set_xlabel(" / ".join(AXIS_LABELS.get(c, c.split(".", 1)[-1]) for c in rest),
                          fontsize="small")
        ax.set_ylabel(METRIC_LABELS.get(metric, metric), fontsize="small")
        ax.grid(True, axis="y", alpha=0.3)
    for ax in list(axes.flat)[len(panels):]:
        fig.delaxes(ax)
    handles, labels = fig.axes[0].get_legend_handles_labels()
    style.figure_legend(fig, handles, labels, title="memory mode")
    metric_text = METRIC_LABELS.get(metric, metric)
    fig.suptitle(title or style.title(metric_text, system=describe_system(data),
                                      workload=describe_workload(data),
                                      detail="by memory mode"), fontsize="medium")
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


def case_keys(case: str) -> tuple[str, str]:
    """The workload and memory mode of a validation case (mode "" for microbenchmarks):
    ``micro/<benchmark>/...`` -> (``micro/<benchmark>``, ""),
    ``<kernel>/<graph>/<variant>/<mode>/<ids>`` -> (kernel, mode)."""
    parts = str(case).split("/")
    if parts[0] == "micro" and len(parts) > 1:
        return f"micro/{parts[1]}", ""
    if len(parts) >= 4:
        return parts[0], parts[3]
    return parts[0], ""


UNIT_NAMES = {"1": "count", "": "unit not recorded"}
REF_GREY = "#696969"      # the +-10 % and +-25 % bands: darker than tab10's grey


def _mode_sort(mode: str):
    return (mode == "", MODE_ORDER.index(mode) if mode in MODE_ORDER else len(MODE_ORDER), mode)


def run_context(folder: str | Path) -> tuple[str | None, str | None]:
    """(device, experiment) of a measured validation run from its ``metadata.json``,
    (None, None) where the folder has none or it cannot be read."""
    try:
        meta = json.loads((Path(folder) / "metadata.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None, None
    if not isinstance(meta, dict):
        return None, None
    device = meta.get("device")
    name = device.get("name") if isinstance(device, dict) else None
    exp = meta.get("experiment")
    return (str(name) if name else None), (str(exp) if exp else None)


def plot_predicted_vs_measured(source: str | Path | pd.DataFrame, *,
                               metric: str | None = None, title: str | None = None,
                               system: str | None = None,
                               workload: str | None = None) -> Figure:
    """Predicted against measured with y = x and +-10 %, +-25 % bands: one panel per unit
    (log-log where the values span more than 20x), a colour per workload (kernel or
    microbenchmark) and a marker per memory mode, legends right of the panels.

    ``system`` and ``workload`` name the run in the title; for a summary file they
    default to the GPU and experiment of the ``metadata.json`` beside it."""
    df = read_summary(source)
    if not isinstance(source, pd.DataFrame):
        device, exp = run_context(Path(source).parent)
        system = system or device
        workload = workload or (f"validation run {exp}" if exp else None)
    if metric is not None:
        df = df[df["metric"] == metric]
    df = df[(df["measured"] > 0) & (df["predicted"] > 0)]
    if df.empty:
        raise PlotError(f"{source if not isinstance(source, pd.DataFrame) else 'summary'}: "
                        "no rows with positive measured and predicted values")
    df = df.assign(unit=df["unit"].fillna("").astype(str) if "unit" in df.columns else "",
                   _work=[case_keys(c)[0] for c in df["case"]],
                   _mode=[case_keys(c)[1] for c in df["case"]])
    works = sorted(df["_work"].unique(), key=lambda w: (w.startswith("micro/"), w))
    modes = sorted(df["_mode"].unique(), key=_mode_sort)
    two_keys = len(works) <= len(style.COLOURS) and len(modes) <= len(style.MARKERS)
    pairs = sorted({(w, m) for w, m in zip(df["_work"], df["_mode"])},
                   key=lambda wm: (works.index(wm[0]), modes.index(wm[1])))
    if two_keys:
        look = {(w, m): {"color": style.COLOURS[works.index(w)],
                         "marker": style.MARKERS[modes.index(m)]} for w, m in pairs}
    else:
        if len(pairs) > style.MAX_SERIES:
            raise PlotError(f"{len(pairs)} workload and mode pairs: plot one metric (--metric)")
        look = {}
        for i, wm in enumerate(pairs):
            st = style.series_style(i)
            look[wm] = {"color": st["color"], "marker": st["marker"]}
    units = list(dict.fromkeys(df["unit"]))
    ncols = min(2, len(units))
    nrows = -(-len(units) // ncols)
    fig = _new_figure(3.4 * ncols + 2.3, 3.3 * nrows + 0.9)
    axes = fig.subplots(nrows, ncols, squeeze=False)
    for ax, unit in zip(axes.flat, units):
        d = df[df["unit"] == unit]
        for wm in pairs:
            g = d[(d["_work"] == wm[0]) & (d["_mode"] == wm[1])]
            if len(g):
                name = " ".join(p for p in wm if p)
                ax.plot(g["measured"], g["predicted"], linestyle="none", markersize=4,
                        alpha=0.8, label=name, **look[wm])
        lo = float(min(d["measured"].min(), d["predicted"].min()))
        hi = float(max(d["measured"].max(), d["predicted"].max()))
        log = hi / lo > 20
        lo, hi = lo / 1.5, hi * 1.5
        line = np.array([lo, hi])
        ax.plot(line, line, color="black", linewidth=1, label="y = x")
        for frac, ls in ((0.10, ":"), (0.25, "--")):
            ax.plot(line, line * (1 + frac), color=REF_GREY, linestyle=ls, linewidth=0.8,
                    label=f"±{frac:.0%}")
            ax.plot(line, line * (1 - frac), color=REF_GREY, linestyle=ls, linewidth=0.8,
                    label=f"_±{frac:.0%} below")
        if log:
            ax.set_xscale("log")
            ax.set_yscale("log")
        ax.set_xlim(lo, hi)
        ax.set_ylim(lo, hi)
        ax.set_aspect("equal")
        uname = UNIT_NAMES.get(unit, unit)
        ax.set_xlabel(f"measured ({uname})", fontsize="small")
        ax.set_ylabel(f"predicted ({uname})", fontsize="small")
        err = (d["predicted"] - d["measured"]).abs() / d["measured"] * 100
        metrics = ", ".join(dict.fromkeys(d["metric"].astype(str)))
        ax.set_title(textwrap.fill(metrics, 44) + f"\n{len(d)} points, MAPE {err.mean():.1f} %",
                     fontsize="small")
        ax.grid(True, which="both", alpha=0.25)
        ax.tick_params(labelsize="small")
    for ax in list(axes.flat)[len(units):]:
        fig.delaxes(ax)
    ref = [Line2D([], [], color="black", linewidth=1),
           Line2D([], [], color=REF_GREY, linestyle=":", linewidth=0.8),
           Line2D([], [], color=REF_GREY, linestyle="--", linewidth=0.8)]
    ref_labels = ["y = x", "±10%", "±25%"]
    if two_keys:
        hw = [Line2D([], [], linestyle="none", marker="s", color=style.COLOURS[i])
              for i in range(len(works))]
        hm = [Line2D([], [], linestyle="none", marker=style.MARKERS[i], color="black")
              for i in range(len(modes))]
        header = Line2D([], [], linestyle="none")      # the second key's heading
        style.figure_legend(fig, hw + [header] + hm + ref,
                            works + ["memory mode (marker):"]
                            + [m or "microbenchmark" for m in modes] + ref_labels,
                            title="workload (colour)")
    else:
        h = [Line2D([], [], linestyle="none", **look[wm]) for wm in pairs]
        style.figure_legend(fig, h + ref, [" ".join(p for p in wm if p) for wm in pairs]
                            + ref_labels, title="workload, memory mode")
    fig.suptitle(title or style.title("predicted against measured", system=system or
                                      "not recorded", workload=workload or ", ".join(works)),
                 fontsize="medium")
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
