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
from hostlink.model.chase import atomic_step_ns
from hostlink.validation.twins import build_micro, case_group
from hostlink.validation.data_tree import manifest_path, run_dir

ROOT = Path(__file__).resolve().parents[2]
MANIFEST = manifest_path("atomic_chase")
TRUTH = {"gpu.atomic_extra_ns": 55.0, "gpu.atomic_spread_ns": 20.0}
# the H200's level latencies (validation/experiments/launch_latency/runs/h200), not the preset's
# assumed 600 ns: one warp's atomic of 32 lines then takes 146 + 55 + 100 ns
LEVELS = {"gpu.device_lat_ns": 146.0, "gpu.dram_lat_ns": 340.0}


def _cases(caches=("atomic",), lanes=(1, 2, 4, 8, 16, 32), footprints=(64 << 10,),
           steps=4000, warps=(1,)):
    points = expand_micro("ptr_chase", {"memory_mode": ("device",), "stride_B": (128,),
                                        "footprint_B": footprints, "cache": caches,
                                        "lanes": lanes, "warps": warps})
    return {micro_case_name("ptr_chase", p): {"kind": "micro", "benchmark": "ptr_chase",
                                              "steps": steps, "reps": 3, "seed": 1, **p}
            for p in points}


def _hints(case, metric):
    # the programs that report revisits flush the L2 before each pass
    return 1.0 if metric == "revisits" else None


def write_measured(path, cases, truth, noise_pct=0.0, reps=3):
    """A run of the chases as the program reports them (its latency, with log-normal
    noise, and that it flushed the L2), made by their twins on ``truth``."""
    rng = np.random.default_rng(5)
    rows = []
    for case, p in cases.items():
        lat = build_micro(case, p, truth, hints=lambda m, c=case: _hints(c, m)).predict(
            truth)["lat_ns"]
        for rep in range(reps):
            noise = float(np.exp(rng.normal(0.0, noise_pct / 100))) if noise_pct else 1.0
            rows.append(("s", "s", case, "measured", "lat_ns", lat * noise, unit_of("lat_ns"),
                         rep))
            rows.append(("s", "s", case, "measured", "revisits", 1.0, unit_of("revisits"), rep))
    write_results(make_table(rows), path)
    (path / "metadata.json").write_text(json.dumps({"cases": cases}))


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
    # warps too are named only above 1
    names = sorted(_cases(lanes=(32,), warps=(1, 16)))
    assert [n.rsplit(",", 2)[-2:] for n in names] == [["cache=atomic", "lanes=32"],
                                                      ["lanes=32", "warps=16"]]


@pytest.mark.parametrize("body, match", [
    ('lanes = [1, 33]\ncache = "atomic"\nmemory_mode = "device"', "at most 32"),
    ('warps = [64]\ncache = "atomic"\nmemory_mode = "device"', "warps of one CTA"),
    ('cache = ["cg", "atomic"]\nmemory_mode = "zerocopy"', "device memory only"),
])
def test_the_manifest_refuses_chases_the_program_refuses(tmp_path, body, match):
    path = tmp_path / "m.toml"
    path.write_text(f'[experiment]\nname = "x"\n\n[[micro]]\nbenchmark = "ptr_chase"\n{body}\n')
    with pytest.raises(ConfigError, match=match) as err:
        load_manifest(path)
    assert "micro[0]" in str(err.value)


def test_the_twin_adds_the_extra_where_the_l2_serves_and_the_spread_per_doubling():
    system = system_with(load_system("h200-pcie5-datasheet"), TRUTH)
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
    # from DRAM an atomic costs what a load does (validation/experiments/atomic_chase/runs/h200)
    (case, p), = _cases(footprints=(256 << 20,), lanes=(1,)).items()
    fresh = build_micro(case, p, system, hints=lambda m: _hints(case, m))
    assert fresh.extra["levels"][2] == 4000
    assert fresh.predict(system)["lat_ns"] == pytest.approx(gpu.dram_lat_ns)


def test_lanes_without_a_spread_leave_as_a_loads_lines_do_and_loads_of_lanes_have_no_twin():
    system = load_system("h200-pcie5-datasheet")
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
    system = system_with(load_system("h200-pcie5-datasheet"), {**TRUTH, "translation.enabled": False})
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
    truth = system_with(load_system("h200-pcie5-datasheet"), TRUTH)
    cases = {**_cases(steps=20000), **_cases(caches=("cg",), lanes=(1,), steps=20000)}
    write_measured(tmp_path, cases, truth, noise_pct=0.2)
    cal = calibrate(tmp_path, "h200-pcie5-datasheet", fidelity="analytic", only=["atomic"])
    (fit,) = cal.fits
    for k, v in TRUTH.items():
        assert fit.values[k] == pytest.approx(v, rel=0.05), k
    assert cal.calibration_groups == ["micro/ptr_chase/atomic"]


