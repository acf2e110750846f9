"""Check parsed TOML against a pydantic model; every fault is one line naming file and key.

Every TOML file hostlink reads (system and part presets, resolved systems,
sweeps, validation manifests, regions files, trace folders' workload
records, the model's known gaps) is parsed by :mod:`hostlink.model.textfile`
and then checked here against a pydantic v2 model (pydantic 2 docs, "Models"
and "Validators"). A :class:`pydantic.ValidationError` becomes one
:class:`~hostlink.model.errors.ConfigError` (or the caller's error type):
``FILE: 'dotted.key' ...``, for the first fault pydantic reports, in the
wording of :data:`WORDING`. This is the one place where that translation
happens.

Assumptions: models forbid unknown keys (``extra="forbid"``) and are strict
(no string-to-number or number-to-bool coercion: a TOML value has its type);
validators that need their own wording raise :func:`fault`. List positions
are written ``name[i]`` (0-based), table keys ``name.key``.
"""
from __future__ import annotations

import types
import typing
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, ValidationError
from pydantic_core import PydanticCustomError

from hostlink.model.errors import ConfigError, HostlinkError

#: the configuration every TOML model shares: unknown keys and loose types are faults
STRICT = ConfigDict(extra="forbid", strict=True, frozen=True)


class TomlModel(BaseModel):
    """Base of the models of TOML tables: strict, closed, frozen."""
    model_config = STRICT


_OWN = "hostlink"


def fault(text: str, **ctx: Any) -> PydanticCustomError:
    """A validator's fault in its own words: ``text`` follows the quoted key
    (``" = 384 is not a power of two"``); ``{name}`` fields are filled from ``ctx``."""
    return PydanticCustomError(_OWN, text, ctx)


def _whole_bytes(value: Any) -> Any:
    """A size string (``"64 MiB"``) as whole bytes; other values as they are."""
    if not isinstance(value, str):
        return value
    from hostlink.model.units import UnitError, parse_quantity
    try:
        q = parse_quantity(value, "size_B")
    except UnitError as exc:
        raise fault(": {problem}", problem=str(exc)) from None
    if q != int(q):
        raise fault(": '{value}' is not a whole number of bytes", value=value)
    return int(q)


#: a size in bytes: an integer, or a string with a unit ("4 KiB")
Bytes = Annotated[int, BeforeValidator(_whole_bytes)]


#: pydantic error type -> what follows the key (str.format fields: input, ctx's keys)
WORDING = {
    "missing": " is required",
    "greater_than": " = {input} must be > {gt}",
    "greater_than_equal": " = {input} must be >= {ge}",
    "less_than": " = {input} must be < {lt}",
    "less_than_equal": " = {input} must be <= {le}",
    "literal_error": " = {input!r} is not one of: {expected}",
    "bool_type": " must be true or false, not {input!r}",
    "int_type": " must be an integer, not {input!r}",
    "int_from_float": " = {input} must be a whole number",
    "float_type": " must be a number, not {input!r}",
    "string_type": " must be a string, not {input!r}",
    "list_type": " must be a list, not {input!r:.60}",
    "tuple_type": " must be a list, not {input!r:.60}",
    "dict_type": " must be a table, not {input!r:.60}",
    "model_type": " must be a table, not {input!r:.60}",
    "model_attributes_type": " must be a table, not {input!r:.60}",
    "too_short": " must not be empty",
    "string_too_short": " must not be empty",
    "too_long": " holds more than {max_length} items",
    "finite_number": " = {input} must be a finite number",
}


def dotted(loc: tuple, prefix: str = "") -> str:
    """``("traversal", 0, "reps")`` -> ``traversal[0].reps`` (after ``prefix``). An
    item of a list of plain values is named by its list (its value is in the
    message), a faulty table key by the key."""
    while loc and isinstance(loc[-1], int):
        loc = loc[:-1]
    out = prefix
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part == "[key]" or str(part).startswith(("function-", "lax-", "json-")):
            continue
        else:
            out += f".{part}" if out else str(part)
    return out


def _known_keys(model: Any, loc: tuple) -> list[str] | None:
    """The keys a table at ``loc`` inside ``model`` allows, where they can be told."""
    kind = model
    for part in loc:
        kind = _inner(kind, part)
        if kind is None:
            return None
    kind = _inner(kind, None)
    if isinstance(kind, type) and issubclass(kind, BaseModel):
        return [f.alias or n for n, f in kind.model_fields.items()]
    return None


def _inner(kind: Any, part: Any) -> Any:
    """The type of ``kind``'s member ``part`` (None: ``kind`` itself, unwrapped)."""
    while typing.get_origin(kind) is typing.Annotated:
        kind = typing.get_args(kind)[0]
    args = [a for a in typing.get_args(kind) if a is not type(None)]
    if typing.get_origin(kind) in (typing.Union, types.UnionType):
        kind = args[0] if len(args) == 1 else None
        return _inner(kind, part) if kind is not None else None
    if part is None:
        return kind
    if isinstance(kind, type) and issubclass(kind, BaseModel):
        field = kind.model_fields.get(part)
        return None if field is None else field.annotation
    if typing.get_origin(kind) in (list, tuple) and isinstance(part, int):
        return args[0] if args else None
    if typing.get_origin(kind) is dict and args:
        return args[-1]
    return None


def message(exc: ValidationError, where: str, prefix: str = "", model: Any = None) -> str:
    """The one line for the first fault of ``exc``, in a file named ``where``."""
    err = exc.errors(include_url=False)[0]
    loc = tuple(err["loc"])
    key = dotted(loc, prefix)
    ctx = dict(err.get("ctx") or {})
    kind = err["type"]
    if kind == "extra_forbidden":
        known = _known_keys(model, loc[:-1]) if model is not None else None
        tail = f" (known: {', '.join(known)})" if known else ""
        return f"{where}: unknown key '{key}'{tail}"
    if kind == "value_error":
        return f"{where}: '{key}': {ctx.get('error', err['msg'])}"
    template = WORDING.get(kind)
    if template is None:  # a validator's own fault (fault()) or a rare pydantic one
        text = err["msg"]
        return f"{where}: '{key}'{text if kind == _OWN else ': ' + text}"
    try:
        text = template.format(input=err.get("input"), **ctx)
    except (KeyError, ValueError):
        text = f": {err['msg']}"
    return f"{where}: '{key}'{text}"


def check(model: type[BaseModel], data: Any, where: str, prefix: str = "",
          error: type[HostlinkError] = ConfigError) -> Any:
    """``data`` validated by the pydantic model ``model``; a fault raises ``error``
    with one line naming ``where`` and the key (after ``prefix``)."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise error(message(exc, where, prefix, model)) from None
