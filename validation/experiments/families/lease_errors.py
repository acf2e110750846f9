"""The H200 report's latest predictions against each of the two H200 leases that ran the
families manifest, and against their mean, per graph and placement.

`runs/h200/latest/summary.csv` holds the latest prediction of every case, made with
the `h200-pcie5` preset and nothing fitted on these runs; `runs/h200-repeat/
repeat_cases.csv` (`hostlink validate repeat`) holds each case's median kernel time on
the first lease (`runs/h200`) and the second (`runs/h200-repeat`). Writes
`runs/h200-repeat/lease_errors.csv`: per graph and placement, the cases, the MAPE
and bias on each lease and on their mean, the target, and prints how many of the
pairs meet it. Writes `runs/h200-repeat/naive_rules.csv` too: the naive zero-copy
cases of `../naive_phases/group_rule.csv` (a naive warp's loads in flight: one, or its
group's) against the mean of the two leases.

With `--summary SUMMARY`, the predictions of another report's `summary.csv` (a later
model's) take the place of `runs/h200/latest`'s: only the cases it holds are judged,
and `lease_errors.csv` is written beside it; the naive rules are left out. Given
more than once, each later SUMMARY adds its cases (a report of the cases the
first left out), and the table goes beside the first.

    python3 validation/experiments/families/lease_errors.py [--summary SUMMARY ...]
"""
from __future__ import annotations

import csv
from pathlib import Path

HERE = Path(__file__).resolve().parent
SUMMARY = HERE / "runs" / "h200" / "latest" / "summary.csv"
REPEAT = HERE / "runs" / "h200-repeat" / "repeat_cases.csv"
OUT = HERE / "runs" / "h200-repeat" / "lease_errors.csv"
RULES = HERE.parent / "naive_phases" / "group_rule.csv"
RULES_OUT = HERE / "runs" / "h200-repeat" / "naive_rules.csv"
TARGET_PCT = {"zerocopy": 10.0, "uvm": 20.0, "device": 20.0}
MEASURES = ("first", "second", "mean")


def predictions(summary: Path = SUMMARY, metric: str = "kernel_time_ms") -> dict[str, float]:
    """Per case of ``summary``, its predicted ``metric`` (kernel time in ms by default)."""
    with open(summary, newline="") as f:
        return {r[0]: float(r[4]) for r in csv.reader(f)
                if len(r) > 4 and r[1] == metric and r[4] not in ("", "predicted")}


def lease_errors(summary: Path | list[Path] = SUMMARY) -> list[dict]:
    """Per (graph, placement): MAPE and bias (%) of the predictions of ``summary`` (or
    of several, a later one's cases over an earlier one's) on each lease and on the mean
    of the two, over the cases they predict."""
    pred = {}
    for one in summary if isinstance(summary, list) else [summary]:
        pred.update(predictions(one))
    errors: dict[tuple[str, str], dict[str, list[float]]] = {}
    with open(REPEAT, newline="") as f:
        for row in csv.DictReader(f):
            case = row["case"]
            if case not in pred:
                continue
            graph, mode = case.split("/")[1], case.split("/")[3]
            first, second = float(row["first"]), float(row["second"])
            by = errors.setdefault((graph, mode), {m: [] for m in MEASURES})
            for name, measured in zip(MEASURES, (first, second, (first + second) / 2)):
                by[name].append(100 * (pred[case] - measured) / measured)
    rows = []
    for (graph, mode), by in sorted(errors.items()):
        row = {"graph": graph, "placement": mode, "cases": len(by["first"]),
               "target_pct": TARGET_PCT[mode]}
        for name, errs in by.items():
            row[f"mape_{name}_pct"] = round(sum(abs(e) for e in errs) / len(errs), 2)
            row[f"bias_{name}_pct"] = round(sum(errs) / len(errs), 2)
        rows.append(row)
    return rows


def naive_rules() -> list[dict]:
    """Per naive zero-copy case of the first H200 lease in ``RULES``: its kernel time on
    each lease and their mean (ms), each rule's prediction and its error against the
    mean (%)."""
    lease = {}
    with open(REPEAT, newline="") as f:
        for row in csv.DictReader(f):
            lease[row["case"]] = (float(row["first"]), float(row["second"]))
    rows = []
    with open(RULES, newline="") as f:
        for row in csv.DictReader(f):
            if not row["run"].endswith("families/runs/h200"):
                continue
            first, second = lease[row["case"]]
            mean = (first + second) / 2
            out = {"case": row["case"], "first_ms": first, "second_ms": second,
                   "mean_ms": round(mean, 4)}
            for rule in ("one_load", "group"):
                predicted = float(row[f"{rule}_ms"])
                out[f"{rule}_ms"] = predicted
                out[f"{rule}_error_pct"] = round(100 * (predicted - mean) / mean, 2)
            rows.append(out)
    return rows


def _write(path: Path, rows: list[dict]) -> None:
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def main(argv: list[str] | None = None) -> int:
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--summary", type=Path, action="append",
                    help="another report's summary.csv (again: more cases)")
    args = ap.parse_args(argv)
    summary = args.summary or SUMMARY
    out = OUT if args.summary is None else args.summary[0].parent / "lease_errors.csv"
    rows = lease_errors(summary)
    _write(out, rows)
    for name in MEASURES:
        met = sum(r[f"mape_{name}_pct"] <= r["target_pct"] for r in rows)
        print(f"{name}: {met} of {len(rows)} graph and placement pairs meet their target")
    if args.summary is not None:
        print(f"wrote {out}")
        return 0
    rules = naive_rules()
    _write(RULES_OUT, rules)
    for rule in ("one_load", "group"):
        errs = [r[f"{rule}_error_pct"] for r in rules]
        print(f"naive zero-copy, {rule} rule, against the leases' mean: MAPE "
              f"{sum(map(abs, errs)) / len(errs):.1f}%, bias {sum(errs) / len(errs):+.1f}% "
              f"({len(errs)} cases, {sum(e < 0 for e in errs)} too fast)")
    print(f"wrote {OUT} and {RULES_OUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
