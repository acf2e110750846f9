"""The loaded round trip's fixed point (hostlink.model.loaded_rtt.settle_rtt)."""
from __future__ import annotations

import pytest

from hostlink.model import loaded_rtt
from hostlink.model.loaded_rtt import settle_rtt

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
