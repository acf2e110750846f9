"""Device-memory latency by cache level: the pointer-chase twin's replay of the
program's passes, the model's chain time, and the calibration that recovers the
three latencies (gpu_kernels/micro/ptr_chase.cu: an untimed pass, the L2 flushed,
then the timed pass over the next links, where the program reports revisits)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from hostlink.model.config import load_system, system_with
from hostlink.model.device_memory import LEVEL_KEYS, dependent_chain_ns, level_counts
from hostlink.traces.cache import LEVEL_L1, LEVEL_L2, LEVEL_MEMORY, CacheConfig, CacheState
from hostlink.validation import twins
from hostlink.validation.calibrate import calibrate
from hostlink.validation.manifest import micro_case_name
from hostlink.validation.results_io import make_table, unit_of, write_results

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30
TRUTH = {"gpu.l1_hit_ns": 22.0, "gpu.device_lat_ns": 150.0, "gpu.dram_lat_ns": 345.0}


@pytest.fixture(scope="module")
def h100():
    return load_system("h100-pcie5-datasheet")


def chase(footprint_B, cache="default", steps=1000, stride_B=128):
    return dict(benchmark="ptr_chase", memory_mode="device", stride_B=stride_B,
                footprint_B=footprint_B, order="random", cache=cache, steps=steps)


def test_cache_levels_replay_in_order():
    state = CacheState(CacheConfig(l1_size_B=4 * 128, l2_size_B=64 * 128, l1_ways=4, l2_ways=4))
    a, b = 0, 4 * 1000                       # two sectors of different lines
    assert list(state.levels(0, np.array([a, b, a, b]))) == [LEVEL_MEMORY, LEVEL_MEMORY,
                                                            LEVEL_L1, LEVEL_L1]
    state.flush_l1()
    assert list(state.levels(0, np.array([a]))) == [LEVEL_L2]
    assert state.load(0, b) == "l2" and state.load(0, b) == "l1"


@pytest.mark.parametrize("fresh", [True, False])
def test_small_chain_revisits_from_the_l1(h100, fresh):
    # 512 nodes of 128 B (64 KiB, within the 224 KiB L1), 1000 timed links: the first
    # visit of each node misses the L1, the other 488 hit it
    t = twins.build_ptr_chase("c", chase(64 * KiB), h100, revisits_hint=1 if fresh else None)
    first = [0, 0, 512] if fresh else [0, 512, 0]   # fresh nodes after a flush, or the L2
    assert list(t.extra["levels"]) == [488] + first[1:]
    assert t.stream is None


def test_cg_skips_the_l1_and_large_chains_reach_dram(h100):
    cg = twins.build_ptr_chase("c", chase(64 * KiB, "cg"), h100, revisits_hint=1)
    assert list(cg.extra["levels"]) == [0, 488, 512]
    big = twins.build_ptr_chase("c", chase(4 * GiB, stride_B=2 * MiB), h100, revisits_hint=0)
    assert list(big.extra["levels"]) == [0, 0, 1000]
    # 8192 nodes in 1 MiB: more than the L1 holds, so 20000 links revisit from the L2
    mid = twins.build_ptr_chase("c", chase(1 * MiB, steps=20000), h100, revisits_hint=1)
    assert list(mid.extra["levels"]) == [0, 20000 - 8192, 8192]


def test_chain_time_is_loads_times_level_latency(h100):
    sysc = system_with(h100, TRUTH)
    t = twins.build_ptr_chase("c", chase(64 * KiB), sysc, revisits_hint=1)
    got = t.predict(sysc, "des")
    want = (488 * 22.0 + 512 * 345.0) / 1000
    assert got["lat_ns"] == pytest.approx(want)
    assert got["time_ms"] == pytest.approx(want * 1000 * 1e-6)
    slower = t.predict(system_with(sysc, {"gpu.dram_lat_ns": 445.0}), "des")["lat_ns"]
    assert slower - got["lat_ns"] == pytest.approx(512 * 100.0 / 1000)


def test_chain_time_checks_its_counts(h100):
    assert dependent_chain_ns(h100.gpu, [1, 2, 3]) == pytest.approx(
        h100.gpu.l1_hit_ns + 2 * h100.gpu.device_lat_ns + 3 * h100.gpu.dram_lat_ns)
    with pytest.raises(ValueError):
        dependent_chain_ns(h100.gpu, [1, 2])
    with pytest.raises(ValueError):
        dependent_chain_ns(h100.gpu, [1, -2, 3])
    with pytest.raises(ValueError):
        level_counts(np.array([0, 3]))
    with pytest.raises(twins.TwinError, match="unknown cache operator"):
        twins.device_chase_levels(np.arange(4), np.arange(4), 128, "ca", h100.gpu, l2_flushed=True)


def write_run(path, points, system, *, revisits=True, noise_pct=1.0, seed=3):
    """Results of device chases as the current program reports them (with revisits)."""
    rng = np.random.default_rng(seed)
    cases, rows = {}, []
    for p in points:
        name = micro_case_name("ptr_chase", {k: p[k] for k in ("memory_mode", "stride_B",
                                                              "footprint_B", "order", "cache")})
        cases[name] = {"kind": "micro", **p}
        n = p["footprint_B"] // p["stride_B"]
        hint = (1 if 2 * p["steps"] > n else 0) if revisits else None
        values = twins.build_ptr_chase(name, p, system, revisits_hint=hint).predict(system, "des")
        if revisits:
            values["revisits"] = float(hint)
        for rep in range(3):
            noise = float(np.exp(rng.normal(0.0, noise_pct / 100.0)))
            for metric, value in values.items():
                v = value if metric == "revisits" else value * noise
                rows.append(("synthetic", "synthetic", name, "measured", metric, v,
                             unit_of(metric), rep))
    write_results(make_table(rows), path)
    (path / "metadata.json").write_text(json.dumps({"cases": cases}))
    return path


def sweep():
    """The launch_latency manifest's chases: 64 KiB to 4 GiB, cg and default."""
    pts = [chase(fp, c, steps=20000) for fp in (64 * KiB, 1 * MiB, 16 * MiB) for c in ("cg", "default")]
    pts += [chase(fp, "cg", steps=4000, stride_B=s) for fp in (256 * MiB, 4 * GiB) for s in (128, 4096)]
    return pts