def refit_committed(run: str, base: str, step: str):
    """The fit of ``step`` on the committed H200 run ``run`` from the committed system
    ``base``, and the values its calibration record holds."""
    here = run_dir(run, "h200")
    record = json.loads((here / "calibration.json").read_text())
    (fit,) = calibrate(here, str(run_dir(base, "h200") / "calibrated.toml"), only=[step]).fits
    (committed,) = [f for f in record["fits"] if f["name"] == step]
    return here, fit, committed["values"]


def test_the_committed_fit_and_its_held_out_chases():
    here, fit, committed = refit_committed("atomic_chase", "host_loop", "atomic")
    for k in TRUTH:
        assert fit.values[k] == pytest.approx(committed[k], rel=1e-3), k
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


def test_many_warps_of_one_sm_take_at_least_their_lines_sm_turns():
    system = system_with(load_system("h200-pcie5-datasheet"), {**TRUTH, **LEVELS,
                                                      "gpu.atomic_sm_ns": 1.0})
    gpu = system.gpu
    got = {}
    for c, p in _cases(lanes=(32,), warps=(1, 8, 16), footprints=(256 << 10,),
                       steps=20000).items():
        twin = build_micro(c, p, system, hints=lambda m, c=c: _hints(c, m))
        got[p.get("warps", 1)] = (twin.predict(system)["lat_ns"], twin.extra["levels"])
    one = gpu.device_lat_ns + 55.0 + 100.0          # the L2, the extra, 20 ns x log2(32)
    # 8 warps' 256 lines fit in one warp's spread; 16 warps' 512 take 512 turns of 1 ns
    for w in (1, 8):
        lat, levels = got[w]
        assert lat == pytest.approx((levels[1] * one + levels[2] * (gpu.dram_lat_ns + 100.0))
                                    / 20000)
    lat16, levels16 = got[16]
    assert lat16 == pytest.approx((levels16[1] * 512.0 + levels16[2] * max(
        gpu.dram_lat_ns + 100.0, 512.0)) / 20000)
    # without a spread (calibrations before atomics) no round binds: 16 warps take what
    # one does, its lines leaving as a load's
    plain = system_with(load_system("h200-pcie5-datasheet"), LEVELS)
    lat = [build_micro(c, p, plain, hints=lambda m, c=c: _hints(c, m)).predict(plain)["lat_ns"]
           for c, p in _cases(lanes=(32,), warps=(1, 16), footprints=(256 << 10,),
                              steps=20000).items()]
    assert lat[1] == pytest.approx(lat[0], rel=0.01)
    assert lat[0] == pytest.approx(146.0 + 31 * max(plain.gpu.request_gap_ns,
                                                    plain.gpu.sm_request_ns), rel=0.01)


def test_the_sm_step_recovers_the_atomic_turn(tmp_path):
    truth = system_with(load_system("h200-pcie5-datasheet"), {**TRUTH, **LEVELS, "gpu.atomic_sm_ns": 0.9})
    cases = _cases(lanes=(1, 32), warps=(1, 4, 16, 32), footprints=(256 << 10,), steps=20000)
    write_measured(tmp_path, cases, truth)
    cal = calibrate(tmp_path, system_with(load_system("h200-pcie5-datasheet"), {**TRUTH, **LEVELS}),
                    fidelity="analytic", only=["atomic_sm"])
    (fit,) = cal.fits
    assert fit.values["gpu.atomic_sm_ns"] == pytest.approx(0.9, rel=0.01)
    assert set(fit.residuals_pct) == {c for c, p in cases.items()
                                      if p.get("warps") == 16 and p.get("lanes") == 32}


def test_the_committed_sm_turn_and_its_held_out_warps():
    here, fit, committed = refit_committed("atomic_warps", "atomic_chase", "atomic_sm")
    assert fit.values["gpu.atomic_sm_ns"] == pytest.approx(committed["gpu.atomic_sm_ns"],
                                                           rel=1e-3)
    # about a line a ns: 16 warps of 32 lines take 508 ns a round (one warp 302)
    assert 0.9 < fit.values["gpu.atomic_sm_ns"] < 1.1
    summary = pd.read_csv(here / "summary.csv")
    lat = summary[(summary["metric"] == "lat_ns") & summary["case"].str.contains("atomic")]
    held = lat[~lat["case"].isin(fit.residuals_pct)].set_index("case")["error_pct"]
    assert len(held) == 11
    # up to 8 warps a round takes what one warp's does, within 3.3%
    few = held[~held.index.str.contains("warps=(?:16|32)")]
    assert few.abs().max() < 3.5
