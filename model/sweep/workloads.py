"""Workloads a sweep point runs: a request-size mix, a generated graph traversal, or a trace.

Kinds and their parameters (``[workload]`` of a sweep file; an axis varies
one with ``workload.<param>``):

- ``sizes``: a stream of host reads with a fixed mix of request sizes, the
  input of the analytic link model. ``size_B`` (one size) or ``sizes_B`` with
  ``fractions`` (a histogram; fractions of the requests, summing to 1);
  ``offset_B``: each request's start offset from a 128 B line boundary.
  Mode is zero-copy (SM reads over the link). At DES fidelity the mix
  becomes a synthetic streaming stream (``requests`` requests spread over
  ``warps`` warps, each issuing its share in order; the sizes are drawn from
  the mix with ``seed``) so the DES and the analytic model can be compared.
- ``graph``: a GAP-style graph (``graph`` = kron, rmat or urand with ``scale``,
  ``degree``, ``seed``; grid with ``dims`` and ``ids``; road with ``dims``,
  ``ids`` and ``mean_degree``; dataset with ``name``: the families of
  :mod:`hostlink.traces.graphs.families`; or ``graph`` = "file" with ``path``:
  any graph file hostlink reads, e.g. an EMOGI binary CSR prefix, .mtx, .el,
  .wel, SNAP), a traversal ``kernel`` (bfs, sssp, cc, pagerank) as a ``variant`` (naive,
  merged, merged_aligned, chunked, balanced) with ``id_bytes`` 4 or 8, from
  ``source`` ("auto" = the vertex of largest degree, lowest id on ties), at
  ``load_ahead`` 1 or 4: the program's whole run as ``hostlink predict --graph``
  and the validation twins time it (:mod:`hostlink.traces.traversal`: its
  requests, loads in flight and host loop; ``include_device``: the kernel's
  device arrays in full, else one device request per dependent step); memory
  ``mode`` zerocopy, uvm, uvm_readmostly or device.
- ``trace``: a trace folder (``path``: Accel-Sim or the binary store) with
  a memory ``mode``; ``regions`` (a regions TOML) or ``memcpy_location``
  (default "host": the buffers an Accel-Sim trace copies in with MemcpyHtoD
  are the ones placed in host memory) say which addresses are host memory;
  ``include_device`` also times the device-memory requests.
- ``gather``: a GNN feature gather (:mod:`hostlink.traces.gather`): ``rows``
  rows of ``row_B`` bytes (a multiple of 4 and of ``lane_B``) from a table of
  ``table_B`` bytes, ``variant`` naive or aligned, ``lane_B`` 4, 8 or 16, ids
  ``uniform`` or ``sampled`` (neighbour sampling with ``fanouts`` and ``batch``
  on a kron graph of ``graph_scale``, degree 16), ``seed``; memory ``mode`` any
  of predict's, ``uvm_warm`` (a resident managed table) and ``cpu_gather``
  (``threads`` host threads gather, one copy moves the rows); ``sample_rounds``:
  the rows per warp of the sample whose steady state stands for the run.

Paths (``path``) are relative to the sweep file's folder.

Every workload is normalised (defaults filled in, types checked) before its
points run, so equal workloads written differently get the same run id.
"""
from __future__ import annotations

import functools
import math
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BeforeValidator, Field, create_model

from hostlink.model.errors import ConfigError
from hostlink.model.tomlcheck import TomlModel, check, fault

KINDS = ("sizes", "graph", "trace", "gather")
MODES = ("zerocopy", "uvm_accessedby", "uvm", "uvm_readmostly", "device")  # hostlink.model.predict.MODES
GATHER_MODES = MODES + ("uvm_warm", "cpu_gather")       # and hostlink.model.predict.GATHER_MODES
KERNELS = ("bfs", "sssp", "cc", "pagerank")
VARIANTS = ("naive", "merged", "merged_aligned", "chunked", "balanced")
GRAPHS = ("kron", "rmat", "urand", "grid", "road", "dataset", "file")  # families.KINDS + file
REQUEST_SIZES_B = (32, 64, 96, 128)
DEFAULT_GRAPH_SEED = 27491095  # GAP's default generator seed (sbeamer/gapbs src/generator.h)


def _integral(v: Any) -> Any:
    """A float that is a whole number as an int (a TOML ``12.0``); anything else as is."""
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return v


