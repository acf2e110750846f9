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
  ``micro/uvm_touch``;
- the band's half-width is the 90th percentile of ``|diff_pct|`` over the
  pooled cases: nine in ten cases on another machine came within it.

Assumption: the variation measured on the H100 and H200 leases holds on the
systems a what-if moves to (the seeds publish no repeats).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

QUANTILE = 0.9
#: The committed repeats' spread, as package data (written by ``python -m
#: hostlink.model.bands --write RESULTS``, which ``make presets`` runs): the model
#: reads no results tree at run time.
BANDS_JSON = "bands.json"
GROUPS = {"zerocopy": ("micro/zc_read", "micro/zc_warps", "traversal/zerocopy"),
          "uvm": ("traversal/uvm", "micro/uvm_touch")}


def repeat_cases(root: str | Path) -> pd.DataFrame:
    """Every committed repeat comparison's cases, with the run they came from."""
    frames = []
    for path in sorted(Path(root).glob("*/runs/*-repeat*/repeat_cases.csv")):
        frame = pd.read_csv(path)
        frame["run"] = f"{path.parents[2].name}/{path.parent.name}"
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
        diff = diff[np.isfinite(diff)]
        out[mode] = {"half_width_pct": float(np.quantile(diff, quantile)),
                     "median_pct": float(np.median(diff)), "cases": int(diff.size),
                     "runs": sorted(pick["run"].unique())}
    return out


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
               spread: dict | None = None) -> pd.DataFrame:
    """``frame`` with ``{value}_lo`` and ``{value}_hi``: the band around each row's value
    for its memory mode (``uvm*`` modes take UVM's band, the others zero-copy's)."""
    spread = spread or spread_pct()
    half = np.array([spread["uvm" if str(m).startswith("uvm") else "zerocopy"]
                     ["half_width_pct"] for m in frame[mode]]) / 100.0
    out = frame.copy()
    out[f"{value}_lo"] = out[value] * (1 - half)
    out[f"{value}_hi"] = out[value] * (1 + half)
    return out


def band_text(frame: pd.DataFrame, value: str = "bw_GBps") -> pd.Series:
    """``"lo-hi"`` of each row of a frame from :func:`with_bands`."""
    return frame[f"{value}_lo"].map("{:.2f}".format) + "-" + frame[f"{value}_hi"].map(
        "{:.2f}".format)


def add_bands(fig, spread: dict | None = None, alpha: float = 0.15):
    """Draw each line's band (shaded) and each bar's (an error bar) on ``fig``'s axes;
    a line or bar set whose label names UVM takes UVM's band, the others zero-copy's."""
    spread = spread or spread_pct()

    def half(label: str) -> float:
        mode = "uvm" if "uvm" in str(label).lower() else "zerocopy"
        return spread[mode]["half_width_pct"] / 100.0

    for ax in fig.axes:
        for line in list(ax.get_lines()):
            label = line.get_label()
            if label.startswith("_"):
                continue
            x, y = (np.asarray(v, dtype=float) for v in line.get_data())
            h = half(label)
            ax.fill_between(x, y * (1 - h), y * (1 + h), color=line.get_color(), alpha=alpha,
                            linewidth=0)
        for bars in list(ax.containers):
            h = half(bars.get_label())
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
