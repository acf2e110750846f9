"""Experiment manifests: one TOML file says what a validation run measures.

The runner (:mod:`hostlink.validation.runner`) reads a manifest to build and
run the CUDA programs of ``gpu_kernels/``; the predictor reads the same file
to predict every case, so each measured case has a predicted twin with the
same case name.

Layout (every key is checked by the pydantic models below; an unknown key
or a bad value raises :class:`~hostlink.model.errors.ConfigError` naming the
file and the key, :mod:`hostlink.model.tomlcheck`)::

    [experiment]
    name = "h100-first"        # letters, digits, '-', '_', '.'
    seed = 27491095            # draws the traversal sources
    description = "..."        # optional
    micro_rounds = 1           # optional: rounds over every [[micro]] group (below)

    [placement]                # optional: GPUs and host NUMA nodes (validation/placement.py)
    gpus = [0, 1]
    host_nodes = ["local", 0, 1]
    together = true

    [graphs.kron20]            # one table per graph, keyed by its name
    kind = "kron"              # kron | rmat | urand | grid | road | dataset (built) | file (read)
    scale = 20                 # kron/rmat/urand: 2**scale vertices
    degree = 16                # kron/rmat/urand: sampled edges per vertex (urand 128: dense)
    seed = 27491095            # optional, generator seed (GAP's by default)
    # dims = "2000x2000"       # grid: "WxH" or "XxYxZ" (or [W, H]); road: "WxH"
    # ids = "shuffled"         # grid/road: "shuffled" (default) or "local" (locality order)
    # mean_degree = 2.5        # road: average degree (default 2.5)
    # name = "luxembourg_osm"  # kind = "dataset": a graph of traces/graphs/data/
    # path = "graphs/web"      # kind = "file": EMOGI prefix, relative to the manifest

    [[traversal]]              # a group of traversal cases
    kernels = ["bfs"]          # bfs, sssp, cc, pagerank
    graphs = ["kron20"]
    variants = ["merged_aligned"]      # default: all five
    memory_modes = ["zerocopy"]        # default: all six
    id_bytes = [8]                     # default: [8]
    sources = 4                # BFS/SSSP sources per graph (default 4)
    reps = 3                   # timed runs per source (default 3)
    iterations = 10            # PageRank iterations (default 10)
    warmup = true              # one untimed run per configuration (default true)
    load_ahead = 4             # trips of loads a warp issues before using them: 1 or 4 (default 4)

    [[self_trace]]             # a self-traced run (one configuration)
    kernel = "bfs"
    graph = "kron10"
    variant = "merged_aligned"
    memory_mode = "zerocopy"
    id_bytes = 8

    [[micro]]                  # a group of microbenchmark points
    benchmark = "zc_read"      # memcpy, zc_read, zc_warps, ptr_chase, uvm_touch, launch,
                               # host_loop, host_read (host threads reading random rows),
                               # gather (a GNN feature gather: ids uniform or
                               # sampled from a kron graph of graph_scale, table_B, row_B,
                               # variant, lane_B, memory_mode; see
                               # validation/experiments/gather/manifest.toml)
    pattern = ["coalesced"]    # each parameter: one value or a list
    offset_B = [0, 32, 64, 96] # sizes: integers (bytes) or strings like "64 MiB"
    reps = 5                   # settings (see MICRO_BENCHMARKS) take one value

Graph kinds other than ``file`` are built by
:func:`hostlink.traces.graphs.families.build_graph` into the graph folder
(rmat: R-MAT without GAP's id shuffle; road: a connected sparse grid;
dataset: a small real graph carried in the repository).

Rounds: with ``micro_rounds = N`` the runner runs every ``[[micro]]`` group N
times, round by round (every group once, then every group again), each time
with the group's ``reps``; repetition ``r`` of round ``k`` is recorded as rep
``k * reps + r``. A drop of the host's bandwidth that lasts a moment then
touches one round of many cases rather than every repetition of one (the lent
H100s showed such drops over back-to-back repetitions: the ``micro_session``
experiment, validation/experiments/micro_session/).

Case names: ``<kernel>/<graph>/<variant>/<memory_mode>/<id_bytes>B`` for
traversal runs, ``micro/<benchmark>/<key>=<value>,...`` for microbenchmark
points, with the naming parameters of :data:`MICRO_BENCHMARKS` in their
listed order (sizes in bytes) and only those that apply to the point (for
gather: variant and lane_B except for cpu_gather, and only the points whose row_B
is a multiple of lane_B; for zc_read and zc_warps: offset_B for the coalesced pattern, chunk_B for
strided, region_B for random; for uvm_touch: stride_B for the sparse
pattern, host_state where it is ``returned``, launches where the timed read
is split over more than one launch; for ptr_chase: lanes where more than one
thread of a warp chases, warps where more than one warp of the CTA does; for
launch: writers and write where the work is ``flag``). Self-traced runs are named
``trace/<kernel>/<graph>/<variant>/<memory_mode>/<id_bytes>B``.

Sources: :func:`choose_sources` draws them from the vertices with degree > 0
with NumPy's default generator seeded by (experiment seed, CRC-32 of the graph
name), so the runner and the predictor pick the same ones.
"""
from __future__ import annotations

