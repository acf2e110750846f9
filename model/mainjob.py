"""The main job: one command from a graph to a report.

Generates the embedded default graph (GAP kron, scale 15, degree 16, 8 B ids:
EMOGI's width), emulates BFS in every kernel variant, coalesces the lane
addresses into PCIe requests, and predicts zero-copy (discrete-event model)
and UVM bandwidth on PCIe 3/4/5/6 x16. The sweep behind it is
``sim_configs/sweeps/main.toml``; its results folder resumes like any sweep.

Writes into ``out``: ``results/`` (the sweep's Parquet dataset with resolved
configs), ``summary.csv`` (one row per variant, mode and generation),
``requests_by_size.csv``, ``bw_vs_gen.png``, ``zerocopy_vs_uvm.png``,
``gem5/merged_aligned_zerocopy_pcieN.trc.gz`` (the merged_aligned zero-copy
run's host requests as a gem5 packet trace, ticked by the discrete-event
model at the preset's own PCIe generation N: :func:`write_gem5_run`) and
``report.md``; prints the same table. A second sweep,
``sim_configs/sweeps/main_gather.toml``, gives the report's second table: a GNN
feature gather's GB/s by row size and memory mode (``gather.csv``, results in
``gather_results/``; :func:`gather_table`). A last section says which variant and
which placement win on the graph (``advice.json``, ``advice.csv``:
:mod:`hostlink.model.mainjob_advice`).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from hostlink.model.config.loader import REPO_CONFIGS

MAIN_SWEEP = REPO_CONFIGS / "sweeps" / "main.toml"
GATHER_SWEEP = REPO_CONFIGS / "sweeps" / "main_gather.toml"
#: the gather table's columns: (mode, variant) -> heading
GATHER_COLUMNS = {("zerocopy", "naive"): "zero-copy naive", ("zerocopy", "aligned"): "zero-copy aligned",
                  ("uvm_accessedby", "aligned"): "AccessedBy", ("uvm", "aligned"): "UVM first touch",
                  ("uvm_warm", "aligned"): "UVM warm", ("device", "aligned"): "device",
                  ("cpu_gather", "aligned"): "CPU gather + copy"}
VARIANT_ORDER = ("naive", "merged", "merged_aligned", "chunked", "balanced")
MODE_ORDER = ("zerocopy", "uvm")
GEM5_VARIANT = "merged_aligned"


@dataclass
class MainJobResult:
    out: Path
    summary: pd.DataFrame          # variant, mode, gen, bw_GBps, time_ms, bound
    requests: pd.DataFrame         # variant x request size -> count
    sweep_summary: str
    gather: pd.DataFrame | None = None   # row size x mode -> GB/s (gather_table)
    advice: object | None = None         # hostlink.model.advice.Advice of the graph


def request_mix(wide: pd.DataFrame) -> pd.DataFrame:
    """Host read requests by size for each variant (from the zero-copy points;
    the request stream is the same for every generation)."""
    zc = wide[wide["workload.mode"] == "zerocopy"].drop_duplicates("workload.variant")
    rows = []
    for variant in VARIANT_ORDER:
        row = zc[zc["workload.variant"] == variant]
        if row.empty:
            continue
        counts = {f"{s} B": int(row[f"requests_{s}B"].fillna(0).iloc[0])
                  if f"requests_{s}B" in row else 0 for s in (32, 64, 96, 128)}
        rows.append({"variant": variant, **counts, "requests": sum(counts.values())})
    return pd.DataFrame(rows).set_index("variant")


def _points_launch_us(wide: pd.DataFrame):
    """Each point's mean launch time in us (its kernel time over its launches, the
    ``launch_<k>_time_s`` it holds), or None where the results hold neither."""
    import re

    from hostlink.model.bands import mean_launch_us
    launches = [c for c in wide.columns if re.fullmatch(r"launch_\d+_time_s", str(c))]
    if not launches or "kernel_time_s" not in wide.columns:
        return None
    return mean_launch_us(wide["kernel_time_s"].to_numpy(dtype=float) * 1e3,
                          wide[launches].notna().sum(axis=1))


def summarise(wide: pd.DataFrame) -> pd.DataFrame:
    """One row per (variant, mode, gen) from the sweep's wide results."""
    from hostlink.model.bands import with_bands
    df = wide.drop(columns=["mode"], errors="ignore").rename(
        columns={"workload.variant": "variant", "workload.mode": "mode", "link.gen": "gen",
                 "link.tags": "tags"})
    keep = [c for c in ("variant", "mode", "gen", "tags", "bw_GBps", "time_s", "bound",
                        "read_amplification") if c in df.columns]
    launch_us = _points_launch_us(df)
    df = df[keep].copy()
    df["time_ms"] = df.pop("time_s") * 1e3
    if launch_us is not None:
        df["launch_us"] = launch_us
    df = with_bands(df)   # the machine-to-machine band (hostlink.model.bands)
    df["variant"] = pd.Categorical(df["variant"], VARIANT_ORDER, ordered=True)
    df["mode"] = pd.Categorical(df["mode"], MODE_ORDER, ordered=True)
    return df.sort_values(["mode", "variant", "gen"]).reset_index(drop=True)


