"""Sweep files: parse, check and expand a design-space sweep into points.

A sweep file is TOML::

    [sweep]
    name = "rtt-by-tags"          # the experiment name written with every row
    description = "..."
    system = "h100-pcie5"         # base system preset (or a preset/resolved file)
    fidelity = "analytic"         # analytic | des (default des, the validated one)

    [set]                         # fixed overrides for every point
    "link.gen" = 4

    [workload]                    # what every point runs (see workloads.py)
    kind = "sizes"
    size_B = 128

    [[axis]]                      # one axis: a key and its values
    key = "link.tags"
    values = [32, 64, 128, 256, 512, 768]

    [[axis]]                      # or a generated range (stop inclusive)
    key = "link.rtt_ns"
    linspace = {start = 500, stop = 3000, num = 11}

    [[axis]]                      # or keys that move together (zipped)
    zip = {system = ["v100-pcie3", "a100-pcie4"], "link.tags" = [256, 768]}

Axes combine as a cartesian product, the first axis varying slowest. An axis
key is ``system``, ``fidelity``, a config key (``link.gen``,
``gpu.max_outstanding_host_reads``, ``launch_overhead_us``), ``link`` (a
whole link preset such as ``"pcie/gen4_x16"``: the generation's keys change,
the base system's round trip and other platform keys stay) or a workload
parameter (``workload.variant``). A change of ``link.gen`` clamps tags the
new generation does not allow (:mod:`hostlink.model.config.link_change`).
The file's shape is a pydantic model (:class:`SweepFile`); every mistake is
a :class:`ConfigError` naming the file and the key
(:mod:`hostlink.model.tomlcheck`). Config values are checked per point, for
all points, before anything runs (:mod:`hostlink.model.sweep.resolve`).
"""
from __future__ import annotations

import dataclasses
import itertools
import math
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Iterator, Literal

from pydantic import AfterValidator, Field, field_validator, model_validator

from hostlink.model.config.schema import SECTIONS, SYSTEM_SCALARS
from hostlink.model.errors import ConfigError
from hostlink.model.textfile import read_toml
from hostlink.model.tomlcheck import TomlModel, check, fault
from hostlink.model.sweep.workloads import check_workload_keys, workload_defaults

Fidelity = Literal["analytic", "des"]
FIDELITIES = typing.get_args(Fidelity)
#: a sweep's fidelity where its file names none: the one the validation reports use
DEFAULT_FIDELITY = "des"
AXIS_FORMS = ("values", "range", "linspace", "geomspace")
# Scalars a sweep may vary; name and description label a system, they are not parameters.
SWEEPABLE_SCALARS = tuple(k for k in SYSTEM_SCALARS if k not in ("name", "description"))
MAX_POINTS = 2_000_000  # about 3 KB of memory per point while a sweep runs


@dataclass(frozen=True)
class Axis:
    """One axis: ``keys`` move together; ``steps`` holds one value per key for each step."""
    keys: tuple[str, ...]
    steps: tuple[tuple[Any, ...], ...]

    def __len__(self) -> int:
        return len(self.steps)


@dataclass(slots=True)
class Point:
    """One point of a sweep, before its config is resolved."""
    index: int
    system: str
    fidelity: str
    overrides: dict[str, Any]          # config key -> value (from [set] and the axes)
    workload: dict[str, Any]           # the workload as written, defaults filled in
    params: dict[str, Any]             # axis key -> value at this point
    case: str = ""                     # a readable label: the axis values of this point


@dataclass(frozen=True)
class SweepSpec:
    path: str
    name: str
    description: str
    system: str
    fidelity: str
    overrides: dict[str, Any]
    workload: dict[str, Any]
    axes: tuple[Axis, ...]
    batch_size: int | None = None
    text: str = field(default="", repr=False)   # the file as written (kept with the results)

    @property
    def num_points(self) -> int:
        return math.prod(len(a) for a in self.axes)

    @property
    def axis_keys(self) -> tuple[str, ...]:
        return tuple(k for a in self.axes for k in a.keys)

    def points(self) -> Iterator[Point]:
        """The points, first axis slowest (see :func:`expand`)."""
        return expand(self)


