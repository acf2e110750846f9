"""The record of a committed run: ``runs/<run>/record.toml``.

A record says what a run is, in a form a program can read. Its top keys are
written by hand and kept as they are:

- ``experiment``, ``run``: the folder names (checked against the folder);
- ``purpose``: one of :data:`PURPOSES` (why this take exists);
- ``note``: one line on what the take measured or how it differs;
- ``former_path``: where the run lay before the tree had one folder per
  experiment (``validation/results/<gpu>/<name>``), so that old citations resolve;
- ``supersedes`` / ``superseded_by``: run ids (``<experiment>/<run>``) this run
  replaces or is replaced by. A superseded run stays committed;
- ``date``: only for a probe run without ``environment.json`` or
  ``metadata.json`` (the day its README or log gives).

Two tables are derived from the run's files and the rest of the tree, and
rewritten by ``hostlink validate index``:

- ``[measured]``: the GPU, driver, PCIe link, host and date, from
  ``environment.json`` (else ``metadata.json``, else the probe's ``gpu.txt``
  and the record's own ``date``);
- ``[used_by]``: the runs whose committed calibration fitted on this run
  (``calibrations``: the chain and pooled runs of each ``calibration.json``,
  :mod:`hostlink.validation.calibration_chain`), the committed reports predicted
  with a calibration that did (``reports``), whether the band of run-to-run
  spread (``hostlink.model.bands``) takes it, and the presets whose
  provenance names it (``sim_configs/system/*.toml``).

Errors name the file and key on one line (:class:`ConfigError`).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

import tomli_w
from pydantic import AfterValidator, Field

from hostlink.model.errors import ConfigError
from hostlink.model.textfile import read_toml
from hostlink.model.tomlcheck import TomlModel, check, fault
from hostlink.validation.data_tree import EXPERIMENTS

RECORD = "record.toml"
#: why a take exists
PURPOSES = {
    "first": "the experiment's first run on this GPU",
    "repeat": "the same manifest on a later lease, to measure run-to-run variation",
    "again": "the same manifest right after, on the same machine",
    "retake": "the same manifest or probe on another lease",
    "companion": "the manifest on the lease of another experiment's run, beside it",
}
RUN_NAME = re.compile(r"^(h100|h200)(-[a-z0-9-]+)?$")
DATE = re.compile(r"\b(20\d\d-\d\d-\d\d)\b")
GPU_NAMES = {"h100": "NVIDIA H100", "h200": "NVIDIA H200"}


@dataclass
class Record:
    """One run's record (hand keys and the derived tables)."""
    experiment: str
    run: str
    purpose: str
    note: str
    former_path: str = ""
    supersedes: list[str] = field(default_factory=list)
    superseded_by: list[str] = field(default_factory=list)
    date: str = ""
    measured: dict = field(default_factory=dict)
    used_by: dict = field(default_factory=dict)

    @property
    def id(self) -> str:
        return f"{self.experiment}/{self.run}"

    @property
    def gpu(self) -> str:
        return self.run.split("-", 1)[0]


def run_id(path: str | Path) -> str | None:
    """``<experiment>/<run>`` of a run folder path (absolute, or relative to the
    repository or to the experiments tree); None when it is not one."""
    parts = Path(str(path)).parts
    for k in range(1, len(parts) - 1):
        if parts[k] == "runs" and (k == 1 or parts[k - 2] == "experiments"):
            return f"{parts[k - 1]}/{parts[k + 1]}"
    return None


def _pattern(regex: re.Pattern, text: str):
    def match(value: str) -> str:
        if not regex.fullmatch(value):
            raise fault(" = {v} is not " + text, v=repr(value))
        return value
    return AfterValidator(match)


_RunId = Annotated[str, _pattern(re.compile(r"[^/]+/[^/]+"), "a run id '<experiment>/<run>'")]
_Text = Annotated[str, Field(min_length=1)]


