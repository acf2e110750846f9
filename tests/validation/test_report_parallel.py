"""``hostlink validate report --jobs N``: the one-process report from worker processes.

The measured run is made by the model itself (microbenchmarks: twins.synthesize on
the h100-pcie5 preset, analytic fidelity, ld.cv host loads) plus BFS cases on two
regenerated graphs (kron8 and urand8, GAP's default seed) in several memory modes,
whose measured kernel times are placeholders (the tests compare a report made
with workers against one made without), and one traversal twin that cannot be
built (no source recorded for it), a stored failure.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hostlink.model.cli.main import main
from hostlink.validation import parallel, report, twins
from hostlink.validation.results_io import make_table, read_results, write_results

MAXREQ = 8192
SEED = 27491095                          # GAP's default generator seed (twins tests use it too)
REAL_BUILD_MICRO = twins.build_micro
UNBUILT = "bfs/kron8/merged/zerocopy/8B"
TRAVERSALS = [("kron8", "merged_aligned", "zerocopy", 8), ("kron8", "merged_aligned", "device", 8),
              ("kron8", "merged_aligned", "uvm", 8), ("kron8", "naive", "zerocopy", 4),
              ("kron8", "naive", "registered", 4), ("urand8", "merged", "zerocopy", 8),
              ("urand8", "merged", "uvm_readmostly", 8)]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    from hostlink.model.config import load_system
    from hostlink.traces.graphs.generators import generate
    from hostlink.validation.manifest import micro_case_name
    truth = load_system("h100-pcie5", {"link.rtt_ns": 1300.0})
    cases = {}
    for stride in (128, 4096):
        naming = dict(memory_mode="zerocopy", stride_B=stride, footprint_B=64 << 20,
                      order="random", cache="cv")
        cases[micro_case_name("ptr_chase", naming)] = dict(kind="micro", benchmark="ptr_chase",
                                                           **naming, steps=300)
    for w in (1, 66, 264, 1056):
        naming = dict(pattern="coalesced", offset_B=0, bytes_per_lane=4, memory_mode="zerocopy",
                      warps=w, unroll=1, cache="cv")
        cases[micro_case_name("zc_warps", naming)] = dict(kind="micro", benchmark="zc_warps",
                                                          **naming, total_B=64 << 20,
                                                          max_per_warp_B=1 << 20)
    measured = twins.synthesize(cases, truth, fidelity="analytic", noise_pct=2.0, seed=3,
                                max_requests=MAXREQ)
    graphs = {}
    rows = []
    for kind in ("kron", "urand"):
        csr = generate(kind, 8, 16, SEED, weighted=True, id_bytes=8, name=f"{kind}8")
        hubs = [int(v) for v in np.argsort(np.diff(csr.offsets))[-2:]]
        graphs[f"{kind}8"] = dict(kind=kind, scale=8, degree=16, seed=SEED, hubs=hubs)
    for graph, variant, mode, idb in TRAVERSALS + [("kron8", "merged", "zerocopy", 8)]:
        case = f"bfs/{graph}/{variant}/{mode}/{idb}B"
        cases[case] = dict(kind="traversal", kernel="bfs", graph=graph, variant=variant,
                           memory_mode=mode, id_bytes=idb, reps=1,
                           sources=[] if case == UNBUILT else graphs[graph]["hubs"])
        rows += [("r", "synthetic", case, "measured", "kernel_time_ms", 0.05, "ms", rep)
                 for rep in range(2)]
    path = tmp_path_factory.mktemp("run")
    write_results(pd.concat([measured, make_table(rows)], ignore_index=True), path)
    meta = {"cases": cases, "graphs": {g: {k: v for k, v in d.items() if k != "hubs"}
                                       for g, d in graphs.items()}}
    (path / "metadata.json").write_text(json.dumps(meta))
    return path


N_MICRO = 6
N_CASES = N_MICRO + len(TRAVERSALS) + 1


def _build(run_dir, out, **kw):
    kw.setdefault("fidelity", "analytic")
    kw.setdefault("max_requests", MAXREQ)
    return report.build_report(run_dir, "h100-pcie5", out_dir=out, **kw)


@pytest.fixture(scope="module")
def one_process(run_dir, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("jobs1")
    _build(run_dir, out, jobs=1)
    return out


def _stored(out: Path) -> dict:
    return json.loads((out / report.PREDICTIONS_JSON).read_text())


def _sorted_rows(out: Path) -> pd.DataFrame:
    t = read_results(out / report.PREDICTIONS_PARQUET)
    return t.sort_values(["case", "metric", "rep"]).reset_index(drop=True)


def _without_timing(md: str, out: Path) -> list[str]:
    """report.md less its wall-clock table rows, OUT for the output directory."""
    lines = md.replace(str(out), "OUT").splitlines()
    start = lines.index("## Model run time")
    end = lines.index("## Plots")
    return lines[:start] + [ln for ln in lines[start:end] if not ln.startswith("| `")] + lines[end:]


def test_two_workers_give_the_one_process_report(tmp_path, run_dir, one_process):
    out = tmp_path / "jobs2"
    res = _build(run_dir, out, jobs=2)
    assert res["predicted"] == N_CASES and res["resumed"] == 0
    a, b = one_process, out
    assert (a / "summary.csv").read_bytes() == (b / "summary.csv").read_bytes()
    assert _without_timing((a / "report.md").read_text(), a) == \
        _without_timing((b / "report.md").read_text(), b)
    for name in ("predicted_vs_measured", "error_by_group", "mape_by_group"):
        assert (a / "plots" / f"{name}.png").read_bytes() == (b / "plots" / f"{name}.png").read_bytes()
    pd.testing.assert_frame_equal(_sorted_rows(a), _sorted_rows(b), check_exact=True)
    sa, sb = _stored(a), _stored(b)
    assert sa["key"] == sb["key"] and set(sa["cases"]) == set(sb["cases"])
    for case, entry in sa["cases"].items():
        other = sb["cases"][case]
        assert {k: v for k, v in entry.items() if k != "timing"} == \
            {k: v for k, v in other.items() if k != "timing"}
        assert (entry["timing"] is None) == (other["timing"] is None)
        if other["timing"] and case.startswith("micro/"):
            assert other["timing"] == entry["timing"] and other["timing"]["bound"]
        elif other["timing"]:
            assert other["timing"]["sources"] == 2 and other["timing"]["requests"] > 0
    assert sb["cases"][UNBUILT]["failure"] and "no sources" in sb["cases"][UNBUILT]["failure"]
    assert list(res["timings"]["case"]) == sorted(
        res["timings"]["case"], key=lambda c: report._case_order(twins.load_run(run_dir), c))


def test_units_keep_a_configurations_memory_modes_together(run_dir):
    run = twins.load_run(run_dir)
    units = parallel.work_units(run, list(run.measured["case"].unique()))
    assert [u.cases for u in units[:N_MICRO]] == [(c,) for c in sorted(
        (c for c in run.cases if c.startswith("micro/")), key=lambda c: report._case_order(run, c))]
    trav = [(u.graph, [c.split("/")[3] for c in u.cases]) for u in units[N_MICRO:]]
    assert trav == [("kron8", ["zerocopy"]),                      # merged 8B, no source
                    ("kron8", ["device", "uvm", "zerocopy"]),     # merged_aligned 8B
                    ("kron8", ["registered", "zerocopy"]),        # naive 4B
                    ("urand8", ["uvm_readmostly", "zerocopy"])]   # merged 8B
    flat = [c for u in units for c in u.cases]
    assert flat == sorted(run.cases, key=lambda c: report._case_order(run, c))
    assert [g for g, _ in parallel.phases(units)] == [None, "kron8", "urand8"]


def test_jobs_zero_is_one_per_cpu_and_negative_is_an_error(tmp_path, capsys, run_dir):
    assert parallel.resolve_jobs(0) == os.cpu_count()
    assert parallel.resolve_jobs(3) == 3
    with pytest.raises(report.ReportError, match="--jobs must be 0"):
        parallel.resolve_jobs(-1)
    argv = ["validate", "report", str(run_dir), "--system", "h100-pcie5", "--fidelity",
            "analytic", "--max-requests", str(MAXREQ), "--out", str(tmp_path / "o"), "--quiet"]
    assert main(argv + ["--jobs", "-2"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--jobs must be 0 (one per CPU) or a positive number, not -2" in err
    assert not (tmp_path / "o" / report.PREDICTIONS_JSON).exists()


def _failing_micro(bad: str, how: str):
    def build(case, *a, **kw):
        if case == bad:
            if how == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            raise RuntimeError("crash forced\nby the test")
        return REAL_BUILD_MICRO(case, *a, **kw)
    return build


def _micro_in_order(run_dir) -> list[str]:
    run = twins.load_run(run_dir)
    return sorted((c for c in run.cases if c.startswith("micro/")),
                  key=lambda c: report._case_order(run, c))


def test_a_worker_that_raises_names_the_case_and_keeps_the_finished(tmp_path, monkeypatch,
                                                                    capsys, run_dir,
                                                                    one_process):
    bad = _micro_in_order(run_dir)[3]
    monkeypatch.setattr(twins, "build_micro", _failing_micro(bad, "raise"))
    out = tmp_path / "out"
    argv = ["validate", "report", str(run_dir), "--system", "h100-pcie5", "--fidelity",
            "analytic", "--max-requests", str(MAXREQ), "--out", str(out), "--quiet",
            "--jobs", "2"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err == (f"hostlink: error: case '{bad}' failed in a worker process: "
                   "RuntimeError: crash forced by the test\n")
    stored = _stored(out)["cases"]
    assert bad not in stored and len(stored) >= 2     # the cases before it, one perhaps in flight
    assert len(read_results(out / report.PREDICTIONS_PARQUET)["case"].unique()) == len(stored)

    monkeypatch.setattr(twins, "build_micro", REAL_BUILD_MICRO)
    res = _build(run_dir, out, jobs=2)
    assert res["resumed"] == len(stored) and res["predicted"] == N_CASES - len(stored)
    assert (out / "summary.csv").read_bytes() == (one_process / "summary.csv").read_bytes()


def test_a_worker_that_dies_stops_the_report(tmp_path, monkeypatch, run_dir):
    bad = _micro_in_order(run_dir)[2]
    monkeypatch.setattr(twins, "build_micro", _failing_micro(bad, "kill"))
    with pytest.raises(parallel.WorkerError, match=r"ended \(pid \d+ killed by SIGKILL\) while "
                                                   rf"predicting '{bad}'"):
        _build(run_dir, tmp_path / "out", jobs=2)
    assert bad not in _stored(tmp_path / "out")["cases"]


KILLER = textwrap.dedent("""
    import os, signal, sys
    from hostlink.validation import report, report_store
    report_store.FLUSH_EVERY_CASES = 1
    real, calls = report.PredictionStore.add, [0]
    def add(self, *a, **kw):
        real(self, *a, **kw)
        calls[0] += 1
        if calls[0] >= int(sys.argv[1]):
            os.kill(os.getpid(), signal.SIGKILL)
    report.PredictionStore.add = add
    from hostlink.model.cli.main import main
    main(sys.argv[2:])
""")


def test_a_kill_mid_run_with_two_workers_resumes(tmp_path, capsys, run_dir, one_process):
    out = tmp_path / "out"
    argv = ["validate", "report", str(run_dir), "--system", "h100-pcie5", "--fidelity",
            "analytic", "--max-requests", str(MAXREQ), "--out", str(out), "--quiet",
            "--jobs", "2"]
    env = dict(os.environ, MPLBACKEND="Agg")
    proc = subprocess.run([sys.executable, "-c", KILLER, "8", *argv], env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert len(_stored(out)["cases"]) == 8                 # written as they arrived
    capsys.readouterr()
    assert main(argv) == 0
    assert f"8 cases taken from {out / report.PREDICTIONS_PARQUET}, {N_CASES - 8} predicted now" \
        in capsys.readouterr().out
    assert len(_stored(out)["cases"]) == N_CASES
    assert (out / "summary.csv").read_bytes() == (one_process / "summary.csv").read_bytes()
