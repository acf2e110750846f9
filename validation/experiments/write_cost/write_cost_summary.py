"""Table and plot of a write_cost_probe.sh folder: what a line costs in device memory,
loaded, stored or reduced, against the warps on each SM and the level that holds it.

Usage: python3 write_cost_summary.py FOLDER  (writes FOLDER/points.csv and
FOLDER/lines_per_s.png; the figure takes its style from hostlink.model.plot_style, so
hostlink must be installed)

Reads ``plain.jsonl``, ``spread.jsonl`` and ``regions.jsonl`` (zc_warps records). A
point's lines are its instructions (useful bytes over 128 B: 32 lanes x 4 B) times the
lines one instruction touches: 32 for scatter (a random word per lane; a few of a 64 KiB
region's 32 words fall in one line, so slightly fewer there) and strided (each lane its
own chunk), 1 for random (the lanes coalesced). Columns: file, pattern, knob_B (region
or chunk), op, warps, warps_per_block, sms (SMs holding the blocks: the blocks, at most
the device's SMs), warps_per_sm, time_ms (median over the repetitions), glines_per_s,
ns_per_line_per_sm (the time over the lines each SM in use sent), and for the one-warp-
per-SM points ns_per_line_per_warp (a warp's lines one after another).
"""
from __future__ import annotations

import csv
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

FILES = ("plain.jsonl", "spread.jsonl", "regions.jsonl")
COLUMNS = ("file", "pattern", "knob_B", "op", "warps", "warps_per_block", "sms", "warps_per_sm",
           "time_ms", "glines_per_s", "ns_per_line_per_sm", "ns_per_line_per_warp")


def lines_per_instruction(pattern: str) -> int:
    if pattern in ("scatter", "strided"):
        return 32
    if pattern in ("random", "coalesced"):
        return 1
    raise ValueError(f"unknown pattern {pattern!r}")


def read_points(path: Path) -> tuple[int, list[dict]]:
    """The device's SM count and one row per point of a zc_warps output file."""
    sm_count, reps = 0, defaultdict(list)
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            r = json.loads(line)
        except json.JSONDecodeError as e:
            raise SystemExit(f"{path}:{n}: not JSON ({e})")
        if r.get("type") == "device":
            sm_count = int(r["sm_count"])
        if r.get("type") != "measurement":
            continue
        p, m = r["params"], r["metrics"]
        key = (p["pattern"], int(p.get("region_B", p.get("chunk_B", p.get("offset_B", 0)))),
               p.get("op", "load"), int(m["warps_launched"]), int(m["warps_per_block"]))
        reps[key].append((float(m["time_ms"]), int(m["bytes_B"])))
    if not sm_count:
        raise SystemExit(f"{path}: no device record (its SM count)")
    rows = []
    for (pattern, knob, op, warps, wpb), got in sorted(reps.items()):
        t_ms = statistics.median(t for t, _ in got)
        lines = got[0][1] / 128 * lines_per_instruction(pattern)
        sms = min(sm_count, warps // wpb)
        row = {"file": path.name, "pattern": pattern, "knob_B": knob, "op": op, "warps": warps,
               "warps_per_block": wpb, "sms": sms, "warps_per_sm": warps / sms,
               "time_ms": t_ms, "glines_per_s": lines / (t_ms * 1e-3) / 1e9,
               "ns_per_line_per_sm": t_ms * 1e6 / (lines / sms), "ns_per_line_per_warp": ""}
        if warps == sms:
            row["ns_per_line_per_warp"] = t_ms * 1e6 / (lines / warps)
        rows.append(row)
    return sm_count, rows


def device_name(path: Path) -> str | None:
    """The GPU's name from the device record of a zc_warps output file."""
    for line in path.read_text().splitlines():
        try:
            r = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(r, dict) and r.get("type") == "device":
            return r.get("name")
    return None


OPS = ("load", "store", "red")
OP_LINES = {"load": "-", "store": "--", "red": "-."}


def figure(rows: list[dict], device: str | None = None):
    """Lines per second against warps per SM (a panel per scatter region) and against the
    region at full occupancy; an op keeps its colour, marker and line in every panel."""
    from hostlink.model import plot_style as style

    op_styles = {op: {**style.series_style(i), "linestyle": OP_LINES[op]}
                 for i, op in enumerate(OPS)}
    plain = [r for r in rows if r["file"] == "plain.jsonl" and r["pattern"] == "scatter"]
    knobs = sorted({r["knob_B"] for r in plain})
    n = len(knobs) + 1
    ncols = min(2, n)
    nrows = -(-n // ncols)
    fig = style.new_figure(style.FIG_W_IN, 2.8 * nrows + 1.0)
    axes = list(fig.subplots(nrows, ncols, squeeze=False).flat)
    for ax in axes[n:]:
        fig.delaxes(ax)
    for ax, knob in zip(axes, knobs):
        for op in OPS:
            pts = sorted((r["warps_per_sm"], r["glines_per_s"]) for r in plain
                         if r["knob_B"] == knob and r["op"] == op)
            ax.plot([p[0] for p in pts], [p[1] for p in pts], label=op, **op_styles[op])
        ax.set_xscale("log", base=2)
        ax.set_title(f"scatter over {knob / 2**20:g} MiB" if knob >= 2**20
                     else f"scatter over {knob / 2**10:g} KiB", fontsize="small")
        ax.set_xlabel("warps per SM (count)", fontsize="small")
    ax = axes[n - 1]
    reg = [r for r in rows if r["file"] == "regions.jsonl"]
    for op in ("load", "red"):
        pts = sorted((r["knob_B"], r["glines_per_s"]) for r in reg if r["op"] == op)
        ax.plot([p[0] / 2**20 for p in pts], [p[1] for p in pts], label=op, **op_styles[op])
    ax.axvline(50, color="grey", lw=0.8, label="_L2")
    ax.text(50, ax.get_ylim()[1] * 0.95, " L2 (50 MiB)", fontsize="small", va="top")
    ax.set_xscale("log", base=2)
    ax.set_title("scatter at full occupancy, by region", fontsize="small")
    ax.set_xlabel("region (MiB)", fontsize="small")
    for ax in axes[:n]:
        ax.set_ylabel("lines per second (G/s), all SMs", fontsize="small")
        ax.grid(alpha=0.3)
    handles, labels = axes[0].get_legend_handles_labels()
    style.figure_legend(fig, handles, labels, title="operation")
    fig.suptitle(style.title("lines per second (G/s) of scattered device-memory accesses",
                             system=device or "not recorded",
                             workload="zc_warps scatter, loads, stores and reductions"),
                 fontsize="medium")
    return fig


def plot(rows: list[dict], out: Path, device: str | None = None) -> None:
    """Draw :func:`figure` into ``out``."""
    from hostlink.model import plot_style as style

    style.save(figure(rows, device), out)


def main(folder: str) -> None:
    d = Path(folder)
    rows = []
    for name in FILES:
        if (d / name).exists():
            rows += read_points(d / name)[1]
    if not rows:
        raise SystemExit(f"{d}: none of {', '.join(FILES)}")
    with open(d / "points.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        for r in rows:
            w.writerow({k: (f"{v:.4g}" if isinstance(v, float) else v) for k, v in r.items()})
    device = next((device_name(d / name) for name in FILES if (d / name).exists()), None)
    plot(rows, d / "lines_per_s.png", device)
    print(f"wrote {d / 'points.csv'} ({len(rows)} points) and {d / 'lines_per_s.png'}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    main(sys.argv[1])
