"""The gather a trace folder holds, recorded beside it as ``gather.toml``.

``hostlink trace gen --kernel gather`` writes the gather's parameters next to its
trace, so that ``hostlink predict --trace`` times the folder as that gather
(:class:`~hostlink.model.workload.Gather`, rebuilt by the emulator of
:mod:`hostlink.traces.gather`, which wrote the trace) in every mode, the gather's
own ``uvm_warm`` and ``cpu_gather`` included.
"""
from __future__ import annotations

import tomllib
from pathlib import Path

import tomli_w

from hostlink.model.errors import TraceError

RECORD = "gather.toml"
KEYS = {"row_B": int, "table_rows": int, "rows": int, "variant": str, "lane_B": int,
        "ids": str, "seed": int, "graph": str, "fanouts": list, "batch": int,
        "host_threads": int}


def write_gather_record(folder: Path, **values) -> Path:
    """Write ``folder/gather.toml`` with the keys of :data:`KEYS` (``graph``: "" for
    uniform ids)."""
    missing = sorted(set(KEYS) - set(values))
    if missing:
        raise TraceError(f"gather record: missing {', '.join(missing)}")
    path = Path(folder) / RECORD
    path.write_text(tomli_w.dumps({"gather": {k: KEYS[k](values[k]) for k in KEYS}}))
    return path


def read_gather_record(folder: Path) -> dict | None:
    """The gather record of a trace folder, or None where it has none."""
    path = Path(folder) / RECORD
    if not Path(folder).is_dir() or not path.is_file():
        return None
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8")).get("gather")
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise TraceError(f"{path}: not a gather record ({exc})") from None
    if not isinstance(data, dict):
        raise TraceError(f"{path}: missing section [gather]")
    out = {}
    for key, kind in KEYS.items():
        value = data.get(key)
        if not isinstance(value, kind) or isinstance(value, bool):
            raise TraceError(f"{path}: 'gather.{key}' must be a {kind.__name__}")
        out[key] = value
    if not all(isinstance(f, int) and not isinstance(f, bool) for f in out["fanouts"]):
        raise TraceError(f"{path}: 'gather.fanouts' must be a list of integers")
    return out


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
