"""Per graph of a run: the prediction's error by placement, and which BFS option wins.

Errors: the MAPE of kernel time over every case of a graph (BFS, SSSP and CC,
every variant and id size) in each placement class (zero-copy, UVM, device),
with its bias (the mean signed error); the acceptance asks at most 10% in
zero-copy and 20% in UVM and in device memory, per family.

Winners: over a graph's BFS cases with 8 B ids (every variant in zero-copy, UVM
and device memory), the fastest case measured and the fastest predicted, and
how much slower, measured, the predicted winner ran than the measured one (the
acceptance allows 5%). Kernel time is the mean over reps and sources.

Usage: python3 winners_summary.py RUN [--replace SUMMARY ...] [--out FOLDER]
[--summary yes] (reads RUN/summary.csv of `hostlink validate report`; writes
RUN/winners.csv and RUN/errors.csv and prints both). With ``--replace``, the
cases SUMMARY holds (a report of some of RUN's cases, ``validate report --only``)
take the place of RUN's rows of the same cases, each SUMMARY in turn, and the
tables go to FOLDER. ``--summary yes`` also writes the combined rows to
FOLDER/summary.csv (FOLDER must hold none yet), from which ``hostlink validate
report RUN --from-summary --out FOLDER`` renders their report.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

from hostlink.validation.report_judge import annotate, family_table, write_summary


def winners(summary: pd.DataFrame) -> pd.DataFrame:
    s = summary[(summary["metric"] == "kernel_time_ms") & summary["case"].str.startswith("bfs/")
                & summary["case"].str.endswith("/8B")].copy()
    parts = s["case"].str.split("/", expand=True)
    s["graph"], s["option"] = parts[1], parts[2] + "/" + parts[3]
    rows = []
    for graph, g in s.groupby("graph"):
        g = g.groupby("option")[["measured", "predicted"]].mean()
        meas, pred = g["measured"].idxmin(), g["predicted"].idxmin()
        rows.append({"graph": graph, "measured_winner": meas,
                     "measured_ms": g.loc[meas, "measured"], "predicted_winner": pred,
                     "predicted_winner_measured_ms": g.loc[pred, "measured"],
                     "slower_pct": 100 * (g.loc[pred, "measured"] / g.loc[meas, "measured"] - 1),
                     "options": len(g)})
    return pd.DataFrame(rows)


def errors(summary: pd.DataFrame) -> pd.DataFrame:
    """MAPE, bias and worst error of kernel time per (graph, placement), over the graph's
    cases, with the family target: the report's own judgement
    (hostlink.validation.report_judge.family_table)."""
    return family_table(annotate(summary, {}))


def replaced(summary: pd.DataFrame, newer: pd.DataFrame) -> pd.DataFrame:
    """``summary`` with the rows of every case ``newer`` holds taken from ``newer``."""
    return pd.concat([summary[~summary["case"].isin(set(newer["case"]))], newer],
                     ignore_index=True)


def main(argv: list[str]) -> int:
    usage = ("usage: winners_summary.py RUN [--replace SUMMARY ...] [--out FOLDER] "
             "[--summary yes]")
    if not argv or argv[0].startswith("-") or len(argv) % 2 == 0:
        print(usage, file=sys.stderr)
        return 2
    run = argv[0]
    pairs = list(zip(argv[1::2], argv[2::2]))
    flags = [flag for flag, _ in pairs]
    if any(flag not in ("--replace", "--out", "--summary") for flag in flags) or \
            flags.count("--out") > 1 or flags.count("--summary") > 1 or \
            any(flag == "--summary" and value != "yes" for flag, value in pairs):
        print(usage, file=sys.stderr)
        return 2
    newer = [value for flag, value in pairs if flag == "--replace"]
    outs = [value for flag, value in pairs if flag == "--out"]
    if (newer or "--summary" in flags) and not outs:
        print(f"{usage}\n(--replace and --summary write to --out, not to RUN)", file=sys.stderr)
        return 2
    out = Path(outs[0]) if outs else Path(run)
    if "--summary" in flags and (out / "summary.csv").exists():
        print(f"{out / 'summary.csv'} exists: --summary writes the combined rows to a "
              f"folder of their own", file=sys.stderr)
        return 2
    summary = pd.read_csv(Path(run) / "summary.csv")
    for path in newer:          # in order: a later report's cases replace an earlier one's
        summary = replaced(summary, pd.read_csv(path))
    if "--summary" in flags:
        write_summary(summary, out / "summary.csv")
    e = errors(summary)
    e.to_csv(out / "errors.csv", index=False, float_format="%.4g")
    print(e.pivot(index="graph", columns="placement", values="mape_pct").round(1).to_string())
    w = winners(summary)
    w.to_csv(out / "winners.csv", index=False, float_format="%.4g")
    for _, r in w.iterrows():
        verdict = "same" if r.measured_winner == r.predicted_winner else f"{r.slower_pct:+.1f}%"
        print(f"{r.graph:16s} measured {r.measured_winner:24s} {r.measured_ms:9.3f} ms  "
              f"predicted {r.predicted_winner:24s} {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
