"""A read's round trip that grows with the load on the link.

A zero-copy read's round trip is not fixed: it grows with the share of the
link the reads use (the ``first_run`` experiment's ``micro/zc_warps`` points,
validation/experiments/first_run/). The engines' queueing adds
only the link's own serialisation, so the growth is modelled outside them, as a
mean field: the run is predicted with

    link.rtt_ns' = link.rtt_ns + link.rtt_at_full_link_ns * U

where U is the share of the run's kernel time the downstream link spends on
completions (:func:`link_utilisation`). U depends on the round trip it sets, so
the round trip is a fixed point, found by passes (:func:`settle_rtt`): the
first at the unloaded round trip, the second at the one its load asks for, and
each later one where the secant through the last two passes' residuals (asked
for less used) crosses zero. The passes stop when the last one moved the time
by less than ``CHANGE_TOL`` (the round trip barely matters there), or when the
slope of time against round trip through the last two passes says that moving
to the round trip the last pass asks for would change the time by less than
``TOL``. Two or three passes settle a run; at most ``PASSES`` after the first.

A large run may settle between its first two passes instead of running a third
(``between``; :func:`loaded_system`'s ``blend_on``). Its kernel time K grows with
the round trip, and U = wire / (K x link rate) with the wire bytes fixed, so 1/U
is proportional to K. Taking K, and so 1/U, as linear in the round trip between
the two passes, the fixed point solves a quadratic, and the run there is the two
passes' runs blended at its place between them.

A launch's time is the longest of its paths, each linear in the round trip, so it
is convex in it, and the blend lies above it by as much as it bends between the
passes. It bends where the path that sets the time changes: a launch of few warps
passes from its bulk to a straggler's walk, a run from one bound to another (host
DRAM to the tags, say). So the blend is taken only where a launch holds at least
:data:`BLEND_MIN_REQUESTS` requests, whose many paths make its time smooth, and
the same resource binds the run at both passes; otherwise the third pass runs.
tests/bench/results/round_trip_blend.json records the blend against the passes
side by side.

Assumptions: one U stands for every launch of a run, so short launches on a
quiet link get the round trip of the busy ones; the growth is linear in U.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

PASSES = 4          # at most, after the first: two or three passes settle a run
TOL = 2e-4          # relative change of the predicted time, by the slope, that ends them
CHANGE_TOL = 2e-3   # relative change of the predicted time over the last pass that ends them
# requests of a run's largest launch from which its time is smooth enough in the round
# trip to be blended between two passes (module doc)
BLEND_MIN_REQUESTS = 1 << 20


def link_utilisation(pred, system) -> float:
    """Share of a prediction's kernel time the downstream link spends on its completions."""
    from hostlink.model.des.inputs import link_rate_Bpns

    kernel_ns = float(np.sum(pred.per_launch_kernel_s)) * 1e9
    if kernel_ns <= 0:
        return 0.0
    return min(1.0, float(pred.wire_B_down) / (kernel_ns * link_rate_Bpns(system)))


def largest_launch(stream) -> int:
    """Requests of the stream's largest launch."""
    if len(stream) == 0:
        return 0
    return int(np.bincount(stream.launch).max())


def blends(*streams) -> bool:
    """Whether a run of these streams may settle between its first two passes: one of
    its launches holds at least :data:`BLEND_MIN_REQUESTS` requests (module doc)."""
    return max((largest_launch(s) for s in streams), default=0) >= BLEND_MIN_REQUESTS


def linear_fixed_point(rtt0_ns: float, full_ns: float, first: tuple[float, float],
                       second: tuple[float, float]) -> float | None:
    """The round trip r = ``rtt0_ns + full_ns * U(r)`` where 1/U is linear in r through
    two passes' (round trip, U) (module doc); None where a share is not in (0, 1) (a
    clipped share is not linear) or the fixed point lies outside the two passes."""
    (r1, u1), (r2, u2) = first, second
    if not (0 < u1 < 1 and 0 < u2 < 1) or r1 == r2:
        return None
    b = (1 / u2 - 1 / u1) / (r2 - r1)
    a = 1 / u1 - b * r1
    # (r - rtt0) (a + b r) = full: b r^2 + (a - b rtt0) r - (a rtt0 + full) = 0
    if b == 0:
        r = rtt0_ns + full_ns / a
    else:
        qb, qc = a - b * rtt0_ns, -(a * rtt0_ns + full_ns)
        disc = qb * qb - 4 * b * qc
        if disc < 0:
            return None
        r = (-qb + float(np.sqrt(disc))) / (2 * b)
    return r if min(r1, r2) <= r <= max(r1, r2) else None