class RecordFile(TomlModel):
    """A run's record.toml: the keys written by hand, then the derived tables."""
    experiment: _Text
    run: Annotated[str, _pattern(RUN_NAME, "<gpu>[-<take>] (h100, h200-repeat, ...)")]
    purpose: Literal[tuple(PURPOSES)]  # type: ignore[valid-type]
    note: _Text
    former_path: str = ""
    supersedes: list[_RunId] = []
    superseded_by: list[_RunId] = []
    date: Annotated[str, _pattern(DATE, "a day as \"YYYY-MM-DD\"")] = ""
    measured: dict[str, Any] = {}
    used_by: dict[str, Any] = {}


def load_record(path: str | Path) -> Record:
    """Read and check one record.toml."""
    path = Path(path)
    doc = check(RecordFile, read_toml(path, "run record")[0], str(path))
    return Record(**{k: (list(v) if isinstance(v, list) else dict(v) if isinstance(v, dict)
                         else v) for k, v in doc})


def dump_record(rec: Record) -> str:
    """The text of a record.toml (hand keys first, then the derived tables)."""
    head = ("# The record of one run (validation/records.py). The keys above [measured] are\n"
            "# written by hand; [measured] and [used_by] are rewritten by `hostlink validate index`.\n")
    body = {"experiment": rec.experiment, "run": rec.run, "purpose": rec.purpose, "note": rec.note,
            "former_path": rec.former_path, "supersedes": rec.supersedes,
            "superseded_by": rec.superseded_by, **({"date": rec.date} if rec.date else {}),
            "measured": rec.measured, "used_by": rec.used_by}
    return head + tomli_w.dumps(body)


