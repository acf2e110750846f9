"""The committed scale-24 UVM sessions: first touch and BFS in managed memory on one lease.

Each run (``validation/experiments/uvm_session24/manifest.toml``) measures UVM first touch and then
BFS merged_aligned on kron24 and urand24 in managed memory (no advice and ReadMostly,
8 and 4 B ids) on the same machine; its calibration fits the UVM costs on that first
touch only and its report predicts the BFS held out (first source of each graph). The
the UVM target is 25% MAPE. These tests read what the runs' folders commit
(results, metadata, calibrated config, summary), so they fail if a committed report or
calibration is replaced by one that no longer meets, or no longer comes from its own run.
"""
from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pandas as pd
import pytest

from hostlink.validation.report import (UVM_TARGET_PCT, annotate, group_stats, mape,
                                        read_summary)
from hostlink.validation.data_tree import EXPERIMENTS
from hostlink.validation.results_io import read_results

RESULTS = EXPERIMENTS / "uvm_session24" / "runs"
RUNS = ["h200", "h200-repeat", "h100"]
#: the BFS cases each run predicts: 2 graphs x 2 modes x 2 id widths
BFS_CASES = {f"bfs/{g}/merged_aligned/{m}/{i}B" for g in ("kron24", "urand24")
             for m in ("uvm", "uvm_readmostly") for i in (8, 4)}


def _stats(run: str) -> tuple[dict, pd.DataFrame]:
    """Per group, the stats the report gives, and the annotated summary they come from."""
    folder = RESULTS / run
    cases = json.loads((folder / "metadata.json").read_text())["cases"]
    annotated = annotate(read_summary(folder / "summary.csv"), cases)
    return {s.group: s for s in group_stats(annotated, set())}, annotated


@pytest.mark.parametrize("run", RUNS)
def test_the_run_measured_every_case_and_every_check_passed(run):
    meta = json.loads((RESULTS / run / "metadata.json").read_text())
    assert meta["check_failures"] == 0 and not meta["missing_cases"]
    assert all(job["status"] == "finished" and job["returncode"] == 0 for job in meta["jobs"])
    env = json.loads((RESULTS / run / "environment.json").read_text())
    assert env["gpu"]["pcie_link_gen_current"] == 5 and env["gpu"]["pcie_link_width_current"] == 16
    measured = read_results(RESULTS / run / "results.parquet")
    bfs = measured[(measured.metric == "kernel_time_ms") & measured.case.str.startswith("bfs/")]
    assert set(bfs.case) == BFS_CASES
    assert bfs.groupby("case").size().eq(4).all()  # 2 sources x 2 repetitions


@pytest.mark.parametrize("run", RUNS)
def test_uvm_costs_come_from_the_runs_own_first_touch(run):
    """The batch, per-block, per-page and one-off costs live in the system; each names
    this run as where it was measured."""
    system = tomllib.loads((RESULTS / run / "calibrated.toml").read_text())["resolved_system"]
    calibration = json.loads((RESULTS / run / "calibration.json").read_text())
    provenance = system["provenance"]
    for key in ("uvm.batch_base_us", "uvm.block_us", "uvm.copy_page_us",
                "uvm.move_page_us", "uvm.launches_first_fault_us"):
        assert provenance[key].startswith(f"measured: validation/experiments/uvm_session24/runs/{run}, "), key
    assert calibration["held_out_groups"] == ["micro/uvm_touch/prefetch/random",
                                              "micro/uvm_touch/prefetch/seq"]
    assert not any(g.startswith("traversal/") for g in calibration["calibration_groups"])


@pytest.mark.parametrize("run", RUNS)
def test_scale24_uvm_bfs_meets_the_target_with_its_own_leases_costs(run):
    stats, annotated = _stats(run)
    uvm = stats["traversal/uvm"]
    assert uvm.n == len(BFS_CASES)
    assert uvm.target_pct == UVM_TARGET_PCT and uvm.passed
    rows = annotated[annotated.primary & (annotated.group == "traversal/uvm")]
    assert set(rows.case) == BFS_CASES
    # the edges the twins read are the kernels' own
    edges = annotated[(annotated.metric == "edges_read") & annotated.case.isin(BFS_CASES)]
    assert len(edges) == len(BFS_CASES) and (edges.error_pct.abs() < 1e-9).all()


def test_the_later_lease_with_the_earlier_leases_costs():
    """uvm_session24_repeat's BFS predicted with uvm_session24's calibration: the same
    walks (same graphs and sources) with the same costs give the same predictions as on
    the earlier lease to the last digits, and only the measurements differ."""
    folder = RESULTS / "h200-repeat/earlier_lease_costs"
    cross = read_summary(folder / "summary.csv").set_index(["case", "metric"])
    earlier = read_summary(RESULTS / "h200/summary.csv").set_index(["case", "metric"])
    rows = [(c, "kernel_time_ms") for c in sorted(BFS_CASES)]
    assert cross.loc[rows, "predicted"].to_numpy() == pytest.approx(
        earlier.loc[rows, "predicted"].to_numpy(), rel=1e-6)
    assert not cross.loc[rows, "measured"].to_numpy() == pytest.approx(
        earlier.loc[rows, "measured"].to_numpy(), rel=0.05)
    assert "validation/experiments/uvm_session24/runs/h200/calibrated.toml" in (folder / "report.md").read_text()
    assert mape(cross.loc[rows, "error_pct"]) <= UVM_TARGET_PCT
