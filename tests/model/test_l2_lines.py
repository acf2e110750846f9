"""The L2 replay that tells the SM's issue stage which device read lines the L2 serves
(hostlink.model.l2_lines), and what the engines and the analytic model charge them."""
from __future__ import annotations

import numpy as np

from hostlink.model.analytic_launch import launch_terms, warp_chains
from hostlink.model.config import load_system
from hostlink.model.des import simulate
from hostlink.model.des.inputs import layout, line_leads
from hostlink.model.l2_lines import L2State, l2_config, l2_served
from hostlink.model.workload import SPACE_DEVICE, SPACE_HOST, LaunchInfo, RequestStream
from hostlink.traces.cache import CacheConfig

QUIET = {"translation.enabled": False, "launch_overhead_us": 0.0, "level_sync_us": 0.0}
#: the issue stage's costs (the H100's measured values: gpu presets' provenance)
ISSUE = {"gpu.request_gap_ns": 6.54, "gpu.host_request_gap_ns": 13.64,
         "gpu.sm_request_ns": 4.34}
#: a tiny L2: 4 sets of 2 ways of 128 B lines
TINY = CacheConfig(l2_size_B=4 * 2 * 128, l2_ways=2)


def system(**overrides):
    return load_system("v100-pcie3", {**QUIET, **overrides})


