"""Benchmark: the loaded round trip settled between two passes against a third pass.

A large zero-copy run's loaded round trip settles between its first two engine
passes, blended (:mod:`hostlink.model.loaded_rtt`), where before a third pass
ran. Each case is predicted both ways by the same code, each in its own process
(``hostlink predict --graph``, h200-pcie5, des, 8 B ids): once with the blend
(as shipped) and once with ``BLEND_MIN_REQUESTS`` above any stream, so that the
passes run as before. Recorded per case: both predicted times, their difference,
the CPU seconds (user + system) and peak resident memory of each process.

The cases: BFS on GAP kron scale 21 (the H200 first_run's graph and source, from
the twins' graph cache) in every variant; on the families run's dense16 (urand of
degree 128, whose naive run is bound by host DRAM at the first pass and by the
tags at the second, so it runs its third) and on a 2000 x 2000 grid with shuffled
ids (``hostlink graph gen grid``), in the merged_aligned and naive variants.
Target: the blended prediction within 0.1% of the passes' on every case. Writes
tests/bench/results/round_trip_blend.json (``--out`` elsewhere); exits 1 if a
case misses. About 10 minutes on the 2-core machine.
"""
from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from results_record import write_record

REPO = Path(__file__).resolve().parents[2]
RESULTS = Path(__file__).resolve().parent / "results" / "round_trip_blend.json"
RUN = REPO / "validation" / "experiments" / "first_run" / "runs" / "h200"
FAMILIES = REPO / "validation" / "experiments" / "families" / "runs" / "h200"
KRON_VARIANTS = ("merged_aligned", "merged", "chunked", "balanced", "naive")
GRID_VARIANTS = ("merged_aligned", "naive")
TARGET_PCT = 0.1


def _child(how: str, args: list[str]) -> int:
    """``hostlink`` with ``args``, the round trip settled ``how`` ("blend" or "passes")."""
    from hostlink.model import loaded_rtt
    from hostlink.model.cli.main import main
    if how == "passes":
        loaded_rtt.BLEND_MIN_REQUESTS = 1 << 62
    return main(args)


def _predict(how: str, prefix: Path, variant: str, source: int | None, out: Path) -> dict:
    args = ["predict", "--system", "h200-pcie5", "--fidelity", "des", "--mode", "zerocopy",
            "--graph", str(prefix), "--id-bytes", "8", "--kernel", "bfs", "--variant", variant,
            "--out", str(out)]
    if source is not None:
        args += ["--source", str(source)]
    cmd = ["/usr/bin/time", "-f", "%U %S %M", sys.executable, __file__, "--child", how, *args]
    done = subprocess.run(cmd, capture_output=True, text=True, check=True)
    user, system, rss_kB = done.stderr.strip().splitlines()[-1].split()
    pred = json.loads((out / "prediction.json").read_text())
    return {"predicted_ms": pred["time_s"] * 1e3,
            "loaded_rtt_ns": pred["extra"]["loaded_rtt_ns"]["loaded"],
            "cpu_s": round(float(user) + float(system), 2), "peak_GB": int(rss_kB) / 1e6}


def _graphs(tmp: Path) -> list[tuple[str, Path, int | None, tuple[str, ...]]]:
    from hostlink.traces.graphs.writers import write_bel
    from hostlink.validation.twin_common import load_run
    from hostlink.validation.twin_traversal import GraphSource
    out = []
    for run_dir, graph, variants in ((RUN, "kron21", KRON_VARIANTS),
                                     (FAMILIES, "dense16", GRID_VARIANTS)):
        run = load_run(run_dir)
        source = int(run.cases[f"bfs/{graph}/merged_aligned/zerocopy/8B"]["sources"][0])
        write_bel(GraphSource(run).get(graph), tmp / graph)
        out.append((graph, tmp / graph, source, variants))
    grid = tmp / "grid"
    subprocess.run([sys.executable, "-m", "hostlink.model.cli.main", "graph", "gen", "grid",
                    "--dims", "2000x2000", "--no-weights", "--out", str(grid)],
                   check=True, capture_output=True)
    return out + [("grid2000", grid, None, GRID_VARIANTS)]


def main(argv: list[str]) -> int:
    if argv[:1] == ["--child"]:
        return _child(argv[1], argv[2:])
    out_path = Path(argv[argv.index("--out") + 1]) if "--out" in argv else RESULTS
    cases = {}
    with tempfile.TemporaryDirectory(prefix="bench_blend.") as tmp:
        tmp = Path(tmp)
        for graph, prefix, source, variants in _graphs(tmp):
            for variant in variants:
                row = {how: _predict(how, prefix, variant, source, tmp / how)
                       for how in ("passes", "blend")}
                row["diff_pct"] = 100 * (row["blend"]["predicted_ms"]
                                         / row["passes"]["predicted_ms"] - 1)
                row["cpu_ratio"] = row["blend"]["cpu_s"] / row["passes"]["cpu_s"]
                cases[f"{graph}/{variant}"] = row
                print(f"{graph}/{variant}: {row['diff_pct']:+.4f}%, CPU "
                      f"{row['passes']['cpu_s']:.1f} -> {row['blend']['cpu_s']:.1f} s",
                      flush=True)
    missed = [k for k, v in cases.items() if abs(v["diff_pct"]) > TARGET_PCT]
    return write_record(out_path, {"system": "h200-pcie5", "target_pct": TARGET_PCT,
                                   "cases": cases}, missed)

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
