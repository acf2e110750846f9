"""Evaluate batches of sweep points; this code runs in the worker processes.

A :class:`Task` is a batch of points that share one workload and one
fidelity. Two paths:

- request-size mixes at analytic fidelity: the whole batch is ONE call of
  :func:`hostlink.model.analytic.evaluate` with an array per configuration
  parameter (thousands of points per call);
- everything else (graph traversals, traces, size mixes at DES fidelity): the
  request stream is built once per task (and kept in a small per-process
  cache for the next task of the same workload), then
  :func:`hostlink.model.predict.predict` runs once per point.

Results come back as tidy rows (``run_id, experiment, case, model_kind,
metric, value, unit, rep``): an Arrow table from the vectorised path, a dict
of NumPy columns from the per-point path.
"""
from __future__ import annotations

import json
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hostlink.model.errors import ConfigError

# Metrics of the analytic model written for every size-mix point: (field, unit).
ANALYTIC_METRICS = (
    ("bw_GBps", "GB/s"), ("bw_link_GBps", "GB/s"), ("bw_link_down_GBps", "GB/s"),
    ("bw_link_up_GBps", "GB/s"), ("bw_tags_GBps", "GB/s"), ("bw_credits_GBps", "GB/s"),
    ("bw_requester_GBps", "GB/s"), ("bw_dram_GBps", "GB/s"), ("raw_GBps", "GB/s"),
    ("tlp_capacity_GBps", "GB/s"), ("wire_efficiency_down", "1"), ("wire_efficiency_up", "1"),
    ("dram_efficiency", "1"), ("outstanding_limit", "requests"),
    ("outstanding_to_saturate", "requests"), ("bytes_per_read", "B"),
)
STREAM_CACHE_SIZE = 2


@dataclass
class Task:
    """Points sharing a workload and a fidelity. ``systems`` holds, per point, the
    config parts and scalars (a SystemConfig is built only where a model needs one)."""
    fidelity: str
    workload: dict[str, Any]
    workload_json: str
    experiment: str
    run_ids: list[str]
    cases: list[str]
    systems: list[tuple[dict, dict]] = field(repr=False)

    def __len__(self) -> int:
        return len(self.run_ids)


def _rows(run_ids: list[str], cases: list[str], experiment: str, model_kind: str,
          metrics: list[tuple[str, str, np.ndarray]]):
    """Tidy rows (an Arrow table): every metric for every point, point-major."""
    import pyarrow as pa

    from hostlink.model.sweep.store import TIDY_SCHEMA
    n, m = len(run_ids), len(metrics)
    values = np.empty((n, m), dtype=np.float64)
    for j, (_, _, col) in enumerate(metrics):
        values[:, j] = np.broadcast_to(np.asarray(col, dtype=np.float64), (n,))
    point = pa.array(np.repeat(np.arange(n, dtype=np.int64), m))
    metric = pa.array(np.tile(np.arange(m, dtype=np.int64), n))
    columns = [
        pa.array(run_ids, pa.string()).take(point),
        pa.array([experiment], pa.string()).take(pa.array(np.zeros(n * m, dtype=np.int64))),
        pa.array(cases, pa.string()).take(point),
        pa.array([model_kind], pa.string()).take(pa.array(np.zeros(n * m, dtype=np.int64))),
        pa.array([name for name, _, _ in metrics], pa.string()).take(metric),
        pa.array(values.ravel()),
        pa.array([unit for _, unit, _ in metrics], pa.string()).take(metric),
        pa.array(np.zeros(n * m, dtype=np.int32)),
    ]
    return pa.Table.from_arrays(columns, schema=TIDY_SCHEMA)


def size_histogram(workload: dict[str, Any]):
    """The analytic model's histogram of a ``sizes`` workload (fractions as weights)."""
    from hostlink.model.analytic import SizeHistogram
    return SizeHistogram.of(np.asarray(workload["sizes_B"]), np.asarray(workload["fractions"]),
                            workload["offset_B"])


_HOST_GPU_KEYS = {"requester_limit", "dram_GBps", "dram_burst_B"}


def _same(a: dict, b: dict) -> bool:
    if a.keys() != b.keys():
        return False
    for k, v in a.items():
        w = b[k]
        if isinstance(v, float) and isinstance(w, float) and np.isnan(v) and np.isnan(w):
            continue
        if v != w:
            return False
    return True


