"""The zero-copy discrete-event model: a compiled engine and its SimPy reference.

Public API
----------
``simulate(stream, system, *, engine="fast", record=False, nbins=1024,
translation=None) -> (DesInputs, DesOutput)``: replay a
:class:`~hostlink.model.workload.RequestStream` on a
:class:`~hostlink.model.config.SystemConfig`. ``engine`` is ``"fast"``
(Numba, :mod:`hostlink.model.des.fast`) or ``"reference"`` (SimPy,
:mod:`hostlink.model.des.reference`, small inputs only). With translation on
and more host pages than the TLB holds, the order in which reads reach the TLB
matters: a first pass without translation gives that order (issue times), and
the second pass uses the misses it implies (one step towards the fixed point).

The model and its assumptions are stated in :mod:`hostlink.model.des.events`;
:mod:`hostlink.model.des.inputs` turns the packetiser's and the DRAM model's
byte counts into service times. :func:`hostlink.model.predict.predict` wraps
this into a :class:`~hostlink.model.result.Prediction`.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from hostlink.model.des.events import (DEVICE_READ, DEVICE_WRITE, HOST_READ, HOST_WRITE,
                                       STAT, STAT_NAMES, DesInputs, DesOutput)
from hostlink.model.des.inputs import build_inputs, layout, pages_fit, request_costs

ENGINES = ("fast", "reference")

__all__ = ["DEVICE_READ", "DEVICE_WRITE", "ENGINES", "HOST_READ", "HOST_WRITE", "STAT",
           "STAT_NAMES", "DesInputs", "DesOutput", "build_inputs", "run", "simulate"]


def run(inputs: DesInputs, *, engine: str = "fast", record: bool = False,
        nbins: int = 1024) -> DesOutput:
    """Run one engine on prepared inputs."""
    if engine == "fast":
        from hostlink.model.des import fast
        return fast.run(inputs, record=record, nbins=nbins)
    if engine == "reference":
        from hostlink.model.des import reference
        return reference.run(inputs, nbins=nbins)
    raise ValueError(f"engine must be one of {', '.join(ENGINES)}, not {engine!r}")


def _round_trip_free_key(system) -> tuple:
    """What the engines' inputs other than ``rtt_ns`` depend on: every part of
    ``system`` the engines read, the link's round trip left out (the loaded round
    trip's passes change only it)."""
    from hostlink.model.stream_memo import system_key_without_uvm
    link = dataclasses.replace(system.link, rtt_ns=0.0, rtt_at_full_link_ns=0.0)
    return tuple(link if part is system.link else part
                 for part in system_key_without_uvm(system))


def simulate(stream, system, *, engine: str = "fast", record: bool = False, nbins: int = 1024,
             translation: bool | None = None) -> tuple[DesInputs, DesOutput]:
    """Simulate ``stream`` on ``system``; returns the inputs used and the output.

    The inputs are built once per stream and system less the link's round trip
    (:mod:`hostlink.model.stream_memo`): the passes of the loaded round trip
    (:mod:`hostlink.model.loaded_rtt`) change only ``link.rtt_ns``, and a pass
    then costs the engine's run alone. Where the TLB order comes from a first
    run (pages that do not fit), only the layout and the costs are shared."""
    from hostlink.model.stream_memo import memoized
    key = _round_trip_free_key(system)
    use_xl = system.translation.enabled if translation is None else translation

    def prepared():
        lay = layout(stream, system)
        costs = request_costs(stream, system, lay["row"])
        fits = not use_xl or pages_fit(stream, system)
        inputs = (build_inputs(stream, system, translation=use_xl, lay=lay, costs=costs)
                  if fits else None)
        return lay, costs, inputs

    lay, costs, inputs = memoized(stream, "des_inputs", (key, bool(use_xl)), prepared, keep=1)
    rtt = {"rtt_ns": float(system.link.rtt_ns)}
    if inputs is not None:
        inputs = dataclasses.replace(inputs, **rtt)
    else:
        first = build_inputs(stream, system, translation=False, lay=lay, costs=costs)
        out = run(first, engine=engine, record=True, nbins=nbins)
        starts = out.launch_start_ns(first)
        arrival = starts[first.launch_of_request()] + out.ready_ns
        del first, out, starts
        inputs = build_inputs(stream, system, translation=use_xl, arrival=arrival, lay=lay,
                              costs=costs)
    return inputs, run(inputs, engine=engine, record=record, nbins=nbins)
