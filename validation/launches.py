"""Per-launch times of a traversal case: measured against its twin's.

A whole run's error can hide launches that err both ways: a UVM traversal may
spend its time in a few of its launches, and which of them migrates the edge
list decides how its variants compare (the ``uvm_order`` experiment,
validation/experiments/uvm_order/). The traversal programs record every
launch's time (CUDA events around each launch: ``detail.launch_ms`` of each
repetition in the run's raw program output); the twin predicts each launch's
kernel time (``hostlink.validation.twin_traversal.predict_traversal``'s
``timing["launch_ms"]``).

``hostlink validate launches RESULTS_DIR CASE --system CALIBRATED.toml``
predicts the case for one of its sources (the first by default) as a report does
and prints one row
per launch: the measured median, least and most over that source's repetitions,
the predicted time and the error, and in the UVM modes the megabytes the model
migrates to the GPU in that launch; ``--csv`` writes the table, ``--plot`` draws it.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from hostlink.model.errors import HostlinkError
from hostlink.validation.manifest import traversal_case_name

if TYPE_CHECKING:
    import pandas as pd

# pandas (and the raw store, which reads with it) are imported where they are used: the
# CLI imports this module on every start to register its command


def measured_launches(results_dir: str | Path, case: str, source: int | None) -> np.ndarray:
    """Launch times (ms) of ``case`` for ``source``: one row per repetition, read from
    RESULTS_DIR/raw/*.jsonl, loose or packed (every repetition of a source launches alike). ``source``
    None: a kernel without sources (CC, PageRank)."""
    from hostlink.validation import raw_store

    raw = Path(results_dir) / "raw"
    names = raw_store.raw_names(results_dir)
    if not names:
        raise HostlinkError(f"{raw}: no raw program output (*.jsonl, loose or in {raw_store.PACKED})")
    reps: dict[int, list[float]] = {}
    for name in names:
        out = raw_store.read_raw_output(results_dir, name)
        path = out.source
        for m in out.measurements:
            p = m.params
            if not {"graph", "variant", "memory_mode", "id_bytes"} <= set(p):
                continue
            name = traversal_case_name(m.benchmark, p["graph"], p["variant"], p["memory_mode"],
                                       p["id_bytes"])
            src = p.get("source", m.metrics.get("source"))
            if name != case or (source is not None and (src is None or int(src) != int(source))):
                continue
            launch_ms = (m.detail or {}).get("launch_ms")
            if not isinstance(launch_ms, list) or not launch_ms:
                raise HostlinkError(f"{path}:{m.line}: case '{case}' has no detail 'launch_ms'")
            reps[m.rep] = [float(v) for v in launch_ms]
    if not reps:
        which = "" if source is None else f" from source {source}"
        raise HostlinkError(f"{raw}: no measurement of case '{case}'{which}")
    lengths = {len(v) for v in reps.values()}
    if len(lengths) != 1:
        raise HostlinkError(f"{raw}: case '{case}', source {source}: repetitions launch "
                            f"{sorted(lengths)} kernels")
    return np.array([reps[r] for r in sorted(reps)])


def compare_launches(results_dir: str | Path, case: str, system,
                     source_index: int = 0, graph_dir: str | Path | None = None,
                     fidelity: str = "des") -> pd.DataFrame:
    """One row per launch of ``case``'s ``source_index``-th source: measured median,
    least and most (ms), predicted (ms) and error %."""
    import pandas as pd

    from hostlink.validation.twin_common import load_run
    from hostlink.validation.twin_traversal import GraphSource, predict_traversal

    run = load_run(results_dir)
    if case not in run.cases:
        raise HostlinkError(f"{results_dir}: no case '{case}' in metadata.json")
    params = dict(run.cases[case])
    if "kernel" not in params:
        raise HostlinkError(f"case '{case}' is not a traversal")
    sources = list(params.get("sources") or [])
    if sources:
        if not 0 <= source_index < len(sources):
            raise HostlinkError(f"case '{case}' has {len(sources)} sources; "
                                f"source index {source_index} is out of range")
        source = int(sources[source_index])
        params["sources"] = [source]
    else:
        source = None                  # CC and PageRank start from every vertex
    measured = measured_launches(results_dir, case, source)
    timing: dict = {}
    predict_traversal(case, params, system, GraphSource(run, graph_dir), fidelity=fidelity,
                      timing=timing, max_sources=1)
    predicted = np.asarray(timing["launch_ms"][0], dtype=float)
    h2d = timing.get("launch_h2d_B")
    h2d = np.asarray(h2d[0], dtype=float) if h2d else None
    n = max(measured.shape[1], len(predicted))
    rows = []
    for k in range(n):
        col = measured[:, k] if k < measured.shape[1] else np.array([math.nan])
        med = float(np.median(col))
        pred = float(predicted[k]) if k < len(predicted) else math.nan
        row = {"launch": k, "measured_ms": med, "measured_min_ms": float(np.min(col)),
               "measured_max_ms": float(np.max(col)), "predicted_ms": pred,
               "error_pct": 100.0 * (pred / med - 1.0) if med > 0 else math.nan}
        if h2d is not None:           # the UVM model's migration in that launch
            row["predicted_h2d_MB"] = float(h2d[k]) / 1e6 if k < len(h2d) else math.nan
        rows.append(row)
    table = pd.DataFrame(rows)
    table.attrs.update(case=case, source=source, repetitions=int(measured.shape[0]),
                       measured_launches=int(measured.shape[1]),
                       predicted_launches=int(len(predicted)))
    return table


def figure_launches(table: pd.DataFrame, *, system: str | None = None):
    """Measured (median, bars from least to most) and predicted time per launch."""
    from hostlink.model import plot_style as style

    fig = style.new_figure()
    ax = fig.add_subplot()
    x = table["launch"].to_numpy()
    med = table["measured_ms"].to_numpy()
    err = np.vstack([med - table["measured_min_ms"].to_numpy(),
                     table["measured_max_ms"].to_numpy() - med])
    ax.bar(x - 0.2, med, width=0.4, yerr=err, capsize=2, color=style.COLOURS[0],
           label="measured (median, least to most)")
    ax.bar(x + 0.2, table["predicted_ms"].to_numpy(), width=0.4, color=style.COLOURS[1],
           label="predicted")
    if len(x) <= 24:
        ax.set_xticks(x)
    ax.set_xlabel("launch (index)")
    ax.set_ylabel("kernel time (ms)")
    ax.set_yscale("log")
    src = table.attrs.get("source")
    case = table.attrs.get("case", "") + ("" if src is None else f", source {src}")
    ax.set_title(style.title("kernel time per launch (ms)", system=system or "not recorded",
                             workload=case), fontsize="medium")
    ax.grid(True, axis="y", alpha=0.3)
    style.legend_outside(ax)
    return fig


def plot_launches(table: pd.DataFrame, path: str | Path, *, system: str | None = None) -> None:
    """Draw :func:`figure_launches` into ``path``."""
    from hostlink.model import plot_style as style

    style.save(figure_launches(table, system=system), path)


def _cmd_launches(args) -> int:
    import pandas as pd

    from hostlink.model.config import load_any_system

    system = load_any_system(args.system)
    table = compare_launches(args.results_dir, args.case, system,
                             source_index=args.source_index, graph_dir=args.graph_dir)
    a = table.attrs
    src = "" if a["source"] is None else f", source {a['source']}"
    print(f"{a['case']}{src}: {a['repetitions']} repetitions, "
          f"{a['measured_launches']} launches measured, {a['predicted_launches']} predicted")
    with pd.option_context("display.width", 200, "display.max_rows", None):
        print(table.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    total_m, total_p = table["measured_ms"].sum(), table["predicted_ms"].sum()
    print(f"sum of launches: measured {total_m:.4g} ms, predicted {total_p:.4g} ms "
          f"({100 * (total_p / total_m - 1):+.1f}%)")
    if args.csv:
        table.to_csv(args.csv, index=False)
    if args.plot:
        plot_launches(table, args.plot, system=getattr(system, "name", str(args.system)))
    return 0


def register_validate_commands(sub) -> None:
    # argparse's usual shape, alike to the other validate commands' on purpose
    p = sub.add_parser("launches", help="a traversal case's time per launch, measured "
                                        "against its twin's, for one source")
    p.add_argument("results_dir", metavar="RESULTS_DIR", help="a measured run (hostlink validate run --out)")
    p.add_argument("case", metavar="CASE", help="a traversal case, e.g. bfs/kron24/merged_aligned/uvm/8B")
    p.add_argument("--system", required=True, help="system: calibrated TOML, preset name or file")
    p.add_argument("--source-index", type=int, default=0,
                   help="which of the case's sources (default 0, the first)")
    p.add_argument("--graph-dir", default=None,
                   help="where the run's graphs are (default RESULTS_DIR/graphs, else regenerated)")
    p.add_argument("--csv", default=None, help="write the table here")
    p.add_argument("--plot", default=None, help="draw the launches into this image")
    p.set_defaults(func=_cmd_launches)