def _json(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return {}


def measured_info(run_dir: Path, hand_date: str = "") -> dict:
    """GPU, driver, link, host and date of a run from its own files (``hand_date``:
    the record's own date, for a probe whose files hold none)."""
    env = _json(run_dir / "environment.json")
    gpu = env.get("gpu") or {}
    out: dict = {}
    if gpu.get("name"):
        out["gpu"] = gpu["name"]
        out["driver"] = str(gpu.get("driver_version", ""))
        if gpu.get("pcie_link_gen_current"):
            out["pcie"] = f"gen {gpu['pcie_link_gen_current']} x{gpu.get('pcie_link_width_current', '?')}"
    host = env.get("host") or {}
    if host:
        out["host"] = f"{host.get('cpu_model', '?')}, {host.get('cpu_count', '?')} CPUs, " \
                      f"{round(host.get('mem_total_B', 0) / 2**30)} GiB"
    if env.get("hostname"):
        out["hostname"] = env["hostname"]
    date = str(env.get("recorded_utc", ""))[:10]
    if not date:
        sessions = _json(run_dir / "metadata.json").get("sessions") or []
        stamps = [s.get("started_utc") or s.get("reparsed_utc") for s in sessions if isinstance(s, dict)]
        date = next((str(s)[:10] for s in stamps if s), "")
    if "gpu" not in out and (run_dir / "gpu.txt").is_file():
        out.update(_smi_gpu(run_dir / "gpu.txt"))
    if "gpu" not in out:
        out["gpu"] = GPU_NAMES[run_dir.name.split("-", 1)[0]]
    date_from = ("environment.json" if env.get("recorded_utc") else
                 "metadata.json" if date else "record.toml" if hand_date else "nothing")
    out["date"] = date or hand_date or "unknown"
    out["date_from"] = date_from
    return out


#: the columns of a probe's gpu.txt (nvidia-smi --query-gpu ... --format=csv) when it has
#: no header line: the order tools/probe_common.sh asks for
SMI_COLUMNS = ("name", "driver_version", "pcie.link.gen.current", "pcie.link.width.current")


def _smi_gpu(path: Path) -> dict:
    """The GPU, driver and link of a probe's ``gpu.txt``, its columns found by the
    header line's names (probes have asked nvidia-smi for them in other orders)."""
    lines = [r for r in path.read_text().splitlines() if r.strip()]
    head = [c.strip() for c in lines[0].split(",")] if lines and lines[0].startswith("name") \
        else list(SMI_COLUMNS)
    rows = [r for r in lines if not r.startswith("name")]
    cells = dict(zip(head, (c.strip() for c in rows[0].split(",")))) if rows else {}
    if not cells.get("name", "").startswith("NVIDIA"):
        return {}
    out = {"gpu": cells["name"]}
    if "driver_version" in cells:
        out["driver"] = cells["driver_version"]
    gen, width = cells.get("pcie.link.gen.current"), cells.get("pcie.link.width.current")
    if gen and width:
        out["pcie"] = f"gen {gen} x{width}"
    return out


def _calibration_runs(record: dict) -> set[str]:
    """Run ids a calibration record fitted on (its chain's links and pooled runs)."""
    found = set()
    for link in record.get("chain") or []:
        rid = run_id(link.get("results_dir", ""))
        if rid:
            found.add(rid)
    for p in record.get("pooled") or []:
        rid = run_id(p)
        if rid:
            found.add(rid)
    rid = run_id(record.get("results_dir", ""))
    if rid:
        found.add(rid)
    return found


MADE_WITH = re.compile(r"--system (\S+?\.toml)")


def used_by_all(root: Path = EXPERIMENTS, repo: Path | None = None) -> dict[str, dict]:
    """run id -> {calibrations, reports, bands, presets} over the whole tree."""
    repo = repo or root.parents[1]
    out: dict[str, dict] = {}

    def slot(rid: str) -> dict:
        return out.setdefault(rid, {"calibrations": set(), "reports": set(), "bands": False,
                                    "presets": set()})

    chains: dict[Path, set[str]] = {}
    for cal in sorted(root.glob("*/runs/*/**/calibration.json")):
        owner = f"{cal.relative_to(root).parts[0]}/{cal.relative_to(root).parts[2]}"
        runs = _calibration_runs(_json(cal))
        chains[cal.parent.resolve()] = runs
        for rid in runs - {owner}:
            slot(rid)["calibrations"].add(owner)
    for report in sorted(root.glob("*/runs/*/**/report.md")):
        rel = report.parent.relative_to(root)
        owner = f"{rel.parts[0]}/{rel.parts[2]}"
        label = "/".join((rel.parts[0],) + rel.parts[2:])
        m = MADE_WITH.search(report.read_text())
        system = (repo / m.group(1)).resolve().parent if m else None
        for rid in chains.get(system, set()) - {owner}:
            slot(rid)["reports"].add(label)
    bands = _json(repo / "model" / "data" / "bands.json")
    for mode in (bands.get("modes") or {}).values():
        for rid in mode.get("runs") or []:
            slot(rid)["bands"] = True
    for preset in sorted((repo / "sim_configs" / "system").glob("*.toml")):
        for m in re.finditer(r"validation/experiments/([\w.-]+)/runs/([\w.-]+)", preset.read_text()):
            slot(f"{m.group(1)}/{m.group(2)}")["presets"].add(preset.stem)
    return {rid: {"calibrations": sorted(v["calibrations"]), "reports": sorted(v["reports"]),
                  "bands": v["bands"], "presets": sorted(v["presets"])} for rid, v in out.items()}


def run_dirs(root: Path = EXPERIMENTS) -> list[Path]:
    """Every run folder of the tree, sorted."""
    return sorted(p for p in root.glob("*/runs/*") if p.is_dir())


def refreshed(root: Path = EXPERIMENTS) -> dict[Path, Record]:
    """Every run's record with its derived tables computed afresh from the tree."""
    used = used_by_all(root)
    empty = {"calibrations": [], "reports": [], "bands": False, "presets": []}
    out = {}
    for run in run_dirs(root):
        path = run / RECORD
        if not path.is_file():
            raise ConfigError(f"{path}: missing (every run folder has a record)")
        rec = load_record(path)
        exp, name = run.parts[-3], run.name
        if (rec.experiment, rec.run) != (exp, name):
            raise ConfigError(f"{path}: key 'experiment'/'run' is '{rec.id}', not the folder's "
                              f"'{exp}/{name}'")
        rec.measured = measured_info(run, rec.date)
        rec.used_by = used.get(rec.id, empty)
        out[path] = rec
    ids = {r.id for r in out.values()}
    for path, rec in out.items():
        for key in ("supersedes", "superseded_by"):
            for other in getattr(rec, key):
                if other not in ids:
                    raise ConfigError(f"{path}: key '{key}' names '{other}', which is no run of the tree")
    return out
