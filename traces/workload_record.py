"""The traversal run a trace folder holds, recorded beside it as ``workload.toml``.

``hostlink trace gen`` writes the program, variant, id width, source, load-ahead
and the graph's vertex count next to the trace, so that ``hostlink predict
--trace`` can time the trace as that program's whole run: its warps' loads in
flight (:func:`hostlink.traces.traversal.requests_ahead`), its host loop between
launches (:mod:`hostlink.model.host_loop`) and its launches back to back.
A trace folder without the file is a plain trace. The file is checked by the
pydantic model :class:`RecordFile` (:mod:`hostlink.model.tomlcheck`).
"""
from __future__ import annotations

from pathlib import Path

import tomli_w

from hostlink.model.errors import ConfigError, TraceError
from hostlink.model.textfile import read_toml
from hostlink.model.tomlcheck import TomlModel, check

RECORD = "workload.toml"


class WorkloadRecord(TomlModel):
    """The ``[workload]`` table of a trace folder's record."""
    kernel: str
    variant: str
    id_bytes: int
    source: int
    vertices: int
    load_ahead: int


class RecordFile(TomlModel):
    workload: WorkloadRecord


KEYS = {name: f.annotation for name, f in WorkloadRecord.model_fields.items()}


def write_workload_record(folder: Path, **values) -> Path:
    """Write ``folder/workload.toml`` with the keys of :data:`KEYS`."""
    missing = sorted(set(KEYS) - set(values))
    if missing:
        raise TraceError(f"workload record: missing {', '.join(missing)}")
    path = Path(folder) / RECORD
    path.write_text(tomli_w.dumps({"workload": {k: KEYS[k](values[k]) for k in KEYS}}))
    return path


def read_workload_record(folder: Path) -> dict | None:
    """The record of a trace folder, or None where it has none."""
    path = Path(folder) / RECORD
    if not Path(folder).is_dir() or not path.is_file():
        return None
    try:
        data = read_toml(path, "workload record")[0]
    except ConfigError as exc:
        raise TraceError(str(exc)) from None
    return check(RecordFile, data, str(path), error=TraceError).workload.model_dump()


def traced_workload(trace, record: dict, system, coalesce_options=None, trace_options=None):
    """The trace folder ``trace`` as the traversal run ``record`` names (a
    :class:`~hostlink.model.workload.TraversalWorkload`), coalesced for ``system``'s GPU."""
    from hostlink.model.predict import as_stream
    from hostlink.model.workload import TraversalWorkload
    from hostlink.traces.traversal import requests_ahead
    stream = as_stream(trace, coalesce_options, trace_options, gpu=system.gpu)
    return TraversalWorkload(
        stream=stream, kernel=record["kernel"], variant=record["variant"],
        loads_in_flight=requests_ahead(record["variant"], record["load_ahead"],
                                       record["id_bytes"], weighted=record["kernel"] == "sssp"),
        vertices=record["vertices"])
