"""The H200 preset's UVM fault-service costs are fitted on every lease that measured
UVM first touch, each lease weighing the same (calibrate step ``uvm_batches`` with
``--pool``; validation/experiments/uvm_sparse/runs/h200/pooled/README.md).

Why: first touch differs from lease to lease far more than the model's costs do
between patterns. 512 MiB of random first touch took 59.9 ms on the lease the chain
fits (``uvm_sparse/runs/h200``), the fastest of the ten leases, whose median is 77.8
ms (the runs' results.parquet). A fit on one lease models that lease.
"""
from __future__ import annotations

import json
import statistics

import pandas as pd
import pytest

from hostlink.model.config import load_any_system, load_system
from hostlink.validation.data_tree import EXPERIMENTS, run_dir

POOLED = run_dir("uvm_sparse", "h200") / "pooled"
COSTS = ("batch_base_us", "block_us", "copy_page_us", "move_page_us", "first_fault_us")
#: the dense first touch every lease of the pool measured (and first_run's lease alone)
DENSE = tuple(f"micro/uvm_touch/size_B={size},pattern={pattern},advice={advice}"
              for size in (64 << 20, 512 << 20) for pattern in ("seq", "random")
              for advice in ("none", "readmostly"))
RANDOM = "micro/uvm_touch/size_B=536870912,pattern=random,advice=none"


def _record() -> dict:
    return json.loads((POOLED / "calibration.json").read_text())


def _leases() -> list[str]:
    """The pooled fit's runs: its own and those pooled with it."""
    record = _record()
    return [record["results_dir"], *record["pooled"]]


def _median(run: str, case: str) -> float | None:
    frame = pd.read_parquet(EXPERIMENTS.parent.parent / run / "results.parquet",
                            columns=["case", "metric", "value"])
    rows = frame[(frame.case == case) & (frame.metric == "time_ms")]
    return float(rows.value.median()) if len(rows) else None


def test_the_h200_preset_takes_the_pooled_costs():
    preset = load_system("h200-pcie5")
    fit = load_any_system(str(POOLED / "calibrated.toml"))
    for name in COSTS:
        assert getattr(preset.uvm, name) == getattr(fit.uvm, name), name
        source = preset.provenance[f"uvm.{name}"]
        assert "pooled with" in source and "uvm_batches" in source, name


def test_every_h200_lease_with_dense_first_touch_is_in_the_pool():
    """A lease committed later that measured the same first touch must join the pool."""
    measured = set()
    for path in EXPERIMENTS.glob("*/runs/h200*/results.parquet"):
        cases = set(pd.read_parquet(path, columns=["case"]).case)
        if cases.issuperset(DENSE):
            measured.add(str(path.parent.relative_to(EXPERIMENTS.parent.parent)))
    assert len(measured) >= 10
    assert measured == set(_leases())


def test_the_chains_lease_is_the_pools_fastest_at_random_first_touch():
    times = {run: _median(run, RANDOM) for run in _leases()}
    times = {run: t for run, t in times.items() if t is not None}
    chain_lease = _record()["results_dir"]
    assert min(times, key=times.get) == chain_lease
    assert statistics.median(times.values()) > 1.2 * times[chain_lease]


def test_each_lease_weighs_the_same_and_keeps_its_residual():
    fit = _record()["fits"][0]
    assert fit["name"] == "uvm_batches"
    assert set(fit["pooled_residuals_pct"]) == set(_record()["pooled"])
    per_lease = [statistics.mean(abs(e) for e in res.values())
                 for res in [fit["residuals_pct"], *fit["pooled_residuals_pct"].values()]]
    # the fit's MAPE is the mean of the leases' own, whatever their point counts
    assert fit["mape_pct"] == pytest.approx(statistics.mean(per_lease), rel=1e-6)