import functools
import itertools
import re
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import (AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field,
                      create_model)

from hostlink.model.errors import ConfigError
from hostlink.model.textfile import read_toml
from hostlink.model.tomlcheck import Bytes, TomlModel, check, fault
from hostlink.validation.placement import PlacementTable
from hostlink.model.host_loop import LOOPS as HOST_LOOPS

KERNELS = ("bfs", "sssp", "cc", "pagerank")
VARIANTS = ("naive", "merged", "merged_aligned", "chunked", "balanced")
MEMORY_MODES = ("device", "zerocopy", "registered", "uvm_accessedby", "uvm", "uvm_readmostly")
ID_BYTES = (4, 8)
GRAPH_KINDS = ("kron", "rmat", "urand", "grid", "road", "dataset", "file")
GAP_SEED = 27491095  # sbeamer/gapbs src/generator.h
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


@dataclass(frozen=True)
class Param:
    """One microbenchmark parameter: a checked value type and its default.

    ``kind`` is 'int', 'size' (bytes; strings with units allowed) or 'choice';
    naming parameters take lists and appear in case names, settings take one
    value and do not.
    """
    kind: str
    default: Any
    choices: tuple = ()
    naming: bool = True
    minimum: int = 0


#: where a gather's table lives (gpu_kernels/micro/gather.cu): the traversal modes, a
#: managed table already resident (uvm_warm) and the CPU-gather-plus-copy path
GATHER_MEMORY_MODES = ("zerocopy", "registered", "uvm_accessedby", "uvm", "uvm_warm", "device",
                       "cpu_gather")
#: fan-outs of a gather's neighbour sampling: DGL's GraphSAGE examples (10,25 and 10,10,10)
GATHER_FANOUTS = ("10,25", "10,10,10", "5,5")

_ZC = {
    "pattern": Param("choice", "coalesced", ("coalesced", "strided", "random")),
    "offset_B": Param("size", 0),
    "chunk_B": Param("size", 4096, minimum=16),
    "region_B": Param("size", 1 << 30, minimum=512),
    "bytes_per_lane": Param("choice", 4, (4, 8, 16)),
    "memory_mode": Param("choice", "zerocopy", ("zerocopy", "registered", "uvm_accessedby", "device")),
    "warps": Param("int", 0),
    "unroll": Param("choice", 4, (1, 2, 4, 8)),
    "cache": Param("choice", "default", ("default", "cg", "cv")),
    "total_B": Param("size", 1 << 30, naming=False, minimum=512),
    "max_per_warp_B": Param("size", 1 << 30, naming=False, minimum=512),
    "reps": Param("int", 5, naming=False, minimum=1),
    "seed": Param("int", 1, naming=False),
}

