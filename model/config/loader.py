"""Load systems from TOML presets plus overrides, check them, write them back.

A system preset (``sim_configs/system/NAME.toml``) names one preset per part
(``link = "pcie/gen3_x16"``) and may override any of their keys in sections
named after the parts; overrides given at run time (``link.rtt_ns=1.2us``)
come last. Every key is checked against the schema once, here, by pydantic
models built from the fields' :func:`~hostlink.model.config.fields.param`
metadata: unknown keys, wrong types, impossible values raise
:class:`ConfigError` naming the file and the key
(:mod:`hostlink.model.tomlcheck`). Values may be written with unit strings
(``rtt_ns = "1.2 us"``); they are converted to the unit in the key's name.

Preset search path: the folders in ``$HOSTLINK_CONFIG_PATH`` (colon
separated), then the repository's ``sim_configs/``.
"""
from __future__ import annotations

import dataclasses
import functools
import os
import tomllib
from pathlib import Path
from typing import Any, Mapping

from pydantic import create_model

from hostlink.model.config.fields import section_model
from hostlink.model.config.schema import SECTIONS, SYSTEM_SCALARS, SystemConfig
from hostlink.model.errors import ConfigError
from hostlink.model.textfile import read_toml
from hostlink.model.tomlcheck import TomlModel, check

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


def coerce_value(cls, key: str, value: Any, where: str) -> Any:
    """Check one value against its field's type, unit and range; return it converted."""
    return check_values(cls, {key: value}, where)[key]


def check_values(cls, values: Any, where: str) -> dict[str, Any]:
    """The keys of ``values`` (a table of config dataclass ``cls``), checked and converted
    by :func:`~hostlink.model.config.fields.section_model`."""
    checked = check(section_model(cls), values, where, _section_name(cls))
    return {k: getattr(checked, k) for k in checked.model_fields_set}


def _section_name(cls) -> str:
    for name, c in SECTIONS.items():
        if c is cls:
            return name
    return "system"


@functools.cache
def _file_model(head: str | None, sections: tuple[str, ...]) -> type[TomlModel]:
    """The top level of a preset file: its ``head`` table (required), the tables of
    ``sections`` and [provenance], no other key."""
    spec: dict[str, Any] = {s: (dict[str, Any], {}) for s in sections}
    if head is not None:
        spec[head] = (dict[str, Any], ...)
    return create_model(f"{head or sections[0]}File", __base__=TomlModel,
                        provenance=(dict[str, Any], {}), **spec)


@functools.cache
def _head_model() -> type[TomlModel]:
    """The [system] table: a preset per part, and the system's own keys."""
    parts = {key: (str | None, None) for key in COMPONENT_KINDS}
    return create_model("SystemHead", __base__=section_model(SystemConfig), **parts)


def load_component(section: str, name_or_path: str) -> tuple[dict, dict, Path]:
    """Values and provenance of one part's preset (e.g. section ``link``)."""
    path = find_preset(COMPONENT_KINDS[section], name_or_path)
    where = str(path)
    doc = check(_file_model(section, ()), _read_toml(path), where)
    checked = check_values(SECTIONS[section], getattr(doc, section), where)
    prov = {f"{section}.{k}": v for k, v in doc.provenance.items()}
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
    where = str(path)
    data = _read_toml(path)
    doc = check(_file_model("system", (*SECTIONS, "topology")), data, where)
    head = check(_head_model(), doc.system, where, "system")
    parts: dict[str, dict] = {}
    provenance: dict[str, str] = {}
    scalars = {k: getattr(head, k) for k in head.model_fields_set if k in SYSTEM_SCALARS}
    for key in COMPONENT_KINDS:
        preset = getattr(head, key)
        if preset is None:
            continue
        try:
            parts[key], prov, _ = load_component(key, preset)
        except ConfigError as exc:  # say which system file named the preset
            raise ConfigError(f"{where}: 'system.{key}': {exc}") from None
        provenance.update(prov)
    for section, cls in SECTIONS.items():
        parts.setdefault(section, {}).update(check_values(cls, getattr(doc, section), where))
    provenance.update(doc.provenance)
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
    tables = {k: data.pop(k) for k in SECTIONS if k in data}
    doc = check(_file_model(None, tuple(SECTIONS)), tables, where)
    scalars = check_values(SystemConfig, data, where)
    parts = {s: check_values(cls, getattr(doc, s), where) for s, cls in SECTIONS.items()}
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
