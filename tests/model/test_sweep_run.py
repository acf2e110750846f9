"""Running sweeps: vectorised analytic batches, the results store, resume, several
writers, local processes and a real Dask cluster."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pandas as pd
import pytest

from hostlink.model.analytic import SizeHistogram, predict_system
from hostlink.model.errors import HostlinkError
from hostlink.model.sweep import (ResultStore, load_configs, load_points, load_results,
                                  load_sweep, resolve_points, run_sweep)
from hostlink.model.sweep import evaluate as sweep_evaluate
from hostlink.model.sweep.store import TIDY_COLUMNS

HOSTLINK = [sys.executable, "-m", "hostlink.model.cli.main"]

GRID = """
[sweep]
name = "{name}"
system = "h100-pcie5"
fidelity = "analytic"

[workload]
kind = "sizes"
sizes_B = [32, 128]
fractions = [0.25, 0.75]

[[axis]]
key = "link.tags"
values = {tags}

[[axis]]
key = "link.rtt_ns"
linspace = {{start = 500, stop = 3000, num = {n_rtt}}}
"""


def grid(tmp_path, name="grid", tags=(32, 64, 128, 256, 512, 768), n_rtt=6, file=None):
    path = tmp_path / (file or f"{name}.toml")
    path.write_text(GRID.format(name=name, tags=list(tags), n_rtt=n_rtt))
    return path


def test_results_equal_the_analytic_model_point_by_point(tmp_path):
    path = grid(tmp_path)
    report = run_sweep(path, tmp_path / "out", jobs=1)
    assert (report.points, report.computed, report.skipped) == (36, 36, 0)
    df = load_results(tmp_path / "out")
    assert list(df.columns[:8]) == list(TIDY_COLUMNS)
    assert set(df["model_kind"]) == {"analytic"} and set(df["experiment"]) == {"grid"}
    wide = load_results(tmp_path / "out", wide=True)
    assert len(wide) == 36
    hist = SizeHistogram.of([32, 128], [0.25, 0.75])
    by_case = {rp.point.case: rp for rp in resolve_points(load_sweep(path))}
    for _, row in wide.iloc[::7].iterrows():
        rp = by_case[row["case"]]
        want = predict_system(rp.system, hist)
        assert row["bw_GBps"] == pytest.approx(float(want.bw_GBps))
        assert row["bw_tags_GBps"] == pytest.approx(float(want.bw_tags_GBps))
        assert row["bound"] == str(want.bound)
        assert row["link.tags"] == rp.parts["link"].tags
        assert row["link.rtt_ns"] == rp.parts["link"].rtt_ns
    # the resolved config of every run is kept, and it is the one the run used
    configs = load_configs(tmp_path / "out")
    assert len(configs) == 36
    some = wide.iloc[5]
    assert configs[some["run_id"]]["link"]["tags"] == some["link.tags"]
    # the sweep file is kept beside its results
    assert [p.read_text() for p in (tmp_path / "out" / "sweeps").iterdir()] == [path.read_text()]


def test_analytic_points_are_evaluated_in_vectorised_batches(tmp_path, monkeypatch):
    calls = []
    real = sweep_evaluate.evaluate_sizes_analytic

    def spy(task):
        calls.append(len(task))
        return real(task)
    monkeypatch.setattr(sweep_evaluate, "evaluate_sizes_analytic", spy)
    report = run_sweep(grid(tmp_path, tags=range(32, 769, 32), n_rtt=100), tmp_path / "out",
                       jobs=1)
    assert report.computed == 2400 and sum(calls) == 2400
    assert len(calls) == report.tasks <= 5   # one model call per batch of >= 500 points
    assert min(calls) >= 500


def test_interrupted_sweep_resumes_without_recomputing(tmp_path, monkeypatch):
    path = grid(tmp_path)
    real = sweep_evaluate.evaluate_task
    evaluated: list[int] = []

    def failing_after_three(task):
        if len(evaluated) == 3:
            raise HostlinkError("simulated failure in the fourth batch")
        evaluated.append(len(task))
        return real(task)
    monkeypatch.setattr(sweep_evaluate, "evaluate_task", failing_after_three)
    with pytest.raises(HostlinkError, match="fourth batch"):
        run_sweep(path, tmp_path / "out", jobs=1, batch_size=5)
    assert evaluated == [5, 5, 5]
    first = load_results(tmp_path / "out", wide=True)
    assert len(first) == 15
    files_before = {p: p.stat().st_mtime_ns for p in (tmp_path / "out" / "results").iterdir()}

    counted: list[int] = []

    def counting(task):
        counted.append(len(task))
        return real(task)
    monkeypatch.setattr(sweep_evaluate, "evaluate_task", counting)
    report = run_sweep(path, tmp_path / "out", jobs=1, batch_size=5)
    assert sum(counted) == 36 - 15          # finished points are not recomputed
    assert (report.skipped, report.computed) == (15, 21)
    for p, mtime in files_before.items():   # ... nor overwritten
        assert p.stat().st_mtime_ns == mtime
    after = load_results(tmp_path / "out", wide=True)
    assert len(after) == 36 and after["run_id"].is_unique
    merged = first.merge(after, on="run_id", suffixes=("_a", "_b"))
    assert np.array_equal(merged["bw_GBps_a"], merged["bw_GBps_b"])

    counted.clear()
    report = run_sweep(path, tmp_path / "out", jobs=1)
    assert counted == [] and report.computed == 0 and report.skipped == 36


def test_a_changed_sweep_resumed_in_its_folder_reads_only_its_own_points(tmp_path):
    # the same sweep name with other values (as after a preset or model change): the
    # folder keeps both versions' runs, the report names the current one's
    old = run_sweep(grid(tmp_path, tags=(32, 64), n_rtt=2), tmp_path / "out", jobs=1)
    new = run_sweep(grid(tmp_path, tags=(128, 256), n_rtt=2), tmp_path / "out", jobs=1)
    assert len(load_results(tmp_path / "out", experiment="grid", wide=True)) == 8
    assert len(new.run_ids) == 4 and not new.run_ids & old.run_ids
    mine = load_results(tmp_path / "out", experiment="grid", wide=True, run_ids=new.run_ids)
    assert set(mine["run_id"]) == set(new.run_ids)
    assert sorted(mine["link.tags"].unique()) == [128, 256]
    assert len(load_results(tmp_path / "out", run_ids=new.run_ids)) == len(
        load_results(tmp_path / "out", experiment="grid", run_ids=new.run_ids))


def test_killed_sweep_resumes(tmp_path):
    """SIGKILL the CLI midway (no clean-up at all), then rerun it."""
    path = grid(tmp_path, tags=range(32, 769, 32), n_rtt=400)   # 9,600 points
    out = tmp_path / "out"
    cmd = HOSTLINK + ["sweep", str(path), "--out", str(out), "--jobs", "1",
                      "--batch-size", "200", "--quiet"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    results = out / "results"
    while time.monotonic() < deadline:
        if results.is_dir() and len(list(results.glob("part-*.parquet"))) >= 3:
            break
        if proc.poll() is not None:
            break
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    # finished = committed results (a points file may have landed without its results)
    done_before = len(ResultStore(out).finished())
    assert 0 < done_before < 9_600, "the sweep was not interrupted midway"
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert f"{9_600 - done_before} computed, {done_before} already done" in res.stdout
    wide = load_results(out, wide=True)
    assert len(wide) == 9_600 and wide["run_id"].is_unique


def test_two_sweeps_writing_to_one_folder(tmp_path):
    """Two processes, overlapping points, one folder: every point stored once, all readable."""
    a = grid(tmp_path, name="a", tags=range(32, 769, 32), n_rtt=200)          # 4,800 points
    b = grid(tmp_path, name="b", tags=range(32, 769, 64), n_rtt=200)          # 2,400 shared
    out = tmp_path / "out"
    procs = [subprocess.Popen(HOSTLINK + ["sweep", str(p), "--out", str(out), "--jobs", "1",
                                          "--batch-size", "100", "--quiet"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for p in (a, b)]
    outs = [p.communicate(timeout=180) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [o[1] for o in outs]
    store = ResultStore(out)
    assert len(store.finished()) == 4800
    long = load_results(out)
    per_run = long.groupby(["run_id", "experiment"]).size()
    assert per_run.nunique() == 1            # no run stored twice, no partial run
    wide = load_results(out, wide=True)
    assert (wide["experiment"] == "a").sum() == 4800
    assert (wide["experiment"] == "b").sum() == 2400
    assert set(wide.loc[wide["experiment"] == "b", "run_id"]) <= set(
        wide.loc[wide["experiment"] == "a", "run_id"])
    assert list(out.glob("**/.tmp-*")) == []


def test_shared_points_gain_membership_without_recomputing(tmp_path):
    run_sweep(grid(tmp_path, name="a"), tmp_path / "out", jobs=1)
    report = run_sweep(grid(tmp_path, name="b", tags=(64, 256)), tmp_path / "out", jobs=1)
    assert (report.computed, report.skipped) == (0, 12)
    b = load_results(tmp_path / "out", experiment="b", wide=True)
    a = load_results(tmp_path / "out", experiment="a", wide=True)
    assert len(b) == 12 and len(a) == 36
    assert set(b["run_id"]) < set(a["run_id"])


def test_local_processes_give_the_same_results(tmp_path):
    path = grid(tmp_path, tags=range(32, 769, 32), n_rtt=50)
    r1 = run_sweep(path, tmp_path / "one", jobs=1)
    r2 = run_sweep(path, tmp_path / "two", jobs=2, batch_size=200)
    assert r2.executor == "2 local processes" and r2.tasks == 6
    a = load_results(tmp_path / "one").sort_values(["run_id", "metric"]).reset_index(drop=True)
    b = load_results(tmp_path / "two").sort_values(["run_id", "metric"]).reset_index(drop=True)
    assert r1.computed == r2.computed == 1200
    pd.testing.assert_frame_equal(a.drop(columns=["experiment"]), b.drop(columns=["experiment"]))


def test_runs_on_a_real_dask_cluster(tmp_path, capsys):
    distributed = pytest.importorskip("distributed")
    from hostlink.model.cli.main import main
    path = grid(tmp_path, tags=range(32, 769, 32), n_rtt=20)
    local = run_sweep(path, tmp_path / "local", jobs=1)
    graph = tmp_path / "graph.toml"
    graph.write_text(textwrap.dedent("""
        [sweep]
        name = "graph"
        system = "v100-pcie3"
        fidelity = "des"
        [workload]
        kind = "graph"
        scale = 8
        degree = 8
        [[axis]]
        key = "workload.variant"
        values = ["naive", "merged"]
        [[axis]]
        key = "link.lanes"
        values = [8, 16]
    """))
    # worker processes: tasks and results really travel between processes
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None, protocol="tcp") as cluster:
        report = run_sweep(path, tmp_path / "dask", dask=cluster.scheduler_address,
                           batch_size=100)
        # the command line, with trace-driven DES points (a graph emulated on the workers)
        assert main(["sweep", str(graph), "--out", str(tmp_path / "g"), "--dask",
                     cluster.scheduler_address]) == 0
    assert "4 computed" in capsys.readouterr().out
    g = load_results(tmp_path / "g", wide=True)
    assert len(g) == 4 and set(g["model_kind"]) == {"des"} and (g["bw_GBps"] > 0).all()
    assert report.executor.startswith("Dask at tcp://") and "2 workers" in report.executor
    assert report.tasks == 5
    assert report.computed == local.computed == 480
    a = load_results(tmp_path / "local", wide=True).set_index("run_id").sort_index()
    b = load_results(tmp_path / "dask", wide=True).set_index("run_id").sort_index()
    assert np.array_equal(a["bw_GBps"].to_numpy(), b["bw_GBps"].to_numpy())


def test_unreachable_dask_scheduler_is_one_clear_error(tmp_path):
    with pytest.raises(HostlinkError, match="cannot reach the Dask scheduler"):
        run_sweep(grid(tmp_path), tmp_path / "out", dask="tcp://127.0.0.1:9", dask_timeout_s=2)


def test_progress_bar_shows_points_and_time_left(tmp_path, capsys):
    run_sweep(grid(tmp_path), tmp_path / "out", jobs=1, progress=True)
    err = capsys.readouterr().err
    assert "36/36" in err and "points" in err and "left" in err


def test_store_ignores_unfinished_temporary_files(tmp_path):
    run_sweep(grid(tmp_path), tmp_path / "out", jobs=1)
    # what a writer killed mid-write leaves behind
    (tmp_path / "out" / "results" / ".tmp-part-x.parquet").write_bytes(b"PAR1 trunc")
    (tmp_path / "out" / "points" / ".tmp-part-x.parquet").write_bytes(b"")
    assert len(load_results(tmp_path / "out", wide=True)) == 36
    assert run_sweep(grid(tmp_path), tmp_path / "out", jobs=1).computed == 0


def test_load_results_of_a_folder_that_is_not_one(tmp_path):
    with pytest.raises(HostlinkError, match="not a sweep results folder"):
        load_results(tmp_path)


def test_points_table_has_parameters_and_environment(tmp_path):
    run_sweep(grid(tmp_path), tmp_path / "out", jobs=1)
    points = load_points(tmp_path / "out")
    for col in ("link.tags", "link.rtt_ns", "link.gen", "workload.sizes_B", "system",
                "fidelity", "git_sha", "host", "created_utc"):
        assert col in points.columns, col
    assert set(points["workload.sizes_B"]) == {"[32, 128]"}
    assert points["run_id"].str.fullmatch(r"[0-9a-f]{16}").all()


def test_synthetic_stream_of_a_size_mix():
    w = {"kind": "sizes", "sizes_B": [32, 128], "fractions": [0.25, 0.75], "offset_B": 0,
         "mode": "zerocopy", "requests": 40_000, "warps": 64, "seed": 7}
    s = sweep_evaluate.synthetic_stream(w)
    assert len(s) == 40_000
    hist = s.size_histogram()
    assert set(hist) == {32, 128}
    assert hist[128] / 40_000 == pytest.approx(0.75, abs=0.01)
    assert int(s.useful_B.sum()) == int(s.size_B.astype(np.int64).sum())
    # grouped by warp, program order within each warp; no request crosses a 128 B line
    key = s.warp.astype(np.int64) * 10**9 + s.inst
    assert np.all(np.diff(key) > 0)
    assert np.all((s.addr % 128) + s.size_B <= 128)
    assert np.array_equal(sweep_evaluate.synthetic_stream(w).size_B, s.size_B)


def test_string_valued_keys_vary_within_one_batch(tmp_path):
    path = tmp_path / "cs.toml"
    path.write_text(textwrap.dedent("""
        [sweep]
        name = "cs"
        system = "h100-pcie5"
        fidelity = "analytic"
        [workload]
        kind = "sizes"
        sizes_B = [64, 128]
        [[axis]]
        key = "link.cpl_split"
        values = ["mps", "rcb"]
        [[axis]]
        key = "link.rcb_B"
        values = [64, 128]
        [[axis]]
        key = "host.burst_B"
        values = [64, 128]
    """))
    report = run_sweep(path, tmp_path / "out", jobs=1)
    assert report.tasks == 1 and report.computed == 8
    wide = load_results(tmp_path / "out", wide=True)
    hist = SizeHistogram.of([64, 128], [0.5, 0.5])
    for rp in resolve_points(load_sweep(path)):
        row = wide[wide["run_id"] == rp.run_id].iloc[0]
        want = predict_system(rp.system, hist)
        assert row["bw_GBps"] == pytest.approx(float(want.bw_GBps), rel=1e-12)
        assert row["wire_efficiency_down"] == pytest.approx(float(want.wire_efficiency_down))
        assert row["link.cpl_split"] == rp.parts["link"].cpl_split


def test_managed_memory_on_the_host_is_a_graph_workload_mode():
    """A graph workload in mode uvm_accessedby reads the same requests as zero-copy
    (one stream for both) and is timed with the managed memory's own page walks."""
    from hostlink.model.config import load_system
    from hostlink.model.sweep.workloads import normalise_workload
    from hostlink.model.workload import SPACE_HOST

    base = {"kind": "graph", "graph": "urand", "scale": 10, "degree": 8, "kernel": "bfs",
            "variant": "merged_aligned", "id_bytes": 8}
    zc = normalise_workload({**base, "mode": "zerocopy"}, "test", fidelity="des")
    ab = normalise_workload({**base, "mode": "uvm_accessedby"}, "test", fidelity="des")
    assert ab["mode"] == "uvm_accessedby"
    gpu = load_system("h100-pcie5").gpu
    assert sweep_evaluate.stream_key(zc, gpu) == sweep_evaluate.stream_key(ab, gpu)
    assert sweep_evaluate.stream_key(zc, gpu) != sweep_evaluate.stream_key(
        {**zc, "mode": "device"}, gpu)
    s = sweep_evaluate.graph_stream(ab, gpu).stream
    assert len(s) > 0 and (s.space == SPACE_HOST).any()
    with pytest.raises(HostlinkError, match="mode"):
        normalise_workload({**base, "mode": "accessedby"}, "sweep.toml [[workload]] 1")