def test_calibration_recovers_the_three_latencies(tmp_path, h100):
    run = write_run(tmp_path, sweep(), system_with(h100, TRUTH))
    cal = calibrate(run, "h100-pcie5-datasheet", only=["device_latency"])
    (fit,) = cal.fits
    for key in LEVEL_KEYS:
        assert fit.identifiable[key]
        assert fit.values[key] == pytest.approx(TRUTH[key], rel=0.02)
    assert fit.mape_pct < 2.0 < fit.base_mape_pct
    assert cal.calibration_groups == ["micro/ptr_chase/device"]
    assert cal.system.provenance["gpu.dram_lat_ns"].startswith(f"measured: {run}")


def test_runs_without_cg_chases_hold_the_device_chase_out(tmp_path, h100):
    pts = [chase(fp) for fp in (4 * KiB, 64 * KiB, 1 * MiB)]
    run = write_run(tmp_path, pts, system_with(h100, TRUTH))
    cal = calibrate(run, "h100-pcie5-datasheet", only=["device_latency"])
    assert not cal.fits
    (skip,) = cal.skipped
    assert skip["name"] == "device_latency" and "ld.cg" in skip["reason"]
    assert "micro/ptr_chase/device" in cal.held_out_groups
    assert cal.system.gpu.dram_lat_ns == h100.gpu.dram_lat_ns


def test_l1_latency_is_kept_where_no_chase_reaches_the_l1(tmp_path, h100):
    pts = [chase(fp, "cg", steps=20000) for fp in (64 * KiB, 1 * MiB, 16 * MiB)]
    run = write_run(tmp_path, pts, system_with(h100, TRUTH))
    cal = calibrate(run, "h100-pcie5-datasheet", only=["device_latency"])
    (fit,) = cal.fits
    assert not fit.identifiable["gpu.l1_hit_ns"]
    assert cal.system.gpu.l1_hit_ns == h100.gpu.l1_hit_ns
    assert fit.values["gpu.dram_lat_ns"] == pytest.approx(TRUTH["gpu.dram_lat_ns"], rel=0.02)