def bandwidth_table(summary: pd.DataFrame) -> pd.DataFrame:
    """bw_GBps with a row per (mode, variant) and a column per PCIe generation."""
    t = summary.pivot_table(index=["mode", "variant"], columns="gen", values="bw_GBps",
                            observed=True)
    t.columns = [f"PCIe {int(g)}.0" for g in t.columns]
    return t


def band_table(summary: pd.DataFrame) -> pd.DataFrame:
    """The band around each cell of :func:`bandwidth_table`, as "lo-hi" GB/s."""
    from hostlink.model.bands import band_text
    df = summary.assign(band=band_text(summary))
    t = df.pivot_table(index=["mode", "variant"], columns="gen", values="band",
                       aggfunc="first", observed=True)
    t.columns = [f"PCIe {int(g)}.0" for g in t.columns]
    return t


def gather_rows(wide: pd.DataFrame) -> pd.DataFrame:
    """One row per gather point: row size, mode, variant, GB/s, bound and its class."""
    from hostlink.model.gather_run import bound_class
    df = wide.drop(columns=["mode"], errors="ignore").rename(
        columns={"workload.row_B": "row_B", "workload.mode": "mode",
                 "workload.variant": "variant"})
    out = df[["row_B", "mode", "variant", "bw_GBps", "bound"]].copy()
    out["bound_class"] = [bound_class(b) for b in out["bound"]]
    return out.sort_values(["row_B", "mode", "variant"]).reset_index(drop=True)


def gather_table(rows: pd.DataFrame, value: str = "bw_GBps") -> pd.DataFrame:
    """``value`` with a row per row size and a column per (mode, variant) of
    :data:`GATHER_COLUMNS`, in that order."""
    t = rows.pivot_table(index="row_B", columns=["mode", "variant"], values=value,
                         aggfunc="first")
    cols = [c for c in GATHER_COLUMNS if c in t.columns]
    t = t[cols]
    t.columns = [GATHER_COLUMNS[c] for c in cols]
    t.index = [f"{int(r)} B" for r in t.index]
    t.index.name = "row"
    return t


def run_gather_sweep(out: Path, *, jobs: int | None = None, progress: bool = True,
                     link: str | None = None, sweep_file: str | Path = GATHER_SWEEP) -> pd.DataFrame:
    """The gather sweep's points (:func:`gather_rows`), written to ``out/gather.csv``;
    the sweep itself in ``attrs["sweep"]``."""
    from hostlink.model.sweep import load_results, load_sweep, run_sweep
    from hostlink.model.sweep.spec import with_link
    spec = with_link(load_sweep(sweep_file), link)
    report = run_sweep(spec, out / "gather_results", jobs=jobs, progress=progress)
    rows = gather_rows(load_results(out / "gather_results", experiment=spec.name, wide=True,
                                    run_ids=report.run_ids))
    rows.to_csv(out / "gather.csv", index=False)
    rows.attrs["sweep"] = spec
    return rows


def main_figures(wide: pd.DataFrame) -> dict:
    """The main job's figures by file name: bandwidth against PCIe generation (a line per
    variant and mode) and zero-copy against UVM (a panel per generation)."""
    from hostlink.model import plots
    from hostlink.model.bands import add_bands
    return {"bw_vs_gen.png": add_bands(plots.plot_bw_vs(wide, "link.gen")),
            "zerocopy_vs_uvm.png": add_bands(plots.plot_zerocopy_vs_uvm(wide))}