#: Benchmark name -> (program in gpu_kernels/bin, parameters in naming order).
MICRO_BENCHMARKS: dict[str, tuple[str, dict[str, Param]]] = {
    "memcpy": ("memcpy_bw", {
        "direction": Param("choice", "h2d", ("h2d", "d2h")),
        "size_B": Param("size", 1 << 30, minimum=1),
        "reps": Param("int", 5, naming=False, minimum=1),
        "min_bytes_B": Param("size", 256 << 20, naming=False, minimum=1),
    }),
    "zc_read": ("zc_read", dict(_ZC)),
    "zc_warps": ("zc_warps", {**_ZC, "unroll": Param("choice", 1, (1, 2, 4, 8)),
                              "total_B": Param("size", 512 << 20, naming=False, minimum=512),
                              "max_per_warp_B": Param("size", 1 << 20, naming=False, minimum=512)}),
    "ptr_chase": ("ptr_chase", {
        "memory_mode": Param("choice", "zerocopy", ("zerocopy", "registered", "uvm_accessedby", "device")),
        "stride_B": Param("size", 4096, minimum=8),
        "footprint_B": Param("size", 64 << 20, minimum=16),
        "order": Param("choice", "random", ("seq", "random")),
        "cache": Param("choice", "default", ("default", "cg", "cv", "atomic")),
        "lanes": Param("int", 1, minimum=1),
        "warps": Param("int", 1, minimum=1),
        "steps": Param("int", 2000, naming=False, minimum=1),
        "reps": Param("int", 3, naming=False, minimum=1),
        "seed": Param("int", 1, naming=False),
    }),
    "launch": ("launch_grid", {
        "ctas": Param("int", 1, minimum=1),
        "threads_per_cta": Param("int", 256, minimum=32),
        "work": Param("choice", "empty", ("empty", "label", "flag")),
        "writers": Param("int", 0),
        "write": Param("choice", "red", ("red", "store", "both", "red_apart", "store_apart")),
        "reps": Param("int", 10, naming=False, minimum=1),
    }),
    "host_loop": ("host_loop", {
        "loop": Param("choice", "bfs", tuple(HOST_LOOPS)),
        "vertices": Param("int", 16384, minimum=1),
        "walk_us": Param("int", 50, minimum=0),
        "iterations": Param("int", 16, minimum=1),
        "reps": Param("int", 10, naming=False, minimum=1),
    }),
    "gather": ("gather", {
        "ids": Param("choice", "uniform", ("uniform", "sampled")),
        "table_B": Param("size", 1 << 30, minimum=4096),
        "row_B": Param("size", 512, minimum=4),
        "variant": Param("choice", "aligned", ("naive", "aligned")),
        "lane_B": Param("choice", 4, (4, 8, 16)),
        "memory_mode": Param("choice", "zerocopy", GATHER_MEMORY_MODES),
        "rows": Param("int", 1 << 20, naming=False, minimum=1),
        "graph_scale": Param("int", 20, naming=False, minimum=1),
        "fanouts": Param("choice", "10,25", GATHER_FANOUTS, naming=False),
        "batch": Param("int", 1024, naming=False, minimum=1),
        "threads": Param("int", 16, naming=False, minimum=1),
        "reps": Param("int", 5, naming=False, minimum=1),
        "seed": Param("int", 1, naming=False),
    }),
    "host_read": ("host_read", {
        "region_B": Param("size", 1 << 30, minimum=4096),
        "row_B": Param("size", 64, minimum=4),
        "threads": Param("int", 16, minimum=1),
        "op": Param("choice", "sum", ("sum", "copy")),
        "rows": Param("int", 262144, naming=False, minimum=1),
        "reps": Param("int", 5, naming=False, minimum=1),
        "seed": Param("int", 1, naming=False),
    }),
    "uvm_touch": ("uvm_touch", {
        "size_B": Param("size", 256 << 20, minimum=4096),
        "pattern": Param("choice", "seq", ("seq", "random", "sparse")),
        "stride_B": Param("size", 2 << 20, minimum=128),
        "advice": Param("choice", "none", ("none", "readmostly", "prefetch", "accessedby")),
        "host_state": Param("choice", "fresh", ("fresh", "returned")),
        "launches": Param("int", 1, minimum=1),
        "warps": Param("int", 0, naming=False),
        "reps": Param("int", 3, naming=False, minimum=1),
    }),
}

