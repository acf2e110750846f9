"""The loaded round trip's fixed point (hostlink.model.loaded_rtt.settle_rtt)."""
from __future__ import annotations

import numpy as np
import pytest

from hostlink.model import loaded_rtt
from hostlink.model import predict as predict_module
from hostlink.model.config import load_system
from hostlink.model.loaded_rtt import linear_fixed_point, settle_rtt
from hostlink.model.predict import blended_run, predict
from hostlink.traces.graphs.generators import generate
from hostlink.traces.traversal import traversal_workload

RTT0_NS, FULL_NS = 640.0, 480.0


def _run(fixed_ns: float, per_rtt_ns: float, wire_ns: float, calls: list):
    """A run whose kernel time grows linearly with the round trip and whose link
    share is the link's busy time over that kernel time."""
    def run(rtt_ns: float) -> tuple[float, float]:
        calls.append(rtt_ns)
        time_ns = fixed_ns + per_rtt_ns * rtt_ns
        return time_ns * 1e-9, min(1.0, wire_ns / time_ns)
    return run


def _fixed_point(fixed_ns, per_rtt_ns, wire_ns) -> float:
    """rtt = RTT0 + FULL * wire / (fixed + per_rtt * rtt), solved by bisection."""
    lo, hi = RTT0_NS, RTT0_NS + FULL_NS
    for _ in range(200):
        mid = (lo + hi) / 2
        if RTT0_NS + FULL_NS * min(1.0, wire_ns / (fixed_ns + per_rtt_ns * mid)) > mid:
            lo = mid
        else:
            hi = mid
    return lo


@pytest.mark.parametrize("fixed_ns,per_rtt_ns,wire_ns,passes", [
    # kron21's BFS on the H200 preset: passes at 638.5 and 967.9 ns took 15.28 and
    # 16.31 ms at a share of 0.68 (tests/bench/bench_scale.py's case)
    (13.28e6, 3124.0, 10.4e6, 3),
    (1.5e7, 200.0, 1.1e7, 3),     # a little latency: the share barely moves
    (0.0, 5e4, 3e7, 5),           # time proportional to the round trip
    (1e6, 2e4, 2e7, 4),           # the unloaded pass fills the link (the share clips at 1)
])
def test_settles_within_the_tolerance_in_few_passes(fixed_ns, per_rtt_ns, wire_ns, passes):
    calls = []
    rtt = settle_rtt(RTT0_NS, FULL_NS, _run(fixed_ns, per_rtt_ns, wire_ns, calls))
    star = _fixed_point(fixed_ns, per_rtt_ns, wire_ns)
    time_at = lambda r: fixed_ns + per_rtt_ns * r          # noqa: E731
    assert abs(time_at(rtt) / time_at(star) - 1) <= loaded_rtt.CHANGE_TOL
    assert rtt == calls[-1]                    # its pass was the last: the caller reuses it
    assert calls[0] == RTT0_NS                 # the first pass is the unloaded one
    assert len(calls) <= passes


def test_an_idle_link_keeps_the_unloaded_round_trip():
    calls = []
    assert settle_rtt(RTT0_NS, FULL_NS, lambda r: calls.append(r) or (1e-3, 0.0)) == RTT0_NS
    assert calls == [RTT0_NS]


def test_a_time_the_round_trip_does_not_move_stops_after_the_loaded_pass():
    calls = []
    rtt = settle_rtt(RTT0_NS, FULL_NS, lambda r: calls.append(r) or (1e-3, 0.5))
    assert calls == [RTT0_NS, RTT0_NS + FULL_NS * 0.5]
    assert rtt == calls[-1]


def test_at_most_the_passes_allowed():
    """A share that jumps with every pass (no fixed point the secant can find)
    still ends after PASSES passes beyond the first."""
    calls = []

    def jumpy(rtt_ns):
        calls.append(rtt_ns)
        return rtt_ns * 1e-9, 0.9 if len(calls) % 2 else 0.1
    settle_rtt(RTT0_NS, FULL_NS, jumpy)
    assert len(calls) == loaded_rtt.PASSES + 1


# kron21's BFS on the H200 preset, as in the first case above
KRON21 = (13.28e6, 3124.0, 10.4e6)


def _first_two(fixed_ns, per_rtt_ns, wire_ns):
    run = _run(fixed_ns, per_rtt_ns, wire_ns, [])
    _, u1 = run(RTT0_NS)
    r2 = RTT0_NS + FULL_NS * u1
    _, u2 = run(r2)
    return (RTT0_NS, u1), (r2, u2)


@pytest.mark.parametrize("fixed_ns,per_rtt_ns,wire_ns", [KRON21, (1.5e7, 200.0, 1.1e7),
                                                         (0.0, 5e4, 3e7)])
def test_the_linear_fixed_point_is_exact_where_the_time_is_linear(fixed_ns, per_rtt_ns,
                                                                  wire_ns):
    first, second = _first_two(fixed_ns, per_rtt_ns, wire_ns)
    star = linear_fixed_point(RTT0_NS, FULL_NS, first, second)
    assert star == pytest.approx(_fixed_point(fixed_ns, per_rtt_ns, wire_ns), abs=1e-6)