def run_main_job(out: str | Path = "out/main", *, jobs: int | None = None,
                 progress: bool = True, sweep_file: str | Path = MAIN_SWEEP,
                 link: str | None = None,
                 gather_file: str | Path | None = GATHER_SWEEP,
                 advise: bool = True) -> MainJobResult:
    from hostlink.model import plots
    from hostlink.model.sweep import load_results, load_sweep, run_sweep
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    from hostlink.model.sweep.spec import with_link
    spec = with_link(load_sweep(sweep_file), link)   # link: a link preset every point starts from
    report = run_sweep(spec, out / "results", jobs=jobs, progress=progress)
    wide = load_results(out / "results", experiment=spec.name, wide=True,
                        run_ids=report.run_ids)
    summary = summarise(wide)
    summary.to_csv(out / "summary.csv", index=False)
    requests = request_mix(wide)
    requests.to_csv(out / "requests_by_size.csv")
    for name, fig in main_figures(wide).items():
        plots.save(fig, out / name)
    gem5 = write_gem5_run(out, spec)
    gather = (run_gather_sweep(out, jobs=jobs, progress=progress, link=link,
                               sweep_file=gather_file) if gather_file else None)
    from hostlink.model.mainjob_advice import main_advice
    advice = main_advice(spec, out, jobs=jobs, progress=progress) if advise else None
    _write_report(out, spec, summary, requests, gem5, gather, advice)
    return MainJobResult(out, summary, requests, report.summary(), gather, advice)


def write_gem5_run(out: Path, spec, variant: str = GEM5_VARIANT) -> Path | None:
    """The sweep's zero-copy run of ``variant`` at the preset's own link generation
    (else the sweep's last such point) as a gem5 packet trace under ``out/gem5``:
    its host requests, ticked by the discrete-event model on that point's system,
    at physical addresses laid out from the emulator's regions. None where the
    sweep has no such point."""
    from hostlink.model.predict import resolve_system
    from hostlink.model.sweep.evaluate import EMULATOR_MEMORY, build_stream, load_graph
    from hostlink.model.sweep.runner import resolve_points
    from hostlink.traces.emulator import address_map
    from hostlink.traces.gem5_timing import des_ticks_ps
    from hostlink.traces.gem5_trace import write_gem5
    points = [rp for rp in resolve_points(spec) if rp.workload.get("kind") == "graph"
              and rp.workload.get("variant") == variant and rp.workload.get("mode") == "zerocopy"]
    if not points:
        return None
    gen = resolve_system(spec.system).link.gen
    rp = next((p for p in points if p.system.link.gen == gen), points[-1])
    system, w = rp.system, rp.workload
    stream = build_stream(w, system.gpu).stream
    csr = load_graph(w)
    regions = address_map(csr.num_vertices, csr.num_edges, w["kernel"], id_bytes=w["id_bytes"],
                          memory=EMULATOR_MEMORY[w["mode"]]).regions
    path = out / "gem5" / f"{variant}_zerocopy_pcie{system.link.gen}.trc.gz"
    path.parent.mkdir(parents=True, exist_ok=True)
    write_gem5(stream, path, ticks_ps=des_ticks_ps(stream, system), regions=list(regions),
               obj_id=f"hostlink {w['kernel']} {variant} zerocopy on {system.name} "
                      f"PCIe {system.link.gen}",
               timing=f"discrete-event model on {system.name} PCIe {system.link.gen}: each "
                      "request when it reaches the root complex")
    return path