def _whole(lo: int | None = None, hi: int | None = None, choices: tuple | None = None) -> Any:
    """A whole number within [lo, hi] or among ``choices``."""
    kind = Literal[choices] if choices else int  # type: ignore[valid-type]
    return Annotated[kind, BeforeValidator(_integral), Field(ge=lo, le=hi)]


def _text(choices: tuple | None = None) -> Any:
    """A non-empty string, one of ``choices`` where given."""
    return Literal[choices] if choices else Annotated[str, Field(min_length=1)]  # type: ignore[valid-type]


def _distinct(v: list) -> list:
    if len(set(v)) != len(v):
        raise fault(" lists a size twice: {v}", v=v)
    return v


def _sum_to_one(v: list) -> list:
    if not math.isclose(sum(v), 1.0, rel_tol=1e-6):
        raise fault(" must sum to 1, not {total}", total=f"{sum(v):g}")
    return [float(f) for f in v]


def _fanout_text(v: str) -> str:
    if not all(p.strip().isdigit() and int(p) > 0 for p in v.split(",")):
        raise fault(" must be positive integers separated by commas, like \"10,25\", "
                    "not {v!r}", v=v)
    return ",".join(str(int(p)) for p in v.split(","))


_SIZE = _whole(choices=REQUEST_SIZES_B)
_SIZES = Annotated[list[_SIZE], Field(min_length=1), AfterValidator(_distinct)]
_FRACTIONS = Annotated[list[Annotated[float, Field(ge=0)]], Field(min_length=1),
                       AfterValidator(_sum_to_one)]
_SOURCE = Literal["auto"] | _whole(lo=0)
_FANOUTS = Annotated[str, AfterValidator(_fanout_text)]


# kind -> param -> (default, type, doc). A default of None means "not set".
SCHEMA: dict[str, dict[str, tuple[Any, Any, str]]] = {
    "sizes": {
        "size_B": (None, _SIZE, "one request size for every request (32, 64, 96 or 128)"),
        "sizes_B": (None, _SIZES, "request sizes of a mix"),
        "fractions": (None, _FRACTIONS, "fraction of the requests of each size in sizes_B"),
        "offset_B": (0, _whole(lo=0, hi=96), "start offset of each request from a 128 B boundary"),
        "mode": ("zerocopy", _text(("zerocopy",)), "memory mode (the analytic link model is zero-copy)"),
        "requests": (200_000, _whole(lo=1, hi=100_000_000), "requests of the synthetic stream (DES only)"),
        "warps": (8192, _whole(lo=1, hi=1 << 20), "warps the synthetic stream is dealt to (DES only)"),
        "seed": (1, _whole(lo=0), "seed of the synthetic stream's size draws (DES only)"),
    },
    "graph": {
        "graph": ("kron", _text(GRAPHS), "graph family (kron, rmat, urand, grid, road, dataset) "
                  "or file"),
        "scale": (12, _whole(lo=1, hi=31), "log2 of the vertex count of a generated graph"),
        "degree": (16, _whole(lo=1, hi=4096), "sampled edges per vertex of a generated graph"),
        "seed": (DEFAULT_GRAPH_SEED, _whole(lo=0), "generator seed"),
        "dims": (None, _text(), "grid: \"WxH\" or \"XxYxZ\"; road: \"WxH\""),
        "ids": (None, _text(("shuffled", "local")), "grid, road: vertex ids shuffled (default) "
                "or in locality order"),
        "mean_degree": (None, Annotated[float, Field(ge=1, le=4)], "road: average degree "
                        "(default 2.5)"),
        "name": (None, _text(), "dataset: a graph of traces/graphs/data/ (luxembourg_osm, ...)"),
        "path": (None, _text(), "graph file (or EMOGI binary CSR prefix) when graph = \"file\""),
        "kernel": ("bfs", _text(KERNELS), "traversal kernel"),
        "variant": ("merged_aligned", _text(VARIANTS), "kernel variant (gpu_kernels/KERNELS.md; balanced: gpu_kernels/traversal/README.md)"),
        "mode": ("zerocopy", _text(MODES), "where the edge arrays live and how they are reached"),
        "source": ("auto", _SOURCE, "source vertex (bfs, sssp); auto = the largest degree"),
        "id_bytes": (4, _whole(choices=(4, 8)), "bytes per neighbour id"),
        "iterations": (10, _whole(lo=1, hi=1000), "pagerank iterations"),
        "load_ahead": (1, _whole(choices=(1, 4)), "neighbour-list trips a warp loads ahead "
                       "(the GPU programs are built with 1 and 4)"),
        "include_device": (False, bool, "the kernel's device-memory requests in full "
                           "(offsets, labels, atomics); else one per dependent step of the walk"),
    },
    "trace": {
        "path": (None, _text(), "trace folder (Accel-Sim traces or the binary store)"),
        "mode": ("zerocopy", _text(MODES), "memory mode of the host regions"),
        "regions": (None, _text(), "regions TOML naming the host arrays (else the trace's own)"),
        "memcpy_location": ("host", _text(("host", "device")),
                            "where the buffers an Accel-Sim trace copies in (MemcpyHtoD) live"),
        "include_device": (True, bool, "also time the device-memory requests"),
    },
    "gather": {
        "row_B": (512, _whole(lo=4, hi=1 << 20), "bytes per feature row (a multiple of 4)"),
        "table_B": (1 << 30, _whole(lo=4096), "bytes of the feature table"),
        "rows": (65536, _whole(lo=1, hi=1 << 26), "rows gathered"),
        "variant": ("aligned", _text(("naive", "aligned")), "naive, or aligned to the 128 B "
                    "line below the row"),
        "lane_B": (4, _whole(choices=(4, 8, 16)), "bytes each lane moves per load"),
        "ids": ("uniform", _text(("uniform", "sampled")), "row ids: uniform or sampled"),
        "graph_scale": (16, _whole(lo=1, hi=26), "sampled ids: log2 of the kron graph's vertices"),
        "fanouts": ("10,25", _FANOUTS, "sampled ids: neighbours drawn per layer"),
        "batch": (1024, _whole(lo=1), "sampled ids: seed vertices per minibatch"),
        "seed": (1, _whole(lo=0), "seed of the row ids"),
        "threads": (16, _whole(lo=1, hi=1024), "host threads of cpu_gather"),
        "sample_rounds": (4, _whole(lo=1, hi=64), "rows per warp of the sample the model times"),
        "mode": ("zerocopy", _text(GATHER_MODES), "where the table lives and how rows move"),
    },
}


