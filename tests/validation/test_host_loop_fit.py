"""The host_loop microbenchmark in the harness: its cases, twin and groups, the
calibration step that fits the loop's item costs, the traversal runs' measured
loop gap, and the committed H200 runs' fit."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from hostlink.model.config import load_system, system_with
from hostlink.model.host_loop import COST_KEYS, LOOPS, PROGRAMS
from hostlink.validation.calibrate import calibrate
from hostlink.validation.manifest import expand_micro, load_manifest, micro_case_name
from hostlink.validation.results_io import (parse_lines, read_results,
                                            rows_from_output, write_results)
from hostlink.validation.twins import build_micro, case_group, synthesize
from hostlink.validation.data_tree import manifest_path, run_dir

MANIFEST = manifest_path("host_loop")
TRUTH = {"host_loop.launch_gap_us": 1.2, "host_loop.memset_small_us": 0.8,
         "host_loop.memset_us": 2.5, "host_loop.copy_us": 6.5, "host_loop.copy_return_us": 1.5,
         "host_loop.sync_us": 4.5, "host_loop.run_us": 2.0}


def _cases(loops, vertices=(64, 16384, 1 << 21), iterations=(1, 4, 16)):
    points = expand_micro("host_loop", {"loop": tuple(loops), "vertices": vertices,
                                        "walk_us": (20,), "iterations": iterations})
    return {micro_case_name("host_loop", p): {"kind": "micro", "benchmark": "host_loop", **p}
            for p in points}


def test_cases_name_their_loop_and_the_programs_are_held_out():
    cases = _cases(["bfs", "walk_sync"], vertices=(16384,), iterations=(16,))
    assert sorted(cases) == ["micro/host_loop/loop=bfs,vertices=16384,walk_us=20,iterations=16",
                             "micro/host_loop/loop=walk_sync,vertices=16384,walk_us=20,iterations=16"]
    groups = {case_group(c, p) for c, p in cases.items()}
    assert groups == {"micro/host_loop/program", "micro/host_loop/parts"}
    m = load_manifest(MANIFEST)
    named = {p["loop"] for g in m.micro for p in expand_micro("host_loop", g.lists)}
    assert named == set(LOOPS)


def test_the_twin_predicts_the_gap_per_iteration_and_the_walks():
    system = system_with(load_system("h200-pcie5"), {**TRUTH, "gpu.launch_ns": 6000.0})
    (case, params), = _cases(["walk_sync"], vertices=(16384,), iterations=(4,)).items()
    got = build_micro(case, params, system).predict(system)
    # walk + sync per iteration, the run once: (4 x (1.2 + 4.5) + 2.0) / 4
    assert got["gap_us"] == pytest.approx((4 * 5.7 + 2.0) / 4)
    # each walk as its events time it: its 20 us and the launch's own time
    assert got["kernel_time_ms"] == pytest.approx(4 * 26e-3)
    assert got["time_ms"] == pytest.approx(got["kernel_time_ms"] + got["gap_us"] * 4e-3)


def test_the_step_recovers_the_item_costs(tmp_path):
    truth = system_with(load_system("h200-pcie5"), TRUTH)
    cases = _cases([n for n in LOOPS if n not in PROGRAMS])
    write_results(synthesize(cases, truth, fidelity="analytic", noise_pct=0.3, seed=3), tmp_path)
    (tmp_path / "metadata.json").write_text(json.dumps({"cases": cases}))
    cal = calibrate(tmp_path, "h200-pcie5", fidelity="analytic", only=["host_loop"])
    (fit,) = cal.fits
    for k in COST_KEYS:
        assert fit.values[f"host_loop.{k}"] == pytest.approx(TRUTH[f"host_loop.{k}"], rel=0.06), k
    assert fit.mape_pct < 1.0
    assert cal.calibration_groups == ["micro/host_loop/parts"]


def test_a_traversal_run_carries_its_loop_gap_on_reading(tmp_path):
    line = json.dumps({"type": "measurement", "benchmark": "sssp", "rep": 0,
                       "params": {"graph": "g", "variant": "naive", "memory_mode": "device",
                                  "id_bytes": 8},
                       "metrics": {"time_ms": 1.0, "kernel_time_ms": 0.8, "iterations": 10}})
    out = parse_lines([line])
    rows = rows_from_output(out, "r", "e", lambda m: "sssp/g/naive/device/8B")
    _, parquet = write_results(rows, tmp_path)
    # the run's results hold what the program printed; reading adds the loop gap
    assert "loop_gap_us" not in set(pd.read_parquet(parquet)["metric"])
    got = read_results(parquet).set_index("metric")["value"]
    assert got["loop_gap_us"] == pytest.approx(20.0)
    assert len(read_results(parquet)) == 4


def test_the_committed_fit_is_the_pooled_fit_of_the_two_leases():
    here = run_dir("host_loop", "h200")
    record = json.loads((here / "calibration.json").read_text())
    cal = calibrate(here, str(run_dir("uvm_launches", "h200") / "calibrated.toml"),
                    only=["host_loop"], pool=[str(run_dir("host_loop", "h200-repeat"))])
    (fit,) = cal.fits
    (committed,) = [f for f in record["fits"] if f["name"] == "host_loop"]
    # the same to the fit's own tolerance (its start, the schema's defaults, may move)
    for k in COST_KEYS:
        assert fit.values[f"host_loop.{k}"] == pytest.approx(committed["values"][f"host_loop.{k}"],
                                                              rel=1e-3)
    # the costs the two leases share (validation/experiments/host_loop/README.md): a flag's
    # read-back after a kernel costs most, then a synchronisation; back-to-back launches least
    v = fit.values
    assert v["host_loop.copy_us"] > v["host_loop.sync_us"] > v["host_loop.launch_gap_us"] > 0
    assert fit.mape_pct < 6.0
