"""Atomics that return in the harness: the ptr_chase cases by lanes, their twin and
group, the calibration step that fits what an atomic costs beyond a load, the twin
against the discrete-event model, and the committed H200 run's fit."""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hostlink.model.config import load_system, system_with
from hostlink.model.des import simulate
from hostlink.model.errors import ConfigError
from hostlink.model.workload import SPACE_DEVICE, LaunchInfo, RequestStream
from hostlink.validation.calibrate import calibrate
from hostlink.validation.manifest import expand_micro, load_manifest, micro_case_name
from hostlink.validation.results_io import make_table, unit_of, write_results
from hostlink.validation.twin_common import TwinError
from hostlink.validation.twin_micro import atomic_step_ns
from hostlink.validation.twins import build_micro, case_group

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "validation" / "results"
MANIFEST = ROOT / "validation" / "manifests" / "atomic_chase.toml"
TRUTH = {"gpu.atomic_extra_ns": 55.0, "gpu.atomic_spread_ns": 20.0}


def _cases(caches=("atomic",), lanes=(1, 2, 4, 8, 16, 32), footprints=(64 << 10,),
           steps=4000):
    points = expand_micro("ptr_chase", {"memory_mode": ("device",), "stride_B": (128,),
                                        "footprint_B": footprints, "cache": caches,
                                        "lanes": lanes})
    return {micro_case_name("ptr_chase", p): {"kind": "micro", "benchmark": "ptr_chase",
                                              "steps": steps, "reps": 3, "seed": 1, **p}
            for p in points}


def _hints(case, metric):
    # the programs that report revisits flush the L2 before each pass
    return 1.0 if metric == "revisits" else None


def test_cases_name_lanes_above_one_and_atomics_are_a_group_of_their_own():
    cases = _cases(lanes=(1, 32))
    assert sorted(cases) == [
        "micro/ptr_chase/memory_mode=device,stride_B=128,footprint_B=65536,order=random,"
        "cache=atomic",
        "micro/ptr_chase/memory_mode=device,stride_B=128,footprint_B=65536,order=random,"
        "cache=atomic,lanes=32"]
    assert {case_group(c, p) for c, p in cases.items()} == {"micro/ptr_chase/atomic"}
    (load,) = _cases(caches=("cg",), lanes=(1,)).values()
    assert case_group("x", load) == "micro/ptr_chase/device"
    m = load_manifest(MANIFEST)
    lanes = {p.get("lanes", 1) for g in m.micro for p in expand_micro("ptr_chase", g.lists)}
    assert lanes == {1, 2, 4, 8, 16, 32}


@pytest.mark.parametrize("body, match", [
    ('lanes = [1, 33]\ncache = "atomic"\nmemory_mode = "device"', "at most 32"),
    ('cache = ["cg", "atomic"]\nmemory_mode = "zerocopy"', "device memory only"),
])
def test_the_manifest_refuses_chases_the_program_refuses(tmp_path, body, match):
    path = tmp_path / "m.toml"
    path.write_text(f'[experiment]\nname = "x"\n\n[[micro]]\nbenchmark = "ptr_chase"\n{body}\n')
    with pytest.raises(ConfigError, match=match) as err:
        load_manifest(path)
    assert "micro[0]" in str(err.value)


def test_the_twin_adds_the_extra_where_the_l2_serves_and_the_spread_per_doubling():
    system = system_with(load_system("h200-pcie5"), TRUTH)
    gpu = system.gpu
    cases = _cases(lanes=(1, 8), steps=20000)
    got = {p.get("lanes", 1): build_micro(c, p, system, hints=lambda m, c=c: _hints(c, m))
           for c, p in cases.items()}
    one = got[1].predict(system)["lat_ns"]
    levels = got[1].extra["levels"]
    # 512 lines: their first lap misses to DRAM, then the L2 holds them
    assert levels[2] == 512 and levels[1] == 20000 - 512
    expect = (levels[1] * (gpu.device_lat_ns + 55.0) + levels[2] * gpu.dram_lat_ns) / 20000
    assert one == pytest.approx(expect)
    # eight lanes: a step waits for its slowest lane, and 20 ns x log2(8) more
    eight = got[8].extra["levels"]
    assert eight.sum() == 20000 and 0 < eight[2] <= 512
    assert got[8].predict(system)["lat_ns"] == pytest.approx(
        (eight[1] * (gpu.device_lat_ns + 55.0) + eight[2] * gpu.dram_lat_ns) / 20000 + 60.0)
    # from DRAM an atomic costs what a load does (validation/results/h200/atomic_chase)
    (case, p), = _cases(footprints=(256 << 20,), lanes=(1,)).items()
    fresh = build_micro(case, p, system, hints=lambda m: _hints(case, m))
    assert fresh.extra["levels"][2] == 4000
    assert fresh.predict(system)["lat_ns"] == pytest.approx(gpu.dram_lat_ns)