@functools.cache
def _kind_model(kind: str) -> type[TomlModel]:
    """The pydantic model of one kind's ``[workload]`` table, built from :data:`SCHEMA`."""
    fields = {key: (kind_type | None, default)
              for key, (default, kind_type, _) in SCHEMA[kind].items()}
    return create_model(f"{kind.title()}Workload", __base__=TomlModel,
                        kind=(Literal[kind], ...), **fields)  # type: ignore[valid-type]


def workload_defaults(kind: Any) -> dict[str, Any]:
    """The parameters of a workload kind with their defaults (None = not set)."""
    if kind not in SCHEMA:
        return {}
    return {k: d for k, (d, _, _) in SCHEMA[kind].items()}


def check_workload_keys(workload: dict, axis_keys: set[str], where: str) -> None:
    """Unknown workload kinds and parameters are errors naming the file and key."""
    kind = workload.get("kind")
    if kind not in KINDS:
        raise ConfigError(f"{where}: 'workload.kind' = {kind!r} is not one of {', '.join(KINDS)}")
    if "kind" in axis_keys:
        raise ConfigError(f"{where}: 'workload.kind' cannot be an axis (run one sweep per kind)")
    known = SCHEMA[kind]
    for key in [*workload, *sorted(axis_keys)]:
        if key != "kind" and key not in known:
            raise ConfigError(f"{where}: unknown key 'workload.{key}' for kind '{kind}' "
                              f"(known: {', '.join(known)})")