def _markdown(df: pd.DataFrame, floatfmt: str = ".2f") -> str:
    cols = [str(c) for c in df.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for _, row in df.iterrows():
        cells = [format(v, floatfmt) if isinstance(v, float) else str(v) for v in row]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _band_note() -> str:
    from hostlink.model.bands import spread_pct
    s = {mode: v for mode, v in spread_pct().items() if mode in MODE_ORDER}  # the job's modes
    note = "; ".join(f"{mode} within {v['half_width_pct']:.1f}% (nine in ten of {v['cases']} "
                     f"cases repeated on a second lease: {', '.join(v['runs'])})"
                     for mode, v in s.items()) + "."
    classes = {mode: _launch_classes(v) for mode, v in s.items() if v.get("by_launch")}
    if classes:
        note += (" A point whose launches are short takes a wider band, as short launches "
                 "moved more: " + "; ".join(f"{mode} {text}" for mode, text in classes.items())
                 + ".")
    walks = "; ".join(f"the {name} walk in {mode} ±{b['half_width_pct']:.1f}% (nine in ten of "
                      f"its {b['cases']} repeated cases)"
                      for mode, v in s.items() for name, b in (v.get("by_variant") or {}).items())
    if walks:
        note += (" A variant whose time moved more from lease to lease takes its own band "
                 "where that is wider: " + walks + ".")
    return note


def _launch_classes(mode_spread: dict) -> str:
    """``"±25.1% for launches under 20 us, ..."`` of one mode's bands by launch length."""
    parts, lower = [], None
    for c in mode_spread["by_launch"]:
        if c["half_width_pct"] is None:
            lower = c["below_us"]
            continue
        if c["below_us"] is None:
            span = f"from {lower:g} us" if lower is not None else "at any length"
        elif lower is None:
            span = f"under {c['below_us']:g} us"
        else:
            span = f"{lower:g}-{c['below_us']:g} us"
        parts.append(f"±{c['half_width_pct']:.1f}% for launches {span}")
        lower = c["below_us"]
    return ", ".join(parts)


def _write_report(out: Path, spec, summary: pd.DataFrame, requests: pd.DataFrame,
                  gem5: Path | None = None, gather: pd.DataFrame | None = None,
                  advice=None) -> None:
    from hostlink.model.sweep.workloads import normalise_workload
    w = normalise_workload(spec.workload, spec.name, spec.fidelity)
    bw = bandwidth_table(summary).reset_index()
    bound = summary[summary["mode"] == "zerocopy"].pivot_table(
        index="variant", columns="gen", values="bound", aggfunc="first", observed=True)
    bound.columns = [f"PCIe {int(g)}.0" for g in bound.columns]
    text = f"""# hostlink main job

{spec.description}. System `{spec.system}` with the link changed per column;
graph GAP {w['graph']} scale {w['scale']}, degree {w['degree']}, seed {w['seed']},
{w['id_bytes']} B ids; BFS from the vertex of largest degree. Zero-copy is
timed by the discrete-event model, UVM by the UVM model (first touch).

## Bandwidth (GB/s of useful bytes)

{_markdown(bw)}

![bandwidth by generation](bw_vs_gen.png)

![zero-copy against UVM](zerocopy_vs_uvm.png)

## Bands (GB/s)

Where a second machine of the same kind would likely measure each point:
{_band_note()}

{_markdown(band_table(summary).reset_index())}

## What binds zero-copy

{_markdown(bound.reset_index())}

## PCIe read requests by size

{_markdown(requests.reset_index())}

Files: `summary.csv` (every point), `requests_by_size.csv`, `results/` (the
sweep's tidy Parquet rows and resolved configs).
"""
    if gather is not None and len(gather):
        g = gather.attrs["sweep"]
        text += f"""
## GNN feature gather (GB/s of gathered rows)

{g.description}; system `{g.system}`, {int(g.workload['rows'])} uniform random rows.
Columns are where the feature table lives and how rows reach the GPU (aligned:
each warp starts at the 128 B line below its row; min_dissertation_2022 ch. 3).

{_markdown(gather_table(gather).reset_index())}

What binds (link, requests_in_flight, translation, host_serve, uvm_service,
device, launch):

{_markdown(gather_table(gather, "bound_class").reset_index())}

File: `gather.csv` (every point, with the model's own bound name).
"""
    if gem5 is not None:
        rel = gem5.relative_to(out).as_posix()
        text += f"""
gem5 packet trace of the {GEM5_VARIANT} zero-copy run: [`{rel}`]({rel}) (its host
requests as the root complex sees them, ticked by the discrete-event model; replay it
with a gem5 `TrafficGen` in TRACE state: README, "gem5").
"""
    if advice is not None:
        from hostlink.model.mainjob_advice import advice_markdown
        text += advice_markdown(advice)
    (out / "report.md").write_text(text)
