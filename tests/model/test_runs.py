"""Workloads described beyond a request stream, through the public predict():
a copy, a chase, a launch, a host loop and a sampled run (hostlink.model.runs)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from hostlink.model.config import load_system, system_with
from hostlink.model.copy_engine import copy_bw_GBps
from hostlink.model.errors import HostlinkError
from hostlink.model.predict import predict
from hostlink.model.workload import (Copy, HashedLines, HostLoopRun, LaunchGrid, LaunchInfo,
                                     PointerChase, RequestStream, SampledRun)


@pytest.fixture(scope="module")
def h200():
    return load_system("h200-pcie5")


def test_a_copy_streams_at_the_copy_engines_rate_after_its_setup(h200):
    # two sizes differ by their bytes over the copy engine's bandwidth; host to device
    # waits one round trip more before its first byte than device to host
    sys = system_with(h200, {"gpu.copy_setup_ns": 5000.0})
    for to_device in (True, False):
        small, big = (predict(Copy(n, to_device), sys) for n in (1 << 20, 1 << 28))
        bw = copy_bw_GBps(sys, to_device)
        assert (big.time_s - small.time_s) * 1e9 == pytest.approx(((1 << 28) - (1 << 20)) / bw)
        fixed_ns = small.time_s * 1e9 - (1 << 20) / bw
        want = 5000.0 + (sys.link.rtt_ns if to_device else 0.0)
        assert fixed_ns == pytest.approx(want)
        assert big.bw_GBps == pytest.approx((1 << 28) / big.time_s * 1e-9)
        json.loads(big.to_json())


def test_a_device_chase_waits_each_levels_latency_and_atomics_more(h200):
    gpu = system_with(h200, {"gpu.atomic_extra_ns": 40.0}).gpu
    sys = system_with(h200, {"gpu.atomic_extra_ns": 40.0})
    levels = (10.0, 20.0, 30.0)
    want = 10 * gpu.l1_hit_ns + 20 * gpu.device_lat_ns + 30 * gpu.dram_lat_ns
    p = predict(PointerChase(60, levels=levels), sys, mode="device")
    assert p.time_s * 1e9 == pytest.approx(want)
    assert p.extra["step_ns"] == pytest.approx(want / 60)
    # an atomic the L2 serves waits atomic_extra_ns more, one from DRAM as long as a
    # load; a step takes at least the SM's round of its one line where atomics spread
    a = predict(PointerChase(60, levels=levels, atomic=True), sys, mode="device")
    r = 0.0 if gpu.atomic_spread_ns is None else float(gpu.atomic_sm_ns)
    want = (10 * max(gpu.l1_hit_ns, r) + 20 * max(gpu.device_lat_ns + 40.0, r)
            + 30 * max(gpu.dram_lat_ns, r))
    assert a.time_s * 1e9 == pytest.approx(want)


def test_a_launch_takes_its_fixed_time_and_its_ctas_dispatch(h200):
    sys = system_with(h200, {"gpu.launch_ns": 6000.0, "gpu.cta_dispatch_ns": 2.0})
    p = predict(LaunchGrid(10_000), sys, mode="device")
    assert p.time_s * 1e9 == pytest.approx(6000.0 + 10_000 * 2.0)
    assert p.bound == "cta_dispatch" and p.extra["ns_per_cta"] == pytest.approx(2.6)
    with pytest.raises(HostlinkError, match="not modelled"):
        predict(LaunchGrid(8), system_with(sys, {"gpu.launch_ns": 0.0,
                                                 "gpu.cta_dispatch_ns": 0.0}), mode="device")


def test_a_host_loop_refuses_an_unknown_loop(h200):
    with pytest.raises(HostlinkError, match="unknown host loop 'nope'"):
        predict(HostLoopRun("nope", 4, 1024), h200)


def _lines(warps: int, per_warp: int) -> RequestStream:
    """One 128 B host request per load, ``per_warp`` loads per warp, warp w's j-th at
    block w + j W."""
    w = np.repeat(np.arange(warps), per_warp)
    j = np.tile(np.arange(per_warp), warps)
    n = len(w)
    return RequestStream(launch=np.zeros(n), warp=w, inst=j, addr=(w + j * warps) * 128,
                         size_B=np.full(n, 128), useful_B=np.full(n, 128),
                         space=np.zeros(n), is_write=np.zeros(n, dtype=bool),
                         launches=(LaunchInfo("k", warps // 4, 4, 128),))


def test_a_sample_stands_for_its_run_and_a_hash_adds_its_issue_time(h200):
    stream = _lines(264, 16)
    sample_B = float(len(stream) * 128)
    one = predict(SampledRun(stream, sample_B, sample_B, warps=264), h200, fidelity="analytic")
    ten = predict(SampledRun(stream, 10 * sample_B, sample_B, warps=264), h200,
                  fidelity="analytic")
    overhead_s = h200.launch_overhead_us * 1e-6
    # the run's time beyond the launch overhead scales with its bytes
    assert ten.time_s - overhead_s == pytest.approx(10 * (one.time_s - overhead_s))
    assert ten.requests == 10 * one.requests
    # loads that pick their lines by a hash take at least their chain of hashes: one
    # warp's loads one random_chain_ns after another
    slow = system_with(h200, {"gpu.random_chain_ns": 1e5, "gpu.random_load_ns": 0.0})
    hashed = SampledRun(stream, 10 * sample_B, sample_B, warps=264,
                        hashed=HashedLines(1 << 30, 128, "cv"))
    p = predict(hashed, slow, fidelity="analytic")
    loads_per_warp = 10 * sample_B / 128 / 264
    assert p.bound == "hashed_lines"
    assert p.time_s - overhead_s >= loads_per_warp * 1e5 * 1e-9


def test_hashed_loads_count_a_blocks_lines_or_their_lanes_words():
    block = HashedLines(1 << 20, 256)          # 32 lanes x 8 B, read whole
    assert (block.lines_per_load, block.reads_per_load, block.read_B) == (2.0, 1, 128)
    lanes = HashedLines(1 << 20, 256, per_lane=True)   # each lane its own 8 B word
    assert (lanes.lines_per_load, lanes.reads_per_load, lanes.read_B) == (32.0, 32, 8)
