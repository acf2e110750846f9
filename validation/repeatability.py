"""``hostlink validate repeat``: how far two measured runs of the same cases agree.

Two runs of one manifest on machines of the same kind (or the same machine on
another day) differ by run-to-run variation alone: the GPU's and the driver's
state, the host, other tenants. A model cannot be judged more finely than that,
so this compares the runs case by case on each case's primary metric
(:func:`hostlink.validation.twins.primary_metric`: bandwidth, latency, time):

- per case: the median over each run's repetitions, ``diff_pct`` = 100 (second
  - first) / first, and each run's spread (largest less smallest repetition,
  over the median, in percent);
- per group (:func:`hostlink.validation.twins.case_group`, the report's
  groups): the cases both runs hold, the median and largest ``|diff_pct|``, the
  signed median (a shift of the whole group) and the median spreads.

Only cases both runs hold are compared; how many each run holds alone is
reported. Traversal cases compare their median over sources and repetitions.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from hostlink.model.errors import HostlinkError

if TYPE_CHECKING:
    import pandas as pd

# pandas and the twins are imported where a comparison is made: the CLI imports this
# module on every start to register its command

CASE_COLUMNS = ("case", "group", "metric", "unit", "first", "second", "diff_pct",
                "first_spread_pct", "second_spread_pct", "first_reps", "second_reps")


class RepeatError(HostlinkError):
    """Runs that cannot be compared (no case in common)."""


@dataclass
class Comparison:
    first: str
    second: str
    cases: pd.DataFrame             # one row per case both runs hold (CASE_COLUMNS)
    groups: pd.DataFrame            # one row per group
    only_first: list[str]
    only_second: list[str]


def case_medians(run) -> pd.DataFrame:
    """Median, spread and repetitions of each case's primary metric in one run."""
    import pandas as pd

    from hostlink.validation.twins import case_group, primary_metric
    rows = []
    by_key = {k: d for k, d in run.measured.groupby(["case", "metric"], sort=False)}
    for case, params in run.cases.items():
        metric = primary_metric(params)
        v = by_key.get((case, metric))
        if v is None:
            continue
        vals = v["value"].to_numpy(dtype=float)
        vals = vals[np.isfinite(vals)]
        if not len(vals):
            continue
        med = float(np.median(vals))
        spread = 100.0 * float(vals.max() - vals.min()) / med if med else math.nan
        rows.append((case, case_group(case, params), metric, str(v["unit"].iloc[0]), med,
                     spread, len(vals)))
    return pd.DataFrame(rows, columns=["case", "group", "metric", "unit", "median", "spread_pct",
                                       "reps"]).set_index("case")


def compare_runs(first: str | Path, second: str | Path) -> Comparison:
    """Compare two results directories (``hostlink validate run`` outputs) case by case."""
    import pandas as pd

    from hostlink.validation.twins import load_run

    a, b = case_medians(load_run(first)), case_medians(load_run(second))
    common = [c for c in a.index if c in b.index and a.at[c, "metric"] == b.at[c, "metric"]]
    if not common:
        raise RepeatError(f"{first} and {second} hold no case in common: nothing to compare")
    ca, cb = a.loc[common], b.loc[common]
    cases = pd.DataFrame({
        "case": common, "group": ca["group"].to_numpy(), "metric": ca["metric"].to_numpy(),
        "unit": ca["unit"].to_numpy(), "first": ca["median"].to_numpy(),
        "second": cb["median"].to_numpy(),
        "diff_pct": 100.0 * (cb["median"].to_numpy() - ca["median"].to_numpy())
        / ca["median"].to_numpy(),
        "first_spread_pct": ca["spread_pct"].to_numpy(),
        "second_spread_pct": cb["spread_pct"].to_numpy(),
        "first_reps": ca["reps"].to_numpy(), "second_reps": cb["reps"].to_numpy()})
    groups = []
    for g, d in cases.groupby("group", sort=True):
        ad = d["diff_pct"].abs()
        groups.append({"group": g, "metric": d["metric"].iloc[0], "cases": len(d),
                       "median_abs_diff_pct": float(ad.median()),
                       "max_abs_diff_pct": float(ad.max()),
                       "signed_median_diff_pct": float(d["diff_pct"].median()),
                       "first_spread_pct": float(d["first_spread_pct"].median()),
                       "second_spread_pct": float(d["second_spread_pct"].median())})
    return Comparison(str(first), str(second), cases, pd.DataFrame(groups),
                      only_first=sorted(set(a.index) - set(common)),
                      only_second=sorted(set(b.index) - set(common)))


