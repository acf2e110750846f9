"""Declarative config fields: type, unit, range, choices and provenance.

Each config dataclass declares its fields with :func:`param`; the metadata is
the one declaration of a key. :func:`section_model` turns it into a pydantic
model, which checks values once, at the config boundary, so model code sees
plain numbers in the unit of their names (unit strings such as ``"1.2 us"``
are converted to the unit of the key's name by :mod:`hostlink.model.units`).
Provenance is ``spec``, ``seed``, ``datasheet``, ``measured`` or
``assumption``; assumptions are listed by ``hostlink config show`` so nobody
mistakes them for facts.
"""
from __future__ import annotations

import functools
import sys
import types
import typing
from dataclasses import MISSING, field, fields
from typing import Annotated, Any, Callable

from pydantic import AfterValidator, BeforeValidator, Field, create_model

from hostlink.model.tomlcheck import TomlModel, fault
from hostlink.model.units import UnitError, parse_quantity, unit_suffix

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


def field_kind(annotation) -> tuple[Any, bool]:
    """The value type of a config field's (resolved) annotation and whether it takes None."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) < len(typing.get_args(annotation)):
            return (args[0] if len(args) == 1 else typing.Union[tuple(args)]), True
    return annotation, False


def _converter(key: str, kind: type) -> Callable[[Any], Any]:
    """Unit strings to the key's unit; whole floats to int, ints to float, lists to
    tuples."""
    def convert(value: Any) -> Any:
        if isinstance(value, str) and kind is not str and unit_suffix(key) is not None:
            try:
                value = parse_quantity(value, key)
            except UnitError as exc:
                raise fault(": {problem}", problem=str(exc)) from None
        if isinstance(value, bool):
            return value
        if isinstance(value, list) and typing.get_origin(kind) is tuple:  # TOML arrays
            return tuple(value)
        if kind is float and isinstance(value, int):
            return float(value)
        if kind is int and isinstance(value, float):
            if not value.is_integer():  # nor inf or nan
                raise fault(" = {value} must be a whole number", value=value)
            return int(value)
        return value
    return convert


def _meta_check(meta: dict) -> Callable[[Any], Any]:
    """The choices and the ``check`` function of a field's metadata."""
    choices, check = meta.get("choices"), meta.get("check")

    def after(value: Any) -> Any:
        if choices is not None and value not in choices:
            raise fault(" = {value} is not allowed (one of: {options})", value=repr(value),
                        options=", ".join(str(c) for c in choices))
        problem = check(value) if check is not None else None
        if problem:
            raise fault(": {problem}", problem=problem)
        return value
    return after


@functools.cache
def _hint(cls, f) -> Any:
    """The type of a :func:`param` field, its string annotation resolved in the
    dataclass's module (only param fields: others may name types imported late)."""
    if not isinstance(f.type, str):
        return f.type
    return eval(f.type, vars(sys.modules[cls.__module__]))  # noqa: S307 (own annotations)


@functools.cache
def section_model(cls) -> type[TomlModel]:
    """A pydantic model of the :func:`param` fields of config dataclass ``cls``:
    every key optional (the dataclass holds the defaults), each checked against
    its type, unit, range, choices and ``check``. Made once per class: building it
    takes about 5 ms, and every override (``system_with``) checks its keys with it."""
    spec = {}
    for f in fields(cls):
        if not f.metadata:
            continue
        kind, nullable = field_kind(_hint(cls, f))
        bounds = {b: f.metadata.get(b) for b in ("ge", "gt", "le", "lt")
                  if f.metadata.get(b) is not None}
        checked = Annotated[kind, BeforeValidator(_converter(f.name, kind)), Field(**bounds),
                            AfterValidator(_meta_check(f.metadata))]
        spec[f.name] = (checked | None if nullable and f.metadata.get("optional") else checked,
                        None)
    return create_model(f"{cls.__name__}Keys", __base__=TomlModel, **spec)