def test_no_linear_fixed_point_from_a_clipped_share_or_outside_the_passes():
    assert linear_fixed_point(RTT0_NS, FULL_NS, (RTT0_NS, 1.0), (RTT0_NS + FULL_NS, 0.9)) is None
    # both passes ask for more than the second ran at: the point lies beyond them
    assert linear_fixed_point(RTT0_NS, FULL_NS, (RTT0_NS, 0.9), (700.0, 0.89)) is None


def test_a_blend_of_the_first_two_passes_ends_them():
    calls, asked = [], []
    rtt = settle_rtt(RTT0_NS, FULL_NS, _run(*KRON21, calls),
                     between=lambda r, a, b, w: asked.append((r, a, b, w)) or True)
    assert len(calls) == 2 and asked == [(rtt, calls[0], calls[1], asked[0][3])]
    assert asked[0][3] == pytest.approx((rtt - calls[0]) / (calls[1] - calls[0]))
    assert 0 < asked[0][3] < 1
    assert rtt == pytest.approx(_fixed_point(*KRON21), abs=1e-6)


def test_a_refused_blend_runs_the_passes_as_without_one():
    without, refused = [], []
    settle_rtt(RTT0_NS, FULL_NS, _run(*KRON21, without))
    settle_rtt(RTT0_NS, FULL_NS, _run(*KRON21, refused), between=lambda *a: False)
    assert refused == without and len(without) == 3


@pytest.fixture(scope="module")
def kron12():
    return generate("kron", 12, 16, 27491095, weighted=False, id_bytes=8, name="kron12")


def test_a_large_run_settles_on_two_engine_passes_within_a_third_s_time(kron12, monkeypatch):
    """The blend stands in for the third pass (BLEND_MIN_REQUESTS lowered so that a
    small graph's run is blended) and its time is within 0.02% of that pass's."""
    system = load_system("h200-pcie5")
    runs = []
    real = predict_module._run_des
    monkeypatch.setattr(predict_module, "_run_des",
                        lambda *a, **k: runs.append(a[1].link.rtt_ns) or real(*a, **k))

    def run_once():
        work = traversal_workload(kron12, "bfs", "merged_aligned", system.gpu, source=3)
        runs.clear()
        return predict(work, system, mode="zerocopy", fidelity="des"), list(runs)
    monkeypatch.setattr(loaded_rtt, "BLEND_MIN_REQUESTS", 1 << 62)
    passes, passes_rtt = run_once()
    monkeypatch.setattr(loaded_rtt, "BLEND_MIN_REQUESTS", 0)
    blended, blended_rtt = run_once()
    assert len(passes_rtt) == 3 and blended_rtt == passes_rtt[:2]
    assert blended.time_s == pytest.approx(passes.time_s, rel=2e-4)
    assert blended.extra["loaded_rtt_ns"]["loaded"] == pytest.approx(
        passes.extra["loaded_rtt_ns"]["loaded"], abs=1.0)
    assert blended.bound == passes.bound


def test_a_run_of_launches_each_under_the_threshold_runs_its_passes(kron12, monkeypatch):
    """The blend asks for a launch of BLEND_MIN_REQUESTS requests, not a run of them: a
    run of small launches bends with the round trip where its stragglers take over."""
    system = load_system("h200-pcie5")
    work = traversal_workload(kron12, "bfs", "merged_aligned", system.gpu, source=3)
    largest = loaded_rtt.largest_launch(work.stream)
    assert largest < len(work.stream)
    monkeypatch.setattr(loaded_rtt, "BLEND_MIN_REQUESTS", largest + 1)
    runs = []
    real = predict_module._run_des
    monkeypatch.setattr(predict_module, "_run_des",
                        lambda *a, **k: runs.append(1) or real(*a, **k))
    predict(work, system, mode="zerocopy", fidelity="des")
    assert len(runs) == 3


def test_a_blended_run_moves_its_numbers_and_keeps_the_nearer_run_s_names():
    lo = {"kernel_ns": np.array([10.0, 20.0]), "bound": "tags", "dram_B": 640,
          "outstanding_peak": 700.0,
          "extra": {"des": {"engine": "fast", "stats": {"sum_lat_ns": 100.0},
                            "bw_series_bin_s": 1e-6, "bw_series_GBps": [1.0, 3.0]}}}
    hi = {"kernel_ns": np.array([14.0, 30.0]), "bound": "link_down", "dram_B": 640,
          "outstanding_peak": 768.0,
          "extra": {"des": {"engine": "fast", "stats": {"sum_lat_ns": 200.0},
                            "bw_series_bin_s": 2e-6, "bw_series_GBps": [2.0]}}}
    out = blended_run(lo, hi, 0.25)
    assert out["kernel_ns"].tolist() == [11.0, 22.5]
    assert out["outstanding_peak"] == 717.0 and out["dram_B"] == 640
    assert out["extra"]["des"]["stats"]["sum_lat_ns"] == 125.0
    assert out["bound"] == "tags"
    # bins of another width: the nearer run's series whole
    assert out["extra"]["des"]["bw_series_bin_s"] == 1e-6
    assert out["extra"]["des"]["bw_series_GBps"] == [1.0, 3.0]
    hi["extra"]["des"].update(bw_series_bin_s=1e-6, bw_series_GBps=[3.0, 7.0])
    assert blended_run(lo, hi, 0.5)["extra"]["des"]["bw_series_GBps"] == [2.0, 5.0]
