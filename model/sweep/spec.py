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
Every mistake is a :class:`ConfigError` naming the file and the key; values are checked per point, for all points,
before anything runs (:mod:`hostlink.model.sweep.resolve`).
"""
from __future__ import annotations

import dataclasses
import itertools
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from hostlink.model.config.schema import SECTIONS, SYSTEM_SCALARS
from hostlink.model.errors import ConfigError
from hostlink.model.textfile import read_toml
from hostlink.model.sweep.workloads import check_workload_keys, workload_defaults

FIDELITIES = ("analytic", "des")
#: a sweep's fidelity where its file names none: the one the validation reports use
DEFAULT_FIDELITY = "des"
SWEEP_KEYS = ("name", "description", "system", "fidelity", "batch_size")
TOP_KEYS = ("sweep", "set", "workload", "axis")
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


def _scalar_ok(value: Any) -> bool:
    return isinstance(value, (bool, int, float, str))


def _generated(form: str, spec: Any, where: str) -> list[Any]:
    """Values of a ``range``/``linspace``/``geomspace`` table (stop inclusive)."""
    if not isinstance(spec, dict):
        raise ConfigError(f"{where}: '{form}' must be a table like {{start = 1, stop = 8, "
                          f"{'step' if form == 'range' else 'num'} = 4}}")
    need = ("start", "stop", "step") if form == "range" else ("start", "stop", "num")
    extra = set(spec) - set(need)
    missing = [k for k in need if k not in spec]
    if extra or missing:
        bad = f"unknown key '{sorted(extra)[0]}'" if extra else f"missing '{missing[0]}'"
        raise ConfigError(f"{where}: '{form}': {bad} (needs {', '.join(need)})")
    for k in need:
        if isinstance(spec[k], bool) or not isinstance(spec[k], (int, float)):
            raise ConfigError(f"{where}: '{form}.{k}' must be a number, not {spec[k]!r}")
    start, stop = spec["start"], spec["stop"]
    if form == "range":
        step = spec["step"]
        if step == 0 or (stop - start) * step < 0:
            raise ConfigError(f"{where}: 'range.step' = {step} does not lead from {start} to {stop}")
        n = int(math.floor((stop - start) / step + 1e-9)) + 1
        values = [start + i * step for i in range(n)]
        if all(isinstance(spec[k], int) for k in need):
            return [int(v) for v in values]
        return [float(f"{v:.12g}") for v in values]
    num = spec["num"]
    if not isinstance(num, int) or num < 1:
        raise ConfigError(f"{where}: '{form}.num' must be a whole number >= 1, not {num!r}")
    if num > MAX_POINTS:
        raise ConfigError(f"{where}: '{form}.num' = {num} is more than {MAX_POINTS} points")
    if form == "geomspace" and (start <= 0 or stop <= 0):
        raise ConfigError(f"{where}: 'geomspace' needs start and stop > 0")
    if num == 1:
        return [start]
    if form == "linspace":
        values = [start + (stop - start) * i / (num - 1) for i in range(num)]
    else:
        ratio = math.log(stop / start)
        values = [start * math.exp(ratio * i / (num - 1)) for i in range(num)]
    return [float(f"{v:.12g}") for v in values]


def _axis_values(entry: dict, where: str) -> list[Any]:
    forms = [f for f in AXIS_FORMS if f in entry]
    if len(forms) != 1:
        raise ConfigError(f"{where}: give exactly one of {', '.join(AXIS_FORMS)}"
                          + (f" (got {', '.join(forms)})" if forms else ""))
    form = forms[0]
    if form == "values":
        values = entry["values"]
        if not isinstance(values, list):
            raise ConfigError(f"{where}: 'values' must be a list, not {values!r}")
    else:
        values = _generated(form, entry[form], where)
    return values


def _parse_axis(entry: Any, i: int, where_file: str) -> Axis:
    where = f"{where_file}: axis {i + 1}"
    if not isinstance(entry, dict):
        raise ConfigError(f"{where}: must be a table ([[axis]])")
    if "zip" in entry:
        extra = set(entry) - {"zip"}
        if extra:
            raise ConfigError(f"{where}: unknown key '{sorted(extra)[0]}' beside 'zip'")
        table = entry["zip"]
        if not isinstance(table, dict) or not table:
            raise ConfigError(f"{where}: 'zip' must be a table of key = [values]")
        flat = _flatten(table)
        lengths = {}
        for key, values in flat.items():
            if not isinstance(values, list):
                raise ConfigError(f"{where}: zip key '{key}' must be a list of values")
            lengths[key] = len(values)
        if len(set(lengths.values())) != 1:
            desc = ", ".join(f"'{k}' has {n}" for k, n in lengths.items())
            raise ConfigError(f"{where}: zipped keys must have equal lengths ({desc})")
        keys = tuple(flat)
        steps = tuple(zip(*(flat[k] for k in keys)))
        if not steps:
            raise ConfigError(f"{where}: zip key '{keys[0]}' has no values")
    else:
        known = {"key", *AXIS_FORMS}
        extra = set(entry) - known
        if extra:
            raise ConfigError(f"{where}: unknown key '{sorted(extra)[0]}' (allowed: key, "
                              f"{', '.join(AXIS_FORMS)}, or zip)")
        key = entry.get("key")
        if not isinstance(key, str) or not key:
            raise ConfigError(f"{where}: 'key' must name what the axis varies (e.g. \"link.gen\")")
        values = _axis_values(entry, f"{where} ('{key}')")
        if not values:
            raise ConfigError(f"{where}: axis '{key}' has no values")
        keys = (key,)
        steps = tuple((v,) for v in values)
    for key in keys:
        try:
            classify_key(key)
        except KeyError as exc:
            raise ConfigError(f"{where}: {exc.args[0]}") from None
        col = keys.index(key)
        for step in steps:
            if not _scalar_ok(step[col]) and not (key.startswith("workload.")
                                                  and isinstance(step[col], list)):
                raise ConfigError(f"{where}: '{key}' value {step[col]!r} must be a number, "
                                  "string or boolean")
        if key == "fidelity":
            for step in steps:
                if step[col] not in FIDELITIES:
                    raise ConfigError(f"{where}: 'fidelity' = {step[col]!r} is not one of "
                                      f"{', '.join(FIDELITIES)}")
        if key == "system":
            for step in steps:
                if not isinstance(step[col], str):
                    raise ConfigError(f"{where}: 'system' = {step[col]!r} must name a preset")
    return Axis(keys=keys, steps=steps)


def parse_sweep(data: dict, path: str = "<sweep>", text: str = "") -> SweepSpec:
    """A checked :class:`SweepSpec` from the parsed TOML of a sweep file."""
    for key in data:
        if key not in TOP_KEYS:
            raise ConfigError(f"{path}: unknown section or key '{key}' "
                              f"(allowed: {', '.join(TOP_KEYS)})")
    head = data.get("sweep")
    if not isinstance(head, dict):
        raise ConfigError(f"{path}: missing section [sweep]")
    for key in head:
        if key not in SWEEP_KEYS:
            raise ConfigError(f"{path}: unknown key 'sweep.{key}' (allowed: {', '.join(SWEEP_KEYS)})")
    name = head.get("name", Path(path).stem)
    if not isinstance(name, str) or not name.strip():
        raise ConfigError(f"{path}: 'sweep.name' must be a non-empty string")
    description = head.get("description", "")
    if not isinstance(description, str):
        raise ConfigError(f"{path}: 'sweep.description' must be a string")
    system = head.get("system")
    if not isinstance(system, str) or not system:
        raise ConfigError(f"{path}: 'sweep.system' must name a system preset (e.g. \"h100-pcie5\")")
    fidelity = head.get("fidelity", DEFAULT_FIDELITY)
    if fidelity not in FIDELITIES:
        raise ConfigError(f"{path}: 'sweep.fidelity' = {fidelity!r} is not one of {', '.join(FIDELITIES)}")
    batch_size = head.get("batch_size")
    if batch_size is not None and (isinstance(batch_size, bool) or not isinstance(batch_size, int)
                                   or batch_size < 1):
        raise ConfigError(f"{path}: 'sweep.batch_size' must be a whole number >= 1")

    raw_set = data.get("set", {})
    if not isinstance(raw_set, dict):
        raise ConfigError(f"{path}: [set] must be a table of key = value")
    overrides = _flatten(raw_set)
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

    workload = data.get("workload")
    if not isinstance(workload, dict):
        raise ConfigError(f"{path}: missing section [workload] (kind = \"sizes\", \"graph\" or \"trace\")")

    raw_axes = data.get("axis", [])
    if not isinstance(raw_axes, list):
        raise ConfigError(f"{path}: axes are written [[axis]] (an array of tables)")
    axes = tuple(_parse_axis(e, i, path) for i, e in enumerate(raw_axes))
    seen: dict[str, int] = {}
    for i, axis in enumerate(axes):
        for key in axis.keys:
            if key in seen:
                raise ConfigError(f"{path}: axis {i + 1}: key '{key}' is already varied by axis "
                                  f"{seen[key] + 1}")
            if key in overrides:
                raise ConfigError(f"{path}: axis {i + 1}: key '{key}' is also fixed in [set]")
            seen[key] = i
    # The workload's own keys are checked with every value an axis gives them.
    axis_workload = {k[len("workload."):] for k in seen if k.startswith("workload.")}
    check_workload_keys(workload, axis_workload, path)
    spec = SweepSpec(path=path, name=name.strip(), description=description, system=system,
                     fidelity=fidelity, overrides=overrides, workload=dict(workload), axes=axes,
                     batch_size=batch_size, text=text)
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
