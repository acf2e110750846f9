"""UVM first touch split over launches: the case name, the twin's launches and the
calibration step that fits a run's one-off fault cost on the first launch."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from hostlink.model.config import load_any_system, load_system, system_with
from hostlink.model.errors import HostlinkError
from hostlink.validation import twins
from hostlink.validation.calibrate import CalibrationError, calibrate, groups_fitted_on
from hostlink.validation.manifest import expand_micro, micro_case_name
from hostlink.validation.results_io import make_table, write_results
from hostlink.validation.twins import synthesize
from hostlink.validation.data_tree import EXPERIMENTS, run_dir as data_run_dir

MiB = 1 << 20


def _on(system, uvm: dict):
    """``system`` with the UVM costs ``uvm`` (keys of its uvm section)."""
    return system_with(system, {f"uvm.{k}": v for k, v in uvm.items()})


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
    system = load_system("h100-pcie5-datasheet")
    one = twins.build_micro("one", _point(1), system)
    split = twins.build_micro("split", _point(16), system)
    # the same 16 lines, one per 2 MiB VA block, one per launch, in the program's order
    assert np.array_equal(np.sort(one.stream.addr), np.sort(split.stream.addr))
    assert len(split.stream.launches) == 16
    assert np.array_equal(split.stream.launch, np.arange(16))
    assert np.all(np.diff(split.stream.addr.astype(np.int64)) == 2 * MiB)
    # the run's one-off cost lands on the first launch alone
    base = split.predict(_on(system, {"first_fault_us": 0.0}), "des")
    more = split.predict(_on(system, {"first_fault_us": 150.0}), "des")
    assert more["first_launch_ms"] - base["first_launch_ms"] == pytest.approx(0.150)
    assert more["later_launch_ms"] == pytest.approx(base["later_launch_ms"])
    assert "first_launch_ms" not in one.predict(system, "des")
    with pytest.raises(twins.TwinError, match="seq and sparse"):
        twins.build_micro("r", _point(4, pattern="random"), system)


def test_the_launches_cost_stands_in_for_the_single_launch_cost_in_its_context_alone():
    from hostlink.model.uvm.model import first_fault_cost_us
    both = _on(load_system("h100-pcie5-datasheet"), {"first_fault_us": 300.0,
                                           "launches_first_fault_us": 100.0})
    assert first_fault_cost_us(both.uvm, True) == 100.0
    assert first_fault_cost_us(both.uvm, False) == 300.0
    # without the launches' own cost both contexts pay the single launch's
    old = _on(load_system("h100-pcie5-datasheet"), {"first_fault_us": 300.0})
    assert old.uvm.launches_first_fault_us is None
    assert first_fault_cost_us(old.uvm, True) == first_fault_cost_us(old.uvm, False) == 300.0


def test_split_touch_pays_the_launches_cost_and_a_single_launch_the_models():
    system = load_system("h100-pcie5-datasheet")
    one = twins.build_micro("one", _point(1), system)
    split = twins.build_micro("split", _point(16), system)
    both = _on(system, {"first_fault_us": 300.0, "launches_first_fault_us": 100.0})

    def with_one_cost(twin, first_fault_us: float) -> dict:
        return twin.predict(_on(system, {"first_fault_us": first_fault_us}), "des")

    assert split.predict(both, "des")["first_launch_ms"] == pytest.approx(
        with_one_cost(split, 100.0)["first_launch_ms"])
    assert one.predict(both, "des")["time_ms"] == pytest.approx(
        with_one_cost(one, 300.0)["time_ms"])
    assert (with_one_cost(split, 300.0)["first_launch_ms"]
            - with_one_cost(split, 100.0)["first_launch_ms"]) == pytest.approx(0.2)


def test_a_traversal_pays_the_launches_cost():
    from hostlink.validation.twin_common import load_run
    from hostlink.validation.twin_traversal import GraphSource, predict_traversal
    run_dir = data_run_dir("traversal14_la1", "h200")
    case = "bfs/kron14/merged_aligned/uvm/8B"
    run = load_run(run_dir)
    system = load_system("h200-pcie5-datasheet")

    def kernel_ms(uvm: dict) -> float:
        rows = predict_traversal(case, run.cases[case], _on(system, uvm), GraphSource(run),
                                 max_sources=1)
        return next(v for m, v, _ in rows if m == "kernel_time_ms")

    low = kernel_ms({"first_fault_us": 100.0})
    assert kernel_ms({"first_fault_us": 500.0, "launches_first_fault_us": 100.0}) == \
        pytest.approx(low, rel=1e-12)
    assert kernel_ms({"first_fault_us": 500.0}) - low == pytest.approx(0.4, rel=1e-6)


def test_the_step_fits_the_first_launchs_one_off_cost(tmp_path):
    truth = load_system("h100-pcie5-datasheet")
    cases = {micro_case_name("uvm_touch", {k: v for k, v in p.items()
                                           if k not in ("kind", "benchmark", "warps")}): p
             for p in (_point(16), _point(8), _point(16, advice="readmostly"),
                       _point(16, size_B=4 * MiB, pattern="seq"))}
    write_results(synthesize(cases, _on(truth, {"first_fault_us": 120.0}), fidelity="analytic",
                             noise_pct=0.3, seed=5), tmp_path)
    (tmp_path / "metadata.json").write_text(json.dumps({"cases": cases}))
    cal = calibrate(tmp_path, "h100-pcie5-datasheet", fidelity="analytic", only=["uvm_first_launch"])
    (fit,) = cal.fits
    assert fit.values["uvm.launches_first_fault_us"] == pytest.approx(120.0, rel=0.05)
    assert fit.mape_pct < 1.0 < fit.base_mape_pct
    assert "micro/uvm_touch/none/sparse/returned/launches" in cal.calibration_groups
    # the context's own key: a single launch keeps the base's one-off cost
    assert cal.system.uvm.launches_first_fault_us == pytest.approx(120.0, rel=0.05)
    assert cal.system.uvm.first_fault_us == load_system("h100-pcie5-datasheet").uvm.first_fault_us


def test_a_run_without_split_touch_keeps_the_base_value(tmp_path):
    cases = {micro_case_name("uvm_touch", {k: v for k, v in _point(1).items()
                                           if k not in ("kind", "benchmark", "warps")}): _point(1)}
    write_results(synthesize(cases, _on(load_system("h100-pcie5-datasheet"), {"first_fault_us": 120.0}),
                             fidelity="analytic", seed=5), tmp_path)
    (tmp_path / "metadata.json").write_text(json.dumps({"cases": cases}))
    cal = calibrate(tmp_path, "h100-pcie5-datasheet", fidelity="analytic", only=["uvm_first_launch"])
    assert not cal.fits
    assert "micro/uvm_touch" in cal.skipped[0]["reason"]


def _split_run(path, points, first_fault_us: float):
    cases = {micro_case_name("uvm_touch", {k: v for k, v in p.items()
                                           if k not in ("kind", "benchmark", "warps")}): p
             for p in points}
    path.mkdir()
    write_results(synthesize(cases, _on(load_system("h100-pcie5-datasheet"),
                                        {"first_fault_us": first_fault_us}),
                             fidelity="analytic", seed=5), path)
    (path / "metadata.json").write_text(json.dumps({"cases": cases}))
    return path


FOUR = (_point(16), _point(8), _point(16, advice="readmostly"),
        _point(16, size_B=4 * MiB, pattern="seq"))


def test_pooled_runs_fit_one_cost_and_keep_their_own_residuals(tmp_path):
    a = _split_run(tmp_path / "a", FOUR, 120.0)
    b = _split_run(tmp_path / "b", FOUR[:2], 120.0)
    cal = calibrate(a, "h100-pcie5-datasheet", fidelity="analytic", only=["uvm_first_launch"],
                    pool=[str(b)])
    (fit,) = cal.fits
    assert fit.values["uvm.launches_first_fault_us"] == pytest.approx(120.0, rel=0.01)
    assert fit.n == 6 and len(fit.residuals_pct) == 4
    assert set(fit.pooled_residuals_pct) == {str(b)}
    assert len(fit.pooled_residuals_pct[str(b)]) == 2
    # the pooled run is a link of the chain before the record's own, with its cases
    *_, pooled, own = cal.chain
    assert pooled["results_dir"] == str(b) and pooled["pooled_into"] == str(a)
    assert own["results_dir"] == str(a)
    assert set(sum(pooled["fitted_cases"].values(), [])) == set(fit.pooled_residuals_pct[str(b)])
    assert f"pooled with {b}" in cal.system.provenance["uvm.launches_first_fault_us"]
    # a report of the pooled run counts those groups as fitted
    record = json.loads(json.dumps(cal.to_dict()))
    assert set(groups_fitted_on(record, b)) == set(pooled["calibration_groups"])


def test_each_pooled_run_weighs_the_same(tmp_path):
    # four points at 120 us against one at 130 us: weighed per point the fit would sit
    # near 122 us; weighed per run it sits halfway, whichever run is calibrated
    many = _split_run(tmp_path / "many", FOUR, 120.0)
    one = _split_run(tmp_path / "one", FOUR[:1], 130.0)
    here = calibrate(many, "h100-pcie5-datasheet", fidelity="analytic", only=["uvm_first_launch"],
                     pool=[str(one)]).fits[0].values["uvm.launches_first_fault_us"]
    there = calibrate(one, "h100-pcie5-datasheet", fidelity="analytic", only=["uvm_first_launch"],
                      pool=[str(many)]).fits[0].values["uvm.launches_first_fault_us"]
    assert here == pytest.approx(there, abs=0.5)
    assert 124.0 < here < 126.0


def test_pooling_a_run_twice_or_without_microbenchmarks_is_one_clear_error(tmp_path):
    a = _split_run(tmp_path / "a", FOUR, 120.0)
    with pytest.raises(CalibrationError, match="pooled twice"):
        calibrate(a, "h100-pcie5-datasheet", fidelity="analytic", only=["uvm_first_launch"],
                  pool=[str(a)])
    with pytest.raises(HostlinkError, match="not a results directory"):
        calibrate(a, "h100-pcie5-datasheet", fidelity="analytic", only=["uvm_first_launch"],
                  pool=[str(tmp_path / "missing")])
    traversals = tmp_path / "traversals"
    traversals.mkdir()
    write_results(make_table([("t", "t", "bfs/kron14/merged_aligned/uvm/8B", "measured",
                               "kernel_time_ms", 1.0, "ms", 0)]), traversals)
    with pytest.raises(CalibrationError, match=f"{traversals}: no microbenchmark results to pool"):
        calibrate(a, "h100-pcie5-datasheet", fidelity="analytic", only=["uvm_first_launch"],
                  pool=[str(traversals)])


def test_the_cli_pools_runs_and_reports_each_runs_residual(tmp_path, capsys):
    from hostlink.model.cli.main import main
    a = _split_run(tmp_path / "a", FOUR, 120.0)
    b = _split_run(tmp_path / "b", FOUR[:2], 120.0)
    out = tmp_path / "cal" / "calibrated.toml"
    assert main(["validate", "calibrate", str(a), "--system", "h100-pcie5-datasheet", "--fidelity",
                 "analytic", "--steps", "uvm_first_launch", "--pool", str(b), "--out", str(out),
                 "--quiet"]) == 0
    text = capsys.readouterr().out
    assert f"from {a} pooled with {b}" in text
    assert f"{a}: 4 points" in text and f"{b}: 2 points" in text
    record = json.loads((out.parent / "calibration.json").read_text())
    assert record["pooled"] == [str(b)]
    assert load_any_system(str(out)).uvm.launches_first_fault_us == pytest.approx(120.0,
                                                                                  rel=0.01)
    assert main(["validate", "calibrate", str(a), "--system", "h100-pcie5-datasheet", "--steps",
                 "uvm_first_launch", "--pool", f"{b},{b}"]) == 2
    assert "pooled twice" in capsys.readouterr().err


#: the leases whose first touch split over launches is pooled with uvm_launches' (Makefile)
POOLS = {"h200": ["uvm_session/runs/h200", "uvm_faults/runs/h200", "uvm_faults/runs/h200-repeat",
                  "uvm_session24/runs/h200"],
         "h100": ["uvm_session/runs/h100", "uvm_session/runs/h100-repeat", "uvm_session/runs/h100-c",
                  "uvm_faults/runs/h100", "uvm_session24/runs/h100"]}


@pytest.mark.parametrize("gpu", sorted(POOLS))
def test_the_committed_pooled_fit_is_the_fit_of_the_committed_runs(gpu):
    """uvm_launches' calibrated one-off cost is what the step gives on the committed
    runs, every lease weighing the same, and lies within the pooled leases' fits in
    their own sessions."""
    here = EXPERIMENTS
    record = json.loads((data_run_dir("uvm_launches", gpu) / "calibration.json").read_text())
    cal = calibrate(data_run_dir("uvm_launches", gpu),
                    str(data_run_dir("first_run", gpu) / "calibrated.toml"),
                    only=["uvm_first_launch"], pool=[str(here / r) for r in POOLS[gpu]])
    (fit,) = cal.fits
    value = fit.values["uvm.launches_first_fault_us"]
    uvm = load_any_system(str(data_run_dir("uvm_launches", gpu) / "calibrated.toml")).uvm
    assert value == pytest.approx(uvm.launches_first_fault_us, rel=1e-6)
    # a single launch keeps the chain's cost
    chain = load_any_system(str(data_run_dir("first_run", gpu) / "calibrated.toml")).uvm
    assert uvm.first_fault_us == chain.first_fault_us
    assert [p.removeprefix("validation/experiments/") for p in record["pooled"]] == POOLS[gpu]
    # each pooled lease's fit in its own session (on its own per-page costs; a record
    # made before the context key holds it as first_fault_us)
    own = []
    for r in POOLS[gpu]:
        u = load_any_system(str(here / r / "calibrated.toml")).uvm
        own.append(u.first_fault_us if u.launches_first_fault_us is None
                   else u.launches_first_fault_us)
    assert min(own) < value < max(own)


def test_buffers_within_one_va_block_pay_their_own_launches_cost():
    from hostlink.model.uvm.model import first_fault_cost_us
    uvm = _on(load_system("h100-pcie5-datasheet"),
              {"first_fault_us": 300.0, "launches_first_fault_us": 150.0,
               "launches_one_block_first_fault_us": 70.0}).uvm
    assert first_fault_cost_us(uvm, True, 2 * MiB) == 70.0
    assert first_fault_cost_us(uvm, True, 100_000) == 70.0
    assert first_fault_cost_us(uvm, True, 2 * MiB + 1) == 150.0
    assert first_fault_cost_us(uvm, True, None) == 150.0       # size unknown
    assert first_fault_cost_us(uvm, False, MiB) == 300.0       # a single launch's context
    # without the key, a small buffer pays what the others do
    old = _on(load_system("h100-pcie5-datasheet"), {"launches_first_fault_us": 150.0}).uvm
    assert old.launches_one_block_first_fault_us is None
    assert first_fault_cost_us(old, True, MiB) == 150.0


def test_a_small_traversal_knows_its_managed_buffers_and_pays_the_one_block_cost():
    from hostlink.model.predict import predict
    from hostlink.traces.graphs import generate
    from hostlink.traces.traversal import traversal_workload
    system = load_system("h200-pcie5-datasheet")
    csr = generate("urand", 10, 8, seed=3)
    work = traversal_workload(csr, "bfs", "merged", system.gpu, id_bytes=8)
    ((_, edges_B),) = work.managed
    assert edges_B == csr.num_edges * 8 <= 2 * MiB
    sssp = traversal_workload(csr, "sssp", "merged", system.gpu, id_bytes=8)
    assert [size for _, size in sssp.managed] == [csr.num_edges * 8, csr.num_edges * 4]

    def kernel_s(uvm: dict, **kw) -> float:
        pred = predict(work, _on(system, uvm), mode="uvm", fidelity="analytic", **kw)
        return float(np.sum(pred.per_launch_kernel_s))

    costs = {"launches_first_fault_us": 200.0}
    low = kernel_s(dict(costs, launches_one_block_first_fault_us=80.0))
    assert kernel_s(costs) - low == pytest.approx(120e-6, rel=1e-6)
    # a caller that names a larger buffer gets the larger buffers' cost
    start = work.managed[0][0]
    assert kernel_s(dict(costs, launches_one_block_first_fault_us=80.0),
                    managed=((start, 64 * MiB),)) == pytest.approx(kernel_s(costs), rel=1e-12)


def test_the_prefetch_tree_of_a_buffers_last_block_spans_its_pages_alone():
    from hostlink.model.uvm import simulate_uvm
    from hostlink.model.uvm.model import block_valid_pages
    from hostlink.model.workload import RequestStream
    base = 0x7F00_0000_0000
    # blocks 0 and 1 of a 3 MiB buffer: the second holds 1 MiB (256 pages)
    assert block_valid_pages(np.array([base >> 21, (base >> 21) + 1]), ((base, 3 * MiB),),
                             12, 21).tolist() == [512, 256]
    assert block_valid_pages(np.array([base >> 21]), (), 12, 21).tolist() == [512]
    # one warp reads a line of the first 64 KiB of a 104 KiB buffer (26 pages): its
    # big page (16 pages) is over half of the block's tree, which then fetches it whole
    system = load_system("h200-pcie5-datasheet")
    stream = RequestStream(
        launch=np.zeros(1, np.int32), warp=np.zeros(1, np.int32), inst=np.zeros(1, np.int32),
        addr=np.array([base], np.uint64), size_B=np.array([128], np.int32),
        useful_B=np.array([128], np.int32), space=np.zeros(1, np.int8),
        is_write=np.zeros(1, np.bool_))
    small = simulate_uvm(stream, system, managed=((base, 26 * 4096),))
    assert small.h2d_B == 26 * 4096
    # where the buffer is not known, the tree spans the 2 MiB block: the big page alone
    assert simulate_uvm(stream, system).h2d_B == 16 * 4096


def test_the_one_block_step_fits_small_buffers_alone(tmp_path):
    truth = _on(load_system("h100-pcie5-datasheet"),
                {"launches_first_fault_us": 200.0, "launches_one_block_first_fault_us": 80.0})
    points = (_point(16), _point(8), _point(8, size_B=2 * MiB, pattern="seq"),
              _point(2, size_B=2 * MiB, pattern="seq", advice="readmostly"))
    cases = {micro_case_name("uvm_touch", {k: v for k, v in p.items()
                                           if k not in ("kind", "benchmark", "warps")}): p
             for p in points}
    write_results(synthesize(cases, truth, fidelity="analytic", noise_pct=0.3, seed=5),
                  tmp_path)
    (tmp_path / "metadata.json").write_text(json.dumps({"cases": cases}))
    base = _on(load_system("h100-pcie5-datasheet"), {"launches_first_fault_us": 200.0})
    cal = calibrate(tmp_path, base, fidelity="analytic", only=["uvm_first_launch_one_block"])
    (fit,) = cal.fits
    assert fit.n == 2                                   # the 2 MiB buffers' cases alone
    assert fit.values["uvm.launches_one_block_first_fault_us"] == pytest.approx(80.0, rel=0.05)
    assert cal.system.uvm.launches_first_fault_us == 200.0
    # a run without such buffers keeps the base and holds the step's groups out
    small = {k: v for k, v in cases.items() if v["size_B"] > 2 * MiB}
    other = tmp_path / "large"
    other.mkdir()
    write_results(synthesize(small, truth, fidelity="analytic", seed=5), other)
    (other / "metadata.json").write_text(json.dumps({"cases": small}))
    assert not calibrate(other, base, fidelity="analytic",
                         only=["uvm_first_launch_one_block"]).fits
