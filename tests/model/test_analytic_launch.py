"""The analytic fidelity's launch terms (:mod:`hostlink.model.analytic_launch`):
posted stores, the issue gaps of an instruction's lines, CTA waves and the SM's
issue stage, each checked against the discrete-event model on a small stream."""
from __future__ import annotations

import numpy as np
import pytest

from hostlink.model.analytic_launch import launch_terms, read_demand, warp_chains
from hostlink.model.config import load_system
from hostlink.model.des import simulate
from hostlink.model.predict import critical_path_ns, launch_terms_ns, predict
from hostlink.model.workload import SPACE_DEVICE, SPACE_HOST, LaunchInfo, RequestStream

QUIET = {"translation.enabled": False, "launch_overhead_us": 0.0, "level_sync_us": 0.0}


def system(**overrides):
    return load_system("v100-pcie3", {**QUIET, **overrides})


def stream(rows, warps_per_cta=1, ctas=None):
    """Rows of (warp, inst, addr, space, is_write), one launch, 32 B requests."""
    w, i, a, sp, wr = (np.array(c) for c in zip(*rows))
    n = len(rows)
    info = LaunchInfo("k", ctas or int(w.max()) // warps_per_cta + 1, warps_per_cta,
                      32 * warps_per_cta)
    return RequestStream(launch=np.zeros(n), warp=w, inst=i, addr=a.astype(np.uint64),
                         size_B=np.full(n, 32), useful_B=np.full(n, 32),
                         space=sp.astype(np.uint8), is_write=wr.astype(bool), launches=(info,))


def des_ns(s, sysc):
    return float(simulate(s, sysc)[1].kernel_ns[0])


def test_a_store_does_not_hold_its_warp():
    # read, store, read, store on the host: the stores are posted
    rows = [(0, k, k * 4096, SPACE_HOST, k % 2 == 1) for k in range(4)]
    s = stream(rows)
    sysc = system()
    lat = 1000.0
    assert critical_path_ns(s, lat, 450.0, 1)[0] == pytest.approx(2 * lat)
    # the DES: two round trips plus the stores' serialisation (a few ns each)
    assert des_ns(s, sysc) == pytest.approx(2 * lat, rel=0.02)


@pytest.mark.parametrize("space", [SPACE_HOST, SPACE_DEVICE])
def test_an_instruction_of_k_lines_waits_k_minus_one_gaps_more(space):
    # one warp, two instructions of 8 lines each (one sector per line)
    rows = [(0, i, i * 65536 + j * 128, space, False) for i in range(2) for j in range(8)]
    s = stream(rows)
    sysc = system(**{"gpu.request_gap_ns": 6.5, "gpu.host_request_gap_ns": 13.6,
                     "gpu.sm_request_ns": 0.0})
    terms = launch_terms_ns(s, sysc)
    gap = 13.6 if space == SPACE_HOST else 6.5
    lat = (float(sysc.gpu.host_path_ns) + float(sysc.link.rtt_ns) if space == SPACE_HOST
           else float(sysc.gpu.device_lat_ns))
    assert terms["latency"][0] == pytest.approx(2 * (lat + 7 * gap))
    # the DES adds only the requests' own service times
    assert des_ns(s, sysc) == pytest.approx(terms["latency"][0], rel=0.03)


def test_ctas_beyond_the_slots_run_in_waves():
    # 2 SMs x 1 slot; 8 CTAs of one warp, each one device load: four waves
    rows = [(w, 0, w * 4096, SPACE_DEVICE, False) for w in range(8)]
    s = stream(rows)
    sysc = system(**{"gpu.sm_count": 2, "gpu.max_warps_per_sm": 1, "gpu.device_lat_ns": 500.0,
                     "gpu.sm_request_ns": 0.0, "gpu.request_gap_ns": 0.0})
    terms = launch_terms_ns(s, sysc)
    assert terms["latency"][0] == pytest.approx(500.0)
    assert terms["waves"][0] == pytest.approx(4 * 500.0)
    a = predict(s, sysc, mode="device", fidelity="analytic").per_launch_kernel_s[0] * 1e9
    assert a == pytest.approx(des_ns(s, sysc), rel=0.02)


