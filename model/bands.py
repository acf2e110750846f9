"""Bands around predictions: how far a second machine's measurement of the same case moved.

``hostlink validate repeat`` compares two runs of one manifest on two leases
of the same kind of machine and writes ``repeat_cases.csv`` (one row per case
both runs hold, ``diff_pct`` = 100 (second - first) / first on the case's
primary metric; :mod:`hostlink.validation.repeatability`). The repeat runs under
``validation/experiments/*/runs/<gpu>-repeat`` (and ``-repeat2``, ... for later
leases) are committed. A prediction cannot be
judged more finely than that variation, so each what-if point gets a band:

- the cases are pooled per memory mode: zero-copy from the groups
  ``micro/zc_read``, ``micro/zc_warps`` and ``traversal/zerocopy`` (the
  families BFS on later H100 leases), UVM from ``traversal/uvm`` and
  ``micro/uvm_touch``, device memory from ``traversal/device`` (the same
  BFS with its graph in GPU memory);
- the band's half-width is the 90th percentile of ``|diff_pct|`` over the
  pooled cases: nine in ten cases on another machine came within it;
- the same per class of launch length (``by_launch``): a case's mean launch
  time is its first run's time over the launches its run recorded
  (``iterations`` in the repeat run's results.parquet). Short launches vary
  most from one lease to the next (the families BFS on small graphs, whose
  launches take about 10 us; ``model/data/bands.json`` holds each class's
  spread), so a prediction whose mean launch time is known takes its class's
  band (:func:`half_width_pct`; classes :data:`LAUNCH_CLASSES_US`);
- the same for the traversals of a kernel variant whose time moves more than the
  others' (``by_variant``, :data:`OWN_BAND_VARIANTS`): the naive walk, whose lanes
  each read their own list, moved several times as far from one lease to the next as
  the other variants did over the families BFS on six H100 leases
  (``validation/experiments/naive_phases/lease_spread.csv``, both in host and in device
  memory). A prediction of such a variant takes the wider of its variant's band and
  its class of launch length's.

Assumptions: the variation measured on the H100 and H200 leases holds on the
systems a what-if moves to (the seeds publish no repeats); a case without a
launch count (a microbenchmark, one launch of milliseconds) is in the class of
the longest launches.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:       # pandas loads only where a table is read or made: a prediction's
    import pandas as pd  # band (hostlink predict) needs none

QUANTILE = 0.9
#: The committed repeats' spread, as package data (written by ``python -m
#: hostlink.model.bands --write RESULTS``, which ``make presets`` runs): the model
#: reads no results tree at run time.
BANDS_JSON = "bands.json"
GROUPS = {"zerocopy": ("micro/zc_read", "micro/zc_warps", "traversal/zerocopy"),
          "uvm": ("traversal/uvm", "micro/uvm_touch"),
          "device": ("traversal/device",)}
#: upper ends (us) of the classes of mean launch time, the last class unbounded: they part
#: the committed repeats' small graphs (launches of about 10 us), the road grids (40-90
#: us) and the rest; each class's band comes from its cases (bands.json)
LAUNCH_CLASSES_US = (20.0, 50.0)
#: kernel variants whose traversal cases form a band of their own (``by_variant``)
OWN_BAND_VARIANTS = ("naive",)


def traversal_variant(case: str) -> str | None:
    """The kernel variant a traversal case's name holds
    (``<kernel>/<graph>/<variant>/<mode>/<ids>B``, hostlink.validation.manifest); None
    for a name of another form."""
    parts = str(case).split("/")
    return parts[2] if len(parts) == 5 else None


def mean_launch_us(time_ms, launches) -> np.ndarray:
    """Mean launch time (us) of runs that took ``time_ms`` over ``launches`` launches
    (arrays or scalars); NaN where the launch count is missing or not positive."""
    time_ms = np.asarray(time_ms, dtype=float)
    launches = np.asarray(launches, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(launches > 0, time_ms * 1e3 / launches, np.nan)


def _launches(run_dir: Path) -> pd.Series:
    """Launches of each case of a run (its ``iterations``, median over repetitions);
    empty where the run holds no results.parquet or no launch counts."""
    import pandas as pd
    path = run_dir / "results.parquet"
    if not path.exists():
        return pd.Series(dtype=float)
    frame = pd.read_parquet(path, columns=["case", "metric", "value"])
    return frame[frame["metric"] == "iterations"].groupby("case")["value"].median()


def repeat_cases(root: str | Path) -> pd.DataFrame:
    """Every committed repeat comparison's cases, with the run they came from and
    ``launch_us``: the case's mean launch time in its first run (its time in ms over
    its launches; NaN where the run recorded no launch count or the metric is no time)."""
    import pandas as pd
    frames = []
    for path in sorted(Path(root).glob("*/runs/*-repeat*/repeat_cases.csv")):
        frame = pd.read_csv(path)
        frame["run"] = f"{path.parents[2].name}/{path.parent.name}"
        launches = frame["case"].map(_launches(path.parent)).to_numpy(dtype=float)
        if "unit" in frame and "first" in frame:
            time_ms = frame["first"].where(frame["unit"] == "ms").to_numpy(dtype=float)
        else:
            time_ms = np.full(len(frame), np.nan)
        frame["launch_us"] = mean_launch_us(time_ms, launches)
        frames.append(frame)
    if not frames:
        from hostlink.model.errors import HostlinkError
        raise HostlinkError(f"{root}: no committed repeat runs (*/runs/*-repeat*/repeat_cases.csv)")
    return pd.concat(frames, ignore_index=True)


def measure_spread(root: str | Path, quantile: float = QUANTILE) -> dict[str, dict]:
    """Per memory mode: the band's half-width in percent, the cases and runs behind it,
    from the repeat comparisons under ``root`` (the experiments tree, whose
    ``<experiment>/runs/<gpu>-repeat*`` runs are repeats on other leases)."""
    cases = repeat_cases(root)
    out = {}
    for mode, prefixes in GROUPS.items():
        pick = cases[cases["group"].str.startswith(prefixes)]
        diff = pick["diff_pct"].abs().to_numpy(dtype=float)
        launch = pick["launch_us"].to_numpy(dtype=float)
        traversal = pick["group"].str.startswith("traversal/").to_numpy()
        variant = np.array([traversal_variant(c) if t else None
                            for c, t in zip(pick["case"], traversal)], dtype=object)
        keep = np.isfinite(diff)
        diff, launch, variant = diff[keep], launch[keep], variant[keep]
        if not diff.size:           # no repeat measured this mode: it has no band
            continue
        out[mode] = {"half_width_pct": float(np.quantile(diff, quantile)),
                     "median_pct": float(np.median(diff)), "cases": int(diff.size),
                     "runs": sorted(pick["run"].unique()),
                     "by_launch": _by_launch(diff, launch, quantile),
                     "by_variant": _by_variant(diff, variant, quantile)}
    return out


def _by_variant(diff: np.ndarray, variant: np.ndarray, quantile: float) -> dict[str, dict]:
    """The band of each of :data:`OWN_BAND_VARIANTS` that has cases."""
    out = {}
    for name in OWN_BAND_VARIANTS:
        d = diff[variant == name]
        if d.size:
            out[name] = {"half_width_pct": float(np.quantile(d, quantile)),
                         "median_pct": float(np.median(d)), "cases": int(d.size)}
    return out


def _launch_class(launch_us: float) -> int:
    """Index of the class of :data:`LAUNCH_CLASSES_US` a mean launch time falls in (an
    unknown one, NaN, in the last)."""
    for k, upper in enumerate(LAUNCH_CLASSES_US):
        if launch_us < upper:
            return k
    return len(LAUNCH_CLASSES_US)


def _by_launch(diff: np.ndarray, launch_us: np.ndarray, quantile: float) -> list[dict]:
    """The band per class of mean launch time (``below_us`` None: the last class);
    ``half_width_pct`` None where no case falls in a class."""
    cls = np.array([_launch_class(t) for t in launch_us], dtype=int)
    out = []
    for k in range(len(LAUNCH_CLASSES_US) + 1):
        d = diff[cls == k]
        out.append({"below_us": LAUNCH_CLASSES_US[k] if k < len(LAUNCH_CLASSES_US) else None,
                    "half_width_pct": float(np.quantile(d, quantile)) if d.size else None,
                    "median_pct": float(np.median(d)) if d.size else None,
                    "cases": int(d.size)})
    return out


def half_width_pct(spread: dict, mode: str, launch_us: float | None = None,
                   variant: str | None = None) -> float:
    """The band's half-width (%) for memory mode ``mode`` (``uvm*``: UVM's, ``device``:
    device memory's, the others zero-copy's): that of the class of ``launch_us`` (a
    prediction's mean launch time) where it is known and the class holds cases, the
    mode's pooled one otherwise; for a traversal of kernel variant ``variant`` with a
    band of its own, the wider of the two. NaN where ``spread`` holds no band of the
    mode (no repeat measured it)."""
    s = spread.get(band_mode(mode))
    if s is None:
        return float("nan")
    width = float(s["half_width_pct"])
    if launch_us is not None and np.isfinite(launch_us) and s.get("by_launch"):
        own = s["by_launch"][_launch_class(float(launch_us))]["half_width_pct"]
        if own is not None:
            width = float(own)
    by_variant = (s.get("by_variant") or {}).get(variant) if variant else None
    if by_variant is not None:
        width = max(width, float(by_variant["half_width_pct"]))
    return width


def band_mode(mode: str) -> str:
    """The pool of :data:`GROUPS` whose band a memory mode takes: ``uvm*`` modes UVM's,
    ``device`` its own, the others (zero-copy and its kin) zero-copy's."""
    mode = str(mode)
    if mode.startswith("uvm"):
        return "uvm"
    return "device" if mode == "device" else "zerocopy"


def spread_pct(root: str | Path | None = None, quantile: float = QUANTILE) -> dict[str, dict]:
    """:func:`measure_spread` of ``root``; without one, the committed repeats' spread the
    package carries (``hostlink/model/data/bands.json``)."""
    if root is not None:
        return measure_spread(root, quantile)
    import json
    from importlib.resources import files
    data = json.loads(files("hostlink.model").joinpath("data", BANDS_JSON).read_text())
    return data["modes"]


def write_bands(root: str | Path, out: str | Path) -> Path:
    """Write the spread of ``root``'s repeats as the package's band file ``out``."""
    import json
    out = Path(out)
    out.write_text(json.dumps({"source": "hostlink.model.bands.measure_spread of the "
                               "committed */runs/*-repeat*/repeat_cases.csv under "
                               "validation/experiments",
                               "quantile": QUANTILE, "modes": measure_spread(root)},
                              indent=1) + "\n")
    return out


def with_bands(frame: pd.DataFrame, value: str = "bw_GBps", mode: str = "mode",
               spread: dict | None = None, launch_us: str = "launch_us",
               variant: str = "variant") -> pd.DataFrame:
    """``frame`` with ``{value}_lo`` and ``{value}_hi``: the band around each row's value
    for its memory mode (:func:`band_mode`; NaN where no repeat measured it) and,
    where the frame has a ``launch_us`` column (the mean launch time), its class of
    launch length, and where it has a ``variant`` column, its kernel variant
    (:func:`half_width_pct`); the low end is at least 0."""
    spread = spread or spread_pct()
    times = frame[launch_us] if launch_us in frame else [None] * len(frame)
    variants = frame[variant] if variant in frame else [None] * len(frame)
    half = np.array([half_width_pct(spread, m, t, v)
                     for m, t, v in zip(frame[mode], times, variants)], dtype=float) / 100.0
    out = frame.copy()
    out[f"{value}_lo"] = out[value] * np.maximum(0.0, 1 - half)   # a band wider than 100%
    out[f"{value}_hi"] = out[value] * (1 + half)
    return out


def band_text(frame: pd.DataFrame, value: str = "bw_GBps") -> pd.Series:
    """``"lo-hi"`` of each row of a frame from :func:`with_bands`."""
    return frame[f"{value}_lo"].map("{:.2f}".format) + "-" + frame[f"{value}_hi"].map(
        "{:.2f}".format)


def add_bands(fig, spread: dict | None = None, alpha: float = 0.15):
    """Draw each line's band (shaded) and each bar's (an error bar) on ``fig``'s axes;
    a line or bar set whose label names UVM takes UVM's band, one that names device
    memory the device band, the others zero-copy's."""
    spread = spread or spread_pct()

    def half(label: str) -> float | None:
        text = str(label).lower()
        mode = "uvm" if "uvm" in text else "device" if "device" in text else "zerocopy"
        return spread[mode]["half_width_pct"] / 100.0 if mode in spread else None

    for ax in fig.axes:
        for line in list(ax.get_lines()):
            label = line.get_label()
            if label.startswith("_"):
                continue
            h = half(label)
            if h is None:
                continue
            x, y = (np.asarray(v, dtype=float) for v in line.get_data())
            ax.fill_between(x, y * (1 - h), y * (1 + h), color=line.get_color(), alpha=alpha,
                            linewidth=0)
        for bars in list(ax.containers):
            h = half(bars.get_label())
            if h is None:
                continue
            xs = [p.get_x() + p.get_width() / 2 for p in bars.patches]
            ys = np.array([p.get_height() for p in bars.patches], dtype=float)
            ax.errorbar(xs, ys, yerr=ys * h, fmt="none", ecolor="0.2", elinewidth=0.8,
                        capsize=2)
    return fig


if __name__ == "__main__":
    import sys
    if len(sys.argv) != 3 or sys.argv[1] != "--write":
        sys.exit("usage: python -m hostlink.model.bands --write RESULTS_DIR")
    print(write_bands(sys.argv[2], Path(__file__).resolve().parent / "data" / BANDS_JSON))
