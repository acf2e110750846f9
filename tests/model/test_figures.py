"""Every figure kind the project draws, rendered from small inputs and checked from the
figure object: a title that names the metric, the workload and the system; axis labels
with units; a legend outside every panel wherever there is more than one series, that
explains every series; no two series of a panel alike in colour and style; a size and
text that read at report scale (limits below, from hostlink.model.plot_style)."""
from __future__ import annotations

import importlib.util
import json
import struct
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
import pytest
from matplotlib.colors import to_hex
from matplotlib.container import BarContainer
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.text import Text

from hostlink.model import mainjob, plot_style, plots
from hostlink.model.sweep import load_results, run_sweep
from hostlink.validation.launches import figure_launches
from hostlink.validation.report import (GroupStats, figure_error_by_group,
                                        figure_mape_by_group)
from hostlink.validation.report import plots as report_plots
from hostlink.validation.data_tree import run_dir, script_path

matplotlib.use("Agg")
ROOT = Path(__file__).resolve().parents[2]
SWEEPS = ROOT / "sim_configs" / "sweeps"
# A figure is printed at a 6.5 in text width (US Letter, 1 in margins): a 10 in figure
# keeps matplotlib's 10 pt text at 6.5 pt. The old zerocopy_vs_uvm.png was 2400 x 504 px
# (aspect 4.8); a panel wider than 2.5 times its height crowds its ticks.
MAX_WIDTH_IN = 10.0
MAX_ASPECT = 2.5
MIN_FONT_PT = 8.0          # matplotlib's "small" at its 10 pt default is 8.33 pt
UNITLESS = {"PCIe generation"}     # an ordinal (3, 4, 5, 6): it has no unit


def _number(text: str) -> bool:
    try:
        float(text.replace("\N{MINUS SIGN}", "-").replace("$", "").replace("^", "e")
              .replace("\\mathdefault{", "").replace("}", "").replace("{", ""))
        return True
    except ValueError:
        return False


def _categorical(labels: list[Text]) -> bool:
    texts = [t.get_text() for t in labels if t.get_text()]
    return bool(texts) and not all(_number(t) for t in texts)


def _series(ax) -> list[tuple[str, tuple]]:
    """(label, look) of each labelled series of ``ax``: lines by colour, line style and
    marker; bars by face colour and hatch."""
    out = []
    for line in ax.lines:
        if not line.get_label().startswith("_"):
            out.append((line.get_label(), ("line", to_hex(line.get_color()),
                                           line.get_linestyle(), line.get_marker())))
    for c in ax.containers:
        if isinstance(c, BarContainer) and not c.get_label().startswith("_"):
            p = c.patches[0]
            out.append((c.get_label(), ("bar", to_hex(p.get_facecolor()), p.get_hatch())))
    return out


def _handle_look(h) -> tuple:
    if isinstance(h, Line2D):
        return ("line", to_hex(h.get_color()), h.get_linestyle(), h.get_marker())
    return ("bar", to_hex(h.get_facecolor()), h.get_hatch())


def _explained(look: tuple, handles: list[tuple]) -> bool:
    """A legend explains a series with a handle of the same look, or (a keyed legend)
    with one handle of its colour and one of its marker."""
    if look in handles:
        return True
    if look[0] != "line":
        return False
    colour = any(h[0] == "line" and h[1] == look[1] for h in handles)
    marker = any(h[0] == "line" and h[3] == look[3] for h in handles)
    return colour and marker and look[2] in ("None", "none", "")


def figure_problems(fig: Figure, *, system: str, workload: str, metric: str) -> list[str]:
    """What keeps ``fig`` from reading on its own in a report (empty when nothing)."""
    problems = []
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    w, h = fig.get_size_inches()
    if w > MAX_WIDTH_IN or max(w / h, h / w) > MAX_ASPECT:
        problems.append(f"size {w:g} x {h:g} in")
    titles = " ".join([fig.get_suptitle()] + [ax.get_title() for ax in fig.axes]).lower()
    for what, word in (("system", system), ("workload", workload), ("metric", metric)):
        if word.lower() not in titles:
            problems.append(f"no {what} '{word}' in the title")
    legends = [ax.get_legend() for ax in fig.axes if ax.get_legend()] + list(fig.legends)
    handles = [_handle_look(hd) for leg in legends for hd in leg.legend_handles]
    labels = set()
    for ax in fig.axes:
        for axis, name in ((ax.xaxis, "x"), (ax.yaxis, "y")):
            label = axis.get_label().get_text()
            ticks = axis.get_ticklabels()
            if not label:
                problems.append(f"no {name} label")
            elif not ("(" in label and ")" in label) and label not in UNITLESS \
                    and not _categorical(ticks):
                problems.append(f"{name} label '{label}' has no unit")
        series = _series(ax)
        looks = [look for _, look in series]
        if len(set(looks)) != len(looks):
            problems.append(f"two series alike in {ax.get_title()!r}: {series}")
        labels |= {lab for lab, _ in series}
        for lab, look in series:
            if len(series) > 1 and not _explained(look, handles):
                problems.append(f"series '{lab}' is in no legend")
        box = ax.get_window_extent(renderer)
        for leg in legends:
            if leg.get_window_extent(renderer).overlaps(box):
                problems.append(f"a legend covers the panel {ax.get_title()!r}")
    if len(labels) > 1 and not legends:
        problems.append("several series and no legend")
    for t in fig.findobj(Text):
        if t.get_visible() and t.get_text().strip() and t.get_fontsize() < MIN_FONT_PT:
            problems.append(f"text '{t.get_text()}' at {t.get_fontsize():.1f} pt")
    return problems


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """Real sweep results: two analytic sweeps and the main job's sweep on a kron
    scale 10 graph (the main job's own runs scale 18)."""
    root = tmp_path_factory.mktemp("sweeps")
    run_sweep(SWEEPS / "size_by_gen.toml", root / "size", jobs=1)
    run_sweep(SWEEPS / "rtt_by_tags.toml", root / "rtt", jobs=1)
    small = root / "main_small.toml"
    small.write_text((SWEEPS / "main.toml").read_text().replace("scale = 18", "scale = 10"))
    run_sweep(small, root / "main", jobs=1)
    return root