def _label(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def classify_key(key: str) -> str:
    """``system``, ``fidelity``, ``workload`` or ``config`` for an axis or [set] key;
    raises KeyError for a key that is none of these."""
    if key in ("system", "fidelity"):
        return key
    if key == "link":    # a whole link preset: hostlink.model.config.link_change
        return "config"
    if key.startswith("workload.") and len(key) > len("workload."):
        return "workload"
    section, _, name = key.partition(".")
    if section in SECTIONS and name:
        fields = {f.name for f in dataclasses.fields(SECTIONS[section]) if f.metadata}
        if name in fields and name != "name":
            return "config"
        raise KeyError(f"unknown config key '{key}' (keys of [{section}]: "
                       f"{', '.join(sorted(fields - {'name'}))})")
    if key in SWEEPABLE_SCALARS:
        return "config"
    raise KeyError(f"unknown key '{key}' (use system, fidelity, workload.<param>, "
                   f"<section>.<key> with a section of {', '.join(SECTIONS)}, or one of "
                   f"{', '.join(SWEEPABLE_SCALARS)})")


def _flatten(table: dict, prefix: str = "") -> dict[str, Any]:
    """``{"link": {"gen": 4}}`` (TOML dotted keys) -> ``{"link.gen": 4}``."""
    out: dict[str, Any] = {}
    for key, value in table.items():
        full = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(_flatten(value, f"{full}."))
        else:
            out[full] = value
    return out


def _number(value: Any) -> int | float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise fault(" must be a number, not {value}", value=repr(value))
    if not math.isfinite(value):
        raise fault(" = {value} must be a finite number", value=value)
    return value


#: an integer or a finite float, as written
Number = Annotated[Any, AfterValidator(_number)]


class RangeForm(TomlModel):
    """``range = {start, stop, step}``: start, start + step, ... up to stop."""
    start: Number
    stop: Number
    step: Number

    @field_validator("step")
    @classmethod
    def _leads_to_stop(cls, step, info):
        start, stop = info.data.get("start"), info.data.get("stop")
        if start is not None and stop is not None and (step == 0 or (stop - start) * step < 0):
            raise fault(" = {step} does not lead from {start} to {stop}", step=step,
                        start=start, stop=stop)
        return step

    def values(self) -> list[Any]:
        n = int(math.floor((self.stop - self.start) / self.step + 1e-9)) + 1
        values = [self.start + i * self.step for i in range(n)]
        if all(isinstance(v, int) for v in (self.start, self.stop, self.step)):
            return [int(v) for v in values]
        return [float(f"{v:.12g}") for v in values]


class SpaceForm(TomlModel):
    """``linspace``/``geomspace = {start, stop, num}`` (stop inclusive)."""
    start: Number
    stop: Number
    num: Annotated[int, Field(ge=1, le=MAX_POINTS)]

    def values(self, geometric: bool) -> list[Any]:
        start, stop, num = self.start, self.stop, self.num
        if num == 1:
            return [start]
        if geometric:
            ratio = math.log(stop / start)
            values = [start * math.exp(ratio * i / (num - 1)) for i in range(num)]
        else:
            values = [start + (stop - start) * i / (num - 1) for i in range(num)]
        return [float(f"{v:.12g}") for v in values]


class AxisEntry(TomlModel):
    """One ``[[axis]]``: a key and one form of values, or ``zip`` alone."""
    key: Annotated[str, Field(min_length=1)] | None = None
    values: list[Any] | None = None
    range: RangeForm | None = None
    linspace: SpaceForm | None = None
    geomspace: SpaceForm | None = None
    zip: Annotated[dict[str, Any], Field(min_length=1)] | None = None

    @model_validator(mode="after")
    def _one_form(self):
        forms = [f for f in AXIS_FORMS if getattr(self, f) is not None]
        if self.zip is not None:
            if self.key is not None or forms:
                raise fault(": 'zip' stands alone (no key, {forms})",
                            forms=", ".join(AXIS_FORMS))
            return self
        if self.key is None:
            raise fault(": 'key' must name what the axis varies (e.g. \"link.gen\")")
        if len(forms) != 1:
            raise fault(": give exactly one of {all}{got}", all=", ".join(AXIS_FORMS),
                        got=f" (got {', '.join(forms)})" if forms else "")
        if self.geomspace is not None and (self.geomspace.start <= 0 or self.geomspace.stop <= 0):
            raise fault(": 'geomspace' needs start and stop > 0")
        return self

    def steps(self) -> tuple[tuple[str, ...], list[tuple[Any, ...]]]:
        """The axis's keys and one tuple of values per step."""
        if self.zip is not None:
            flat = _flatten(self.zip)
            return tuple(flat), list(zip(*flat.values()))
        if self.values is not None:
            values = self.values
        elif self.range is not None:
            values = self.range.values()
        else:
            values = (self.linspace or self.geomspace).values(self.geomspace is not None)
        return (self.key,), [(v,) for v in values]


def _not_blank(text: str) -> str:
    if not text.strip():
        raise fault(" must be a non-empty string")
    return text


class SweepHead(TomlModel):
    """The ``[sweep]`` table."""
    name: Annotated[str, AfterValidator(_not_blank)] | None = None
    description: str = ""
    system: Annotated[str, Field(min_length=1)]
    fidelity: Fidelity = DEFAULT_FIDELITY
    batch_size: Annotated[int, Field(ge=1)] | None = None


class SweepFile(TomlModel):
    """A whole sweep file."""
    sweep: SweepHead
    set: dict[str, Any] = {}
    workload: dict[str, Any]
    axis: list[AxisEntry] = []


def _parse_axis(entry: AxisEntry, i: int, path: str) -> Axis:
    where = f"{path}: 'axis[{i}]'"
    keys, steps = entry.steps()
    if entry.zip is not None:
        flat = _flatten(entry.zip)
        for key, values in flat.items():
            if not isinstance(values, list):
                raise ConfigError(f"{where}: zip key '{key}' must be a list of values")
        lengths = {k: len(v) for k, v in flat.items()}
        if len(set(lengths.values())) != 1:
            desc = ", ".join(f"'{k}' has {n}" for k, n in lengths.items())
            raise ConfigError(f"{where}: zipped keys must have equal lengths ({desc})")
    if not steps:
        raise ConfigError(f"{where}: axis '{keys[0]}' has no values")
    for col, key in enumerate(keys):
        try:
            classify_key(key)
        except KeyError as exc:
            raise ConfigError(f"{where}: {exc.args[0]}") from None
        for step in steps:
            value = step[col]
            if not _scalar_ok(value) and not (key.startswith("workload.")
                                              and isinstance(value, list)):
                raise ConfigError(f"{where}: '{key}' value {value!r} must be a number, "
                                  "string or boolean")
            if key == "fidelity" and value not in FIDELITIES:
                raise ConfigError(f"{where}: 'fidelity' = {value!r} is not one of "
                                  f"{', '.join(FIDELITIES)}")
            if key == "system" and not isinstance(value, str):
                raise ConfigError(f"{where}: 'system' = {value!r} must name a preset")
    return Axis(keys=keys, steps=tuple(steps))


def _scalar_ok(value: Any) -> bool:
    return isinstance(value, (bool, int, float, str))


def parse_sweep(data: dict, path: str = "<sweep>", text: str = "") -> SweepSpec:
    """A checked :class:`SweepSpec` from the parsed TOML of a sweep file."""
    doc = check(SweepFile, data, path)
    head = doc.sweep
    name = (head.name or Path(path).stem).strip()
    overrides = _flatten(doc.set)
    for key, value in overrides.items():
        try:
            kind = classify_key(key)
        except KeyError as exc:
            raise ConfigError(f"{path}: [set]: {exc.args[0]}") from None
        if kind != "config":
            raise ConfigError(f"{path}: [set]: '{key}' is not a config key (set the system in "
                              "[sweep], the workload in [workload])")
        if not _scalar_ok(value):
            raise ConfigError(f"{path}: [set]: '{key}' = {value!r} must be a number, string or boolean")
    axes = tuple(_parse_axis(e, i, path) for i, e in enumerate(doc.axis))
    seen: dict[str, int] = {}
    for i, axis in enumerate(axes):
        for key in axis.keys:
            if key in seen:
                raise ConfigError(f"{path}: 'axis[{i}]': key '{key}' is already varied by "
                                  f"axis[{seen[key]}]")
            if key in overrides:
                raise ConfigError(f"{path}: 'axis[{i}]': key '{key}' is also fixed in [set]")
            seen[key] = i
    # The workload's own keys are checked with every value an axis gives them.
    axis_workload = {k[len("workload."):] for k in seen if k.startswith("workload.")}
    check_workload_keys(doc.workload, axis_workload, path)
    spec = SweepSpec(path=path, name=name, description=head.description, system=head.system,
                     fidelity=head.fidelity, overrides=overrides, workload=dict(doc.workload),
                     axes=axes, batch_size=head.batch_size, text=text)
    if spec.num_points > MAX_POINTS:
        raise ConfigError(f"{path}: {spec.num_points} points is more than {MAX_POINTS}")
    return spec


def load_sweep(path: str | Path) -> SweepSpec:
    """Read and check a sweep file."""
    p = Path(path)
    data, text = read_toml(p, "sweep file")
    return parse_sweep(data, str(p), text)


def with_link(spec: SweepSpec, link: str | None) -> SweepSpec:
    """``spec`` with every point's link swapped for the link preset ``link`` (the
    generation's keys; the base system's platform keys stay: see
    :mod:`hostlink.model.config.link_change`). [set] keys the preset sets give
    way to it; axes still vary what they vary. None: ``spec`` itself."""
    if link is None:
        return spec
    from hostlink.model.config.link_change import GENERATION_KEYS
    if "link" in spec.axis_keys:
        raise ConfigError(f"{spec.path}: an axis varies 'link'; --link would fix it")
    kept = {k: v for k, v in spec.overrides.items()
            if k != "link" and k.removeprefix("link.") not in GENERATION_KEYS}
    return dataclasses.replace(spec, overrides={"link": link, **kept})


def expand(spec: SweepSpec) -> Iterator[Point]:
    """Every point of the sweep: the cartesian product of the axes, first axis slowest."""
    defaults = workload_defaults(spec.workload.get("kind"))
    base_workload = {**defaults, **spec.workload}
    # Per axis step: its params, its label, and what it sets in each place.
    steps = []
    for axis in spec.axes:
        per_axis = []
        for step in axis.steps:
            params = dict(zip(axis.keys, step))
            label = ",".join(f"{k}={_label(v)}" for k, v in params.items())
            wl = {k[len("workload."):]: v for k, v in params.items() if k.startswith("workload.")}
            cfg = {k: v for k, v in params.items()
                   if k not in ("system", "fidelity") and not k.startswith("workload.")}
            per_axis.append((params, label, wl, cfg))
        steps.append(per_axis)
    for index, combo in enumerate(itertools.product(*steps)):
        params: dict[str, Any] = {}
        overrides = dict(spec.overrides)
        workload = base_workload
        for p, _, wl, cfg in combo:
            params.update(p)
            if cfg:
                overrides.update(cfg)
            if wl:
                workload = {**workload, **wl}
        case = ",".join([label for _, label, _, _ in combo]) or "base"
        yield Point(index, params.get("system", spec.system), params.get("fidelity", spec.fidelity),
                    overrides, workload, params, case)