# Which zc_* parameter belongs to which pattern (the others are left out).
_ZC_PATTERN_KEY = {"coalesced": "offset_B", "strided": "chunk_B", "random": "region_B"}


@dataclass(frozen=True)
class GraphSpec:
    name: str
    kind: str
    scale: int = 0
    degree: int = 0
    seed: int = GAP_SEED
    path: Path | None = None  # kind = "file": the EMOGI prefix
    #: the other parameters of a built graph (grid/road: dims, ids, mean_degree; dataset: name)
    extra: tuple[tuple[str, Any], ...] = ()

    def params(self) -> dict:
        """The keyword arguments :func:`hostlink.traces.graphs.families.build_graph`
        takes for this graph (empty for ``file``)."""
        if self.kind == "file":
            return {}
        out = {"seed": self.seed, **dict(self.extra)}
        if self.scale:
            out.update(scale=self.scale, degree=self.degree)
        return out

    def prefix(self, graph_dir: Path) -> Path:
        """Where the graph's .bel files are (generated graphs go to graph_dir)."""
        if self.kind == "file":
            assert self.path is not None
            return self.path
        return Path(graph_dir) / self.name


@dataclass(frozen=True)
class TraversalGroup:
    kernels: tuple[str, ...]
    graphs: tuple[str, ...]
    variants: tuple[str, ...]
    memory_modes: tuple[str, ...]
    id_bytes: tuple[int, ...]
    sources: int = 4
    reps: int = 3
    iterations: int = 10
    warmup: bool = True
    load_ahead: int = 4


LOAD_AHEAD = (1, 4)


@dataclass(frozen=True)
class SelfTraceSpec:
    kernel: str
    graph: str
    variant: str
    memory_mode: str
    id_bytes: int

    @property
    def case(self) -> str:
        return f"trace/{self.kernel}/{self.graph}/{self.variant}/{self.memory_mode}/{self.id_bytes}B"


@dataclass(frozen=True)
class MicroGroup:
    benchmark: str
    lists: dict  # naming parameter -> tuple of values
    settings: dict  # setting -> value

    @property
    def program(self) -> str:
        return MICRO_BENCHMARKS[self.benchmark][0]

    def points(self) -> list[dict]:
        """The parameter dicts of every point, as the program reports them."""
        return expand_micro(self.benchmark, self.lists)

    def cases(self) -> list[str]:
        return [micro_case_name(self.benchmark, p) for p in self.points()]


@dataclass(frozen=True)
class TraversalCase:
    case: str
    kernel: str
    graph: str
    variant: str
    memory_mode: str
    id_bytes: int
    group: int  # index of its [[traversal]] group


@dataclass
class Manifest:
    path: Path
    name: str
    seed: int
    description: str
    graphs: dict[str, GraphSpec]
    traversal: list[TraversalGroup] = field(default_factory=list)
    self_trace: list[SelfTraceSpec] = field(default_factory=list)
    micro: list[MicroGroup] = field(default_factory=list)
    #: rounds over every [[micro]] group, each with the group's reps (experiment.micro_rounds)
    micro_rounds: int = 1
    #: GPUs and host NUMA nodes to run on ([placement], hostlink.validation.placement)
    placement: Any = None

    def traversal_cases(self) -> list[TraversalCase]:
        out, seen = [], set()
        for gi, g in enumerate(self.traversal):
            for k, gr, v, m, b in itertools.product(g.kernels, g.graphs, g.variants, g.memory_modes, g.id_bytes):
                name = traversal_case_name(k, gr, v, m, b)
                if name not in seen:
                    seen.add(name)
                    out.append(TraversalCase(name, k, gr, v, m, b, gi))
        return out

    def micro_cases(self) -> list[str]:
        return [c for g in self.micro for c in g.cases()]

    def graphs_used(self) -> list[str]:
        used = []
        for g in self.traversal:
            used += [x for x in g.graphs if x not in used]
        used += [t.graph for t in self.self_trace if t.graph not in used]
        return used