def _analytic_params(systems: list[tuple[dict, dict]]) -> dict[str, Any]:
    """Arrays of :func:`hostlink.model.analytic.evaluate` keywords, one entry per point.

    The host and GPU parts are mapped by ``system_params`` once per distinct
    pair; the link part (distinct at almost every point of a link sweep) by
    :func:`hostlink.model.analytic.link_params`, whose agreement with
    ``system_params`` is checked on the first point of every pair (any
    difference: every point goes through ``system_params``)."""
    from types import SimpleNamespace

    from hostlink.model.analytic import link_params, system_params
    pairs: dict[tuple[int, int], dict] = {}
    links: dict[int, dict] = {}
    rows = []
    fast = True
    for parts, _ in systems:
        link = parts["link"]
        lp = links.get(id(link))
        if lp is None:
            lp = links[id(link)] = link_params(link)
        key = (id(parts["host"]), id(parts["gpu"]))
        other = pairs.get(key)
        if other is None:
            full = system_params(SimpleNamespace(**parts))
            other = pairs[key] = {k: v for k, v in full.items() if k not in lp}
            fast = (fast and _same({k: full[k] for k in full if k in lp}, lp)
                    and set(other) == _HOST_GPU_KEYS)
        rows.append((lp, other))
    if not fast:
        rows = [({}, system_params(SimpleNamespace(**parts))) for parts, _ in systems]
    out: dict[str, Any] = {}
    for name in (*rows[0][0], *rows[0][1]):
        col = [lp[name] if name in lp else other[name] for lp, other in rows]
        if isinstance(col[0], str) and len(set(col)) == 1:
            out[name] = col[0]
        else:
            out[name] = np.asarray(col)
    return out


def bound_metric(name: str) -> str:
    """The binding bound of a run is stored as a flag row: metric ``bound.<name>``,
    value 1 (tidy values are numbers); ``load_results(wide=True)`` turns the
    flags back into a ``bound`` column."""
    return f"{BOUND_PREFIX}{name}"


BOUND_PREFIX = "bound."


def evaluate_sizes_analytic(task: Task):
    """One vectorised analytic evaluation for every point of the task (an Arrow table)."""
    import pyarrow as pa

    from hostlink.model.analytic import BOUNDS, evaluate
    hist = size_histogram(task.workload)
    params = _analytic_params(task.systems)
    result = evaluate(hist, **params)
    metrics = [(name, unit, getattr(result, name)) for name, unit in ANALYTIC_METRICS]
    rows = _rows(task.run_ids, task.cases, task.experiment, "analytic", metrics)
    # one flag row per point for its binding bound
    n = len(task.run_ids)
    index = np.broadcast_to(np.asarray(result.bound_index), (n,))
    flags = _rows(task.run_ids, task.cases, task.experiment, "analytic",
                  [("", "1", np.ones(n))])
    names = pa.array([bound_metric(b) for b in BOUNDS], pa.string()).take(pa.array(index))
    flags = flags.set_column(flags.schema.get_field_index("metric"), "metric", names)
    return pa.concat_tables([rows, flags])


# ---------------------------------------------------------------- streams
_STREAMS: "OrderedDict[str, Any]" = OrderedDict()


