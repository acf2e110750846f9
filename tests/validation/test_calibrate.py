"""Calibration recovers known parameters from model-generated measurements.

The measurements are the model's own predictions of microbenchmark twins on
the h100-pcie5-datasheet preset with the parameters in TRUTH, with a little log-normal
noise (twins.synthesize, seeded); calibration starts from the preset's own
values and must find the truth again. Host loads skip the caches (the zero-copy
reads use ``ld.cg``: no L1, and the L2 holds no host lines; the pointer chase
``ld.cv``), so the data do not depend on the cache model; ``ld.cv`` reads keep
one load in flight (the programs' SASS), which the twins follow. The values are chosen so that
every calibrated key is identifiable (a 400 x 128 B completion limit over a
1.3 us round trip is 39 GB/s, below the 128 B link bound of about 51 GB/s).
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from hostlink.model.cli.main import main
from hostlink.model.config import load_any_system, load_system, system_with
from hostlink.model.pcie import spec
from hostlink.validation.calibrate import CalibrationError, calibrate
from hostlink.validation.manifest import micro_case_name
from hostlink.validation.results_io import write_results
from hostlink.validation.twins import synthesize

TRUTH = {"link.rtt_ns": 1300.0, "link.cpl_buffer_B": 400 * 128, "gpu.device_lat_ns": 480.0,
         "link.dllp_overhead": 0.05, "translation.tlb_entries": 1024,
         "translation.miss_lat_ns": 900.0}
MAXREQ = 1 << 13
MiB = 1 << 20


def micro_cases(points) -> dict[str, dict]:
    cases = {}
    for bench, naming, settings in points:
        cases[micro_case_name(bench, naming)] = {"kind": "micro", "benchmark": bench, **naming,
                                                 **settings}
    return cases


def write_synthetic(path: Path, cases: dict, *, fidelity: str, noise_pct: float = 1.0,
                    seed: int = 7, max_requests: int = MAXREQ, truth: dict | None = None) -> Path:
    system = load_system("h100-pcie5-datasheet", truth or TRUTH)
    write_results(synthesize(cases, system, fidelity=fidelity, noise_pct=noise_pct, reps=3,
                             seed=seed, max_requests=max_requests), path)
    (path / "metadata.json").write_text(json.dumps({"cases": cases}))
    return path


def link_points():
    pts = []
    for mode in ("device", "zerocopy"):
        for stride in (128, 4096, 65536):
            # device chains past the L1 (ld.cg) that the L2 holds: the timed pass revisits
            # what the untimed one loaded (no revisits reported), so every load is an L2 hit
            footprint = 1 * MiB if mode == "device" else 64 * MiB
            pts.append(("ptr_chase", dict(memory_mode=mode, stride_B=stride, footprint_B=footprint,
                                          order="random", cache="cg" if mode == "device" else "cv"),
                        dict(steps=500, seed=1)))
    for d in ("h2d", "d2h"):
        for size in (64 << 10, 16 * MiB, 256 * MiB):
            pts.append(("memcpy", dict(direction=d, size_B=size), {}))
    zc = dict(pattern="coalesced", offset_B=0, bytes_per_lane=4, memory_mode="zerocopy",
              cache="cg")
    for w in (1, 8, 66, 132, 264, 528, 1056, 4224):
        for u in (1, 4):
            pts.append(("zc_warps", dict(zc, warps=w, unroll=u),
                        dict(total_B=512 * MiB, max_per_warp_B=1 * MiB)))
    for off in (0, 32):
        pts.append(("zc_read", dict(zc, offset_B=off, unroll=4, warps=0), {}))
    return pts


@pytest.fixture(scope="module")
def synth(tmp_path_factory) -> Path:
    return write_synthetic(tmp_path_factory.mktemp("synthetic"), micro_cases(link_points()),
                           fidelity="analytic")


def _values(cal):
    return {k: v for f in cal.fits for k, v in f.values.items() if f.identifiable[k]}


def test_recovers_latencies_link_loss_and_requester_limit(synth):
    cal = calibrate(synth, "h100-pcie5-datasheet", fidelity="analytic", max_requests=MAXREQ,
                    only=["device_latency", "host_round_trip", "link_efficiency", "requester_limit"])
    v = _values(cal)
    assert v["link.rtt_ns"] == pytest.approx(TRUTH["link.rtt_ns"], rel=0.01)
    assert v["gpu.device_lat_ns"] == pytest.approx(TRUTH["gpu.device_lat_ns"], rel=0.01)
    assert v["link.cpl_buffer_B"] == pytest.approx(TRUTH["link.cpl_buffer_B"], rel=0.03)
    skp = float(spec.skp_overhead(5))
    # the link time left for TLPs, 1 - dllp - skp, within 1% (noise 1% on 4 copies)
    assert 1 - v["link.dllp_overhead"] - skp == pytest.approx(1 - TRUTH["link.dllp_overhead"] - skp,
                                                              rel=0.01)
    assert all(g.startswith("micro/") for g in cal.calibration_groups)
    assert "micro/zc_read/coalesced" in cal.held_out_groups
    for f in cal.fits:
        assert f.mape_pct < 2.0 < f.base_mape_pct


def _truth_base():
    # start from the truth for what the earlier steps fit, so the DES steps are checked alone
    return system_with(load_system("h100-pcie5-datasheet"),
                       {k: TRUTH[k] for k in ("link.rtt_ns", "link.cpl_buffer_B",
                                              "gpu.device_lat_ns", "link.dllp_overhead")})


@pytest.mark.slow
def test_recovers_translation_reach_and_miss_cost(tmp_path):
    zc = dict(pattern="random", bytes_per_lane=4, memory_mode="zerocopy", unroll=4, warps=0,
              cache="cg")
    pts = [("zc_read", dict(zc, region_B=r), {}) for r in (64 * MiB, 1 << 30, 4 << 30, 16 << 30)]
    run = write_synthetic(tmp_path, micro_cases(pts), fidelity="des", max_requests=1 << 15)
    cal = calibrate(run, _truth_base(), fidelity="des", max_requests=1 << 15, only=["translation"])
    v = _values(cal)
    assert v["translation.tlb_entries"] == pytest.approx(TRUTH["translation.tlb_entries"], rel=0.05)
    assert v["translation.miss_lat_ns"] == pytest.approx(TRUTH["translation.miss_lat_ns"], rel=0.05)


@pytest.mark.slow
def test_managed_memory_walkers_are_fitted_apart_from_pinned_memory(tmp_path):
    """Random lines over pinned and over managed memory left on the host: the
    translation step fits the reach and walk cost on the pinned points alone, the
    managed_translation step the managed memory's walks in flight."""
    truth = {**TRUTH, "translation.managed_walkers": 48}
    zc = dict(pattern="random", bytes_per_lane=4, unroll=4, warps=0, cache="cg")
    pts = [("zc_read", dict(zc, memory_mode="zerocopy", region_B=r), {})
           for r in (64 * MiB, 1 << 30, 4 << 30, 16 << 30)]
    pts += [("zc_read", dict(zc, memory_mode="uvm_accessedby", region_B=r), {})
            for r in (64 * MiB, 4 << 30, 16 << 30)]
    run = write_synthetic(tmp_path, micro_cases(pts), fidelity="des", max_requests=1 << 15,
                          truth=truth)
    cal = calibrate(run, _truth_base(), fidelity="des", max_requests=1 << 15,
                    only=["translation", "managed_translation"])
    v = _values(cal)
    assert v["translation.tlb_entries"] == pytest.approx(TRUTH["translation.tlb_entries"], rel=0.05)
    assert v["translation.miss_lat_ns"] == pytest.approx(TRUTH["translation.miss_lat_ns"], rel=0.05)
    assert v["translation.managed_walkers"] == pytest.approx(48, rel=0.1)
    fits = {f.name: f for f in cal.fits}
    assert fits["translation"].n == 4 and fits["managed_translation"].n == 2
    assert all("uvm_accessedby" not in c for c in fits["translation"].residuals_pct)
    # a run without managed memory past the reach skips the step, saying why
    pinned = write_synthetic(tmp_path / "pinned", micro_cases(pts[:4]), fidelity="des",
                             max_requests=1 << 15, truth=truth)
    cal2 = calibrate(pinned, _truth_base(), fidelity="des", max_requests=1 << 15,
                     only=["managed_translation"])
    assert not cal2.fits
    assert "managed memory left on the host" in cal2.skipped[0]["reason"]


