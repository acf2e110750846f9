"""Declarative config fields: type, unit, range, choices and provenance.

Each config dataclass declares its fields with :func:`param`; the loader uses
the metadata to check values once, at the config boundary, so model code sees
plain numbers in the unit of their names. Provenance is ``spec``, ``seed``,
``datasheet``, ``measured`` or ``assumption``; assumptions are listed by
``hostlink config show`` so nobody mistakes them for facts.
"""
from __future__ import annotations

from dataclasses import MISSING, field, fields
from typing import Any, Callable

PROVENANCE_KINDS = ("spec", "seed", "datasheet", "measured", "assumption", "derived", "user")


def param(default: Any = MISSING, *, doc: str, ge: float | None = None, gt: float | None = None,
          le: float | None = None, lt: float | None = None, choices: tuple | None = None,
          check: Callable[[Any], str | None] | None = None, provenance: str = "spec",
          optional: bool = False) -> Any:
    """A dataclass field with validation metadata.

    ``check`` returns an error message (or None) for values that pass the
    simple checks but are still impossible (e.g. not a power of two).
    ``optional`` fields accept None (meaning "derive it").
    """
    if provenance not in PROVENANCE_KINDS:
        raise ValueError(f"unknown provenance kind {provenance!r}")
    meta = dict(doc=doc, ge=ge, gt=gt, le=le, lt=lt, choices=choices, check=check,
                provenance=provenance, optional=optional)
    if default is MISSING:
        return field(metadata=meta)
    if isinstance(default, (dict, list)):
        return field(default_factory=lambda: type(default)(default), metadata=meta)
    return field(default=default, metadata=meta)


def power_of_two(value: int) -> str | None:
    if value <= 0 or value & (value - 1):
        return f"{value} is not a power of two"
    return None


def field_docs(cls) -> dict[str, dict]:
    """Metadata of each field of a config dataclass, by name."""
    return {f.name: dict(f.metadata, type=f.type) for f in fields(cls)}