def traversal_case_name(kernel: str, graph: str, variant: str, memory_mode: str, id_bytes: int) -> str:
    return f"{kernel}/{graph}/{variant}/{memory_mode}/{int(id_bytes)}B"


def _fmt(value: Any) -> str:
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def micro_case_name(benchmark: str, params: dict) -> str:
    """``micro/<benchmark>/k=v,...`` from a point's parameters.

    Only naming parameters count, in the order of :data:`MICRO_BENCHMARKS`;
    keys absent from ``params`` are left out (a pattern's own knob only).
    """
    if benchmark not in MICRO_BENCHMARKS:
        raise ConfigError(f"unknown microbenchmark '{benchmark}'")
    spec = MICRO_BENCHMARKS[benchmark][1]
    parts = [f"{k}={_fmt(params[k])}" for k, p in spec.items() if p.naming and k in params]
    return f"micro/{benchmark}/" + ",".join(parts)


def expand_micro(benchmark: str, lists: dict) -> list[dict]:
    """The points of a micro group: the product of its naming lists.

    For zc_read and zc_warps only the knob of each point's pattern is kept
    (offset_B, chunk_B or region_B), as the programs do; uvm_touch keeps
    stride_B for its sparse pattern only, host_state only where it is not
    ``fresh`` and launches only where it is above 1, ptr_chase lanes and warps
    only where above 1, launch writers and write only for the ``flag`` work (the
    programs print them only then; names stay those of runs made before the
    settings existed).
    """
    spec = MICRO_BENCHMARKS[benchmark][1]
    keys = [k for k, p in spec.items() if p.naming]
    values = [lists.get(k, (spec[k].default,)) for k in keys]
    points, seen = [], set()
    for combo in itertools.product(*values):
        point = dict(zip(keys, combo))
        if benchmark in ("zc_read", "zc_warps"):
            for pat, knob in _ZC_PATTERN_KEY.items():
                if point["pattern"] != pat:
                    point.pop(knob, None)
        if benchmark == "uvm_touch":
            if point["pattern"] != "sparse":
                point.pop("stride_B", None)
            if point.get("host_state") == "fresh":
                point.pop("host_state", None)
            if point.get("launches") == 1:
                point.pop("launches", None)
        if benchmark == "gather":
            if point["row_B"] % 4 or point["row_B"] % point["lane_B"]:
                continue            # a lane's load must be aligned: the program skips it
            if point["memory_mode"] == "cpu_gather":
                point.pop("variant", None)
                point.pop("lane_B", None)
        if benchmark == "launch" and point["work"] != "flag":
            point.pop("writers", None)
            point.pop("write", None)
        if benchmark == "ptr_chase":
            for knob in ("lanes", "warps"):
                if point.get(knob) == 1:
                    point.pop(knob, None)
        name = micro_case_name(benchmark, point)
        if name not in seen:
            seen.add(name)
            points.append(point)
    return points


def choose_sources(offsets: np.ndarray, n: int, seed: int, graph_name: str) -> list[int]:
    """``n`` distinct vertices with degree > 0, drawn reproducibly.

    NumPy's default generator seeded with ``[seed, crc32(graph_name)]`` draws
    without replacement from the vertices of nonzero degree, in draw order.
    """
    offsets = np.asarray(offsets, dtype=np.uint64)
    candidates = np.flatnonzero(np.diff(offsets) > 0)
    if len(candidates) == 0:
        raise ConfigError(f"graph '{graph_name}' has no vertex with an edge to start from")
    rng = np.random.default_rng([int(seed), zlib.crc32(graph_name.encode())])
    picked = rng.choice(candidates, size=min(int(n), len(candidates)), replace=False)
    return [int(v) for v in picked]


def read_offsets(prefix: Path) -> np.ndarray:
    """The u64 offsets of an EMOGI graph (PREFIX.bel.col, 16-byte header)."""
    path = Path(str(prefix) + ".bel.col")
    try:
        raw = np.fromfile(path, dtype=np.uint64)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if len(raw) < 2 or int(raw[0]) != len(raw) - 2:
        raise ConfigError(f"{path}: header count does not match the file size")
    return raw[2:]


