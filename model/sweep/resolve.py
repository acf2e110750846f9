"""Resolve sweep points into checked systems, canonical JSON and run ids.

Every point's config is checked before any point runs: each override goes
through the config loader's own checks (type, unit, range, choices) and each
part is rebuilt so its cross-field checks run (e.g. tags against the
generation). Parts are cached by their values, so a sweep of 100,000 points
builds each distinct link, host or GPU part once.

Run id: the first 16 hex digits of SHA-256 over the canonical JSON (sorted
keys, no spaces) of ``{"config": <resolved system without provenance>,
"fidelity": ..., "schema": RUN_ID_SCHEMA, "workload": <normalised workload>}``.
The id depends on what a point computes, not on the sweep that asked for it:
two sweeps that share a point share its results. :func:`run_id_for` computes
it from a config dict, for anyone who wants to look a point up.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from hostlink.model.config import SECTIONS, SystemConfig, load_any_system
from hostlink.model.config.link_change import adapt_link, emit, swap_link
from hostlink.model.config.loader import coerce_value
from hostlink.model.config.schema import SYSTEM_SCALARS, LinkConfig
from hostlink.model.errors import ConfigError
from hostlink.model.sweep.spec import Point, SweepSpec
from hostlink.model.sweep.workloads import normalise_workload

RUN_ID_SCHEMA = 1  # bump when the meaning of a run's results changes
RUN_ID_HEX = 16
_CONFIG_ORDER = tuple(sorted([*SECTIONS, *SYSTEM_SCALARS]))


def _dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def run_id_for(config: dict, workload: dict, fidelity: str) -> str:
    """The run id of a resolved config dict (``system_to_dict`` output, provenance
    ignored), a normalised workload and a fidelity."""
    config = {k: v for k, v in config.items() if k != "provenance"}
    text = _dumps({"config": config, "fidelity": fidelity, "schema": RUN_ID_SCHEMA,
                   "workload": workload})
    return hashlib.sha256(text.encode()).hexdigest()[:RUN_ID_HEX]


@dataclass(slots=True)
class ResolvedPoint:
    """A point with its checked config parts, canonical JSON and run id."""
    point: Point
    parts: dict[str, Any]          # section -> frozen part (LinkConfig, ...)
    scalars: dict[str, Any]        # SYSTEM_SCALARS values
    base_provenance: dict[str, str]
    config_pieces: list[str]       # '"key":json' per config key, in key order (shared strings)
    workload: dict[str, Any]
    workload_json: str
    run_id: str

    @property
    def fidelity(self) -> str:
        return self.point.fidelity

    @property
    def config_json(self) -> str:
        """The resolved system (provenance left out) as canonical JSON."""
        return "{" + ",".join(self.config_pieces) + "}"

    @property
    def provenance(self) -> dict[str, str]:
        prov = dict(self.base_provenance)
        for key in self.point.overrides:
            prov[key] = "sweep axis" if key in self.point.params else "sweep [set]"
        return prov

    @property
    def system(self) -> SystemConfig:
        return SystemConfig(**self.scalars, **self.parts, provenance=self.provenance)


class Resolver:
    """Resolves the points of one sweep, caching systems, values and parts."""

    def __init__(self, spec: SweepSpec):
        self.spec = spec
        self._systems: dict[str, SystemConfig] = {}
        self._values: dict[tuple, Any] = {}
        self._parts: dict[tuple, tuple[Any, str]] = {}
        self._workloads: dict[str, tuple[dict, str]] = {}
        self._fields: dict[tuple[str, str], tuple[dict, dict]] = {}
        self._scalars: dict[str, dict[str, Any]] = {}
        self._fid: dict[str, str] = {}
        self._pieces: dict[tuple, str] = {}
        self._bases: dict[str, tuple[dict, dict]] = {}
        self._section_pieces: dict[tuple[str, int], str] = {}

    def _where(self, point: Point) -> str:
        return f"{self.spec.path} (point {point.case})"

    def _base(self, name: str, point: Point) -> SystemConfig:
        base = self._systems.get(name)
        if base is None:
            try:
                base = load_any_system(name)
            except ConfigError as exc:
                raise ConfigError(f"{self._where(point)}: system '{name}': {exc}") from None
            self._systems[name] = base
        return base

    def _value(self, cls, section: str, key: str, value: Any, point: Point) -> Any:
        memo = (section, key, type(value), value)
        try:
            return self._values[memo]
        except KeyError:
            pass
        out = coerce_value(cls, key, value, self._where(point))
        self._values[memo] = out
        return out

    def _part(self, system_name: str, base: SystemConfig, section: str,
              values: tuple[tuple[str, Any], ...], point: Point) -> tuple[Any, str]:
        memo = (system_name, section, values)
        hit = self._parts.get(memo)
        if hit is not None:
            return hit
        original = getattr(base, section)
        known = self._fields.get((system_name, section))
        if known is None:
            fields = {f.name: getattr(original, f.name) for f in dataclasses.fields(original)}
            pieces = {k: self._piece(k, v) for k, v in fields.items() if v is not None}
            known = self._fields[(system_name, section)] = (fields, pieces)
        fields, pieces = known
        if values and section == "link":
            part, pieces = self._link(fields, dict(values), point)
        elif values:
            changed = dict(values)
            try:
                part = type(original)(**{**fields, **changed})
            except ConfigError as exc:
                raise ConfigError(f"{self._where(point)}: {exc}") from None
            pieces = dict(pieces)
            for k, v in changed.items():
                if v is None:
                    pieces.pop(k, None)
                else:
                    pieces[k] = self._piece(k, v)
        else:
            part = original
        hit = (part, "{" + ",".join([pieces[k] for k in sorted(pieces)]) + "}")
        self._parts[memo] = hit
        return hit

    def _link(self, fields: dict, changed: dict, point: Point):
        """A link part changed as a generation changes it (a whole link preset under
        the key '', then the link keys given): :mod:`hostlink.model.config.link_change`."""
        preset = changed.pop("", None)
        try:
            values, notes = (swap_link(fields, preset, changed) if preset is not None
                             else adapt_link(fields, changed))
            part = LinkConfig(**values)
        except ConfigError as exc:
            raise ConfigError(f"{self._where(point)}: {exc}") from None
        emit(notes)
        return part, {k: self._piece(k, v) for k, v in values.items() if v is not None}

    def _section_piece(self, key: str, text: str) -> str:
        memo = (key, id(text))   # part texts live as long as the part cache
        out = self._section_pieces.get(memo)
        if out is None:
            out = self._section_pieces[memo] = f'"{key}":{text}'
        return out

    def _piece(self, key: str, value: Any) -> str:
        memo = (key, type(value), value)
        text = self._pieces.get(memo)
        if text is None:
            text = self._pieces[memo] = f"{_dumps(key)}:{_dumps(value)}"
        return text

    def _workload(self, point: Point) -> tuple[dict, str]:
        # Points differ in their workload only by the workload axes' values.
        key = repr([point.fidelity] + [(k, v) for k, v in point.params.items()
                                       if k.startswith("workload.")])
        hit = self._workloads.get(key)
        if hit is None:
            norm = normalise_workload(point.workload, self._where(point), point.fidelity)
            for name in ("path", "regions"):   # relative to the sweep file's folder
                if norm.get(name) and not Path(norm[name]).is_absolute():
                    norm[name] = str((Path(self.spec.path).parent / norm[name]).resolve())
            hit = (norm, _dumps(norm))
            self._workloads[key] = hit
        return hit

    def _base_parts(self, name: str, base: SystemConfig, point: Point):
        hit = self._bases.get(name)
        if hit is None:
            got = {section: self._part(name, base, section, (), point) for section in SECTIONS}
            hit = self._bases[name] = ({k: v[0] for k, v in got.items()},
                                       {k: v[1] for k, v in got.items()})
        return hit

    def _base_scalars(self, name: str, base: SystemConfig) -> dict[str, Any]:
        scalars = self._scalars.get(name)
        if scalars is None:
            scalars = self._scalars[name] = {k: getattr(base, k) for k in SYSTEM_SCALARS}
        return scalars

    def resolve(self, point: Point) -> ResolvedPoint:
        base = self._base(point.system, point)
        by_section: dict[str, list[tuple[str, Any]]] = {}
        scalars = self._base_scalars(point.system, base)
        copied = False
        for key, value in point.overrides.items():
            section, _, name = key.partition(".")
            if section == "link" and not name:   # a whole link preset
                if not isinstance(value, str):
                    raise ConfigError(f"{self._where(point)}: 'link' must name a link "
                                      f"preset (e.g. \"pcie/gen4_x16\"), not {value!r}")
                by_section.setdefault(section, []).append(("", value))
            elif section in SECTIONS:
                by_section.setdefault(section, []).append(
                    (name, self._value(SECTIONS[section], section, name, value, point)))
            else:
                if not copied:
                    scalars, copied = dict(scalars), True
                scalars[key] = self._value(SystemConfig, "system", key, value, point)
        parts, texts = self._base_parts(point.system, base, point)
        if by_section:
            parts, texts = dict(parts), dict(texts)
            for section, got in by_section.items():
                part, text = self._part(point.system, base, section, tuple(sorted(got)), point)
                parts[section] = part
                texts[section] = text
        piece, section_piece = self._piece, self._section_piece
        pieces = [section_piece(k, texts[k]) if k in texts else piece(k, scalars[k])
                  for k in _CONFIG_ORDER]
        config_json = "{" + ",".join(pieces) + "}"
        workload, workload_json = self._workload(point)
        fid = self._fid.get(point.fidelity)
        if fid is None:
            fid = self._fid[point.fidelity] = _dumps(point.fidelity)
        text = (f'{{"config":{config_json},"fidelity":{fid},'
                f'"schema":{RUN_ID_SCHEMA},"workload":{workload_json}}}')
        run_id = hashlib.sha256(text.encode()).hexdigest()[:RUN_ID_HEX]
        return ResolvedPoint(point, parts, scalars, base.provenance, pieces, workload,
                             workload_json, run_id)


def resolve_all(spec: SweepSpec, points: Iterable[Point] | None = None) -> list[ResolvedPoint]:
    """Resolve every point (raising on the first bad one, before anything runs)."""
    resolver = Resolver(spec)
    return [resolver.resolve(p) for p in (spec.points() if points is None else points)]
