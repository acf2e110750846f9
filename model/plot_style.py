"""The shared look of hostlink's figures: size, resolution, series styles, legends, titles.

Every figure the project draws (sweep plots, the main job's figures, the
validation report's, the per-launch plot and the write-cost probe's) takes its
canvas, its series styles, its legend placement and its title from here, so
they read alike.

Assumptions:
- A figure is read at a report's text width. US Letter is 8.5 in wide; with
  1 in margins the text is 6.5 in wide, so an 8 in figure shrinks by 0.81 and
  matplotlib's 10 pt default text prints at about 8 pt. At 200 dpi an 8 x 5 in
  figure is 1600 x 1000 px.
- Series are told apart by colour AND marker: the 10 colours of matplotlib's
  default cycle ("tab10", the Tableau 10 palette) each with its own marker;
  past 10 series the line style changes too, so no two series share colour,
  marker and line style (40 series at most).
- Legends sit outside the axes (to the right), so they never cover data.

References: matplotlib 3 documentation, "Specifying colors" (the tab10 cycle),
``matplotlib.markers`` and ``Axes.legend`` (``bbox_to_anchor``).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

FIG_W_IN = 8.0
FIG_H_IN = 5.0
DPI = 200
# matplotlib's tab10 cycle, in its order (the "C0".."C9" colours).
COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
           "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">")
LINESTYLES = ("-", "--", "-.", ":")
MAX_SERIES = len(COLOURS) * len(LINESTYLES)


def new_figure(width_in: float = FIG_W_IN, height_in: float = FIG_H_IN) -> Figure:
    """A figure with constrained layout on an Agg canvas (no pyplot, any backend)."""
    fig = Figure(figsize=(width_in, height_in), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def save(fig: Figure, path: str | Path, dpi: int = DPI) -> Path:
    """Write a figure (PNG, SVG or PDF by the suffix) and return its path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    FigureCanvasAgg(fig)
    fig.savefig(path, dpi=dpi)
    return path


def series_style(i: int) -> dict[str, Any]:
    """Colour, marker and line style of the i-th series (unique for i < MAX_SERIES)."""
    if not 0 <= i < MAX_SERIES:
        raise ValueError(f"series index {i} outside 0..{MAX_SERIES - 1}")
    n = len(COLOURS)
    return {"color": COLOURS[i % n], "marker": MARKERS[(i + i // n) % len(MARKERS)],
            "linestyle": LINESTYLES[(i // n) % len(LINESTYLES)]}


def legend_outside(ax, *, title: str | None = None, fontsize: str = "small", **kwargs):
    """A legend to the right of ``ax``, outside its data area; None without labelled artists."""
    handles, labels = ax.get_legend_handles_labels()
    if not handles:
        return None
    return ax.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.02, 1.0),
                     borderaxespad=0.0, fontsize=fontsize, title=title,
                     title_fontsize=fontsize, **kwargs)


def figure_legend(fig: Figure, handles, labels, *, title: str | None = None,
                  fontsize: str = "small", **kwargs):
    """A legend for the whole figure, right of every panel (constrained layout makes room)."""
    return fig.legend(handles, labels, loc="outside right upper", fontsize=fontsize,
                      title=title, title_fontsize=fontsize, **kwargs)


def title(metric: str, *, system: str | None, workload: str | None,
          detail: str | None = None) -> str:
    """A title naming the metric, then the workload and the system it was drawn for."""
    first = metric[:1].upper() + metric[1:]
    if detail:
        first += f" {detail}"
    where = []
    if workload:
        where.append(str(workload))
    if system:
        where.append(f"system {system}")
    return first + ("\n" + ", ".join(where) if where else "")
