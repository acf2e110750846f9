"""A calibrated system written as a system preset: its parts by name, what differs as overrides.

A calibration writes a resolved system (``calibrated.toml``: every key of every
section). A preset of the same system is easier to read and to reuse: it names
the part presets it starts from (``link = "pcie/gen5_x16"``) and lists only the
keys whose values differ from those parts, or that a calibration measured, each
with the provenance the calibrated system records for it. Loading the preset
gives back the calibrated system, key for key (:func:`preset_text` checks it).
"""
from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import tomli_w

from hostlink.model.config.loader import (_read_toml, find_preset, load_component, load_system,
                                          system_to_dict)
from hostlink.model.config.schema import SECTIONS, SYSTEM_SCALARS, SystemConfig
from hostlink.model.errors import ConfigError

#: provenance kinds that mark a value somebody measured or looked up
KNOWN = ("measured", "datasheet", "spec", "seed")


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    return a == b


def preset_text(system: SystemConfig, *, name: str, description: str, base: str,
                header: str = "") -> str:
    """TOML text of a system preset named ``name`` that loads as ``system``.

    ``base``: the system preset whose part names the new preset takes. Keys are
    written where ``system``'s value differs from its part's, or where its
    provenance says it was measured. Raises :class:`ConfigError` when the preset
    would not load back as ``system``."""
    base_path = find_preset("system", base)
    head = dict(_read_toml(base_path).get("system") or {})
    resolved = system_to_dict(system)
    out: dict = {"system": {"name": name, "description": description}}
    for section in SECTIONS:
        if isinstance(head.get(section), str):
            out["system"][section] = head[section]
    defaults = system_to_dict(SystemConfig())
    for key in SYSTEM_SCALARS:
        if key in ("name", "description"):
            continue
        if not _same(resolved[key], defaults[key]):
            out["system"][key] = resolved[key]
    provenance: dict[str, str] = {}
    for section, cls in SECTIONS.items():
        part = {}
        if isinstance(head.get(section), str):
            part, _, _ = load_component(section, head[section])
        part_defaults = {f.name: getattr(cls(), f.name) for f in dataclasses.fields(cls)}
        keys = {}
        for key, value in resolved[section].items():
            if key == "name":
                continue
            start = part.get(key, part_defaults[key])
            source = system.provenance.get(f"{section}.{key}", "")
            if not _same(value, start) or source.startswith(KNOWN[0]):
                if value is None:
                    raise ConfigError(f"{section}.{key}: a preset cannot set a key back to "
                                      "unset (None)")
                keys[key] = value
                if source:
                    provenance[f"{section}.{key}"] = source
        if keys:
            out[section] = keys
    if provenance:
        out["provenance"] = provenance
    text = tomli_w.dumps(out)
    if header:
        text = "".join(f"# {line}".rstrip() + "\n" for line in header.splitlines()) + text
    _check_round_trip(text, system, name)
    return text


def _check_round_trip(text: str, system: SystemConfig, name: str) -> None:
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{name}.toml"
        path.write_text(text)
        again = system_to_dict(load_system(str(path)))
    want = system_to_dict(system)
    for section in (*SECTIONS, *[k for k in SYSTEM_SCALARS if k not in ("name", "description")]):
        if again[section] != want[section]:
            raise ConfigError(f"the preset '{name}' would not load as the calibrated system "
                              f"(section {section} differs)")


def write_preset(calibrated: str | Path, out: str | Path, *, name: str, description: str,
                 base: str, header: str = "", keep: tuple[str, ...] = ()) -> Path:
    """Write the calibrated system file ``calibrated`` as the preset ``out``.

    ``keep``: dotted keys that take the ``base`` preset's value and provenance (a value
    the base preset holds from a measurement the calibration did not repeat)."""
    from hostlink.model.config.loader import load_any_system, system_with
    system = load_any_system(str(calibrated))
    if keep:
        before = load_system(base)
        values = {}
        for key in keep:
            section, _, field = key.partition(".")
            if section not in SECTIONS or not hasattr(getattr(before, section), field):
                raise ConfigError(f"--keep {key}: not a key of the system (section.key)")
            values[key] = getattr(getattr(before, section), field)
        prov = dict(system.provenance)
        system = system_with(system, values)
        prov.update({k: before.provenance[k] for k in keep if k in before.provenance})
        system = dataclasses.replace(system, provenance=prov)
    out = Path(out)
    out.write_text(preset_text(system, name=name, description=description, base=base,
                               header=header))
    return out