def test_the_busiest_sm_bounds_the_issue_stage():
    # 4 CTAs on 2 SMs, each warp one instruction of 32 device lines, SM turn 5 ns
    rows = [(w, 0, w * 65536 + j * 128, SPACE_DEVICE, False) for w in range(4) for j in range(32)]
    s = stream(rows)
    sysc = system(**{"gpu.sm_count": 2, "gpu.max_warps_per_sm": 2, "gpu.device_lat_ns": 100.0,
                     "gpu.sm_request_ns": 5.0, "gpu.request_gap_ns": 0.0})
    terms = launch_terms_ns(s, sysc, as_device=True)
    # two warps' 64 lines leave the busiest SM 5 ns apart; the last then waits its latency
    assert terms["sm_issue"][0] == pytest.approx(2 * 32 * 5.0 + 100.0)
    a = predict(s, sysc, mode="device", fidelity="analytic").per_launch_kernel_s[0] * 1e9
    assert a == pytest.approx(des_ns(s, sysc), rel=0.05)


def test_chains_count_each_warps_lines():
    rows = [(0, 0, 0, SPACE_HOST, False), (0, 0, 32, SPACE_HOST, False),   # one line
            (0, 1, 128, SPACE_HOST, False), (0, 1, 256, SPACE_HOST, False),  # two lines
            (1, 0, 0, SPACE_HOST, True)]                                      # a store
    c = warp_chains(stream(rows), 1000.0, 100.0, 1, host_gap_ns=10.0)
    assert c.read_lines.tolist() == [3.0, 0.0]
    assert c.chain_ns.tolist() == pytest.approx([1000.0 + 1010.0, 0.0])
    t = launch_terms(c, stream(rows), 1, sm_count=1, max_warps_per_sm=1, sm_request_ns=2.0,
                     registers_per_sm=65536)
    assert t["sm"][0] == pytest.approx(3 * 2.0 + 1000.0)
    assert t["waves"][0] == pytest.approx(2010.0)


def test_a_streams_chain_shape_is_kept_and_priced_at_each_latency():
    """The loaded round trip's passes reuse a stream's chain shape: chains at a new
    latency match those of a fresh copy of the stream, never the earlier ones."""
    from hostlink.model.stream_memo import memo_size
    rows = [(w, k, (w * 8 + k) * 128, SPACE_HOST if k % 2 else SPACE_DEVICE, False)
            for w in range(3) for k in range(4)]
    s = stream(rows)
    first = warp_chains(s, 1000.0, 100.0, 2, host_gap_ns=10.0)
    kept = memo_size(s)
    again = warp_chains(s, 1500.0, 100.0, 2, host_gap_ns=10.0)
    assert memo_size(s) == kept                    # the shape was reused, not made again
    fresh = warp_chains(stream(rows), 1500.0, 100.0, 2, host_gap_ns=10.0)
    assert again.chain_ns.tolist() == fresh.chain_ns.tolist()
    assert again.tail_ns.tolist() == fresh.tail_ns.tolist()
    # two host reads of 1500 ns and two device reads of 100 ns, two in flight
    assert again.chain_ns.tolist() == pytest.approx([1600.0] * 3)
    assert first.chain_ns.tolist() == pytest.approx([1100.0] * 3)


