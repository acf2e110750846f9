"""Load systems from TOML presets plus overrides, check them, write them back.

A system preset (``sim_configs/system/NAME.toml``) names one preset per part
(``link = "pcie/gen3_x16"``) and may override any of their keys in sections
named after the parts; overrides given at run time (``link.rtt_ns=1.2us``)
come last. Every key is checked against the schema once, here: unknown keys,
wrong types, impossible values raise :class:`ConfigError` naming the file and
the key. Values may be written with unit strings (``rtt_ns = "1.2 us"``);
they are converted to the unit in the key's name.

Preset search path: the folders in ``$HOSTLINK_CONFIG_PATH`` (colon
separated), then the repository's ``sim_configs/``.
"""
from __future__ import annotations

import dataclasses
import os
import tomllib
import types
import typing
from pathlib import Path
from typing import Any, Mapping

from hostlink.model.config.schema import SECTIONS, SYSTEM_SCALARS, SystemConfig
from hostlink.model.errors import ConfigError
from hostlink.model.textfile import read_toml
from hostlink.model.units import UnitError, parse_quantity, unit_suffix

REPO_CONFIGS = Path(__file__).resolve().parents[2] / "sim_configs"
COMPONENT_KINDS = {"link": "pcie", "host": "host", "gpu": "gpu", "uvm": "uvm",
                   "translation": "translation"}


def config_path() -> list[Path]:
    extra = [Path(p) for p in os.environ.get("HOSTLINK_CONFIG_PATH", "").split(os.pathsep) if p]
    return extra + [REPO_CONFIGS]


def list_presets(folder: str) -> list[str]:
    """Preset names in one folder of the search path (e.g. ``system``, ``pcie``)."""
    names: set[str] = set()
    for root in config_path():
        d = root / folder
        if d.is_dir():
            names.update(p.stem for p in d.glob("*.toml"))
    return sorted(names)


def find_preset(folder: str, name: str) -> Path:
    """The file of a preset given by name (``gen3_x16`` or ``pcie/gen3_x16``) or path."""
    candidate = Path(name)
    if candidate.suffix == ".toml" and candidate.is_file():
        return candidate
    rel = name if "/" in name else f"{folder}/{name}"
    for root in config_path():
        p = root / f"{rel}.toml"
        if p.is_file():
            return p
    known = ", ".join(list_presets(folder)) or "none"
    raise ConfigError(f"no {folder} preset '{name}' (known: {known})")


def _read_toml(path: Path) -> dict:
    return read_toml(path, "config file")[0]


def _allowed_types(annotation) -> tuple[type, ...]:
    if isinstance(annotation, str):
        annotation = eval(annotation, {"float": float, "int": int, "bool": bool, "str": str,
                                       "dict": dict, "None": None})
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        return tuple(a for a in typing.get_args(annotation) if a is not type(None))
    return (annotation,)


def coerce_value(cls, key: str, value: Any, where: str) -> Any:
    """Check one value against its field's type, unit and range; return it converted."""
    spec = {f.name: f for f in dataclasses.fields(cls)}.get(key)
    section = _section_name(cls)
    if spec is None or not spec.metadata:
        known = ", ".join(f.name for f in dataclasses.fields(cls) if f.metadata)
        raise ConfigError(f"{where}: unknown key '{section}.{key}' (known: {known})")
    meta = spec.metadata
    full = f"{section}.{key}"
    if value is None:
        if meta.get("optional"):
            return None
        raise ConfigError(f"{where}: '{full}' must be set")
    allowed = _allowed_types(spec.type)
    if isinstance(value, str) and str not in allowed:
        if unit_suffix(key) is None:
            raise ConfigError(f"{where}: '{full}' must be a {allowed[0].__name__}, not the string '{value}'")
        try:
            value = parse_quantity(value, key)
        except UnitError as exc:
            raise ConfigError(f"{where}: '{full}': {exc}") from None
        if int in allowed and float not in allowed:
            if not float(value).is_integer():
                raise ConfigError(f"{where}: '{full}' = {value} must be a whole number")
            value = int(value)
    if bool in allowed:
        if not isinstance(value, bool):
            raise ConfigError(f"{where}: '{full}' must be true or false, not {value!r}")
    elif isinstance(value, bool):
        raise ConfigError(f"{where}: '{full}' must be a {allowed[0].__name__}, not {value!r}")
    elif float in allowed and isinstance(value, int):
        value = float(value)
    elif int in allowed and isinstance(value, float):
        if not value.is_integer():  # nor inf or nan
            raise ConfigError(f"{where}: '{full}' = {value} must be a whole number")
        value = int(value)
    if not isinstance(value, allowed):
        names = " or ".join(t.__name__ for t in allowed)
        raise ConfigError(f"{where}: '{full}' must be a {names}, not {type(value).__name__} {value!r}")
    if meta.get("choices") is not None and value not in meta["choices"]:
        opts = ", ".join(str(c) for c in meta["choices"])
        raise ConfigError(f"{where}: '{full}' = {value!r} is not allowed (one of: {opts})")
    for bound, ok, text in (("ge", lambda v, b: v >= b, ">="), ("gt", lambda v, b: v > b, ">"),
                            ("le", lambda v, b: v <= b, "<="), ("lt", lambda v, b: v < b, "<")):
        b = meta.get(bound)
        if b is not None and not ok(value, b):
            raise ConfigError(f"{where}: '{full}' = {value} must be {text} {b}")
    if meta.get("check") is not None:
        problem = meta["check"](value)
        if problem:
            raise ConfigError(f"{where}: '{full}': {problem}")
    return value


