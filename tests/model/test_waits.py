"""Instructions that wait for their warp's earlier ones (``RequestStream.waits``): both
discrete-event engines and the analytic critical path honour them."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hostlink.model.config import load_system
from hostlink.model.des import simulate
from hostlink.model.predict import critical_path_ns
from hostlink.model.workload import SPACE_DEVICE, SPACE_HOST, LaunchInfo, RequestStream

QUIET = {"translation.enabled": False, "launch_overhead_us": 0.0, "level_sync_us": 0.0}


def system(**overrides):
    return load_system("v100-pcie3", {**QUIET, **overrides})


def one_warp(spaces, waits=None):
    n = len(spaces)
    return RequestStream(launch=np.zeros(n), warp=np.zeros(n), inst=np.arange(n),
                         addr=np.arange(n, dtype=np.uint64) * np.uint64(4096),
                         size_B=np.full(n, 128), useful_B=np.full(n, 128),
                         space=np.asarray(spaces, dtype=np.uint8), is_write=np.zeros(n, bool),
                         launches=(LaunchInfo("k", 1, 1, 32),), waits=waits)


def test_a_waiting_instruction_starts_a_new_round_trip():
    four = system(**{"gpu.loads_in_flight_per_warp": 4})
    free = simulate(one_warp([SPACE_HOST] * 4), four)[1].kernel_ns[0]
    split = simulate(one_warp([SPACE_HOST] * 4, [False, False, True, False]), four)[1].kernel_ns[0]
    rtt = 1000.0
    assert rtt < free < 1.05 * rtt
    assert 2 * rtt < split < 2.1 * rtt            # two rounds of two reads


def test_device_loads_that_wait_add_their_latency():
    sysc = system(**{"gpu.loads_in_flight_per_warp": 4, "gpu.device_lat_ns": 300.0})
    dev = [SPACE_DEVICE] * 3
    overlap = simulate(one_warp(dev), sysc)[1].kernel_ns[0]
    serial = simulate(one_warp(dev, [True] * 3), sysc)[1].kernel_ns[0]
    assert overlap == pytest.approx(300.0, rel=0.01)
    assert serial == pytest.approx(900.0, rel=0.01)


@settings(max_examples=25, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31), lif=st.integers(1, 4), tags=st.integers(2, 12),
       p_wait=st.sampled_from([0.2, 0.5, 1.0]), host_path=st.sampled_from([0.0, 400.0]))
def test_engines_agree_with_waits(seed, lif, tags, p_wait, host_path):
    rng = np.random.default_rng(seed)
    rows = []
    for w in range(int(rng.integers(1, 20))):
        for i in range(int(rng.integers(1, 7))):
            wait = bool(rng.random() < p_wait)
            for _ in range(int(rng.integers(1, 4))):
                rows.append((w, i, int(rng.integers(0, 4096)) * 128,
                             SPACE_DEVICE if rng.random() < 0.3 else SPACE_HOST, wait))
    w, i, a, sp, wt = (np.array(c) for c in zip(*rows))
    n = len(rows)
    s = RequestStream(launch=np.zeros(n), warp=w, inst=i, addr=a.astype(np.uint64),
                      size_B=np.full(n, 128), useful_B=np.full(n, 128), space=sp.astype(np.uint8),
                      is_write=np.zeros(n, bool), launches=(LaunchInfo("k", 20, 1, 32),),
                      waits=wt)
    sysc = system(**{"gpu.sm_count": 2, "gpu.max_warps_per_sm": 4, "link.tags": tags,
                     "gpu.loads_in_flight_per_warp": lif, "gpu.host_path_ns": host_path})
    _, fast = simulate(s, sysc, record=True)
    _, ref = simulate(s, sysc, engine="reference")
    np.testing.assert_allclose(fast.kernel_ns, ref.kernel_ns, rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(fast.done_ns, ref.done_ns, rtol=1e-12, atol=1e-9)
    if p_wait == 1.0:   # everything waits: as if one load were in flight
        _, one = simulate(s.with_waits(None), system(**{
            "gpu.sm_count": 2, "gpu.max_warps_per_sm": 4, "link.tags": tags,
            "gpu.loads_in_flight_per_warp": 1, "gpu.host_path_ns": host_path}), record=True)
        np.testing.assert_allclose(fast.done_ns, one.done_ns, rtol=1e-12, atol=1e-9)


def test_critical_path_takes_rounds_between_waits():
    s = one_warp([SPACE_HOST] * 4 + [SPACE_DEVICE] * 2,
                 [True, False, False, False, True, True])
    # four host loads, two at a time: two rounds of 1000; then two device loads in turn
    path = critical_path_ns(s, 1000.0, 100.0, 2)
    assert path[0] == pytest.approx(2 * 1000.0 + 2 * 100.0)
    assert critical_path_ns(s.with_waits(None), 1000.0, 100.0, 2)[0] == pytest.approx(
        (4 * 1000.0 + 2 * 100.0) / 2)


def test_waits_travel_with_the_stream():
    s = one_warp([SPACE_HOST] * 3, [False, True, False])
    assert s.select(np.array([True, True, False])).waits.tolist() == [False, True]
    assert s.with_waits(None).waits is None
    with pytest.raises(ValueError, match="waits"):
        one_warp([SPACE_HOST] * 3, [True])