def test_lanes_without_a_spread_leave_as_a_loads_lines_do_and_loads_of_lanes_have_no_twin():
    system = load_system("h200-pcie5")
    gpu = system.gpu
    assert atomic_step_ns(gpu, 1) == 0.0
    assert atomic_step_ns(gpu, 32) == pytest.approx(31 * max(gpu.request_gap_ns,
                                                              gpu.sm_request_ns))
    assert atomic_step_ns(system_with(system, TRUTH).gpu, 32) == pytest.approx(100.0)
    (case, p), = _cases(caches=("cg",), lanes=(32,)).items()
    with pytest.raises(TwinError, match="no twin"):
        build_micro(case, p, system, hints=lambda m: _hints(case, m))


def test_the_twin_is_the_discrete_event_models_chain_of_atomics():
    """A warp's chain of dependent atomics of k lines the L2 serves, replayed by the DES,
    takes per step what the twin gives a step the L2 serves (a read's service aside)."""
    system = system_with(load_system("h200-pcie5"), {**TRUTH, "translation.enabled": False})
    gpu = system.gpu
    for k in (1, 4, 32):
        steps = 10
        inst = np.repeat(np.arange(steps), k)
        addr = (np.arange(steps * k) * 128).astype(np.uint64)
        n = len(addr)
        s = RequestStream(launch=np.zeros(n), warp=np.zeros(n), inst=inst, addr=addr,
                          size_B=np.full(n, 32), useful_B=np.full(n, 8),
                          space=np.full(n, SPACE_DEVICE, np.uint8), is_write=np.zeros(n, bool),
                          launches=(LaunchInfo("chase", 1, 1, 32),),
                          waits=np.ones(n, bool), atomic=np.ones(n, bool))
        x, out = simulate(s, system)
        per_step = out.kernel_ns[0] / steps
        twin = gpu.device_lat_ns + gpu.atomic_extra_ns + atomic_step_ns(gpu, k)
        assert per_step == pytest.approx(twin + x.dev_ns[0], rel=1e-9), k


def test_the_step_recovers_the_atomic_costs(tmp_path):
    truth = system_with(load_system("h200-pcie5"), TRUTH)
    cases = {**_cases(steps=20000), **_cases(caches=("cg",), lanes=(1,), steps=20000)}
    rng = np.random.default_rng(5)
    rows = []
    for case, p in cases.items():
        twin = build_micro(case, p, truth, hints=lambda m, c=case: _hints(c, m))
        lat = twin.predict(truth)["lat_ns"]
        for rep in range(3):
            rows.append(("synthetic", "synthetic", case, "measured", "lat_ns",
                         lat * float(np.exp(rng.normal(0.0, 0.002))), unit_of("lat_ns"), rep))
            rows.append(("synthetic", "synthetic", case, "measured", "revisits", 1.0,
                         unit_of("revisits"), rep))
    write_results(make_table(rows), tmp_path)
    (tmp_path / "metadata.json").write_text(json.dumps({"cases": cases}))
    cal = calibrate(tmp_path, "h200-pcie5", fidelity="analytic", only=["atomic"])
    (fit,) = cal.fits
    for k, v in TRUTH.items():
        assert fit.values[k] == pytest.approx(v, rel=0.05), k
    assert cal.calibration_groups == ["micro/ptr_chase/atomic"]


def test_the_committed_fit_and_its_held_out_chases():
    here = RESULTS / "h200" / "atomic_chase"
    record = json.loads((here / "calibration.json").read_text())
    cal = calibrate(here, str(RESULTS / "h200" / "host_loop" / "calibrated.toml"),
                    only=["atomic"])
    (fit,) = cal.fits
    (committed,) = [f for f in record["fits"] if f["name"] == "atomic"]
    for k in TRUTH:
        assert fit.values[k] == pytest.approx(committed["values"][k], rel=1e-3), k
    # an atomic the L2 serves waits 50-60 ns more than a load; a warp's of 32 lines
    # about five doublings of 19-20 ns more than one of a single line
    assert 50 < fit.values["gpu.atomic_extra_ns"] < 60
    assert 18 < fit.values["gpu.atomic_spread_ns"] < 21
    summary = pd.read_csv(here / "summary.csv")
    lat = summary[summary["metric"] == "lat_ns"]
    held = lat[lat["case"].str.contains("cache=atomic") & ~lat["case"].isin(
        fit.residuals_pct)]
    assert len(held) == 11
    assert float(held["error_pct"].abs().mean()) < 5.0
    assert math.isfinite(float(held["error_pct"].abs().max()))
