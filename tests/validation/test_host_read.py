"""The host_read microbenchmark in the harness and the model: its cases and groups,
the thread model of host threads reading rows (model/cpu_gather.py) that the CPU
gather shares, and the calibration step that fits it."""
from __future__ import annotations

import json

import pytest

from hostlink.model.config import load_system, system_with
from hostlink.model.cpu_gather import (cpu_gather_time, host_read_time, mean_row_read_B,
                                       row_thread_ns)
from hostlink.model.errors import ConfigError
from hostlink.model.predict import predict
from hostlink.model.workload import HostRead
from hostlink.validation.calibrate import calibrate
from hostlink.validation.data_tree import manifest_path
from hostlink.validation.manifest import expand_micro, load_manifest, micro_case_name
from hostlink.validation.results_io import write_results
from hostlink.validation.twins import build_micro, case_group, synthesize

TRUTH = {"host.cpu_load_lat_ns": 140.0, "host.cpu_line_ns": 30.0, "host.cpu_stream_line_ns": 9.0,
         "host.cpu_thread_load": 0.02, "host.cpu_dram_GBps": 90.0}


def _cases(row_B=(64, 256, 1024, 4096), threads=(16,), op=("sum", "copy"), region_B=(1 << 30,)):
    points = expand_micro("host_read", {"region_B": region_B, "row_B": row_B,
                                        "threads": threads, "op": op})
    return {micro_case_name("host_read", p): {"kind": "micro", "benchmark": "host_read",
                                              "rows": 262144, **p}
            for p in points}


def test_cases_name_their_rows_and_the_copies_are_held_out():
    cases = _cases(row_B=(64,), op=("sum", "copy"))
    assert sorted(cases) == [
        "micro/host_read/region_B=1073741824,row_B=64,threads=16,op=copy",
        "micro/host_read/region_B=1073741824,row_B=64,threads=16,op=sum"]
    assert {case_group(c, p) for c, p in cases.items()} == {"micro/host_read/sum",
                                                             "micro/host_read/copy"}
    # the committed manifest parses, and names both ops
    m = load_manifest(manifest_path("host_read"))
    assert {p["op"] for g in m.micro for p in expand_micro("host_read", g.lists)} == {"sum", "copy"}


def test_a_bad_row_size_is_named(tmp_path):
    path = tmp_path / "m.toml"
    path.write_text('[experiment]\nname = "x"\n[[micro]]\nbenchmark = "host_read"\nrow_B = [64, 66]\n')
    with pytest.raises(ConfigError, match=r"row_B.*66.*multiple of 4"):
        load_manifest(path)


def test_a_row_costs_its_first_line_then_its_lines_before_and_after_streaming():
    host = system_with(load_system("h200-pcie5"), TRUTH).host
    assert host.cpu_stream_after_B == 1024         # the schema's assumption: 16 lines
    # one line: the latency; 16 lines: 15 more at 30 ns; 64 lines: then 48 at 9 ns
    assert row_thread_ns(host, 1) == pytest.approx(140.0)
    assert row_thread_ns(host, 16) == pytest.approx(140.0 + 15 * 30.0)
    assert row_thread_ns(host, 64) == pytest.approx(140.0 + 15 * 30.0 + 48 * 9.0)
    # a row of one line never streams, whatever the onset
    short = system_with(load_system("h200-pcie5"), {**TRUTH, "host.cpu_stream_after_B": 64}).host
    assert row_thread_ns(short, 1) == pytest.approx(140.0)
    assert row_thread_ns(short, 4) == pytest.approx(140.0 + 3 * 9.0)
    # 480 B rows start 0 or 32 B into a line: 7.5 lines, touching 8 either way
    assert mean_row_read_B(480, 64) / 64 == pytest.approx(8.0)
    assert mean_row_read_B(64, 64) / 64 == pytest.approx(1.0)