# ----------------------------------------------------------------------------
# Loading and checking


def _name(value: str) -> str:
    if not _NAME.match(value):
        raise fault(" = {value} may hold only letters, digits, '-', '_' and '.'", value=repr(value))
    return value


Name = Annotated[str, AfterValidator(_name)]


def _one_or_list(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else (value,)


def _unique(values: tuple) -> tuple:
    return tuple(dict.fromkeys(values))


def OneOrList(kind: Any) -> Any:
    """One value or a non-empty list of them, as a tuple without repeats."""
    return Annotated[tuple[kind, ...], BeforeValidator(_one_or_list), Field(min_length=1),
                     AfterValidator(_unique)]


Count = Annotated[int, Field(ge=1, le=1000)]
Seed = Annotated[int, Field(ge=0)]


class ExperimentTable(TomlModel):
    name: Name
    seed: Seed = GAP_SEED
    description: str = ""
    micro_rounds: Annotated[int, Field(ge=1, le=100)] = 1


class _Kind(BaseModel):
    """The ``kind`` of a graph or the ``benchmark`` of a micro group, read first: it
    says which model checks the rest."""
    model_config = ConfigDict(extra="ignore", strict=True)
    kind: Literal[GRAPH_KINDS] = None  # type: ignore[valid-type]
    benchmark: Literal[tuple(MICRO_BENCHMARKS)] = None  # type: ignore[valid-type]


class GeneratedGraphTable(TomlModel):
    kind: Literal["kron", "rmat", "urand"]
    scale: Annotated[int, Field(ge=1, le=31)]
    degree: Annotated[int, Field(ge=1, le=4096)]
    seed: Seed = GAP_SEED


_DIMS_TEXT = Annotated[str, Field(min_length=3)]          # "WxH" or "XxYxZ"


class GridGraphTable(TomlModel):
    kind: Literal["grid"]
    dims: _DIMS_TEXT | Annotated[list[int], Field(min_length=2, max_length=3)]
    ids: Literal["shuffled", "local"] = "shuffled"
    seed: Seed = GAP_SEED


class RoadGraphTable(GridGraphTable):
    kind: Literal["road"]  # type: ignore[assignment]
    dims: _DIMS_TEXT | Annotated[list[int], Field(min_length=2, max_length=2)]
    mean_degree: Annotated[float, Field(ge=1, le=4)] | None = None   # None: road's default


class DatasetGraphTable(TomlModel):
    kind: Literal["dataset"]
    name: str
    seed: Seed = GAP_SEED


_BUILT_TABLES = {"grid": GridGraphTable, "road": RoadGraphTable, "dataset": DatasetGraphTable}


class FileGraphTable(TomlModel):
    kind: Literal["file"]
    path: str


class TraversalTable(TomlModel):
    kernels: OneOrList(Literal[KERNELS])
    graphs: OneOrList(str)
    variants: OneOrList(Literal[VARIANTS]) = VARIANTS
    memory_modes: OneOrList(Literal[MEMORY_MODES]) = MEMORY_MODES
    id_bytes: OneOrList(Literal[ID_BYTES]) = (8,)
    sources: Count = 4
    reps: Count = 3
    iterations: Count = 10
    warmup: bool = True
    load_ahead: Literal[LOAD_AHEAD] = 4


class SelfTraceTable(TomlModel):
    kernel: Literal[KERNELS]
    graph: str
    variant: Literal[VARIANTS]
    memory_mode: Literal[MEMORY_MODES]
    id_bytes: Literal[ID_BYTES] = 8


class ManifestFile(TomlModel):
    experiment: ExperimentTable
    graphs: dict[Name, dict[str, Any]] = {}
    traversal: list[TraversalTable] = []
    self_trace: list[SelfTraceTable] = []
    micro: list[dict[str, Any]] = []
    placement: PlacementTable | None = None


def _one_value(value: Any) -> Any:
    if isinstance(value, list):
        raise fault(" is a setting and takes one value, not a list")
    return value


def _param_kind(p: Param) -> Any:
    if p.kind == "choice":
        return Literal[p.choices]
    return Annotated[Bytes if p.kind == "size" else int, Field(ge=p.minimum)]


@functools.cache
def micro_model(benchmark: str) -> type[TomlModel]:
    """The model of a ``[[micro]]`` group of ``benchmark``: naming parameters take one
    value or a list, settings one value (see :class:`Param`)."""
    fields = {name: (OneOrList(_param_kind(p)) if p.naming
                     else Annotated[_param_kind(p), BeforeValidator(_one_value)], None)
              for name, p in MICRO_BENCHMARKS[benchmark][1].items()}
    return create_model(f"Micro_{benchmark}", __base__=TomlModel,
                        benchmark=(Literal[benchmark], ...), **fields)


def _micro_group(m: dict, where: str, key: str) -> MicroGroup:
    bench = check(_Kind, m, where, key).benchmark
    if bench is None:
        raise ConfigError(f"{where}: '{key}.benchmark' is required")
    spec = MICRO_BENCHMARKS[bench][1]
    given = check(micro_model(bench), m, where, key)
    lists = {n: getattr(given, n) for n in given.model_fields_set if n != "benchmark"
             and spec[n].naming}
    lists = {n: lists[n] for n in spec if n in lists}  # in the benchmark's order
    settings = {n: p.default if getattr(given, n) is None else getattr(given, n)
                for n, p in spec.items() if not p.naming}
    if bench == "ptr_chase":
        if any(v > 32 for v in lists.get("lanes", ())):
            raise ConfigError(f"{where}: '{key}.lanes': {max(lists['lanes'])}: the threads of "
                              "one warp chase, at most 32")
        if any(v > 32 for v in lists.get("warps", ())):
            raise ConfigError(f"{where}: '{key}.warps': {max(lists['warps'])}: the warps of "
                              "one CTA chase, at most 32")
        if "atomic" in lists.get("cache", ()) and any(
                mm != "device" for mm in lists.get("memory_mode", (spec["memory_mode"].default,))):
            raise ConfigError(f"{where}: '{key}.cache': 'atomic' chases device memory only: "
                              "set memory_mode = \"device\"")
    if bench == "gather":
        _check_gather(where, key, lists, settings, spec)
    if bench == "host_read":
        bad = [v for v in lists.get("row_B", ()) if v % 4]
        if bad:
            raise ConfigError(f"{where}: '{key}.row_B': {bad[0]} is not a multiple of 4 B "
                              "(rows are read as 4 B words)")
        if any(v > 4096 for v in lists.get("threads", ())):
            raise ConfigError(f"{where}: '{key}.threads': at most 4096")
    return MicroGroup(bench, lists, settings)


def _graph(gname: str, g: dict, path: Path) -> GraphSpec:
    key = f"graphs.{gname}"
    kind = check(_Kind, g, str(path), key).kind
    if kind is None:
        raise ConfigError(f"{path}: '{key}.kind' is required")
    if kind == "file":
        p = Path(check(FileGraphTable, g, str(path), key).path)
        return GraphSpec(gname, kind, path=p if p.is_absolute() else path.parent / p)
    if kind in _BUILT_TABLES:
        return _built_graph(gname, kind, check(_BUILT_TABLES[kind], g, str(path), key), path, key)
    t = check(GeneratedGraphTable, g, str(path), key)
    return GraphSpec(gname, kind, scale=t.scale, degree=t.degree, seed=t.seed)


def _built_graph(gname: str, kind: str, t: TomlModel, path: Path, key: str) -> GraphSpec:
    """A grid, road or dataset graph, its parameters checked by
    :func:`hostlink.traces.graphs.families.graph_params` (a bad one names the key)."""
    from hostlink.traces.graphs.families import GraphParamError, graph_params
    given = {k: getattr(t, k) for k in type(t).model_fields if k != "kind"}
    try:
        params = graph_params(kind, **given)
    except GraphParamError as exc:
        raise ConfigError(f"{path}: '{key}.{exc.key}': {exc}") from None
    seed = params.pop("seed")
    return GraphSpec(gname, kind, seed=seed, extra=tuple(sorted(params.items())))


def _check_gather(where: str, key: str, lists: dict, settings: dict, spec: dict) -> None:
    """A gather group's rows are whole words, some point is left, and a sampled graph's
    vertices fit every table (a vertex's row is ``v * (table rows // vertices)``)."""
    rows = lists.get("row_B", (spec["row_B"].default,))
    if any(r % 4 for r in rows):
        raise ConfigError(f"{where}: '{key}.row_B': {[r for r in rows if r % 4][0]} is not a "
                          "multiple of 4 B")
    if not expand_micro("gather", lists):
        raise ConfigError(f"{where}: '{key}.lane_B': no row size is a multiple of any lane_B: "
                          "no point is left")
    if "sampled" in lists.get("ids", (spec["ids"].default,)):
        vertices = 1 << settings["graph_scale"]
        for t in lists.get("table_B", (spec["table_B"].default,)):
            for r in rows:
                if t // r < vertices:
                    raise ConfigError(f"{where}: '{key}.table_B': {t} B of {r} B rows hold "
                                      f"fewer rows than the sampled graph's {vertices} "
                                      "vertices (graph_scale)")


def load_manifest(path: str | Path) -> Manifest:
    """Read and check a manifest; see the module docstring for the layout."""
    path = Path(path)
    where = str(path)
    doc = check(ManifestFile, read_toml(path, "manifest")[0], where)
    exp = doc.experiment
    graphs = {gname: _graph(gname, g, path) for gname, g in doc.graphs.items()}

    def graph_ref(gn: str, key: str) -> str:
        if gn not in graphs:
            raise ConfigError(f"{where}: '{key}': graph '{gn}' is not defined under [graphs]")
        return gn

    traversal = []
    for i, t in enumerate(doc.traversal):
        for gn in t.graphs:
            graph_ref(gn, f"traversal[{i}].graphs")
        traversal.append(TraversalGroup(
            kernels=t.kernels, graphs=t.graphs, variants=t.variants,
            memory_modes=t.memory_modes, id_bytes=t.id_bytes, sources=t.sources, reps=t.reps,
            iterations=t.iterations, warmup=t.warmup, load_ahead=t.load_ahead))
    traces = [SelfTraceSpec(kernel=t.kernel, graph=graph_ref(t.graph, f"self_trace[{i}].graph"),
                            variant=t.variant, memory_mode=t.memory_mode, id_bytes=t.id_bytes)
              for i, t in enumerate(doc.self_trace)]
    micro = [_micro_group(m, where, f"micro[{i}]") for i, m in enumerate(doc.micro)]

    if not traversal and not micro and not traces:
        raise ConfigError(f"{where}: 'traversal': the manifest has no [[traversal]], "
                          "[[self_trace]] or [[micro]] group")
    # every case is measured by one group only (its rows would collide otherwise)
    owner: dict[str, str] = {}
    for i, g in enumerate(micro):
        for case in g.cases():
            if case in owner:
                raise ConfigError(f"{where}: 'micro[{i}]': case '{case}' is measured by "
                                  f"{owner[case]} already")
            owner[case] = f"micro[{i}]"
    for i, t in enumerate(traversal):
        for k, gr, v, mm, b in itertools.product(t.kernels, t.graphs, t.variants, t.memory_modes, t.id_bytes):
            case = traversal_case_name(k, gr, v, mm, b)
            if case in owner:
                raise ConfigError(f"{where}: 'traversal[{i}]': case '{case}' is measured by "
                                  f"{owner[case]} already")
            owner[case] = f"traversal[{i}]"
    return Manifest(path=path, name=exp.name, seed=exp.seed, description=exp.description,
                    graphs=graphs, traversal=traversal, self_trace=traces, micro=micro,
                    micro_rounds=exp.micro_rounds,
                    placement=doc.placement.placement() if doc.placement else None)