def _summary() -> pd.DataFrame:
    """A validation summary in three units, of two kernels in two modes and a micro."""
    rows = []
    for i, (case, metric, unit, m, p) in enumerate([
            ("micro/zc_read/128B", "bw_GBps", "GB/s", 50.0, 55.0),
            ("micro/zc_read/32B", "bw_GBps", "GB/s", 20.0, 18.0),
            ("micro/ptr_chase/host", "lat_ns", "ns", 800.0, 760.0),
            ("bfs/kron20/merged/zerocopy/4B", "time_ms", "ms", 10.0, 11.0),
            ("bfs/kron20/merged/uvm/4B", "time_ms", "ms", 30.0, 24.0),
            ("sssp/kron20/merged/zerocopy/4B", "time_ms", "ms", 12.0, 12.5),
            ("sssp/kron20/merged/uvm/4B", "time_ms", "ms", 40.0, 33.0)]):
        rows.append({"case": case, "metric": metric, "unit": unit, "measured": m,
                     "predicted": p, "error_pct": 100 * (p - m) / m})
    return pd.DataFrame(rows)


def _stats(ann: pd.DataFrame) -> list[GroupStats]:
    out = []
    for (group, target), g in zip([("micro/zc_read", None), ("traversal/zerocopy", 15.0),
                                   ("traversal/uvm", 25.0)],
                                  [ann[ann.group == n] for n in ("micro/zc_read",
                                                                 "traversal/zerocopy",
                                                                 "traversal/uvm")]):
        mape = float(g["error_pct"].abs().mean())
        out.append(GroupStats(group, "held out", target, len(g), mape,
                              float(g["error_pct"].mean()), g, g["metric"].iloc[0]))
    return out


def _annotated() -> pd.DataFrame:
    ann = _summary()
    ann["group"] = ["micro/zc_read", "micro/zc_read", "micro/ptr_chase", "traversal/zerocopy",
                    "traversal/uvm", "traversal/zerocopy", "traversal/uvm"]
    ann["primary"] = True
    return ann