UVM_TRUTH = {"uvm.batch_base_us": 20.0, "uvm.block_us": 12.0,
             "uvm.copy_page_us": 0.1, "uvm.move_page_us": 0.3,
             "uvm.first_fault_us": 200.0}


def _uvm_touch_run(tmp_path, system, sparse: bool = True, host_state: str = "fresh"):
    """Measured-looking first-touch results, generated by the model with known costs."""
    cases = {}
    points = [(p, None) for p in ("seq", "random")]
    if sparse:
        points += [("sparse", s) for s in (4096, 64 << 10, 2 << 20)]
    for size in (8 << 20, 32 << 20):
        for advice in ("none", "readmostly"):
            for pattern, stride in points:
                naming = dict(size_B=size, pattern=pattern, advice=advice)
                if stride:
                    naming["stride_B"] = stride
                if host_state != "fresh":
                    naming["host_state"] = host_state
                name = micro_case_name("uvm_touch", naming)
                cases[name] = dict(kind="micro", benchmark="uvm_touch", **naming, warps=2048)
    write_results(synthesize(cases, system, fidelity="analytic", noise_pct=0.2, seed=2),
                  tmp_path)
    (tmp_path / "metadata.json").write_text(json.dumps({"cases": cases}))


def test_recovers_uvm_batch_block_and_page_costs(tmp_path):
    # the batch service time is linear in the five costs: the closed-form start finds them
    truth = system_with(load_system("h100-pcie5-datasheet"), UVM_TRUTH)
    _uvm_touch_run(tmp_path, truth)
    cal = calibrate(tmp_path, "h100-pcie5-datasheet", fidelity="analytic", only=["uvm_batches"])
    (fit,) = cal.fits
    v = fit.values
    for key, want in UVM_TRUTH.items():
        assert v[key] == pytest.approx(want, rel=0.1), key
    assert fit.mape_pct < 1.0 < fit.base_mape_pct
    assert "micro/uvm_touch/readmostly/sparse" in cal.calibration_groups
    assert cal.system.uvm.batch_base_us == v["uvm.batch_base_us"]
    assert cal.system.uvm.move_page_us == pytest.approx(0.3, rel=0.05)
    # every fitted cost is a key of the system, with its provenance: the calibrated
    # TOML alone is the calibrated system
    assert cal.system.provenance["uvm.block_us"].startswith("measured: ")
    toml_path, json_path = cal.write(tmp_path / "cal" / "calibrated.toml")
    from hostlink.model.config import load_any_system
    written = load_any_system(str(toml_path))
    assert written.uvm == cal.system.uvm
    assert written.uvm.block_us == pytest.approx(12.0, rel=0.1)
    assert "model_options" not in json.loads(json_path.read_text())