def synthetic_stream(workload: dict[str, Any]):
    """A streaming request stream for a size mix (the DES counterpart of the analytic
    model's histogram): ``requests`` requests, sizes drawn from the mix with
    ``seed``, each starting ``offset_B`` after its own 128 B line, dealt round-robin
    to ``warps`` warps (CTAs of 8 warps) that issue them in order."""
    from hostlink.model.workload import SPACE_HOST, LaunchInfo, RequestStream
    n = int(workload["requests"])
    warps = int(workload["warps"])
    rng = np.random.default_rng(int(workload["seed"]))
    sizes = np.asarray(workload["sizes_B"], dtype=np.uint16)
    draw = rng.choice(len(sizes), size=n, p=np.asarray(workload["fractions"]))
    idx = np.arange(n, dtype=np.uint64)
    warp = (idx % np.uint64(warps)).astype(np.uint32)
    inst = (idx // np.uint64(warps)).astype(np.uint32)
    order = np.lexsort((inst, warp))  # grouped by warp, then program order
    size = sizes[draw]
    addr = idx * np.uint64(128) + np.uint64(workload["offset_B"]) + np.uint64(1 << 40)
    ctas = -(-warps // 8)
    return RequestStream(
        launch=np.zeros(n, np.uint32), warp=warp[order], inst=inst[order], addr=addr[order],
        size_B=size[order], useful_B=size[order], space=np.full(n, SPACE_HOST, np.uint8),
        is_write=np.zeros(n, bool),
        launches=(LaunchInfo("stream", ctas=ctas, warps_per_cta=8, threads_per_cta=256),))


# Memory modes of a workload -> the emulator's placement of the edge arrays.
EMULATOR_MEMORY = {"zerocopy": "zerocopy", "uvm_accessedby": "uvm_accessedby", "uvm": "uvm",
                   "uvm_readmostly": "managed_readmostly", "device": "device"}
_GRAPHS: "OrderedDict[str, Any]" = OrderedDict()
GRAPH_CACHE_SIZE = 1


def load_graph(workload: dict[str, Any]):
    """The workload's graph: built (hostlink.traces.graphs.families: kron, rmat, urand,
    grid, road, dataset) or read from ``path``; weighted only for SSSP. Kept per process
    for the next task on the same graph."""
    from hostlink.traces.graphs.families import PARAMS, build_graph
    from hostlink.traces.graphs.readers import read_graph
    weighted = workload["kernel"] == "sssp"
    key = json.dumps([workload.get(k) for k in ("graph", "scale", "degree", "seed", "path",
                                                "dims", "ids", "mean_degree", "name",
                                                "id_bytes")] + [weighted])
    csr = _GRAPHS.get(key)
    if csr is None:
        if workload["graph"] == "file":
            csr = read_graph(workload["path"], id_bytes=workload["id_bytes"])
        else:
            kind = workload["graph"]
            csr = build_graph(kind, weighted=weighted, id_bytes=workload["id_bytes"],
                              **{k: workload.get(k) for k in PARAMS[kind] + ("seed",)})
        _GRAPHS[key] = csr
        while len(_GRAPHS) > GRAPH_CACHE_SIZE:
            _GRAPHS.popitem(last=False)
    return csr


def pick_source(csr) -> int:
    """The default source: the vertex of largest degree (lowest id on ties)."""
    degree = np.diff(csr.offsets.astype(np.int64))
    return int(np.argmax(degree)) if len(degree) else 0


def graph_stream(workload: dict[str, Any], gpu=None):
    """The workload's traversal program's run on its graph
    (:func:`hostlink.traces.traversal.traversal_workload`: its requests through ``gpu``'s
    caches, loads in flight and host loop), the same run ``hostlink predict --graph`` and
    the validation twins predict. ``include_device``: the kernel's device-array accesses
    in full; without it, one device request per dependent step of the walk (what the
    twins use above 2^24 edges)."""
    from hostlink.model.config import load_system
    from hostlink.traces.traversal import traversal_workload
    if gpu is None:
        gpu = load_system("h100-pcie5").gpu
    csr = load_graph(workload)
    src = workload.get("source", "auto")
    source = pick_source(csr) if src == "auto" else int(src)
    return traversal_workload(csr, workload["kernel"], workload["variant"], gpu, source=source,
                              id_bytes=workload["id_bytes"],
                              load_ahead=workload.get("load_ahead", 1),
                              iterations=workload.get("iterations", 10),
                              max_device_edges=(csr.num_edges if workload.get("include_device")
                                                else -1))


def trace_stream(workload: dict[str, Any], gpu=None):
    """The coalesced request stream of a trace folder (binary store or Accel-Sim)."""
    from hostlink.traces.coalescer import coalesce
    from hostlink.traces.folder_regions import with_folder_regions
    from hostlink.traces.store import load_regions, open_trace
    regions = load_regions(workload["regions"]) if workload.get("regions") else None
    trace = open_trace(workload["path"], regions=with_folder_regions(workload["path"], regions),
                       memcpy_location=workload["memcpy_location"])
    from hostlink.traces.cache import host_read_cache
    cache = host_read_cache(gpu) if gpu is not None else None
    return coalesce(trace, include_device=workload["include_device"], cache=cache,
                    cache_host=cache is not None)


def gather_stream(workload: dict[str, Any], gpu=None):
    """The gather's :class:`~hostlink.model.workload.Gather` on ``gpu`` (its grid and
    caches; :func:`hostlink.traces.gather.gather_workload`), which predict() times."""
    from hostlink.model.config import load_system
    from hostlink.traces.gather import GatherSpec, gather_workload
    if gpu is None:
        gpu = load_system("h100-pcie5").gpu
    w = workload
    spec = GatherSpec(w["row_B"], w["table_B"] // w["row_B"], w["rows"], w["variant"],
                      w["lane_B"])
    kw = {}
    if w["ids"] == "sampled":
        from hostlink.traces.graphs import generate
        kw = {"csr": generate("kron", w["graph_scale"], 16, weighted=False),
              "fanouts": tuple(int(f) for f in w["fanouts"].split(",")), "batch": w["batch"]}
    return gather_workload(spec, w["ids"], gpu, seed=w["seed"], exact_counts=False,
                           sample_rounds=w.get("sample_rounds", 4), **kw)


def build_stream(workload: dict[str, Any], gpu=None):
    kind = workload["kind"]
    if kind == "gather":
        return gather_stream(workload, gpu)
    if kind == "sizes":
        return synthetic_stream(workload)
    if kind == "graph":
        return graph_stream(workload, gpu)
    if kind == "trace":
        return trace_stream(workload, gpu)
    raise ConfigError(f"unknown workload kind {kind!r}")


def stream_key(workload: dict[str, Any], gpu=None) -> str:
    """Workloads whose streams are equal share a key: a stream does not depend on
    which host memory mode will time it (the arrays sit in host memory for all),
    but on the GPU caches that filter its loads."""
    w = dict(workload)
    if w.get("mode") in ("zerocopy", "uvm_accessedby", "uvm", "uvm_readmostly"):
        w["mode"] = "host"
    if w.get("kind") == "gather":       # one Gather serves every mode and thread count
        w.pop("mode", None)
        w.pop("threads", None)
    if gpu is not None and w.get("kind") != "sizes":
        w["_caches"] = [gpu.caches_host_reads, gpu.sm_count, gpu.l1_B, gpu.l2_B,
                        gpu.max_warps_per_sm]
    return json.dumps(w, sort_keys=True)


def cached_stream(task: Task, gpu=None):
    key = stream_key(task.workload, gpu)
    stream = _STREAMS.get(key)
    if stream is None:
        stream = build_stream(task.workload, gpu)
        _STREAMS[key] = stream
        while len(_STREAMS) > STREAM_CACHE_SIZE:
            _STREAMS.popitem(last=False)
    else:
        _STREAMS.move_to_end(key)
    return stream


def prediction_rows(prediction, run_id: str, experiment: str, case: str) -> list[dict]:
    """``Prediction.to_rows`` plus the binding bound (a flag row) and, for DES runs,
    the utilisation of each resource (``utilisation.<resource>``)."""
    rows = list(prediction.to_rows(run_id, experiment, case))
    base = {"run_id": run_id, "experiment": experiment, "case": case,
            "model_kind": prediction.model_kind, "rep": 0}
    rows.append({**base, "metric": bound_metric(prediction.bound), "value": 1.0, "unit": "1"})
    util = prediction.extra.get("des", {}).get("utilisation", {}) if prediction.extra else {}
    for name, value in sorted(util.items()):
        rows.append({**base, "metric": f"utilisation.{name}", "value": float(value), "unit": "1"})
    return rows


def evaluate_stream(task: Task) -> dict[str, np.ndarray]:
    """Build the task's request stream once, then predict every point on it."""
    from hostlink.model.config import SystemConfig
    from hostlink.model.predict import predict
    mode = task.workload.get("mode", "zerocopy")
    rows: list[dict] = []
    for rid, case, (parts, scalars) in zip(task.run_ids, task.cases, task.systems):
        system = SystemConfig(**scalars, **parts)
        stream = cached_stream(task, system.gpu)
        if task.workload["kind"] == "gather":
            from dataclasses import replace
            stream = replace(stream, host_threads=task.workload.get("threads", 16))
        prediction = predict(stream, system, mode=mode, fidelity=task.fidelity)
        rows.extend(prediction_rows(prediction, rid, task.experiment, case))
    return _row_columns(rows)


def _row_columns(rows: list[dict]) -> dict[str, np.ndarray]:
    """Tidy rows (dicts) as columns."""
    from hostlink.model.sweep.store import TIDY_COLUMNS
    out = {}
    for k in TIDY_COLUMNS:
        values = [r.get(k, 0) if k == "rep" else r[k] for r in rows]
        if k == "rep":
            out[k] = np.asarray(values, dtype=np.int32)
        elif k == "value":
            out[k] = np.asarray(values, dtype=np.float64)
        else:
            out[k] = np.asarray(values, dtype=object)
    return out


def evaluate_task(task: Task):
    """Evaluate one task (the function workers run): tidy rows as an Arrow table or
    a dict of columns."""
    if task.workload["kind"] == "sizes" and task.fidelity == "analytic":
        return evaluate_sizes_analytic(task)
    return evaluate_stream(task)


def workload_label(workload: dict[str, Any]) -> str:
    return json.dumps(workload, sort_keys=True)