def _write_cost_figure():
    """The write_cost probe's figure from its committed records (an H100's)."""
    spec = importlib.util.spec_from_file_location(
        "write_cost_summary", script_path("write_cost", "write_cost_summary.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    folder = run_dir("write_cost", "h100")
    rows = [r for name in mod.FILES for r in mod.read_points(folder / name)[1]]
    return mod.figure(rows, mod.device_name(folder / "plain.jsonl"))


def _launches() -> pd.DataFrame:
    t = pd.DataFrame({"launch": [0, 1, 2], "measured_ms": [0.5, 3.0, 1.0],
                      "measured_min_ms": [0.45, 2.8, 0.9], "measured_max_ms": [0.6, 3.3, 1.2],
                      "predicted_ms": [0.4, 3.5, 0.9]})
    t.attrs.update(case="bfs/kron20/merged/uvm/4B", source=7)
    return t


# name -> (builder, system, workload, metric) as each title must name them
FIGURES = {
    "bw-vs-size": (lambda r: plots.plot_kind(r / "size", "bw-vs-size"),
                   "h100-pcie5", "zero-copy reads", "bandwidth"),
    "bw-vs-gen": (lambda r: plots.plot_kind(r / "size", "bw-vs-gen"),
                  "h100-pcie5", "zero-copy reads", "bandwidth"),
    "bw-vs-rtt": (lambda r: plots.plot_kind(r / "rtt", "bw-vs-rtt"),
                  "h100-pcie5", "128 B zero-copy reads", "bandwidth"),
    "bw-vs-tags": (lambda r: plots.plot_kind(r / "rtt", "bw-vs-tags"),
                   "h100-pcie5", "128 B zero-copy reads", "bandwidth"),
    "main bw_vs_gen.png": (
        lambda r: mainjob.main_figures(load_results(r / "main", wide=True))["bw_vs_gen.png"],
        "h100-pcie5", "BFS on kron scale 10", "bandwidth"),
    "main zerocopy_vs_uvm.png": (
        lambda r: mainjob.main_figures(load_results(r / "main", wide=True))
        ["zerocopy_vs_uvm.png"], "h100-pcie5", "BFS on kron scale 10", "bandwidth"),
    "zerocopy-vs-uvm": (lambda r: plots.plot_kind(r / "main", "zerocopy-vs-uvm"),
                        "h100-pcie5", "BFS", "by memory mode"),
    "predicted-vs-measured": (
        lambda r: plots.plot_predicted_vs_measured(_summary(), system="H100 80GB",
                                                   workload="run tiny"),
        "H100 80GB", "run tiny", "predicted against measured"),
    "report error_by_group": (
        lambda r: figure_error_by_group(_annotated(), system="h100-cal", workload="run tiny"),
        "h100-cal", "run tiny", "error"),
    "report mape_by_group": (
        lambda r: figure_mape_by_group(_stats(_annotated()), system="h100-cal",
                                       workload="run tiny"),
        "h100-cal", "run tiny", "MAPE"),
    "launches": (lambda r: figure_launches(_launches(), system="h100-cal"),
                 "h100-cal", "bfs/kron20/merged/uvm/4B", "kernel time"),
    "write_cost lines_per_s.png": (lambda r: _write_cost_figure(),
                                   "NVIDIA H100 80GB HBM3", "zc_warps", "lines per second"),
}


@pytest.mark.parametrize("name", list(FIGURES))
def test_every_figure_reads_on_its_own(name, results):
    build, system, workload, metric = FIGURES[name]
    fig = build(results)
    assert figure_problems(fig, system=system, workload=workload, metric=metric) == []


def test_the_checks_catch_the_old_main_job_figures():
    # the old look: 10 series in 5 colours with a legend inside, and bars 2400 x 504 px
    fig = plot_style.new_figure()
    ax = fig.add_subplot()
    for i in range(10):
        ax.plot([3, 4, 5, 6], np.arange(4) + i, color=f"C{i // 2}", marker="o",
                linestyle="-", label=f"s{i}")
    ax.set_xlabel("PCIe generation")
    ax.set_ylabel("bandwidth")
    ax.legend(loc="upper left")
    ax.set_title("BFS bandwidth by PCIe generation")
    problems = figure_problems(fig, system="h100-pcie5", workload="BFS", metric="bandwidth")
    assert any("no system" in p for p in problems)
    assert any("has no unit" in p for p in problems)
    assert any("alike" in p for p in problems)
    assert any("legend covers" in p for p in problems)
    wide = plot_style.new_figure(2400 / 200, 504 / 200)
    wide.add_subplot().bar([0, 1], [1, 2], label="zerocopy")
    assert any(p.startswith("size") for p in
               figure_problems(wide, system="s", workload="w", metric="m"))


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])       # the IHDR chunk's width and height


def test_saved_figures_are_report_sized(results, tmp_path):
    wide = load_results(results / "main", wide=True)
    fig = mainjob.main_figures(wide)["bw_vs_gen.png"]
    # 8 x 5 in at 200 dpi (plot_style); the size axis of a sizes sweep ticks at its sizes
    assert _png_size(plots.save(fig, tmp_path / "g.png")) == (1600, 1000)
    (ax,) = plots.plot_kind(results / "size", "bw-vs-size").axes
    assert list(ax.get_xticks()) == [32, 64, 96, 128]


def test_the_report_writes_its_three_figures(tmp_path):
    ann = _annotated()
    paths = report_plots(ann, _stats(ann), tmp_path, system="h100-cal", workload="run tiny")
    assert [p.name for p in paths] == ["predicted_vs_measured.png", "error_by_group.png",
                                       "mape_by_group.png"]
    for p in paths:
        w, h = _png_size(p)
        assert w / plot_style.DPI <= MAX_WIDTH_IN and max(w / h, h / w) <= MAX_ASPECT


def test_series_styles_are_unique_up_to_the_limit():
    looks = [tuple(plot_style.series_style(i).values()) for i in range(plot_style.MAX_SERIES)]
    assert len(set(looks)) == plot_style.MAX_SERIES == 40     # 10 colours x 4 line styles
    assert len({(s[0], s[1]) for s in looks[:10]}) == 10       # the first 10: own colour
    with pytest.raises(ValueError):
        plot_style.series_style(plot_style.MAX_SERIES)


def test_predicted_vs_measured_reads_its_run_from_metadata(tmp_path):
    _summary().to_csv(tmp_path / "summary.csv", index=False)
    (tmp_path / "metadata.json").write_text(json.dumps(
        {"experiment": "tiny", "device": {"name": "NVIDIA H200"}}))
    fig = plots.plot_predicted_vs_measured(tmp_path / "summary.csv")
    assert figure_problems(fig, system="NVIDIA H200", workload="validation run tiny",
                           metric="predicted against measured") == []
    assert len(fig.axes) == 3          # GB/s, ns and ms never share a panel