def test_uvm_costs_fit_on_pages_returned_from_the_gpu(tmp_path):
    # first touch of pages prefetched back from the GPU (what a traversal's repetitions
    # find) is a calibration group like first touch of fresh pages: sparse touch in
    # either state lets the step run
    truth = system_with(load_system("h100-pcie5-datasheet"), UVM_TRUTH)
    _uvm_touch_run(tmp_path, truth, host_state="returned")
    cal = calibrate(tmp_path, "h100-pcie5-datasheet", fidelity="analytic", only=["uvm_batches"])
    (fit,) = cal.fits
    assert fit.values["uvm.first_fault_us"] == pytest.approx(200.0, rel=0.1)
    assert "micro/uvm_touch/none/sparse/returned" in cal.calibration_groups
    assert "micro/uvm_touch/readmostly/seq/returned" in cal.calibration_groups
    assert not [g for g in cal.held_out_groups if g.startswith("micro/uvm_touch/none")]


def test_uvm_costs_need_sparse_touch(tmp_path):
    # dense touch alone cannot separate a batch's, a block's and a page's cost: the step
    # keeps the base values and its groups stay held out
    _uvm_touch_run(tmp_path, load_system("h100-pcie5-datasheet", {"uvm.block_us": 12.0}), sparse=False)
    cal = calibrate(tmp_path, "h100-pcie5-datasheet", fidelity="analytic", only=["uvm_batches"])
    assert not cal.fits
    (skip,) = cal.skipped
    assert "micro/uvm_touch/none/sparse or micro/uvm_touch/none/sparse/returned" in skip["reason"]
    assert "kept the base values" in skip["reason"]
    assert "micro/uvm_touch/none/seq" in cal.held_out_groups


def test_unconstrained_requester_limit_is_kept(tmp_path):
    # with the preset's 768 reads the Gen5 link saturates first: the limit is not identifiable
    truth = load_system("h100-pcie5-datasheet", {"link.rtt_ns": 1300.0})
    cases = {}
    for w in (1, 66, 528, 4224):
        cases[f"micro/zc_warps/pattern=coalesced,offset_B=0,warps={w},unroll=4"] = dict(
            kind="micro", benchmark="zc_warps", pattern="coalesced", offset_B=0, warps=w, unroll=4,
            total_B=64 << 20, max_per_warp_B=1 << 20)
    write_results(synthesize(cases, truth, fidelity="analytic", noise_pct=0.5, seed=1,
                             max_requests=1 << 12), tmp_path)
    (tmp_path / "metadata.json").write_text(json.dumps({"cases": cases}))
    cal = calibrate(tmp_path, load_system("h100-pcie5-datasheet", {"link.rtt_ns": 1300.0}),
                    fidelity="analytic", max_requests=1 << 12, only=["requester_limit"])
    (fit,) = cal.fits
    assert not fit.identifiable["link.cpl_buffer_B"]
    assert cal.system.link.cpl_buffer_B == 0 and cal.system.gpu.max_outstanding_host_reads == 768
    assert "not identifiable" in fit.note
    assert "not identifiable" in cal.system.provenance["link.cpl_buffer_B"]


def test_missing_groups_are_skipped_with_a_reason(tmp_path, synth):
    shutil.copy(synth / "results.csv", tmp_path / "results.csv")
    meta = json.loads((synth / "metadata.json").read_text())
    meta["cases"] = {c: p for c, p in meta["cases"].items() if p["benchmark"] == "ptr_chase"}
    (tmp_path / "metadata.json").write_text(json.dumps(meta))
    import pandas as pd
    df = pd.read_csv(tmp_path / "results.csv")
    df[df["case"].isin(meta["cases"])].to_csv(tmp_path / "results.csv", index=False)
    cal = calibrate(tmp_path, "h100-pcie5-datasheet", fidelity="analytic",
                    only=["host_round_trip", "requester_limit"])
    assert [f.name for f in cal.fits] == ["host_round_trip"]
    assert cal.skipped[0]["name"] == "requester_limit" and "micro/zc_warps" in cal.skipped[0]["reason"]


