"""A read's round trip that grows with the load on the link.

A zero-copy read's round trip is not fixed: on an H200 (PCIe 5.0 x16) a 128 B
read takes about 1.22 us with up to 16 warps reading one line each, 1.32 us at
25% of the link, 1.41 us at 47% and 1.54 us at 85%
(validation/experiments/first_run/runs/h200, micro/zc_warps). The engines' queueing adds
only the link's own serialisation, so the growth is modelled outside them, as a
mean field: the run is predicted with

    link.rtt_ns' = link.rtt_ns + link.rtt_at_full_link_ns * U

where U is the share of the run's kernel time the downstream link spends on
completions in the previous pass (:func:`link_utilisation`), starting from the
unloaded pass, until the predicted time moves by less than ``TOL`` (two or
three passes settle it; at most ``PASSES``).

Assumptions: one U stands for every launch of a run, so short launches on a
quiet link get the round trip of the busy ones; the growth is linear in U.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

PASSES = 4          # at most: the fixed point settles in two or three
TOL = 2e-3          # relative change of the predicted time that ends the passes


def link_utilisation(pred, system) -> float:
    """Share of a prediction's kernel time the downstream link spends on its completions."""
    from hostlink.model.des.inputs import link_rate_Bpns

    kernel_ns = float(np.sum(pred.per_launch_kernel_s)) * 1e9
    if kernel_ns <= 0:
        return 0.0
    return min(1.0, float(pred.wire_B_down) / (kernel_ns * link_rate_Bpns(system)))


def loaded_system(stream, system, predict_on: Callable):
    """``system`` with ``link.rtt_ns`` at the loaded round trip of ``stream``'s run and
    ``link.rtt_at_full_link_ns`` spent (0), found by passes of ``predict_on(system)``
    (a :class:`~hostlink.model.result.Prediction` of the stream on that system)."""
    from hostlink.model.config import system_with

    full_ns = float(system.link.rtt_at_full_link_ns)
    rtt0 = float(system.link.rtt_ns)
    current = system_with(system, {"link.rtt_at_full_link_ns": 0.0})
    if full_ns <= 0 or len(stream) == 0:
        return current
    pred = predict_on(current)
    for _ in range(PASSES):
        u = link_utilisation(pred, current)
        if u <= 0:
            break
        nxt_system = system_with(current, {"link.rtt_ns": rtt0 + full_ns * u})
        nxt = predict_on(nxt_system)
        done = abs(nxt.time_s - pred.time_s) <= TOL * pred.time_s
        pred, current = nxt, nxt_system
        if done:
            break
    return current
