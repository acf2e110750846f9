"""The GPU-internal part of a host read's latency (``gpu.host_path_ns``): it adds to
a warp's load-to-use latency but holds no tag or completion credit.

Expected values are the model's own identities: a dependent chain of N reads
takes N x host_path_ns longer; with tags binding, Little's law gives tags x
size / (time a read holds its tag), which host_path_ns does not enter
(emogi_vldb2020 §3.3: outstanding reads bound by the tags over the round trip);
with too few warps, warps x size / (load-to-use latency)."""
from __future__ import annotations

import numpy as np
import pytest

from hostlink.model.config import load_system
from hostlink.model.des import simulate
from hostlink.model.des.events import HOST_READ
from hostlink.model.errors import ConfigError
from hostlink.model.predict import host_latency_ns, predict
from hostlink.model.workload import LaunchInfo, RequestStream

QUIET = {"translation.enabled": False, "launch_overhead_us": 0.0, "level_sync_us": 0.0}


def system(**overrides):
    return load_system("v100-pcie3", {**QUIET, **overrides})


def reads(warp, inst, addr, size_B, wpc=1) -> RequestStream:
    n = len(addr)
    size = np.full(n, size_B)
    n_warps = int(np.max(warp)) + 1
    return RequestStream(launch=np.zeros(n, np.uint32), warp=np.asarray(warp),
                         inst=np.asarray(inst), addr=np.asarray(addr, dtype=np.uint64),
                         size_B=size, useful_B=size, space=np.zeros(n, np.uint8),
                         is_write=np.zeros(n, bool),
                         launches=(LaunchInfo("k", -(-n_warps // wpc), wpc, 32 * wpc),))


def chase(steps: int) -> RequestStream:
    """One warp, one dependent 32 B read per step, each on its own page."""
    return reads(np.zeros(steps, np.int64), np.arange(steps), np.arange(steps) * 4096, 32)


def streaming(n_warps: int, per_warp: int, size_B: int) -> RequestStream:
    """Every warp reads ``per_warp`` lines, one request per instruction."""
    n = n_warps * per_warp
    return reads(np.repeat(np.arange(n_warps), per_warp), np.tile(np.arange(per_warp), n_warps),
                 np.arange(n) * 128, size_B, wpc=8)


def bw_GBps(s: RequestStream, out) -> float:
    return float(s.size_B.sum(dtype=np.int64) / out.kernel_ns.sum())


# ---------------------------------------------------------------- the config key

def test_host_path_defaults_to_zero_and_is_checked():
    for name in ("v100-pcie3", "a100-pcie4", "h100-pcie5-datasheet", "h200-pcie5-datasheet"):
        assert load_system(name).gpu.host_path_ns == 0.0
    assert system(**{"gpu.host_path_ns": "0.3 us"}).gpu.host_path_ns == 300.0
    with pytest.raises(ConfigError, match="gpu.host_path_ns"):
        system(**{"gpu.host_path_ns": -1.0})
    sysc = system(**{"gpu.host_path_ns": 250.0, "link.rtt_ns": 900.0})
    assert host_latency_ns(sysc) == 1150.0


# ---------------------------------------------------------------- one warp: latency

@pytest.mark.parametrize("engine", ["fast", "reference"])
def test_one_read_takes_the_path_and_holds_its_tag_for_the_round_trip(engine):
    s = chase(1)
    h = 420.0
    x, out = simulate(s, system(**{"gpu.host_path_ns": h}), engine=engine, record=True)
    window = x.rtt_ns + x.ser_up_ns[0] + x.dram_ns[0] + x.ser_down_ns[0]
    assert out.kernel_ns[0] == pytest.approx(h + window, rel=1e-12)
    assert out.done_ns[0] - out.granted_ns[0] == pytest.approx(h + window, rel=1e-12)
    assert out.stat("sum_lat_ns") == pytest.approx(window, rel=1e-12)
    # the bandwidth series counts the completion when it leaves the link
    assert out.bw_bins_B[int(window / out.bin_ns)] == 32


@pytest.mark.parametrize("h", [1.0, 137.5, 600.0])
def test_a_pointer_chase_grows_by_exactly_the_path_per_step(h):
    steps = 50
    s = chase(steps)
    base = simulate(s, system())[1].kernel_ns[0]
    out = simulate(s, system(**{"gpu.host_path_ns": h}))[1]
    assert out.kernel_ns[0] - base == pytest.approx(steps * h, rel=1e-9)
    # the analytic model's critical path (one warp: latency bound) moves the same way
    a0 = predict(s, system(), fidelity="analytic")
    a1 = predict(s, system(**{"gpu.host_path_ns": h}), fidelity="analytic")
    assert (a1.per_launch_kernel_s[0] - a0.per_launch_kernel_s[0]) * 1e9 == pytest.approx(
        steps * h, rel=1e-9)
    assert a1.bound == "latency"


def test_few_warps_are_bound_by_the_load_to_use_latency():
    """16 warps, one 128 B read each in flight: 16 x 128 B per (path + round trip)."""
    h = 500.0
    sysc = system(**{"gpu.sm_count": 2, "gpu.max_warps_per_sm": 8, "gpu.host_path_ns": h})
    s = streaming(16, 200, 128)
    x, out = simulate(s, sysc)
    lat = h + x.rtt_ns + x.ser_up_ns[0] + x.dram_ns[0] + x.ser_down_ns[0]
    assert bw_GBps(s, out) == pytest.approx(16 * 128 / lat, rel=0.01)


# ---------------------------------------------------------------- many warps: tags

@pytest.mark.parametrize("engine", ["fast", "reference"])
def test_with_tags_binding_bandwidth_does_not_depend_on_the_path(engine):
    """32 B reads from 512 warps on 32 tags: Little's law on the tag window,
    tags x 32 B / (rtt + the read's own service), whatever host_path_ns is."""
    tags = 32
    s = streaming(512, 6 if engine == "reference" else 40, 32)
    outs = {}
    for h in (0.0, 300.0, 800.0):
        x, outs[h] = simulate(s, system(**{"link.tags": tags, "gpu.host_path_ns": h}),
                              engine=engine)
        window = x.rtt_ns + x.ser_up_ns[0] + x.dram_ns[0] + x.ser_down_ns[0]
        assert outs[h].stat("peak_outstanding") == tags
        # (the first tags' worth of reads queue on the link at time 0: 1e-3)
        assert outs[h].stat("sum_lat_ns") / outs[h].stat("host_reads") == pytest.approx(
            window, rel=1e-3)
    little = tags * 32 / window
    for h, out in outs.items():
        # the run's last read reaches its warp h after its tag returns: one tail of h
        steady = s.size_B.sum(dtype=np.int64) / (out.kernel_ns[0] - h)
        assert steady == pytest.approx(little, rel=0.002 if engine == "fast" else 0.02)
        assert out.kernel_ns[0] - outs[0.0].kernel_ns[0] == pytest.approx(h, rel=1e-9)
    # the analytic model: the same tag bound and reads in flight, whatever the path
    a0 = predict(s, system(**{"link.tags": tags}), fidelity="analytic")
    a1 = predict(s, system(**{"link.tags": tags, "gpu.host_path_ns": 800.0}),
                 fidelity="analytic")
    assert a0.extra["analytic"]["bound"] == a1.extra["analytic"]["bound"] == "tags"
    assert a1.time_s == pytest.approx(a0.time_s, rel=1e-12)
    assert a1.outstanding_mean == pytest.approx(a0.outstanding_mean, rel=1e-12)


def test_the_path_is_not_charged_to_writes_or_device_reads():
    """Posted writes and device reads keep their times; host reads alone take the path."""
    n = 6
    space = np.array([0, 1, 0, 1, 0, 1], np.uint8)
    write = np.array([False, False, True, False, False, False])
    size = np.full(n, 128)
    s = RequestStream(launch=np.zeros(n, np.uint32), warp=np.arange(n), inst=np.zeros(n),
                      addr=np.arange(n, dtype=np.uint64) * np.uint64(4096), size_B=size,
                      useful_B=size, space=space, is_write=write,
                      launches=(LaunchInfo("k", n, 1, 32),))
    h = 300.0
    x0, a = simulate(s, system(), record=True)
    x1, b = simulate(s, system(**{"gpu.host_path_ns": h}), record=True)
    host_read = x1.kind == HOST_READ
    np.testing.assert_allclose(b.done_ns[~host_read], a.done_ns[~host_read], rtol=1e-12)
    np.testing.assert_allclose(b.done_ns[host_read], a.done_ns[host_read] + h, rtol=1e-12)