def test_a_device_shape_from_the_host_shape_is_the_one_made_afresh(monkeypatch):
    """In device memory a stream's chains come from its host-memory shape where that
    is held (no atomics, no L2 replayed): the same numbers as a shape made afresh
    from a copy of the stream, at one gap for every line."""
    from hostlink.model import analytic_launch
    from hostlink.model.analytic_launch import chain_shape
    made = []
    monkeypatch.setattr(analytic_launch, "chain_shape",
                        lambda *a, **k: made.append(k["as_device"]) or chain_shape(*a, **k))
    rows = [(w, k, (w * 8 + k // 2) * 128 + 32 * (k % 2),
             SPACE_HOST if (w + k) % 3 else SPACE_DEVICE, k == 5)
            for w in range(4) for k in range(6)]
    s = stream(rows)
    opts = dict(host_gap_ns=13.6, device_gap_ns=6.5)
    warp_chains(s, 1000.0, 150.0, 2, **opts)                 # the host shape, held
    derived = warp_chains(s, 1000.0, 150.0, 2, as_device=True, **opts)
    assert made == [False]                                   # no second sort
    fresh_shape = chain_shape(stream(rows), 2, as_device=True, **opts)
    fresh = warp_chains(stream(rows), 1000.0, 150.0, 2, as_device=True, **opts)
    assert derived.chain_ns.tolist() == fresh.chain_ns.tolist()
    assert derived.tail_ns.tolist() == fresh.tail_ns.tolist()
    assert derived.read_lines.tolist() == fresh.read_lines.tolist()
    assert not fresh_shape.inst_host.any()
    # the lines of a device warp's six reads (two lines share one address, a store
    # holds nothing) leave 6.5 ns apart: the chain is the issue time or the latency
    assert min(fresh.chain_ns) >= 150.0


def test_loaded_chain_limits():
    from hostlink.model.analytic_launch import loaded_chain_ns
    # a lone warp (one read wanted at a time, R = lat) keeps its chain
    assert loaded_chain_ns([500.0], [3000.0], 1000.0, [1.0], 128.0, 10.0)[0] == 3000.0
    # no busy phase: the chain alone
    assert loaded_chain_ns([0.0], [3000.0], 1000.0, [500.0], 128.0, 10.0)[0] == 3000.0
    # 500 reads wanted at 10 B/ns, 128 B each: R = 6400 ns; a 3000 ns chain gains
    # 500 x 1000 / 6400 ns during a 500 ns busy phase
    got = loaded_chain_ns([500.0], [3000.0], 1000.0, [500.0], 128.0, 10.0)[0]
    assert got == pytest.approx(500.0 + 3000.0 - 500.0 * 1000.0 / 6400.0)


def test_a_long_warp_among_many_waits_behind_them():
    """511 warps of 4 dependent host reads and one of 40, on 32 tags: the long warp's
    reads queue behind the others' while they last, as in the DES."""
    rows = [(w, i, (w * 64 + i) * 4096, SPACE_HOST, False)
            for w in range(512) for i in range(40 if w == 0 else 4)]
    s = stream(rows, warps_per_cta=4)
    sysc = system(**{"link.tags": 32})
    des = des_ns(s, sysc)
    a = predict(s, sysc, fidelity="analytic")
    terms = a.extra["kernel_terms_ns"]
    # neither the bandwidth term nor the unloaded chain alone comes near the DES
    assert max(terms["link"][0], launch_terms_ns(s, sysc)["latency"][0]) < 0.8 * des
    assert a.per_launch_kernel_s[0] * 1e9 == pytest.approx(des, rel=0.15)


def test_read_demand_does_not_depend_on_the_streams_order():
    # 40 warps of 1-3 host-read instructions of 1-4 lines each over two launches: the
    # demand counted on the stream in program order (one pass over the requests) is
    # the one counted on the same requests shuffled (np.unique's sort)
    rng = np.random.default_rng(5)
    rows = [(L, w, i) for L in (0, 1) for w in range(20) for i in range(rng.integers(1, 4))
            for _ in range(rng.integers(1, 5))]
    L, w, i = (np.array(c) for c in zip(*rows))
    n = len(rows)
    info = LaunchInfo("k", 20, 1, 32)

    def demand(order):
        s = RequestStream(launch=L[order], warp=w[order], inst=i[order],
                          addr=np.arange(n, dtype=np.uint64)[order] * 128,
                          size_B=np.full(n, 32), useful_B=np.full(n, 32),
                          space=np.full(n, SPACE_HOST, dtype=np.uint8),
                          is_write=np.zeros(n, dtype=bool), launches=(info, info))
        return read_demand(s, system().gpu, 2)

    in_order = demand(np.arange(n))
    assert np.array_equal(in_order, demand(rng.permutation(n)))
    # 20 warps per launch, each with the loads in flight of the preset, times the
    # requests per distinct (warp, instruction) of its launch
    gpu = system().gpu
    for k in (0, 1):
        insts = {(b, c) for a, b, c in zip(L, w, i) if a == k}
        want = min(20, gpu.sm_count * gpu.max_warps_per_sm) * gpu.loads_in_flight_per_warp \
            * np.sum(L == k) / len(insts)
        assert in_order[k] == pytest.approx(want)
