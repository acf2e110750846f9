"""When each host request reaches the root complex, by the discrete-event model.

:func:`des_ticks_ps` runs the zero-copy discrete-event model
(:func:`hostlink.model.des.simulate`) on a request stream and a system and
gives, per request, the tick (picoseconds from the first launch's start) at
which its TLP has reached the root complex: its launch's start, plus the time
it took its credits and entered the link (``granted_ns``), plus its own
upstream serialisation (``ser_up_ns``) and half the round trip (``rtt_ns / 2``,
the one-way flight the model charges each way: :mod:`hostlink.model.des.events`).

Assumptions: the upstream wire is free when a request enters the link (its
MRd and MWr TLPs are small: the model's queueing on it is left out here);
device requests get the same formula and are dropped by the writer.
"""
from __future__ import annotations

import numpy as np

from hostlink.model.workload import RequestStream


def des_ticks_ps(stream: RequestStream, system, *, engine: str = "fast") -> np.ndarray:
    """Per stream row: the tick (ps) its request reaches the root complex."""
    from hostlink.model.des import simulate
    inputs, out = simulate(stream, system, engine=engine, record=True)
    ticks = np.zeros(len(stream))
    if not len(inputs):
        return ticks
    arrive_ns = (inputs.global_ns(out.launch_start_ns(inputs), out.granted_ns)
                 + inputs.ser_up_ns + inputs.rtt_ns / 2)
    ticks[inputs.row] = arrive_ns * 1e3
    return ticks