def _section_name(cls) -> str:
    for name, c in SECTIONS.items():
        if c is cls:
            return name
    return "system"


def _table(data: dict, key: str, where: str) -> dict:
    """``data[key]`` (empty if absent), which must be a table."""
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: '{key}' must be a table ([{key}]), not "
                          f"{type(value).__name__} {value!r:.40}")
    return value


def _split_sections(data: dict, where: str, allowed: set[str]) -> None:
    for key in data:
        if key not in allowed:
            raise ConfigError(f"{where}: unknown section or key '{key}' "
                              f"(allowed: {', '.join(sorted(allowed))})")


def load_component(section: str, name_or_path: str) -> tuple[dict, dict, Path]:
    """Values and provenance of one part's preset (e.g. section ``link``)."""
    path = find_preset(COMPONENT_KINDS[section], name_or_path)
    data = _read_toml(path)
    where = str(path)
    _split_sections(data, where, {section, "provenance"})
    values = data.get(section)
    if not isinstance(values, dict):
        raise ConfigError(f"{where}: missing section [{section}]")
    cls = SECTIONS[section]
    checked = {k: coerce_value(cls, k, v, where) for k, v in values.items()}
    prov = {f"{section}.{k}": v for k, v in _table(data, "provenance", where).items()}
    return checked, prov, path


def parse_override(text: str) -> tuple[str, Any]:
    """``"link.rtt_ns=1.2 us"`` -> ``("link.rtt_ns", "1.2 us")``; TOML literals are typed."""
    if "=" not in text:
        raise ConfigError(f"override '{text}' must look like section.key=value")
    key, raw = (s.strip() for s in text.split("=", 1))
    try:
        value = tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        value = raw
    return key, value


def _normalise_overrides(overrides: Mapping[str, Any] | list[str] | None) -> dict[str, Any]:
    if overrides is None:
        return {}
    if isinstance(overrides, Mapping):
        return dict(overrides)
    return dict(parse_override(o) for o in overrides)


def load_system(name_or_path: str | Path = "v100-pcie3",
                overrides: Mapping[str, Any] | list[str] | None = None) -> SystemConfig:
    """Load a system preset by name or path, apply ``overrides``, check everything."""
    path = find_preset("system", str(name_or_path))
    data = _read_toml(path)
    where = str(path)
    _split_sections(data, where, {"system", "provenance", "topology", *SECTIONS})
    head = data.get("system")
    if not isinstance(head, dict):
        raise ConfigError(f"{where}: missing section [system]")
    parts: dict[str, dict] = {}
    provenance: dict[str, str] = {}
    scalars: dict[str, Any] = {}
    for key, value in head.items():
        if key in SECTIONS:
            if not isinstance(value, str):
                raise ConfigError(f"{where}: 'system.{key}' must name a {COMPONENT_KINDS[key]} preset")
            try:
                values, prov, _ = load_component(key, value)
            except ConfigError as exc:  # say which system file named the preset
                raise ConfigError(f"{where}: 'system.{key}': {exc}") from None
            parts[key] = values
            provenance.update(prov)
        elif key in SYSTEM_SCALARS:
            scalars[key] = coerce_value(SystemConfig, key, value, where)
        else:
            allowed = ", ".join([*SECTIONS, *SYSTEM_SCALARS])
            raise ConfigError(f"{where}: unknown key 'system.{key}' (allowed: {allowed})")
    for section, cls in SECTIONS.items():
        for key, value in _table(data, section, where).items():
            parts.setdefault(section, {})[key] = coerce_value(cls, key, value, where)
    provenance.update({k: v for k, v in _table(data, "provenance", where).items()})
    built = _build(parts, scalars, provenance, _normalise_overrides(overrides), where)
    if "topology" in data:
        from hostlink.model.config.topology import load_topology
        built = dataclasses.replace(built, topology=load_topology(data["topology"], where))
    return built


