"""Benchmark: a scale-21 BFS through every door, against the report's twin.

The H200's first_run report predicts BFS merged_aligned with 8 B ids on GAP kron
scale 21 (zero-copy and UVM) with the calibration its header names
(validation/experiments/atomic_warps/runs/h200/calibrated.toml). A user predicting the
same run asks the h200-pcie5 preset, either from the graph (``hostlink predict
--graph``) or from a trace that ``hostlink trace gen`` wrote (``hostlink
predict --trace``). This benchmark runs all three for the report's first source
and records each door's time, the ratio UVM / zero-copy, and each command's wall
time and peak memory.

Targets (the acceptance of "one model behind every command"): the trace's
prediction within 15% (zero-copy) and 25% (UVM) of the twin's, and its ratio
UVM / zero-copy within 20%; the graph's equal to the twin's to 0.1%. Writes
tests/bench/results/one_door.json (``--out`` elsewhere). Exits 1 if a target
is missed. Needs about 3 GB of memory and, on 2 cores, about 6 minutes (the
graph is generated once and kept in the twins' graph cache).
"""
from __future__ import annotations

import json
import platform
import re
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from hostlink.validation.data_tree import run_dir

REPO = Path(__file__).resolve().parents[2]
RESULTS = Path(__file__).resolve().parent / "results" / "one_door.json"
RUN = run_dir("first_run", "h200")
CASE = "bfs/kron21/merged_aligned/{mode}/8B"
TARGET_PCT = {"zerocopy": 15.0, "uvm": 25.0}
RATIO_TARGET_PCT = 20.0
GRAPH_TARGET_PCT = 0.1


def _run(args: list[str]) -> tuple[str, float, float]:
    """(stdout, wall s, peak RSS GB) of one ``hostlink`` command."""
    cmd = ["/usr/bin/time", "-f", "%e %M", sys.executable, "-m", "hostlink.model.cli.main",
           *args]
    done = subprocess.run(cmd, capture_output=True, text=True, check=True)
    wall, rss_kB = done.stderr.strip().splitlines()[-1].split()
    return done.stdout, float(wall), float(rss_kB) / 1e6


def _cli(args: list[str]) -> tuple[float, float, float]:
    """(predicted ms, wall s, peak RSS GB) of one ``hostlink predict``."""
    out, wall, peak = _run(args)
    return float(re.search(r": ([0-9.e+]+) ms over", out).group(1)), wall, peak


def main(argv: list[str]) -> int:
    from hostlink.model.config import load_any_system
    from hostlink.traces.graphs.writers import write_bel
    from hostlink.validation.twin_common import load_run
    from hostlink.validation.twin_traversal import GraphSource, predict_traversal

    out = Path(argv[argv.index("--out") + 1]) if "--out" in argv else RESULTS
    run = load_run(RUN)
    graphs = GraphSource(run)
    system = load_any_system(str(RUN.parent / "atomic_warps" / "calibrated.toml"))
    source = int(run.cases[CASE.format(mode="zerocopy")]["sources"][0])
    rows: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        prefix = Path(tmp) / "kron21"
        write_bel(graphs.get("kron21"), prefix)
        trace = Path(tmp) / "trace"
        _run(["trace", "gen", "--kernel", "bfs", "--variant", "merged_aligned", "--graph",
              str(prefix), "--id-bytes", "8", "--source", str(source), "--out", str(trace)])
        for mode in ("zerocopy", "uvm"):
            t0 = time.perf_counter()
            twin = dict((m, v) for m, v, _ in predict_traversal(
                CASE.format(mode=mode), run.cases[CASE.format(mode=mode)], system, graphs,
                max_sources=1))
            twin_s = time.perf_counter() - t0
            common = ["predict", "--system", "h200-pcie5", "--fidelity", "des", "--mode", mode]
            g_ms, g_s, g_GB = _cli([*common, "--graph", str(prefix), "--source", str(source)])
            t_ms, t_s, t_GB = _cli([*common, "--trace", str(trace)])
            rows[mode] = {"twin_ms": twin["time_ms"], "twin_s": round(twin_s, 1),
                          "graph_ms": g_ms, "graph_s": g_s, "graph_peak_GB": g_GB,
                          "trace_ms": t_ms, "trace_s": t_s, "trace_peak_GB": t_GB,
                          "graph_off_pct": 100 * (g_ms / twin["time_ms"] - 1),
                          "trace_off_pct": 100 * (t_ms / twin["time_ms"] - 1)}
            print(json.dumps({mode: rows[mode]}), flush=True)
    ratio_twin = rows["uvm"]["twin_ms"] / rows["zerocopy"]["twin_ms"]
    ratio_trace = rows["uvm"]["trace_ms"] / rows["zerocopy"]["trace_ms"]
    ratio_off = 100 * (ratio_trace / ratio_twin - 1)
    missed = [m for m in TARGET_PCT if abs(rows[m]["trace_off_pct"]) > TARGET_PCT[m]]
    missed += [f"{m} graph" for m in TARGET_PCT if abs(rows[m]["graph_off_pct"]) > GRAPH_TARGET_PCT]
    missed += ["ratio"] if abs(ratio_off) > RATIO_TARGET_PCT else []
    record = {"recorded_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
              "machine": {"cpus": __import__("os").cpu_count(), "python": platform.python_version()},
              "case": CASE.format(mode="*"), "source": source, "system": "h200-pcie5",
              "twin_system": str((RUN.parent / "atomic_warps" / "calibrated.toml").relative_to(REPO)),
              "modes": rows, "ratio_uvm_over_zerocopy": {"twin": ratio_twin, "trace": ratio_trace,
                                                         "off_pct": ratio_off},
              "targets_pct": {**TARGET_PCT, "ratio": RATIO_TARGET_PCT, "graph": GRAPH_TARGET_PCT},
              "missed": missed}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=1) + "\n")
    print(f"ratio UVM/zero-copy: twin {ratio_twin:.3f}, trace {ratio_trace:.3f} "
          f"({ratio_off:+.1f}%); missed: {', '.join(missed) or 'none'}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