def test_the_threads_or_the_dram_bind_the_read_and_the_gather_shares_it():
    system = system_with(load_system("h200-pcie5"), TRUTH)
    t1, bound1, _ = host_read_time(system, 1024, 1024, threads=1)
    t16, bound16, terms = host_read_time(system, 1024, 1024, threads=16)
    assert bound1 == bound16 == "host_threads"
    assert t1 == pytest.approx(1024 * row_thread_ns(system.host, 16))
    # each thread past the first adds 2% to every thread's time per row
    assert t16 == pytest.approx(t1 / 16 * (1 + 0.02 * 15))
    # a copy adds its staging writes to the DRAM's bytes, not to the threads' time
    _, _, copied = host_read_time(system, 1024, 1024, threads=16, copy=True)
    assert copied["host_threads"] == terms["host_threads"]
    assert copied["dram_B"] == terms["dram_B"] + 2 * 1024 * 1024
    # the threads' DRAM cap binds a copy of long rows: 3 x 4 KiB a row at 90 GB/s
    t, bound, _ = host_read_time(system, 4096, 4096, threads=16, copy=True)
    assert bound == "host_serve"
    assert t == pytest.approx(4096 * 3 * 4096 / 90.0)
    # unset, the cap is the DRAM's sustained rate
    uncapped = system_with(system, {"host.cpu_dram_GBps": None})
    _, _, free = host_read_time(uncapped, 4096, 4096, threads=16, copy=True)
    assert free["host_serve"] < t / 2
    # the gather's thread term is the copy's
    _, _, gather = cpu_gather_time(system, 1024, 1024, threads=16)
    assert gather["host_threads"] == copied["host_threads"]
    with pytest.raises(ConfigError):
        host_read_time(system, 10, 64, threads=0)


def test_predict_takes_the_workload_and_the_twin_reads_it_off():
    system = system_with(load_system("h200-pcie5"), TRUTH)
    pred = predict(HostRead(262144, 1024, 1 << 30, 16), system, mode="device")
    time_ns, bound, _ = host_read_time(system, 262144, 1024, 16)
    assert pred.time_s == pytest.approx(time_ns * 1e-9)
    assert pred.bw_GBps == pytest.approx(262144 * 1024 / time_ns)
    assert pred.bound == bound and pred.requests == 0
    (case, params), = _cases(row_B=(1024,), op=("sum",)).items()
    got = build_micro(case, params, system).predict(system)
    assert got["bw_GBps"] == pytest.approx(pred.bw_GBps)


def test_the_step_recovers_the_row_cost(tmp_path):
    truth = system_with(load_system("h200-pcie5"), TRUTH)
    cases = {**_cases(), **_cases(region_B=(16 << 30,)),
             **_cases(row_B=(64, 1024, 4096), threads=(1, 4), op=("sum",), region_B=(16 << 30,))}
    write_results(synthesize(cases, truth, fidelity="analytic", noise_pct=0.3, seed=5), tmp_path)
    (tmp_path / "metadata.json").write_text(json.dumps({"cases": cases}))
    cal = calibrate(tmp_path, "h200-pcie5-datasheet", fidelity="analytic", only=["host_read"])
    (fit,) = cal.fits
    for key, want in TRUTH.items():
        assert fit.values[key] == pytest.approx(want, rel=0.05), key
    assert cal.calibration_groups == ["micro/host_read/sum", "micro/host_read/copy"]


def test_the_step_needs_copies_to_see_the_dram(tmp_path):
    truth = system_with(load_system("h200-pcie5"), TRUTH)
    cases = _cases(op=("sum",))
    write_results(synthesize(cases, truth, fidelity="analytic", noise_pct=0.3, seed=5), tmp_path)
    (tmp_path / "metadata.json").write_text(json.dumps({"cases": cases}))
    cal = calibrate(tmp_path, "h200-pcie5-datasheet", fidelity="analytic", only=["host_read"])
    assert not cal.fits
    assert cal.held_out_groups == ["micro/host_read/sum"]