def _build(parts: dict, scalars: dict, provenance: dict, overrides: dict, where: str) -> SystemConfig:
    link_given: dict[str, Any] = {}
    for dotted, value in overrides.items():
        section, _, key = dotted.partition(".")
        if section == "link" and not key:
            if not isinstance(value, str):
                raise ConfigError(f"override: 'link' must name a link preset (e.g. "
                                  f"pcie/gen4_x16), not {value!r}")
            continue
        if section == "link" and key:
            link_given[key] = coerce_value(SECTIONS[section], key, value, "override")
            provenance[dotted] = "user override"
            continue
        if section in SECTIONS and key:
            parts.setdefault(section, {})[key] = coerce_value(SECTIONS[section], key, value,
                                                              "override")
        elif section in SYSTEM_SCALARS and not key:
            scalars[section] = coerce_value(SystemConfig, section, value, "override")
        else:
            raise ConfigError(f"override: unknown key '{dotted}' (use section.key with a section "
                              f"of {', '.join(SECTIONS)}, or one of {', '.join(SYSTEM_SCALARS)})")
        provenance[dotted] = "user override"
    if "link" in overrides or link_given:
        parts["link"] = _changed_link(parts.get("link", {}), overrides.get("link"),
                                      link_given, provenance, where)
    built = {}
    for section, cls in SECTIONS.items():
        try:
            built[section] = cls(**parts.get(section, {}))
        except ConfigError as exc:
            raise ConfigError(f"{where}: {exc}") from None
    return SystemConfig(**scalars, **built, provenance=provenance)


def _changed_link(base: dict, preset: str | None, given: dict, provenance: dict,
                  where: str) -> dict:
    """The link after a whole-link override (``link=pcie/gen4_x16``) and the
    link keys given, as :mod:`hostlink.model.config.link_change` changes it."""
    from hostlink.model.config.link_change import GENERATION_KEYS, adapt_link, emit, swap_link
    try:
        if preset is None:
            values, notes = adapt_link(base, given)
        else:
            values, notes = swap_link(base, preset, given)
            for key in (*GENERATION_KEYS, "name"):
                if key not in given:
                    provenance[f"link.{key}"] = f"link preset {preset} (what-if)"
    except ConfigError as exc:
        raise ConfigError(f"{where}: override 'link': {exc}") from None
    for key, text in notes:
        provenance[f"link.{key}"] = text
    emit(notes)
    return values


def system_from_dict(data: Mapping[str, Any], where: str = "<dict>") -> SystemConfig:
    """A system from a resolved dict (as written by :func:`system_to_dict`)."""
    data = dict(data)
    provenance = dict(data.pop("provenance", {}) or {})
    parts, scalars = {}, {}
    for key, value in data.items():
        if key in SECTIONS:
            if not isinstance(value, Mapping):
                raise ConfigError(f"{where}: '{key}' must be a table")
            parts[key] = {k: coerce_value(SECTIONS[key], k, v, where) for k, v in value.items()}
        elif key in SYSTEM_SCALARS:
            scalars[key] = coerce_value(SystemConfig, key, value, where)
        else:
            raise ConfigError(f"{where}: unknown key '{key}'")
    return _build(parts, scalars, provenance, {}, where)


def system_with(system: SystemConfig, overrides: Mapping[str, Any] | list[str]) -> SystemConfig:
    """A copy of ``system`` with dotted-key overrides applied and checked."""
    d = system_to_dict(system)
    provenance = d.pop("provenance")
    parts = {s: d.pop(s) for s in SECTIONS}
    return dataclasses.replace(_build(parts, d, provenance, _normalise_overrides(overrides),
                                      "override"), topology=system.topology)


def system_to_dict(system: SystemConfig) -> dict:
    """The fully resolved system as plain data (None values left out)."""
    out: dict[str, Any] = {k: getattr(system, k) for k in SYSTEM_SCALARS}
    for section in SECTIONS:
        part = getattr(system, section)
        out[section] = {f.name: getattr(part, f.name) for f in dataclasses.fields(part)
                        if getattr(part, f.name) is not None}
    out["provenance"] = dict(system.provenance)
    return out


def write_resolved(system: SystemConfig, path: str | Path) -> Path:
    """Write the fully resolved system as TOML (loadable with :func:`load_resolved`)."""
    import tomli_w
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    d = system_to_dict(system)
    with open(path, "wb") as fh:
        tomli_w.dump({"resolved_system": d}, fh)
    return path


def load_resolved(path: str | Path) -> SystemConfig:
    data = _read_toml(Path(path))
    if "resolved_system" not in data:
        raise ConfigError(f"{path}: missing section [resolved_system]")
    return system_from_dict(data["resolved_system"], str(path))


def load_any_system(spec: str | Path, overrides=None) -> SystemConfig:
    """A preset name, a system preset file or a resolved-system file."""
    p = Path(spec)
    if p.suffix == ".toml" and p.is_file():
        data = _read_toml(p)
        if "resolved_system" in data:
            sysc = system_from_dict(data["resolved_system"], str(p))
            return system_with(sysc, overrides) if overrides else sysc
    return load_system(spec, overrides)