def settle_rtt(rtt0_ns: float, full_ns: float,
               run: Callable[[float], tuple[float, float]],
               between: Callable[[float, float, float, float], bool] | None = None) -> float:
    """The round trip ``rtt0_ns + full_ns * U`` at which a run's own link share U
    asks for the round trip it ran at, within the module docstring's tolerances.
    ``run(rtt_ns)`` predicts the run at a round trip and returns its (time, U); the
    round trip returned is the last one ``run`` was called with, so the caller's last
    pass is the prediction at it, or one ``between`` accepted.
    ``between(rtt, first, second, w)``, after two passes that did not settle, is asked
    to make the run at ``rtt`` (their linear fixed point, :func:`linear_fixed_point`)
    the blend of the runs at round trips ``first`` and ``second`` with weight ``w`` on
    the second; where it returns True that round trip is the answer, and no third
    pass runs."""
    rtt = rtt0_ns
    time_s, u = run(rtt)
    prev = None                       # (round trip, time, residual, U) of the pass before
    for _ in range(PASSES):
        if u <= 0:
            break
        resid = rtt0_ns + full_ns * u - rtt       # asked for less used
        nxt = rtt + resid
        if prev is not None:
            if abs(time_s - prev[1]) <= CHANGE_TOL * prev[1]:
                break
            slope = (time_s - prev[1]) / (rtt - prev[0])
            if abs(slope * resid) <= TOL * time_s:
                break
            if between is not None and prev[0] == rtt0_ns:    # the first two passes
                star = linear_fixed_point(rtt0_ns, full_ns, (prev[0], prev[3]), (rtt, u))
                if star is not None and between(star, prev[0], rtt,
                                                (star - prev[0]) / (rtt - prev[0])):
                    return star
            if resid != prev[2]:
                secant = rtt - resid * (rtt - prev[0]) / (resid - prev[2])
                if rtt0_ns <= secant <= rtt0_ns + full_ns:
                    nxt = secant
        if nxt == rtt:
            break
        prev = (rtt, time_s, resid, u)
        rtt = nxt
        time_s, u = run(rtt)
    return rtt


def loaded_system(stream, system, predict_on: Callable, blend_on: Callable | None = None):
    """``system`` with ``link.rtt_ns`` at the loaded round trip of ``stream``'s run and
    ``link.rtt_at_full_link_ns`` spent (0), found by :func:`settle_rtt` on passes of
    ``predict_on(system)`` (a :class:`~hostlink.model.result.Prediction` of the stream
    on that system). ``blend_on(first, second, at, w)``: make ``predict_on(at)`` the
    blend of the runs on systems ``first`` and ``second`` (weight ``w`` on the second)
    and return True, or return False where it cannot; offered where a launch of the
    stream holds at least :data:`BLEND_MIN_REQUESTS` requests (module doc)."""
    from hostlink.model.config import system_with

    full_ns = float(system.link.rtt_at_full_link_ns)
    rtt0 = float(system.link.rtt_ns)
    quiet = system_with(system, {"link.rtt_at_full_link_ns": 0.0})
    if full_ns <= 0 or len(stream) == 0:
        return quiet

    def at(rtt_ns: float):
        return quiet if rtt_ns == rtt0 else system_with(quiet, {"link.rtt_ns": rtt_ns})

    from hostlink.model.progress import RUN, round_trip_blend, round_trip_pass, stage
    passes = []

    def run(rtt_ns: float) -> tuple[float, float]:
        passes.append(rtt_ns)
        stage(RUN, round_trip_pass(len(passes), rtt_ns))
        on = at(rtt_ns)
        pred = predict_on(on)
        return pred.time_s, link_utilisation(pred, on)

    def between(rtt_ns: float, first_ns: float, second_ns: float, w: float) -> bool:
        if not blend_on(at(first_ns), at(second_ns), at(rtt_ns), w):
            return False
        stage(RUN, round_trip_blend(rtt_ns))
        return True

    use_blend = blend_on is not None and blends(stream)
    return at(settle_rtt(rtt0, full_ns, run, between if use_blend else None))
