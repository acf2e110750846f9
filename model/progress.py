"""Where a long prediction is: the stages the model names while it works.

The model calls :func:`stage` as each long step starts (emulating a traversal,
coalescing its reads, a pass of the loaded round trip, a group of launches in the
engine). A caller may listen with :func:`listening`: the command line shows the
stages beside its spinner. Without a listener a stage costs one context-variable
read. Stages have levels: a stage replaces the one of its level and ends the deeper
ones (a new pass of the round trip ends the last pass's group of launches).
"""
from __future__ import annotations

import contextlib
from contextvars import ContextVar
from typing import Callable

Listener = Callable[[int, str], None]

_listener: ContextVar[Listener | None] = ContextVar("hostlink_progress", default=None)

#: the levels of the stages the model names
RUN, PART = 0, 1


def stage(level: int, text: str) -> None:
    """Tell the listener, if any, that a step of ``level`` (:data:`RUN`, :data:`PART`)
    starts: ``text`` says which."""
    listener = _listener.get()
    if listener is not None:
        listener(level, text)


@contextlib.contextmanager
def listening(listener: Listener):
    """Call ``listener(level, text)`` for every stage the model names in this block."""
    token = _listener.set(listener)
    try:
        yield
    finally:
        _listener.reset(token)


def round_trip_pass(k: int, rtt_ns: float) -> str:
    """The stage of the loaded round trip's ``k``-th pass, run at ``rtt_ns``."""
    return f"round trip, pass {k}: {rtt_ns:.0f} ns"


def round_trip_blend(rtt_ns: float) -> str:
    """The stage of a loaded round trip settled between the first two passes."""
    return f"round trip between passes 1 and 2: {rtt_ns:.0f} ns"


class StageLine:
    """The stages heard so far as one line: ``show(line)`` is called with the stages
    of every level up to the last one named, joined by ', '."""

    def __init__(self, show: Callable[[str], None]):
        self.show = show
        self.levels: list[str] = []

    def __call__(self, level: int, text: str) -> None:
        self.levels = self.levels[:level] + [""] * max(0, level - len(self.levels)) + [text]
        self.show(", ".join(t for t in self.levels if t))
