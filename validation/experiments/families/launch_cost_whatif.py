"""What a fixed cost per launch beyond the model's would do to the H200 families judgement.

The small graphs' launches (ca_grqc, web_edu: about 10 us each) come out 1-3 us
short in every variant and placement. This what-if adds ``extra_us`` to every
launch of every case's latest prediction (`runs/h200/latest/summary.csv`: its
kernel time plus extra_us x its launches) and judges the result against the mean
of the two H200 leases, as `lease_errors.py` does. The model's own knob for such a
cost is `gpu.launch_ns`, which `hostlink.model.predict.launch_floor` adds to every
launch; raising it by extra_us and predicting again would give about these times
(the loaded round trip would move a little with the longer kernels), at the cost
of predicting the 172 cases again. No microbenchmark has
measured such a cost on the H200 (`../launch_walk` measured an empty BFS level
on an H100 only).

Usage: python3 launch_cost_whatif.py [EXTRA_US ...] (default 0.5 1.0 1.5 2.0);
writes runs/h200/latest/launch_cost_whatif.csv (per extra cost, graph and
placement: the MAPE against the leases' mean) and prints the pairs that meet.
"""
from __future__ import annotations

import csv
import importlib.util
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "runs" / "h200" / "latest" / "launch_cost_whatif.csv"


def _lease_errors():
    spec = importlib.util.spec_from_file_location("lease_errors", HERE / "lease_errors.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def whatif(extra_us: float) -> list[dict]:
    """:func:`lease_errors.lease_errors` of the latest predictions, each launch
    ``extra_us`` longer."""
    le = _lease_errors()
    pred = le.predictions(le.SUMMARY)
    its = le.predictions(le.SUMMARY, "iterations")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "summary.csv"
        with open(path, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["case", "metric", "unit", "measured", "predicted", "error_pct"])
            for case, ms in pred.items():
                w.writerow([case, "kernel_time_ms", "ms", "",
                            ms + extra_us * 1e-3 * its.get(case, 0.0), ""])
        return le.lease_errors(path)


def main(argv: list[str]) -> int:
    le = _lease_errors()
    costs = [float(a) for a in argv] or [0.5, 1.0, 1.5, 2.0]
    rows = []
    for extra in [0.0] + costs:
        for r in whatif(extra):
            rows.append({"extra_us": extra, "graph": r["graph"], "placement": r["placement"],
                         "target_pct": r["target_pct"], "mape_mean_pct": r["mape_mean_pct"]})
        meet = [r for r in rows if r["extra_us"] == extra]
        met = sum(r["mape_mean_pct"] <= r["target_pct"] for r in meet)
        missed = ", ".join(f"{r['graph']} {r['placement']} {r['mape_mean_pct']}"
                           for r in meet if r["mape_mean_pct"] > r["target_pct"])
        print(f"+{extra} us a launch: {met} of {len(meet)} pairs meet; misses: {missed}")
    le._write(OUT, rows)
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
