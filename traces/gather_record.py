"""The gather a trace folder holds, recorded beside it as ``gather.toml``.

``hostlink trace gen --kernel gather`` writes the gather's parameters next to its
trace, so that ``hostlink predict --trace`` times the folder as that gather
(:class:`~hostlink.model.workload.Gather`, rebuilt by the emulator of
:mod:`hostlink.traces.gather`, which wrote the trace) in every mode, the gather's
own ``uvm_warm`` and ``cpu_gather`` included.
"""
from __future__ import annotations

from pathlib import Path

from hostlink.model.tomlcheck import TomlModel
from hostlink.traces.workload_record import read_record, write_record

RECORD = "gather.toml"


class GatherRecord(TomlModel):
    """The ``[gather]`` table of a trace folder's record (``graph``: "" for uniform ids)."""
    row_B: int
    table_rows: int
    rows: int
    variant: str
    lane_B: int
    ids: str
    seed: int
    graph: str
    fanouts: list[int]
    batch: int
    host_threads: int


KEYS = {name: f.annotation for name, f in GatherRecord.model_fields.items()}


def write_gather_record(folder: Path, **values) -> Path:
    """Write ``folder/gather.toml`` with the keys of :class:`GatherRecord`."""
    return write_record(folder, RECORD, "gather", GatherRecord, values)


def read_gather_record(folder: Path) -> dict | None:
    """The gather record of a trace folder, or None where it has none."""
    return read_record(folder, RECORD, "gather", GatherRecord)


def recorded_gather(record: dict, gpu):
    """The :class:`~hostlink.model.workload.Gather` a record names, on ``gpu``."""
    from hostlink.traces.gather import GatherSpec, gather_workload
    spec = GatherSpec(record["row_B"], record["table_rows"], record["rows"], record["variant"],
                      record["lane_B"])
    csr = None
    if record["ids"] == "sampled":
        from hostlink.traces.graphs import read_graph
        csr = read_graph(record["graph"])
    return gather_workload(spec, record["ids"], gpu, seed=record["seed"], csr=csr,
                           fanouts=tuple(record["fanouts"]), batch=record["batch"],
                           host_threads=record["host_threads"])
