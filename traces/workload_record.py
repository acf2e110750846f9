"""The traversal run a trace folder holds, recorded beside it as ``workload.toml``.

``hostlink trace gen`` writes the program, variant, id width, source, load-ahead
and the graph's vertex count next to the trace, so that ``hostlink predict
--trace`` can time the trace as that program's whole run: its warps' loads in
flight (:func:`hostlink.traces.traversal.requests_ahead`), its host loop between
launches (:mod:`hostlink.model.host_loop`) and its launches back to back.
A trace folder without the file is a plain trace. The file is checked by the
pydantic model :class:`WorkloadRecord` (:mod:`hostlink.model.tomlcheck`).
"""
from __future__ import annotations

from pathlib import Path

import tomli_w
from pydantic import create_model

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



KEYS = {name: f.annotation for name, f in WorkloadRecord.model_fields.items()}


def _plain(value):
    """A value as TOML holds it: numpy scalars as Python ones, tuples as lists."""
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value.item() if hasattr(value, "item") and not isinstance(value, str) else value


def write_record(folder: Path, name: str, section: str, model: type[TomlModel],
                 values: dict) -> Path:
    """Write ``folder/name`` with one table ``[section]`` holding ``model``'s keys,
    checked by ``model`` first."""
    missing = sorted(set(model.model_fields) - set(values))
    if missing:
        raise TraceError(f"{section} record: missing {', '.join(missing)}")
    table = check(model, {k: _plain(values[k]) for k in model.model_fields},
                  f"{section} record", error=TraceError)
    path = Path(folder) / name
    path.write_text(tomli_w.dumps({section: table.model_dump()}))
    return path


def read_record(folder: Path, name: str, section: str, model: type[TomlModel]) -> dict | None:
    """The ``[section]`` of ``folder/name`` checked by ``model``, or None where the
    folder has no such file."""
    path = Path(folder) / name
    if not Path(folder).is_dir() or not path.is_file():
        return None
    try:
        data = read_toml(path, f"{section} record")[0]
    except ConfigError as exc:
        raise TraceError(str(exc)) from None
    file_model = create_model(f"{model.__name__}File", __base__=TomlModel,
                              **{section: (model, ...)})
    return getattr(check(file_model, data, str(path), error=TraceError), section).model_dump()


def write_workload_record(folder: Path, **values) -> Path:
    """Write ``folder/workload.toml`` with the keys of :data:`KEYS`."""
    return write_record(folder, RECORD, "workload", WorkloadRecord, values)


def read_workload_record(folder: Path) -> dict | None:
    """The record of a trace folder, or None where it has none."""
    return read_record(folder, RECORD, "workload", WorkloadRecord)


def traced_workload(trace, record: dict, system, coalesce_options=None, trace_options=None):
    """The trace folder ``trace`` as the traversal run ``record`` names (a
    :class:`~hostlink.model.workload.TraversalWorkload`), coalesced for ``system``'s GPU,
    its host regions the run's managed buffers."""
    from hostlink.model.predict import as_stream, open_trace_folder
    from hostlink.model.workload import TraversalWorkload
    from hostlink.traces.traversal import host_buffers, requests_ahead
    opened = open_trace_folder(trace, trace_options)
    stream = as_stream(opened, coalesce_options, gpu=system.gpu)
    return TraversalWorkload(
        stream=stream, kernel=record["kernel"], variant=record["variant"],
        loads_in_flight=requests_ahead(record["variant"], record["load_ahead"],
                                       record["id_bytes"], weighted=record["kernel"] == "sssp"),
        vertices=record["vertices"], managed=host_buffers(opened.regions))