def test_skipped_steps_are_not_run(synth):
    """skip (--skip-steps): every selected step but those; the base value stays."""
    only = ["device_latency", "host_round_trip", "link_efficiency", "requester_limit"]
    cal = calibrate(synth, "h100-pcie5-datasheet", fidelity="analytic", max_requests=MAXREQ, only=only,
                    skip=["host_round_trip"])
    ran = [f.name for f in cal.fits] + [s["name"] for s in cal.skipped]
    assert sorted(ran) == ["device_latency", "link_efficiency", "requester_limit"]
    assert cal.system.link.rtt_ns == load_system("h100-pcie5-datasheet").link.rtt_ns
    with pytest.raises(CalibrationError, match="unknown calibration step.*bogus"):
        calibrate(synth, "h100-pcie5-datasheet", fidelity="analytic", skip=["bogus"])


def test_cli_writes_a_loadable_calibrated_config(tmp_path, capsys, synth):
    out = tmp_path / "cal" / "calibrated.toml"
    rc = main(["validate", "calibrate", str(synth), "--system", "h100-pcie5-datasheet", "--fidelity", "analytic",
               "--steps", "host_round_trip,requester_limit", "--max-requests", "8192",
               "--out", str(out), "--quiet"])
    assert rc == 0
    text = capsys.readouterr().out
    assert "link.rtt_ns" in text and "held-out groups" in text
    sysc = load_any_system(str(out))
    assert sysc.link.rtt_ns == pytest.approx(TRUTH["link.rtt_ns"], rel=0.01)
    assert sysc.provenance["link.rtt_ns"].startswith(f"measured: {synth}, micro/ptr_chase/host, fit residual")
    diag = json.loads((out.parent / "calibration.json").read_text())
    assert diag["calibration_groups"] == ["micro/ptr_chase/host", "micro/zc_warps"]
    assert diag["fits"][0]["n"] == 3 and "residuals_pct" in diag["fits"][0]


