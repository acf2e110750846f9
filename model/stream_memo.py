"""Results derived from one request stream, computed once per stream.

A calibration predicts the same request streams many times, changing only a few
of the system's keys between evaluations: fitting the UVM costs changes the
``uvm`` section alone, yet every evaluation used to count the stream's distinct
bytes again and replay its kernel's own reads in the discrete-event engine again.
:func:`memoized` keeps such results with the stream they came from, under a key
that names everything else they depend on (for the engine: every part of the
system but the ``uvm`` section).

Assumptions: a :class:`~hostlink.model.workload.RequestStream` is frozen and its
columns are not written after it is made (nothing in hostlink does); a memo lives
as long as its stream and is dropped with it. Each kind of result keeps its most
recent few keys only, so a sweep that changes the keys on every call holds a few
results per stream, not one per call.
"""
from __future__ import annotations

import dataclasses
import weakref
from collections import OrderedDict
from typing import Any, Callable, Hashable

KEEP_PER_KIND = 4

_MEMOS: dict[int, dict[str, OrderedDict]] = {}


def memoized(stream, kind: str, key: Hashable, compute: Callable[[], Any],
             keep: int = KEEP_PER_KIND) -> Any:
    """``compute()`` for ``stream``, or its value from an earlier call with the same
    ``kind`` and ``key``. The value is shared: callers must not change it."""
    sid = id(stream)
    memo = _MEMOS.get(sid)
    if memo is None:
        memo = _MEMOS[sid] = {}
        weakref.finalize(stream, _MEMOS.pop, sid, None)
    entries = memo.setdefault(kind, OrderedDict())
    if key in entries:
        entries.move_to_end(key)
        return entries[key]
    value = compute()
    entries[key] = value
    while len(entries) > keep:
        entries.popitem(last=False)
    return value


def peek(stream, kind: str, key: Hashable) -> Any:
    """The value :func:`memoized` holds for ``stream``, ``kind`` and ``key``, or None."""
    return _MEMOS.get(id(stream), {}).get(kind, {}).get(key)


def hold(stream, kind: str, key: Hashable, value: Any, keep: int = KEEP_PER_KIND) -> None:
    """Hold ``value`` as :func:`memoized`'s for ``stream``, ``kind`` and ``key``."""
    memoized(stream, kind, key, lambda: value, keep=keep)


def forget(stream, kind: str) -> None:
    """Drop the results of ``kind`` held for ``stream`` (large ones, once their reuse
    is over)."""
    memo = _MEMOS.get(id(stream))
    if memo is not None:
        memo.pop(kind, None)


def memo_size(stream) -> int:
    """Results held for ``stream`` (all kinds)."""
    return sum(len(e) for e in _MEMOS.get(id(stream), {}).values())


# SystemConfig fields that no engine reads: the UVM model's section, the host loop's
# costs (priced after the engines, :mod:`hostlink.model.host_loop`), and the labels
NOT_READ_BY_ENGINES = ("uvm", "host_loop", "name", "description", "provenance")


# the SystemConfig fields a run with every request in device memory reads no more:
# no request crosses the link or reaches host memory
NOT_READ_IN_DEVICE_MEMORY = ("link", "host")


def held(stream, kind: str) -> list[tuple[Hashable, Any]]:
    """The (key, value) pairs :func:`memoized` holds for ``stream`` and ``kind``, least
    recently used first."""
    return list(_MEMOS.get(id(stream), {}).get(kind, {}).items())


def engine_fields(in_device_memory: bool = False) -> list[str]:
    """The SystemConfig fields :func:`system_key_without_uvm` keys on, in its order."""
    from hostlink.model.config.schema import SystemConfig
    skip = NOT_READ_BY_ENGINES + (NOT_READ_IN_DEVICE_MEMORY if in_device_memory else ())
    return [f.name for f in dataclasses.fields(SystemConfig) if f.name not in skip]


def system_key_without_uvm(system, in_device_memory: bool = False) -> tuple:
    """Everything of a system the engines read: every field of the SystemConfig but
    :data:`NOT_READ_BY_ENGINES` (a field added later is in the key by default), and
    for a run ``in_device_memory`` but :data:`NOT_READ_IN_DEVICE_MEMORY` too, so
    that systems differing only in their link or host memory share it."""
    skip = NOT_READ_BY_ENGINES + (NOT_READ_IN_DEVICE_MEMORY if in_device_memory else ())
    return tuple(getattr(system, f.name) for f in dataclasses.fields(system)
                 if f.name not in skip)