def _fmt(x: float) -> str:
    return "-" if not np.isfinite(x) else f"{x:+.1f}" if x < 0 else f"{x:.1f}"


def format_markdown(cmp: Comparison, *, worst: int = 10) -> str:
    """The comparison as a markdown page: the groups, then the cases that differ most."""
    lines = [f"# Repeatability: `{cmp.second}` against `{cmp.first}`", "",
             f"- cases in both runs: {len(cmp.cases)}; only in the first: {len(cmp.only_first)}; "
             f"only in the second: {len(cmp.only_second)}",
             "- diff % = 100 (second - first) / first, on each case's primary metric (median "
             "over its repetitions); spread % = (largest - smallest repetition) / median, "
             "within one run", "",
             "| group | metric | cases | median abs diff % | max abs diff % | signed median % "
             "| spread first % | spread second % |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    for r in cmp.groups.itertuples():
        lines.append(f"| `{r.group}` | {r.metric} | {r.cases} | {_fmt(r.median_abs_diff_pct)} | "
                     f"{_fmt(r.max_abs_diff_pct)} | {_fmt(r.signed_median_diff_pct)} | "
                     f"{_fmt(r.first_spread_pct)} | {_fmt(r.second_spread_pct)} |")
    top = cmp.cases.reindex(cmp.cases["diff_pct"].abs().sort_values(ascending=False).index)
    lines += ["", f"## The {min(worst, len(top))} cases that differ most", "",
              "| case | first | second | diff % |", "|---|---:|---:|---:|"]
    for r in top.head(worst).itertuples():
        lines.append(f"| `{r.case}` | {r.first:.4g} {r.unit} | {r.second:.4g} {r.unit} | "
                     f"{_fmt(r.diff_pct)} |")
    return "\n".join(lines) + "\n"


def format_table(cmp: Comparison) -> str:
    """The per-group summary for the terminal."""
    out = [f"{len(cmp.cases)} cases in both runs ({len(cmp.only_first)} only in the first, "
           f"{len(cmp.only_second)} only in the second)"]
    for r in cmp.groups.itertuples():
        out.append(f"  {r.group:44s} {r.cases:4d} cases  |diff| median {r.median_abs_diff_pct:5.1f}%"
                   f"  max {r.max_abs_diff_pct:5.1f}%  shift {r.signed_median_diff_pct:+5.1f}%")
    return "\n".join(out)


def _cmd_repeat(args) -> int:
    cmp = compare_runs(args.first, args.second)
    print(format_table(cmp))
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        cmp.cases.to_csv(out / "repeat_cases.csv", index=False, float_format="%.6g")
        (out / "repeat.md").write_text(format_markdown(cmp))
        print(f"wrote {out / 'repeat.md'} and {out / 'repeat_cases.csv'}")
    return 0


def register_validate_commands(sub) -> None:
    # argparse's usual shape, alike to the other validate commands' on purpose
    p = sub.add_parser("repeat", help="how far two measured runs of the same cases agree "
                                      "(run-to-run variation)")
    p.add_argument("first", metavar="FIRST", help="results directory of the earlier run")
    p.add_argument("second", metavar="SECOND", help="results directory of the later run")
    p.add_argument("--out", default=None, help="write repeat.md and repeat_cases.csv here")
    p.set_defaults(func=_cmd_repeat)