def stream(warp, inst, addr, size, space=None, write=None, launch=None, wpc=1, lines=None):
    n = len(addr)
    size = np.asarray(size)
    warp = np.asarray(warp)
    launch = np.zeros(n, np.uint32) if launch is None else np.asarray(launch, np.uint32)
    n_launch = int(launch.max()) + 1 if n else 1
    info = LaunchInfo("k", -(-(int(warp.max()) + 1) // wpc), wpc, 32 * wpc)
    s = RequestStream(launch=launch, warp=warp, inst=np.asarray(inst),
                      addr=np.asarray(addr, dtype=np.uint64), size_B=size, useful_B=size,
                      space=(np.full(n, SPACE_DEVICE, np.uint8) if space is None
                             else np.asarray(space, np.uint8)),
                      is_write=np.zeros(n, bool) if write is None else np.asarray(write),
                      launches=(info,) * n_launch)
    return s if lines is None else s.with_lines(np.asarray(lines))


def replay(s, config=TINY, as_device=False, state=None):
    lay = layout(s, system())
    leads = line_leads(s, lay["row"], lay["inst_ptr"])
    return l2_served(s, lay["row"], leads, config, as_device=as_device, state=state)


def served(s, config=TINY, as_device=False, state=None):
    return replay(s, config, as_device, state).lines


def test_a_line_read_again_is_the_l2s_and_a_first_read_is_not():
    # warp 0 reads lines 0 and 1, warp 1 reads line 0 again and line 2
    s = stream([0, 0, 1, 1], [0, 1, 0, 1], [0, 128, 0, 256], [128] * 4)
    assert served(s).tolist() == [False, False, True, False]
    assert replay(s).misses.tolist() == [True, True, False, True]


def test_a_line_is_the_l2s_only_when_every_sector_of_it_hits():
    # sector 0 of line 0, then sectors 0 and 1 of it (one request): sector 1 misses
    s = stream([0, 1], [0, 0], [0, 0], [32, 64])
    assert served(s).tolist() == [False, False]
    assert replay(s).misses.tolist() == [True, True]
    # a line of two requests (sectors 0 and 2) after both were read: the L2's, on its lead
    s = stream([0, 0, 1, 1], [0, 0, 0, 0], [0, 64, 0, 64], [32] * 4)
    assert served(s).tolist() == [False, False, True, False]


def test_host_reads_stores_atomics_and_a_walks_steps_take_no_l2_turn():
    host = stream([0, 1], [0, 0], [0, 0], [128, 128], space=[SPACE_HOST] * 2)
    assert served(host).tolist() == [False, False]
    assert not replay(host).misses.any()        # nor do they miss it
    # the same host arrays placed in device memory do use it
    assert served(host, as_device=True).tolist() == [False, True]
    write = stream([0, 1], [0, 0], [0, 0], [128, 128], write=[True, False])
    assert served(write).tolist() == [False, False]          # a store fills nothing
    atomic = stream([0, 1], [0, 0], [0, 0], [128, 128]).with_atomic(np.array([False, True]))
    assert served(atomic).tolist() == [False, False]
    # a stream whose requests stand for lines (a walk's steps) is not replayed
    steps = stream([0, 1], [0, 0], [0, 0], [128, 128], lines=[1, 3])
    assert served(steps).tolist() == [False, False] and not replay(steps).misses.any()
    x, _ = simulate(steps, system(**{"gpu.sm_l2_request_ns": 0.99}))
    assert x.l2_lines is None and x.l2_misses is None


def test_a_walks_edge_lines_in_device_memory_use_the_l2_and_its_steps_do_not():
    """A twin without device arrays (its ``lines`` set) keeps the edge list's own lines:
    placed in device memory they are replayed, a second read of a line hits and a
    first misses; its steps, which stand for lines, never take part."""
    # warps 0 and 1 read edge line 0 (host), then each takes a step (device) on line 0
    s = stream([0, 0, 1, 1], [0, 1, 0, 1], [0, 0, 0, 0], [128] * 4,
               space=[SPACE_HOST, SPACE_DEVICE, SPACE_HOST, SPACE_DEVICE], lines=[1, 3, 1, 3])
    assert served(s).tolist() == [False] * 4 and not replay(s).misses.any()
    assert served(s, as_device=True).tolist() == [False, False, True, False]
    assert replay(s, as_device=True).misses.tolist() == [True, False, False, False]
    # a run in device memory marks the steps before every request becomes a device one
    from hostlink.model.predict import predict
    lat = {"gpu.device_lat_ns": 150.0, "gpu.dram_lat_ns": 340.0, "gpu.sm_l2_request_ns": 0.99,
           **ISSUE}
    one = stream([0, 0], [0, 1], [0, 0], [128, 128], space=[SPACE_HOST, SPACE_DEVICE],
                 lines=[1, 1]).with_waits(np.array([False, True]))
    for fidelity in ("des", "analytic"):
        # the edge line misses (340 ns), the step keeps the L2's latency (150 ns)
        ns = predict(one, system(**lat), mode="device", fidelity=fidelity).kernel_time_s * 1e9
        assert 490.0 <= ns < 491.0, (fidelity, ns)
        ns = predict(one, system(**dict(lat, **{"gpu.sm_l2_request_ns": None})), mode="device",
                     fidelity=fidelity).kernel_time_s * 1e9
        assert 300.0 <= ns < 301.0, (fidelity, ns)


def test_lines_beyond_the_l2s_capacity_are_evicted_least_recently_used_first():
    # 2 ways per set: lines 0, 4, 8 share set 0 under the modulo index; 0 is evicted by 8
    lines = [0, 4, 8, 0, 8]
    s = stream(list(range(5)), [0] * 5, [k * 128 for k in lines], [128] * 5)
    cfg = CacheConfig(l2_size_B=TINY.l2_size_B, l2_ways=2, set_index="line")
    assert served(s, cfg).tolist() == [False, False, False, False, True]


def test_the_l2_keeps_its_lines_across_launches_and_a_carried_state_continues():
    s = stream([0, 0], [0, 0], [0, 0], [128, 128], launch=[0, 1])
    assert served(s).tolist() == [False, True]
    state = L2State(TINY)
    first = stream([0], [0], [0], [128])
    assert served(first, state=state).tolist() == [False]
    assert served(first, state=state).tolist() == [True]      # a later part of the run
    assert served(first, state=state.copy()).tolist() == [True]


def test_an_empty_l2_serves_nothing():
    s = stream([0, 1], [0, 0], [0, 0], [128, 128])
    assert not served(s, CacheConfig()).any()


def _rereads(n_warps: int, wpc: int) -> RequestStream:
    """Two launches read the same 32 lines per warp (one sector each, one load of 32
    lines a warp): the second launch's lines are all the L2's."""
    rows = [(la, w, ((w * 32 + lane) * 128)) for la in range(2) for w in range(n_warps)
            for lane in range(32)]
    la, w, a = (np.array(c) for c in zip(*rows))
    n = len(a)
    return stream(w, np.zeros(n), a, np.full(n, 32), launch=la, wpc=wpc)


def test_an_sms_l2_lines_leave_one_l2_turn_apart():
    """Eight warps on one SM: the first launch's 256 lines leave one sm_request_ns apart,
    the second launch's, which the L2 holds, one sm_l2_request_ns apart."""
    s = _rereads(8, 8)
    sysc = system(**ISSUE, **{"gpu.sm_count": 1, "gpu.max_warps_per_sm": 8,
                              "gpu.sm_l2_request_ns": 0.99})
    x, out = simulate(s, sysc, record=True)
    assert x.l2_lines.sum() == 256
    first, second = out.ready_ns[:256], out.ready_ns[256:]
    np.testing.assert_allclose(np.diff(np.sort(first)), 4.34, rtol=1e-9)
    # the L2's turn is shorter than a warp's gap: its lines leave at the warps' pace,
    # and no two of one SM less than a turn apart
    assert np.diff(np.sort(second)).min() >= 0.99 - 1e-9
    assert np.ptp(second) < np.ptp(first) / 2
    # without the L2's rate every line takes sm_request_ns
    x0, out0 = simulate(s, system(**ISSUE, **{"gpu.sm_count": 1, "gpu.max_warps_per_sm": 8}),
                        record=True)
    assert x0.l2_lines is None
    np.testing.assert_allclose(np.diff(np.sort(out0.ready_ns[256:])), 4.34, rtol=1e-9)


def test_a_device_read_the_l2_misses_waits_drams_latency():
    """One warp reads a line twice, one load after the other: the first read waits the
    DRAM's latency, the second the L2's; without the replay both wait the L2's."""
    s = stream([0, 0], [0, 1], [0, 0], [128, 128]).with_waits(np.array([False, True]))
    lat = {"gpu.device_lat_ns": 150.0, "gpu.dram_lat_ns": 340.0}
    x, out = simulate(s, system(**lat, **{"gpu.sm_l2_request_ns": 0.99}), record=True)
    assert x.l2_misses.tolist() == [True, False]
    service = float(x.dev_ns[0])
    np.testing.assert_allclose(out.done_ns - out.ready_ns, [service + 340.0, service + 150.0])
    _, ref = simulate(s, system(**lat, **{"gpu.sm_l2_request_ns": 0.99}), engine="reference")
    np.testing.assert_allclose(ref.kernel_ns, out.kernel_ns)
    x0, plain = simulate(s, system(**lat), record=True)
    assert x0.l2_misses is None
    np.testing.assert_allclose(plain.done_ns - plain.ready_ns, service + 150.0)


def test_grouped_runs_carry_the_l2_from_group_to_group():
    """A run simulated launch group by launch group replays one L2 across the groups:
    its times are those of the whole run in one piece."""
    from hostlink.model.des import launch_groups, simulate_in_groups
    s = _rereads(64, 8)
    sysc = system(**ISSUE, **{"gpu.sm_count": 2, "gpu.max_warps_per_sm": 16,
                              "gpu.sm_l2_request_ns": 0.99})
    groups = launch_groups(s, 2048)
    assert len(groups) == 2
    whole = simulate(s, sysc)[1].kernel_ns
    _, parts = simulate_in_groups(s, sysc, groups, translation=False)
    np.testing.assert_allclose(parts.kernel_ns, whole, rtol=1e-12)
    assert whole[1] < whole[0]


def test_the_analytic_issue_term_charges_the_l2s_lines_its_turn():
    s = _rereads(8, 8)
    gpu = system(**{"gpu.sm_count": 1, "gpu.max_warps_per_sm": 8,
                    "gpu.sm_l2_request_ns": 0.99}).gpu
    chains = warp_chains(s, 1000.0, 200.0, 1, l2=l2_config(gpu), dram_lat_ns=400.0)
    assert chains.l2_lines.tolist() == [0.0] * 8 + [32.0] * 8
    # the first launch's loads miss the L2 and wait DRAM's latency, the second's the L2's
    np.testing.assert_allclose(chains.chain_ns, [400.0] * 8 + [200.0] * 8)
    terms = launch_terms(chains, s, 2, 1, 8, 4.34, gpu.registers_per_sm, 0.99)
    np.testing.assert_allclose(terms["sm"], [256 * 4.34 + 400.0, 256 * 0.99 + 200.0])
    plain = launch_terms(chains, s, 2, 1, 8, 4.34, gpu.registers_per_sm)
    np.testing.assert_allclose(plain["sm"], [256 * 4.34 + 400.0, 256 * 4.34 + 200.0])