def normalise_workload(workload: dict[str, Any], where: str,
                       fidelity: str = "analytic") -> dict[str, Any]:
    """A checked copy of ``workload`` with defaults filled in and unused keys dropped
    (including those the fidelity does not use).

    The result is canonical: two spellings of one workload normalise equal.
    """
    kind = workload.get("kind")
    if kind not in SCHEMA:
        raise ConfigError(f"{where}: 'workload.kind' = {kind!r} is not one of {', '.join(KINDS)}")
    doc = check(_kind_model(kind), dict(workload), where, "workload")
    out: dict[str, Any] = {"kind": kind, **{key: getattr(doc, key) for key in SCHEMA[kind]}}
    if kind == "sizes":
        _normalise_sizes(out, where)
        if fidelity == "analytic":
            for unused in ("requests", "warps", "seed"):
                out[unused] = None
    elif kind == "graph":
        _normalise_graph(out, where)
        if out["kernel"] != "pagerank":
            out["iterations"] = None
        if out["kernel"] not in ("bfs", "sssp"):
            out["source"] = None
    elif kind == "trace":
        if not out["path"]:
            raise ConfigError(f"{where}: 'workload.path' must name a trace directory")
    elif kind == "gather":
        _normalise_gather(out, where)
    return {k: v for k, v in out.items() if v is not None}


_FAMILY_KEYS = ("scale", "degree", "seed", "dims", "ids", "mean_degree", "name")


def _normalise_graph(out: dict[str, Any], where: str) -> None:
    """Keep the keys the graph's family uses, checked and with their defaults
    (:func:`hostlink.traces.graphs.families.graph_params`)."""
    if out["graph"] == "file":
        if not out["path"]:
            raise ConfigError(f"{where}: 'workload.path' must name the graph when graph = \"file\"")
        for unused in _FAMILY_KEYS:
            out[unused] = None
        return
    from hostlink.traces.graphs.families import PARAMS, GraphParamError, graph_params
    used = PARAMS[out["graph"]] + ("seed",)
    try:
        params = graph_params(out["graph"], **{k: out[k] for k in used})
    except GraphParamError as exc:
        raise ConfigError(f"{where}: 'workload.{exc.key}': {exc}") from None
    for key in _FAMILY_KEYS:
        out[key] = params.get(key)
    out["path"] = None


def _normalise_sizes(out: dict[str, Any], where: str) -> None:
    size, sizes, fractions = out.pop("size_B"), out.pop("sizes_B"), out.pop("fractions")
    if size is not None and (sizes is not None or fractions is not None):
        raise ConfigError(f"{where}: give 'workload.size_B' or 'workload.sizes_B' with "
                          "'workload.fractions', not both")
    if size is not None:
        sizes, fractions = [size], [1.0]
    elif sizes is None:
        raise ConfigError(f"{where}: a sizes workload needs 'workload.size_B' or 'workload.sizes_B'")
    elif fractions is None:
        fractions = [1.0 / len(sizes)] * len(sizes)
    if len(fractions) != len(sizes):
        raise ConfigError(f"{where}: 'workload.fractions' has {len(fractions)} entries for "
                          f"{len(sizes)} sizes in 'workload.sizes_B'")
    order = sorted(range(len(sizes)), key=lambda i: sizes[i])
    pairs = [(sizes[i], fractions[i]) for i in order if fractions[i] > 0]
    out["sizes_B"] = [s for s, _ in pairs]
    out["fractions"] = [float(f"{f:.12g}") for _, f in pairs]
    if out["offset_B"] % 32:
        raise ConfigError(f"{where}: 'workload.offset_B' = {out['offset_B']} must be a multiple of 32")
    if out["offset_B"] + max(out["sizes_B"]) > 128:
        raise ConfigError(f"{where}: 'workload.offset_B' = {out['offset_B']} puts a "
                          f"{max(out['sizes_B'])} B request across a 128 B line (SM requests stay "
                          "within one line)")


def _normalise_gather(out: dict[str, Any], where: str) -> None:
    if out["row_B"] % 4 or out["row_B"] % out["lane_B"]:
        raise ConfigError(f"{where}: 'workload.row_B' = {out['row_B']} must be a multiple of 4 "
                          f"and of 'workload.lane_B' = {out['lane_B']}")
    if out["table_B"] < out["row_B"]:
        raise ConfigError(f"{where}: 'workload.table_B' = {out['table_B']} holds no row")
    if out["ids"] == "sampled":
        if out["table_B"] // out["row_B"] < 1 << out["graph_scale"]:
            raise ConfigError(f"{where}: 'workload.table_B' = {out['table_B']} holds fewer rows "
                              f"than the graph's 2**{out['graph_scale']} vertices")
    else:
        for unused in ("graph_scale", "fanouts", "batch"):
            out[unused] = None
    if out["mode"] != "cpu_gather":
        out["threads"] = None