def test_cli_errors_are_one_line(tmp_path, capsys, synth):
    assert main(["validate", "calibrate", str(tmp_path / "nope"), "--system", "h100-pcie5-datasheet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not a results directory" in err[0]
    assert main(["validate", "calibrate", str(synth), "--system", "h100-pcie5-datasheet", "--steps", "bogus"]) == 2
    assert "unknown calibration step" in capsys.readouterr().err
    assert main(["validate", "calibrate", str(synth), "--system", "h100-pcie5-datasheet",
                 "--skip-steps", "bogus"]) == 2
    assert "unknown calibration step" in capsys.readouterr().err
    assert main(["validate", "calibrate", str(synth), "--system", "no-such-system"]) == 2


def test_a_fit_the_model_cannot_make_is_rejected(tmp_path):
    # pointer chases whose latency depends on the footprint: one round trip cannot fit both
    # (1000 ns and 3000 ns), so the step keeps the preset's value and says why
    cases, rows = {}, []
    for fp, lat in ((1 << 20, 1000.0), (1 << 30, 3000.0)):
        name = f"micro/ptr_chase/memory_mode=zerocopy,stride_B=4096,footprint_B={fp}"
        cases[name] = dict(kind="micro", benchmark="ptr_chase", memory_mode="zerocopy",
                           stride_B=4096, footprint_B=fp, steps=100, cache="cv")
        rows.append(("r", "e", name, "measured", "lat_ns", lat, "ns", 0))
    from hostlink.validation.results_io import make_table
    write_results(make_table(rows), tmp_path)
    (tmp_path / "metadata.json").write_text(json.dumps({"cases": cases}))
    cal = calibrate(tmp_path, "h100-pcie5-datasheet", fidelity="analytic", only=["host_round_trip"])
    (fit,) = cal.fits
    assert fit.note.startswith("fit rejected") and not fit.identifiable["link.rtt_ns"]
    # the rejected values are named (between the two latencies), the preset's kept
    rejected = float(fit.note.split("(the rejected fit: link.rtt_ns = ")[1].rstrip(")"))
    assert 1000.0 < rejected < 3000.0
    assert cal.system.link.rtt_ns == 1000.0
    assert "not calibrated" in cal.system.provenance["link.rtt_ns"]


def test_recovers_the_loaded_round_trip(tmp_path):
    # a round trip 400 ns longer at full link load: the points below the plateau give it
    base = load_system("h100-pcie5-datasheet", {"link.rtt_ns": 1300.0})
    truth = system_with(base, {"link.rtt_at_full_link_ns": 400.0})
    cases = {}
    for w in (1, 66, 132, 264, 528, 4224):
        naming = dict(pattern="coalesced", offset_B=0, bytes_per_lane=4, memory_mode="zerocopy",
                      warps=w, unroll=1, cache="cv")
        cases[micro_case_name("zc_warps", naming)] = dict(kind="micro", benchmark="zc_warps",
                                                          **naming, total_B=256 * MiB,
                                                          max_per_warp_B=1 * MiB)
    write_results(synthesize(cases, truth, fidelity="analytic", noise_pct=0.3, seed=4,
                             max_requests=1 << 12), tmp_path)
    (tmp_path / "metadata.json").write_text(json.dumps({"cases": cases}))
    cal = calibrate(tmp_path, base, fidelity="analytic", max_requests=1 << 12,
                    only=["requester_limit"])
    (fit,) = cal.fits
    assert fit.identifiable["link.rtt_at_full_link_ns"]
    assert fit.values["link.rtt_at_full_link_ns"] == pytest.approx(400.0, rel=0.1)
    assert cal.system.link.rtt_at_full_link_ns == pytest.approx(400.0, rel=0.1)
    assert not fit.identifiable["link.cpl_buffer_B"]               # no limit was needed


def test_recovers_launch_time_and_dispatch_interval(tmp_path):
    truth = {"gpu.launch_ns": 5000.0, "gpu.cta_dispatch_ns": 0.5}
    cases = {}
    for ctas in (1, 132, 4096, 65536, 1 << 20):
        for work in ("empty", "label"):
            naming = dict(ctas=ctas, threads_per_cta=256, work=work)
            cases[micro_case_name("launch", naming)] = {"kind": "micro", "benchmark": "launch",
                                                        **naming}
    write_results(synthesize(cases, load_system("h100-pcie5-datasheet", truth), fidelity="des",
                             noise_pct=0.5, seed=3, max_requests=1 << 12), tmp_path)
    (tmp_path / "metadata.json").write_text(json.dumps({"cases": cases}))
    cal = calibrate(tmp_path, "h100-pcie5-datasheet", fidelity="des", max_requests=1 << 12, only=["launch"])
    v = _values(cal)
    assert v["gpu.launch_ns"] == pytest.approx(5000.0, rel=0.03)
    assert v["gpu.cta_dispatch_ns"] == pytest.approx(0.5, rel=0.03)
    assert "micro/launch/label" in cal.held_out_groups


def test_recovers_the_l2s_time_per_shared_write(tmp_path):
    truth = {"gpu.launch_ns": 6000.0, "gpu.cta_dispatch_ns": 0.6, "gpu.shared_write_ns": 0.7}
    cases = {}
    for ctas in (1, 1056, 4096, 65536):
        naming = dict(ctas=ctas, threads_per_cta=256, work="empty")
        cases[micro_case_name("launch", naming)] = {"kind": "micro", "benchmark": "launch",
                                                    **naming}
    for write in ("red", "store", "both", "red_apart"):
        for writers in (1024, 8192, 16384, 32768):
            naming = dict(ctas=4096, threads_per_cta=256, work="flag", writers=writers,
                          write=write)
            cases[micro_case_name("launch", naming)] = {"kind": "micro", "benchmark": "launch",
                                                        **naming}
    write_results(synthesize(cases, load_system("h100-pcie5-datasheet", truth), fidelity="des",
                             noise_pct=0.5, seed=5, max_requests=1 << 12), tmp_path)
    (tmp_path / "metadata.json").write_text(json.dumps({"cases": cases}))
    cal = calibrate(tmp_path, "h100-pcie5-datasheet", fidelity="des", max_requests=1 << 12,
                    only=["launch", "shared_writes"])
    v = _values(cal)
    assert v["gpu.shared_write_ns"] == pytest.approx(0.7, rel=0.05)
    fit = next(f for f in cal.fits if f.name == "shared_writes")
    # reductions and stores by at most half the warps: 32768 writers are all of them
    assert fit.n == 6


def test_recovers_the_copy_setup_time(tmp_path):
    truth = {"gpu.copy_setup_ns": 2000.0}
    pts = [("memcpy", dict(direction=d, size_B=s), {})
           for d in ("h2d", "d2h") for s in (4096, 64 << 10, 1 * MiB, 16 * MiB)]
    cases = micro_cases(pts)
    write_results(synthesize(cases, load_system("h100-pcie5-datasheet", truth), fidelity="analytic",
                             noise_pct=0.5, seed=5), tmp_path)
    (tmp_path / "metadata.json").write_text(json.dumps({"cases": cases}))
    cal = calibrate(tmp_path, "h100-pcie5-datasheet", fidelity="analytic", only=["copy_setup"])
    assert _values(cal)["gpu.copy_setup_ns"] == pytest.approx(2000.0, rel=0.03)


def test_tag_window_splits_the_load_to_use_latency(tmp_path):
    # 32 B reads (one sector per lane) bind the 768 tags for the link round trip alone
    # (768 x 32 B / 1.0 us = 24.6 GB/s), one warp waits the whole 1.3 us: the pointer
    # chase fixes the sum, the 32 B plateau the split
    truth = load_system("h100-pcie5-datasheet", {"link.rtt_ns": 1000.0, "gpu.host_path_ns": 300.0})
    pts = [("ptr_chase", dict(memory_mode="zerocopy", stride_B=s, footprint_B=64 * MiB,
                              order="random", cache="cv"), dict(steps=500, seed=1))
           for s in (128, 4096)]
    strided = dict(pattern="strided", chunk_B=4096, bytes_per_lane=4, memory_mode="zerocopy",
                   cache="cg")
    for w in (1, 8, 66, 264, 1056, 4224):
        pts.append(("zc_warps", dict(strided, warps=w, unroll=4),
                    dict(total_B=64 * MiB, max_per_warp_B=1 * MiB)))
    cases = micro_cases(pts)
    write_results(synthesize(cases, truth, fidelity="analytic", noise_pct=0.5, seed=4,
                             max_requests=MAXREQ), tmp_path)
    (tmp_path / "metadata.json").write_text(json.dumps({"cases": cases}))
    cal = calibrate(tmp_path, "h100-pcie5-datasheet", fidelity="analytic", max_requests=MAXREQ,
                    only=["host_round_trip", "tag_window"])
    chase, window = cal.fits
    assert chase.values["link.rtt_ns"] == pytest.approx(1300.0, rel=0.01)   # the whole latency
    assert window.groups == ["micro/zc_warps/strided"] and window.identifiable["gpu.host_path_ns"]
    assert cal.system.gpu.host_path_ns == pytest.approx(300.0, abs=25.0)
    assert cal.system.gpu.host_path_ns + cal.system.link.rtt_ns == pytest.approx(
        chase.values["link.rtt_ns"], rel=1e-9)
    assert window.mape_pct < 1.5 < window.base_mape_pct
    assert cal.system.provenance["gpu.host_path_ns"].startswith(f"measured: {tmp_path}")
    # coalesced 128 B lines stay the requester-limit group
    assert "micro/zc_warps" not in cal.calibration_groups


def test_a_chain_of_calibrations_names_the_groups_fitted_on_each_run(tmp_path, synth):
    from hostlink.validation.calibrate import groups_fitted_on
    first = calibrate(synth, "h100-pcie5-datasheet", fidelity="analytic", max_requests=MAXREQ,
                      only=["host_round_trip", "requester_limit"])
    toml_a, _ = first.write(tmp_path / "a" / "calibrated.toml")
    # a second run of the same machine: its own chase refits the round trip
    other = tmp_path / "other"
    other.mkdir()
    shutil.copy(synth / "results.csv", other / "results.csv")
    meta = json.loads((synth / "metadata.json").read_text())
    meta["cases"] = {c: p for c, p in meta["cases"].items() if p["benchmark"] == "ptr_chase"}
    (other / "metadata.json").write_text(json.dumps(meta))
    second = calibrate(other, str(toml_a), fidelity="analytic", only=["host_round_trip"])
    rec = second.to_dict()
    assert [link["results_dir"] for link in rec["chain"]] == [str(synth), str(other)]
    assert groups_fitted_on(rec, synth) == ["micro/ptr_chase/host", "micro/zc_warps"]
    assert groups_fitted_on(rec, other) == ["micro/ptr_chase/host"]
    assert groups_fitted_on(rec, tmp_path / "elsewhere") == []
    # a record made before chains were kept: its own groups, wherever reported
    old = {k: v for k, v in rec.items() if k != "chain"}
    assert groups_fitted_on(old, tmp_path / "elsewhere") == ["micro/ptr_chase/host"]


def test_recovers_the_random_kernels_own_time_per_load(tmp_path):
    # random lines in device memory, at full occupancy and one warp per SM: the
    # caches serve them, so the kernel's own time per load is all the data show
    truth = {"gpu.random_load_ns": 26.0, "gpu.random_chain_ns": 280.0}
    dev = dict(pattern="random", bytes_per_lane=4, memory_mode="device", cache="default")
    pts = [("zc_read", dict(dev, region_B=r, unroll=4, warps=0), dict(total_B=64 * MiB))
           for r in (4096, 1 * MiB)]
    pts += [("zc_warps", dict(dev, region_B=4096, unroll=1, warps=w), dict(total_B=64 * MiB))
            for w in (132, 528, 8448)]
    host = dict(dev, memory_mode="zerocopy", region_B=4096, unroll=1)
    pts += [("zc_warps", dict(host, warps=w), dict(total_B=64 * MiB)) for w in (132, 8448)]
    cases = micro_cases(pts)
    # device loads at an L2 hit's latency (the preset's 600 ns is a DRAM miss's): one
    # warp's chain, not its loads, then bounds it, as on the GPUs (hot_lines)
    system = system_with(load_system("h100-pcie5-datasheet"), {"gpu.device_lat_ns": 150.0})
    write_results(synthesize(cases, system_with(system, truth), fidelity="analytic",
                             noise_pct=0.5, seed=5, max_requests=MAXREQ), tmp_path)
    (tmp_path / "metadata.json").write_text(json.dumps({"cases": cases}))
    cal = calibrate(tmp_path, system, fidelity="analytic", max_requests=MAXREQ,
                    only=["random_kernel"])
    (fit,) = cal.fits
    assert fit.values["gpu.random_load_ns"] == pytest.approx(26.0, rel=0.03)
    assert fit.values["gpu.random_chain_ns"] == pytest.approx(280.0, rel=0.03)
    # fitted on the device-memory cases only: the host ones are the group's held-out part
    assert len(fit.residuals_pct) == 5 and all("device" in c for c in fit.residuals_pct)
    rec = cal.to_dict()
    assert set(rec["chain"][-1]["fitted_cases"]["micro/zc_warps/random"]) == set(fit.residuals_pct)
    from hostlink.validation.report import fitted_cases
    # reported with a later calibration's record: the chain still names the cases
    later = {"results_dir": str(tmp_path / "elsewhere"), "fits": [],
             "chain": [*rec["chain"], {"results_dir": str(tmp_path / "elsewhere")}]}
    got = fitted_cases(later, tmp_path)
    assert got["micro/zc_warps/random"] == set(fit.residuals_pct)
    assert not any("zerocopy" in c for c in got["micro/zc_warps/random"])
    assert fitted_cases(later, tmp_path / "elsewhere") == {}


def test_random_kernel_needs_device_memory_reads(tmp_path):
    host = dict(pattern="random", bytes_per_lane=4, memory_mode="zerocopy", cache="cv", unroll=4,
                warps=0)
    cases = micro_cases([("zc_read", dict(host, region_B=r), dict(total_B=64 * MiB))
                         for r in (64 * MiB, 1 << 30)])
    write_synthetic(tmp_path, cases, fidelity="analytic")
    cal = calibrate(tmp_path, "h100-pcie5-datasheet", fidelity="analytic", max_requests=MAXREQ,
                    only=["random_kernel"])
    assert cal.fits == [] and any("random_kernel" in s and "device memory" in s
                                  for s in map(str, cal.skipped))


def test_recovers_how_long_an_ld_cv_read_holds_its_line(tmp_path):
    # random ld.cv lines over a few host lines against warps (a hot_lines run): a line
    # has one read at a time, held cv_line_ns plus cv_line_gap_ns per line read at once
    truth = {"gpu.cv_line_ns": 1560.0, "gpu.cv_line_gap_ns": 2.4}
    host = dict(pattern="random", bytes_per_lane=4, memory_mode="zerocopy", cache="cv",
                unroll=1)
    pts = [("zc_warps", dict(host, region_B=r, warps=w), dict(total_B=16 * MiB))
           for r in (4096, 16384, 65536) for w in (528, 8448)]
    # a warp per line is missing here, and the link binds there: both held out
    pts += [("zc_warps", dict(host, region_B=65536, warps=132), dict(total_B=16 * MiB)),
            ("zc_warps", dict(host, region_B=1 * MiB, warps=8448), dict(total_B=16 * MiB))]
    cases = micro_cases(pts)
    system = load_system("h100-pcie5-datasheet")
    write_results(synthesize(cases, system_with(system, truth), fidelity="analytic",
                             noise_pct=0.5, seed=7, max_requests=MAXREQ), tmp_path)
    (tmp_path / "metadata.json").write_text(json.dumps({"cases": cases}))
    cal = calibrate(tmp_path, system, fidelity="analytic", max_requests=MAXREQ,
                    only=["cv_lines"])
    (fit,) = cal.fits
    assert fit.values["gpu.cv_line_ns"] == pytest.approx(1560.0, rel=0.03)
    assert fit.values["gpu.cv_line_gap_ns"] == pytest.approx(2.4, rel=0.1)
    assert len(fit.residuals_pct) == 6     # the six with a warp per line
    assert not any("warps=132" in c or "region_B=1048576" in c for c in fit.residuals_pct)


def test_cv_lines_needs_reads_of_few_lines_against_warps(tmp_path):
    # first_run's random ld.cv lines at full occupancy are zc_read points: the step
    # leaves them held out
    host = dict(pattern="random", bytes_per_lane=4, memory_mode="zerocopy", cache="cv",
                unroll=4, warps=0)
    cases = micro_cases([("zc_read", dict(host, region_B=r), dict(total_B=64 * MiB))
                         for r in (4096, 65536)])
    write_synthetic(tmp_path, cases, fidelity="analytic")
    cal = calibrate(tmp_path, "h100-pcie5-datasheet", fidelity="analytic", max_requests=MAXREQ,
                    only=["cv_lines"])
    assert cal.fits == [] and any("cv_lines" in s for s in map(str, cal.skipped))


def _offset_points():
    zc = dict(pattern="coalesced", memory_mode="zerocopy", cache="cg", unroll=4, warps=0)
    return [("zc_read", dict(zc, offset_B=off, bytes_per_lane=b), {})
            for off in (0, 32, 64, 96) for b in (4, 8)]


def test_recovers_the_rate_the_host_serves_bursts_at(tmp_path):
    """Reads off the line touch three 64 B bursts per 128 B read: where the host serves
    bursts below the link's rate, they show that rate (the aligned points are held out;
    the link's keys start from the truth, as an earlier step would leave them)."""
    run = write_synthetic(tmp_path, micro_cases(_offset_points()), fidelity="analytic",
                          noise_pct=0.5, truth={**TRUTH, "host.serve_GBps": 30.0})
    cal = calibrate(run, load_system("h100-pcie5-datasheet", TRUTH), fidelity="analytic",
                    max_requests=MAXREQ, only=["host_serve"])
    assert _values(cal)["host.serve_GBps"] == pytest.approx(30.0, rel=0.02)
    assert cal.system.host.serve_GBps == pytest.approx(30.0, rel=0.02)
    fit, = cal.fits
    assert fit.n == 6                      # offsets 32, 64 and 96; offset 0 held out
    assert fit.mape_pct < 2.0 < fit.base_mape_pct


def test_a_serve_rate_the_data_do_not_need_stays_unset(tmp_path):
    """Where the link binds every point, no serve rate fits better than none: the host
    keeps the DRAM's own rate (the key stays unset)."""
    run = write_synthetic(tmp_path, micro_cases(_offset_points()), fidelity="analytic",
                          noise_pct=0.5)
    cal = calibrate(run, load_system("h100-pcie5-datasheet", TRUTH), fidelity="analytic",
                    max_requests=MAXREQ, only=["host_serve"])
    fit, = cal.fits
    assert not fit.identifiable["host.serve_GBps"]
    assert cal.system.host.serve_GBps is None


def _device_stream_points(total_B: int = 256 * MiB):
    dev = dict(pattern="coalesced", offset_B=0, memory_mode="device", cache="default", warps=0)
    pts = [("zc_read", dict(dev, bytes_per_lane=b, unroll=u), dict(total_B=total_B))
           for b in (4, 16) for u in (1, 4)]
    # one warp per SM waits on its loads, not on the DRAM's rate: held out
    pts.append(("zc_warps", dict(dev, bytes_per_lane=4, unroll=1, warps=132),
                dict(total_B=64 * MiB, max_per_warp_B=1 * MiB)))
    host = dict(dev, memory_mode="zerocopy", bytes_per_lane=4, unroll=4)
    pts.append(("zc_read", host, {}))
    return pts


def test_recovers_the_rate_device_memory_streams_at(tmp_path):
    """Device memory read below the datasheet's rate (an H100's streams reach about 87%
    of it): the full-occupancy device reads give the rate; the few-warp and host
    points are held out, and the host read's prediction does not move."""
    truth = {**TRUTH, "gpu.device_bw_GBps": 2900.0}
    run = write_synthetic(tmp_path, micro_cases(_device_stream_points()), fidelity="analytic",
                          noise_pct=0.5, truth=truth)
    base = load_system("h100-pcie5-datasheet", TRUTH)
    assert base.gpu.device_bw_GBps == pytest.approx(3350.0)
    cal = calibrate(run, base, fidelity="analytic", max_requests=MAXREQ, only=["device_stream"])
    fit, = cal.fits
    assert fit.identifiable["gpu.device_bw_GBps"]
    assert cal.system.gpu.device_bw_GBps == pytest.approx(2900.0, rel=0.02)
    assert fit.n == 4 and all("memory_mode=device" in c and "zc_read" in c
                              for c in fit.residuals_pct)
    assert fit.mape_pct < 1.5 < fit.base_mape_pct
    assert cal.to_dict()["chain"][-1]["fitted_cases"] == {
        "micro/zc_read/coalesced": sorted(fit.residuals_pct)}
    # the host read's twin does not read device memory: the fitted rate leaves it as it was
    host = {c: p for c, p in micro_cases(_device_stream_points()).items()
            if p["memory_mode"] == "zerocopy"}
    before, after = (synthesize(host, s, fidelity="analytic", reps=1, max_requests=MAXREQ)
                     for s in (base, cal.system))
    assert len(before) and list(after["value"]) == pytest.approx(list(before["value"]), rel=1e-9)


def test_a_device_rate_behind_the_sms_issue_stage_keeps_its_base_value(tmp_path):
    """Where the SMs let lines out slower than the DRAM streams them (an H200's one-line
    loads), a lower or higher rate changes no prediction: the rate is kept."""
    slow_issue = {**TRUTH, "gpu.sm_request_ns": 8.0}
    run = write_synthetic(tmp_path, micro_cases(_device_stream_points(8 * MiB)[1:4:2]),
                          fidelity="des", noise_pct=0.5,
                          truth={**slow_issue, "gpu.device_bw_GBps": 2900.0})
    # the issue stage is the engine's (the analytic model has none)
    cal = calibrate(run, load_system("h100-pcie5-datasheet", slow_issue), fidelity="des",
                    max_requests=MAXREQ, only=["device_stream"])
    fit, = cal.fits
    assert not fit.identifiable["gpu.device_bw_GBps"]
    assert cal.system.gpu.device_bw_GBps == pytest.approx(3350.0)


def test_device_stream_needs_full_occupancy_device_reads(tmp_path):
    run = write_synthetic(tmp_path, micro_cases(_device_stream_points()[4:]), fidelity="analytic")
    cal = calibrate(run, "h100-pcie5-datasheet", fidelity="analytic", max_requests=MAXREQ,
                    only=["device_stream"])
    assert cal.fits == [] and any("device_stream" in s and "full occupancy" in s
                                  for s in map(str, cal.skipped))
