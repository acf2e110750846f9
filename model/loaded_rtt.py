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

Assumptions: one U stands for every launch of a run, so short launches on a
quiet link get the round trip of the busy ones; the growth is linear in U.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

PASSES = 4          # at most, after the first: two or three passes settle a run
TOL = 2e-4          # relative change of the predicted time, by the slope, that ends them
CHANGE_TOL = 2e-3   # relative change of the predicted time over the last pass that ends them


def link_utilisation(pred, system) -> float:
    """Share of a prediction's kernel time the downstream link spends on its completions."""
    from hostlink.model.des.inputs import link_rate_Bpns

    kernel_ns = float(np.sum(pred.per_launch_kernel_s)) * 1e9
    if kernel_ns <= 0:
        return 0.0
    return min(1.0, float(pred.wire_B_down) / (kernel_ns * link_rate_Bpns(system)))


def settle_rtt(rtt0_ns: float, full_ns: float,
               run: Callable[[float], tuple[float, float]]) -> float:
    """The round trip ``rtt0_ns + full_ns * U`` at which a run's own link share U
    asks for the round trip it ran at, within the module docstring's tolerances.
    ``run(rtt_ns)`` predicts the run at a round trip and returns its (time, U); the
    round trip returned is always the last one ``run`` was called with, so the
    caller's last pass is the prediction at it."""
    rtt = rtt0_ns
    time_s, u = run(rtt)
    prev = None                       # (round trip, time, residual) of the pass before
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
            if resid != prev[2]:
                secant = rtt - resid * (rtt - prev[0]) / (resid - prev[2])
                if rtt0_ns <= secant <= rtt0_ns + full_ns:
                    nxt = secant
        if nxt == rtt:
            break
        prev = (rtt, time_s, resid)
        rtt = nxt
        time_s, u = run(rtt)
    return rtt


def loaded_system(stream, system, predict_on: Callable):
    """``system`` with ``link.rtt_ns`` at the loaded round trip of ``stream``'s run and
    ``link.rtt_at_full_link_ns`` spent (0), found by :func:`settle_rtt` on passes of
    ``predict_on(system)`` (a :class:`~hostlink.model.result.Prediction` of the stream
    on that system)."""
    from hostlink.model.config import system_with

    full_ns = float(system.link.rtt_at_full_link_ns)
    rtt0 = float(system.link.rtt_ns)
    quiet = system_with(system, {"link.rtt_at_full_link_ns": 0.0})
    if full_ns <= 0 or len(stream) == 0:
        return quiet

    def at(rtt_ns: float):
        return quiet if rtt_ns == rtt0 else system_with(quiet, {"link.rtt_ns": rtt_ns})

    from hostlink.model.progress import RUN, round_trip_pass, stage
    passes = []

    def run(rtt_ns: float) -> tuple[float, float]:
        passes.append(rtt_ns)
        stage(RUN, round_trip_pass(len(passes), rtt_ns))
        on = at(rtt_ns)
        pred = predict_on(on)
        return pred.time_s, link_utilisation(pred, on)

    return at(settle_rtt(rtt0, full_ns, run))
