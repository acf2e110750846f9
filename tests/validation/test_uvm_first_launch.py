"""UVM first touch split over launches: the case name, the twin's launches and the
calibration step that fits a run's one-off fault cost on the first launch."""
from __future__ import annotations

import json

import numpy as np
import pytest

from hostlink.model.config import load_system
from hostlink.validation import twins
from hostlink.validation.calibrate import calibrate
from hostlink.validation.manifest import expand_micro, micro_case_name
from hostlink.validation.results_io import write_results
from hostlink.validation.twins import synthesize

MiB = 1 << 20


def _point(launches: int, **kw) -> dict:
    p = dict(kind="micro", benchmark="uvm_touch", size_B=32 * MiB, pattern="sparse",
             stride_B=2 * MiB, advice="none", host_state="returned", warps=2048)
    if launches > 1:
        p["launches"] = launches
    p.update(kw)
    return p


def test_launches_name_a_case_only_above_one():
    points = expand_micro("uvm_touch", {"size_B": [32 * MiB], "pattern": ["sparse"],
                                        "launches": [1, 16], "host_state": ["returned"]})
    names = [micro_case_name("uvm_touch", p) for p in points]
    # one launch keeps the names of runs made before the setting existed
    assert names == ["micro/uvm_touch/size_B=33554432,pattern=sparse,stride_B=2097152,"
                     "advice=none,host_state=returned",
                     "micro/uvm_touch/size_B=33554432,pattern=sparse,stride_B=2097152,"
                     "advice=none,host_state=returned,launches=16"]
    assert twins.micro_group(_point(16)) == "micro/uvm_touch/none/sparse/returned/launches"
    assert twins.micro_group(_point(1)) == "micro/uvm_touch/none/sparse/returned"
    assert twins.primary_metric(_point(16)) == "first_launch_ms"
    assert twins.primary_metric(_point(1)) == "time_ms"


def test_the_twin_reads_each_part_in_its_own_launch():
    system = load_system("h100-pcie5")
    one = twins.build_micro("one", _point(1), system)
    split = twins.build_micro("split", _point(16), system)
    # the same 16 lines, one per 2 MiB VA block, one per launch, in the program's order
    assert np.array_equal(np.sort(one.stream.addr), np.sort(split.stream.addr))
    assert len(split.stream.launches) == 16
    assert np.array_equal(split.stream.launch, np.arange(16))
    assert np.all(np.diff(split.stream.addr.astype(np.int64)) == 2 * MiB)
    # the run's one-off cost lands on the first launch alone
    base = split.predict(system, "des", {"uvm": {"first_fault_us": 0.0}})
    more = split.predict(system, "des", {"uvm": {"first_fault_us": 150.0}})
    assert more["first_launch_ms"] - base["first_launch_ms"] == pytest.approx(0.150)
    assert more["later_launch_ms"] == pytest.approx(base["later_launch_ms"])
    assert "first_launch_ms" not in one.predict(system, "des", {})
    with pytest.raises(twins.TwinError, match="seq and sparse"):
        twins.build_micro("r", _point(4, pattern="random"), system)


def test_the_step_fits_the_first_launchs_one_off_cost(tmp_path):
    truth = load_system("h100-pcie5")
    cases = {micro_case_name("uvm_touch", {k: v for k, v in p.items()
                                           if k not in ("kind", "benchmark", "warps")}): p
             for p in (_point(16), _point(8), _point(16, advice="readmostly"),
                       _point(16, size_B=4 * MiB, pattern="seq"))}
    write_results(synthesize(cases, truth, fidelity="analytic", noise_pct=0.3, seed=5,
                             options={"uvm": {"first_fault_us": 120.0}}), tmp_path)
    (tmp_path / "metadata.json").write_text(json.dumps({"cases": cases}))
    cal = calibrate(tmp_path, "h100-pcie5", fidelity="analytic", only=["uvm_first_launch"])
    (fit,) = cal.fits
    assert fit.values["options.uvm.first_fault_us"] == pytest.approx(120.0, rel=0.05)
    assert fit.mape_pct < 1.0 < fit.base_mape_pct
    assert "micro/uvm_touch/none/sparse/returned/launches" in cal.calibration_groups
    assert cal.options["uvm"]["first_fault_us"] == pytest.approx(120.0, rel=0.05)


def test_a_run_without_split_touch_keeps_the_base_value(tmp_path):
    cases = {micro_case_name("uvm_touch", {k: v for k, v in _point(1).items()
                                           if k not in ("kind", "benchmark", "warps")}): _point(1)}
    write_results(synthesize(cases, load_system("h100-pcie5"), fidelity="analytic", seed=5,
                             options={"uvm": {"first_fault_us": 120.0}}), tmp_path)
    (tmp_path / "metadata.json").write_text(json.dumps({"cases": cases}))
    cal = calibrate(tmp_path, "h100-pcie5", fidelity="analytic", only=["uvm_first_launch"])
    assert not cal.fits
    assert "micro/uvm_touch" in cal.skipped[0]["reason"]
