"""cudaMemPrefetchAsync's fixed cost per call: the model's term and its calibration."""
import json

import pytest

from hostlink.model.config import load_system
from hostlink.model.errors import ConfigError
from hostlink.model.uvm import prefetch_time_s
from hostlink.validation.calibrate import calibrate
from hostlink.validation.manifest import micro_case_name
from hostlink.validation.results_io import write_results
from hostlink.validation.twins import synthesize


def test_the_call_cost_adds_once_per_prefetch():
    system = load_system("h100-pcie5")
    for size in (256 << 10, 2 << 20, 512 << 20):
        base = prefetch_time_s(size, system)
        assert prefetch_time_s(size, system, call_us=100.0) == pytest.approx(base + 100e-6)
    with pytest.raises(ConfigError, match="call_us"):
        prefetch_time_s(1 << 20, system, call_us=-1.0)


def _prefetch_run(tmp_path, call_us: float, sizes):
    cases = {}
    for size in sizes:
        for pattern in ("seq", "random"):
            naming = dict(size_B=size, pattern=pattern, advice="prefetch", host_state="returned")
            cases[micro_case_name("uvm_touch", naming)] = dict(kind="micro", benchmark="uvm_touch",
                                                               **naming, warps=2048)
    write_results(synthesize(cases, load_system("h100-pcie5", {"uvm.prefetch_call_us": call_us}),
                             fidelity="analytic", noise_pct=0.2, seed=3), tmp_path)
    (tmp_path / "metadata.json").write_text(json.dumps({"cases": cases}))


def test_calibration_recovers_the_call_cost_from_small_prefetches(tmp_path):
    _prefetch_run(tmp_path, 100.0, (256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20))
    cal = calibrate(tmp_path, "h100-pcie5", fidelity="analytic", only=["uvm_prefetch"])
    (fit,) = cal.fits
    assert fit.values["uvm.prefetch_call_us"] == pytest.approx(100.0, rel=0.05)
    assert fit.mape_pct < 1.0 < fit.base_mape_pct
    assert "micro/uvm_touch/prefetch/seq/returned" in cal.calibration_groups
    assert cal.system.uvm.prefetch_call_us == pytest.approx(100.0, rel=0.05)
    assert cal.system.provenance["uvm.prefetch_call_us"].startswith("measured: ")


def test_large_prefetches_alone_keep_the_base_value(tmp_path):
    # 64 MiB and more hide the call's cost: the step does not run, and says why
    _prefetch_run(tmp_path, 100.0, (64 << 20, 512 << 20))
    cal = calibrate(tmp_path, "h100-pcie5", fidelity="analytic", only=["uvm_prefetch"])
    assert not cal.fits
    (skip,) = cal.skipped
    assert "of at most 16 MiB" in skip["reason"]
    assert "micro/uvm_touch/prefetch/seq/returned" in cal.held_out_groups
