"""Experiment manifests: one TOML file says what a validation run measures.

The runner (:mod:`hostlink.validation.runner`) reads a manifest to build and
run the CUDA programs of ``gpu_kernels/``; the predictor reads the same file
to predict every case, so each measured case has a predicted twin with the
same case name.

Layout (every key is checked; an unknown key or a bad value raises
:class:`~hostlink.model.errors.ConfigError` naming the file and the key)::

    [experiment]
    name = "h100-first"        # letters, digits, '-', '_', '.'
    seed = 27491095            # draws the traversal sources
    description = "..."        # optional
    micro_rounds = 1           # optional: rounds over every [[micro]] group (below)

    [graphs.kron20]            # one table per graph, keyed by its name
    kind = "kron"              # kron | urand (generated) | file (read)
    scale = 20                 # kron/urand: 2**scale vertices
    degree = 16                # kron/urand: sampled edges per vertex
    seed = 27491095            # optional, generator seed (GAP's by default)
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
                               # host_loop
    pattern = ["coalesced"]    # each parameter: one value or a list
    offset_B = [0, 32, 64, 96] # sizes: integers (bytes) or strings like "64 MiB"
    reps = 5                   # settings (see MICRO_BENCHMARKS) take one value

Rounds: with ``micro_rounds = N`` the runner runs every ``[[micro]]`` group N
times, round by round (every group once, then every group again), each time
with the group's ``reps``; repetition ``r`` of round ``k`` is recorded as rep
``k * reps + r``. A drop of the host's bandwidth that lasts a moment then
touches one round of many cases rather than every repetition of one (the lent
H100s showed drops of up to half the bandwidth over two or three back-to-back
repetitions: validation/experiments/micro_session/runs/h100).

Case names: ``<kernel>/<graph>/<variant>/<memory_mode>/<id_bytes>B`` for
traversal runs, ``micro/<benchmark>/<key>=<value>,...`` for microbenchmark
points, with the naming parameters of :data:`MICRO_BENCHMARKS` in their
listed order (sizes in bytes) and only those that apply to the point (for
zc_read and zc_warps: offset_B for the coalesced pattern, chunk_B for
strided, region_B for random; for uvm_touch: stride_B for the sparse
pattern, host_state where it is ``returned``, launches where the timed read
is split over more than one launch; for ptr_chase: lanes where more than one
thread of a warp chases, warps where more than one warp of the CTA does). Self-traced runs are named
``trace/<kernel>/<graph>/<variant>/<memory_mode>/<id_bytes>B``.

Sources: :func:`choose_sources` draws them from the vertices with degree > 0
with NumPy's default generator seeded by (experiment seed, CRC-32 of the graph
name), so the runner and the predictor pick the same ones.
"""
from __future__ import annotations

import itertools
import re
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hostlink.model.errors import ConfigError
from hostlink.model.textfile import read_toml
from hostlink.model.host_loop import LOOPS as HOST_LOOPS
from hostlink.model.units import UnitError, parse_quantity

KERNELS = ("bfs", "sssp", "cc", "pagerank")
VARIANTS = ("naive", "merged", "merged_aligned", "chunked", "balanced")
MEMORY_MODES = ("device", "zerocopy", "registered", "uvm_accessedby", "uvm", "uvm_readmostly")
ID_BYTES = (4, 8)
GRAPH_KINDS = ("kron", "urand", "file")
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
        "work": Param("choice", "empty", ("empty", "label")),
        "reps": Param("int", 10, naming=False, minimum=1),
    }),
    "host_loop": ("host_loop", {
        "loop": Param("choice", "bfs", tuple(HOST_LOOPS)),
        "vertices": Param("int", 16384, minimum=1),
        "walk_us": Param("int", 50, minimum=0),
        "iterations": Param("int", 16, minimum=1),
        "reps": Param("int", 10, naming=False, minimum=1),
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
    only where above 1 (the programs print them only then; names stay those of
    runs made before the settings existed).
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


class _Checker:
    def __init__(self, path: Path):
        self.path = path

    def err(self, key: str, msg: str) -> ConfigError:
        return ConfigError(f"{self.path}: key '{key}': {msg}")

    def table(self, obj: Any, key: str) -> dict:
        if not isinstance(obj, dict):
            raise self.err(key, "must be a table")
        return obj

    def no_unknown(self, obj: dict, allowed: set[str], key: str) -> None:
        for k in obj:
            if k not in allowed:
                where = f"{key}.{k}" if key else k
                raise self.err(where, f"unknown key (allowed: {', '.join(sorted(allowed))})")

    def integer(self, obj: dict, k: str, key: str, default=None, lo=None, hi=None) -> int:
        if k not in obj:
            if default is None:
                raise self.err(f"{key}.{k}", "is required")
            return default
        v = obj[k]
        if isinstance(v, bool) or not isinstance(v, int):
            raise self.err(f"{key}.{k}", f"must be an integer, not {v!r}")
        if lo is not None and v < lo or hi is not None and v > hi:
            raise self.err(f"{key}.{k}", f"{v} is outside [{lo}, {hi}]")
        return v

    def boolean(self, obj: dict, k: str, key: str, default: bool) -> bool:
        v = obj.get(k, default)
        if not isinstance(v, bool):
            raise self.err(f"{key}.{k}", f"must be true or false, not {v!r}")
        return v

    def string(self, obj: dict, k: str, key: str, default=None, choices=None) -> str:
        if k not in obj:
            if default is None:
                raise self.err(f"{key}.{k}", "is required")
            return default
        v = obj[k]
        if not isinstance(v, str):
            raise self.err(f"{key}.{k}", f"must be a string, not {v!r}")
        if choices is not None and v not in choices:
            raise self.err(f"{key}.{k}", f"'{v}' is not one of: {', '.join(map(str, choices))}")
        return v

    def str_list(self, obj: dict, k: str, key: str, default=None, choices=None) -> tuple:
        if k not in obj:
            if default is None:
                raise self.err(f"{key}.{k}", "is required")
            return tuple(default)
        v = obj[k]
        items = v if isinstance(v, list) else [v]
        if not items:
            raise self.err(f"{key}.{k}", "must not be empty")
        out = []
        for x in items:
            if not isinstance(x, str):
                raise self.err(f"{key}.{k}", f"items must be strings, not {x!r}")
            if choices is not None and x not in choices:
                raise self.err(f"{key}.{k}", f"'{x}' is not one of: {', '.join(map(str, choices))}")
            if x not in out:
                out.append(x)
        return tuple(out)

    def micro_value(self, p: Param, name: str, key: str, v: Any) -> Any:
        where = f"{key}.{name}"
        if p.kind == "size":
            if isinstance(v, str):
                try:
                    q = parse_quantity(v, name)
                except UnitError as exc:
                    raise self.err(where, str(exc)) from None
                if q != int(q):
                    raise self.err(where, f"'{v}' is not a whole number of bytes")
                v = int(q)
            if isinstance(v, bool) or not isinstance(v, int):
                raise self.err(where, f"must be a size in bytes (integer or string with unit), not {v!r}")
            if v < p.minimum:
                raise self.err(where, f"{v} is below the minimum {p.minimum}")
            return v
        if p.kind == "int":
            if isinstance(v, bool) or not isinstance(v, int):
                raise self.err(where, f"must be an integer, not {v!r}")
            if v < p.minimum:
                raise self.err(where, f"{v} is below the minimum {p.minimum}")
            return v
        if v not in p.choices or isinstance(v, bool):
            raise self.err(where, f"{v!r} is not one of: {', '.join(map(str, p.choices))}")
        return v


def load_manifest(path: str | Path) -> Manifest:
    """Read and check a manifest; see the module docstring for the layout."""
    path = Path(path)
    doc = read_toml(path, "manifest")[0]
    c = _Checker(path)
    c.no_unknown(doc, {"experiment", "graphs", "traversal", "self_trace", "micro"}, "")

    exp = c.table(doc.get("experiment"), "experiment") if "experiment" in doc else None
    if exp is None:
        raise c.err("experiment", "is required")
    c.no_unknown(exp, {"name", "seed", "description", "micro_rounds"}, "experiment")
    name = c.string(exp, "name", "experiment")
    if not _NAME.match(name):
        raise c.err("experiment.name", f"'{name}' may hold only letters, digits, '-', '_' and '.'")
    seed = c.integer(exp, "seed", "experiment", default=GAP_SEED, lo=0)
    description = c.string(exp, "description", "experiment", default="")
    micro_rounds = c.integer(exp, "micro_rounds", "experiment", default=1, lo=1, hi=100)

    graphs: dict[str, GraphSpec] = {}
    for gname, g in c.table(doc.get("graphs", {}), "graphs").items():
        key = f"graphs.{gname}"
        if not _NAME.match(gname):
            raise c.err(key, "graph names may hold only letters, digits, '-', '_' and '.'")
        g = c.table(g, key)
        kind = c.string(g, "kind", key, choices=GRAPH_KINDS)
        if kind == "file":
            c.no_unknown(g, {"kind", "path"}, key)
            p = Path(c.string(g, "path", key))
            graphs[gname] = GraphSpec(gname, kind, path=p if p.is_absolute() else path.parent / p)
        else:
            c.no_unknown(g, {"kind", "scale", "degree", "seed"}, key)
            graphs[gname] = GraphSpec(gname, kind, scale=c.integer(g, "scale", key, lo=1, hi=31),
                                      degree=c.integer(g, "degree", key, lo=1, hi=4096),
                                      seed=c.integer(g, "seed", key, default=GAP_SEED, lo=0))

    def graph_ref(gn: str, key: str) -> str:
        if gn not in graphs:
            raise c.err(key, f"graph '{gn}' is not defined under [graphs]")
        return gn

    traversal = []
    for i, t in enumerate(doc.get("traversal", []) if isinstance(doc.get("traversal", []), list) else [None]):
        key = f"traversal[{i}]"
        t = c.table(t, key)
        c.no_unknown(t, {"kernels", "graphs", "variants", "memory_modes", "id_bytes", "sources", "reps",
                         "iterations", "warmup", "load_ahead"}, key)
        ahead = c.integer(t, "load_ahead", key, default=4)
        if ahead not in LOAD_AHEAD:
            raise c.err(f"{key}.load_ahead", f"{ahead} is not one of: {', '.join(map(str, LOAD_AHEAD))}")
        gl = c.str_list(t, "graphs", key)
        for gn in gl:
            graph_ref(gn, f"{key}.graphs")
        ids = t.get("id_bytes", [8])
        ids = ids if isinstance(ids, list) else [ids]
        if not ids or any(isinstance(b, bool) or b not in ID_BYTES for b in ids):
            raise c.err(f"{key}.id_bytes", f"{t.get('id_bytes')!r}: each must be 4 or 8")
        traversal.append(TraversalGroup(
            kernels=c.str_list(t, "kernels", key, choices=KERNELS), graphs=gl,
            variants=c.str_list(t, "variants", key, default=VARIANTS, choices=VARIANTS),
            memory_modes=c.str_list(t, "memory_modes", key, default=MEMORY_MODES, choices=MEMORY_MODES),
            id_bytes=tuple(dict.fromkeys(ids)),
            sources=c.integer(t, "sources", key, default=4, lo=1, hi=1000),
            reps=c.integer(t, "reps", key, default=3, lo=1, hi=1000),
            iterations=c.integer(t, "iterations", key, default=10, lo=1, hi=1000),
            warmup=c.boolean(t, "warmup", key, True), load_ahead=ahead))

    traces = []
    for i, t in enumerate(doc.get("self_trace", []) if isinstance(doc.get("self_trace", []), list) else [None]):
        key = f"self_trace[{i}]"
        t = c.table(t, key)
        c.no_unknown(t, {"kernel", "graph", "variant", "memory_mode", "id_bytes"}, key)
        idb = c.integer(t, "id_bytes", key, default=8)
        if idb not in ID_BYTES:
            raise c.err(f"{key}.id_bytes", f"{idb} is not 4 or 8")
        traces.append(SelfTraceSpec(
            kernel=c.string(t, "kernel", key, choices=KERNELS),
            graph=graph_ref(c.string(t, "graph", key), f"{key}.graph"),
            variant=c.string(t, "variant", key, choices=VARIANTS),
            memory_mode=c.string(t, "memory_mode", key, choices=MEMORY_MODES), id_bytes=idb))

    micro = []
    for i, m in enumerate(doc.get("micro", []) if isinstance(doc.get("micro", []), list) else [None]):
        key = f"micro[{i}]"
        m = c.table(m, key)
        bench = c.string(m, "benchmark", key, choices=tuple(MICRO_BENCHMARKS))
        spec = MICRO_BENCHMARKS[bench][1]
        c.no_unknown(m, {"benchmark", *spec}, key)
        lists, settings = {}, {}
        for pname, p in spec.items():
            if pname not in m:
                if not p.naming:
                    settings[pname] = p.default
                continue
            raw = m[pname]
            if p.naming:
                items = raw if isinstance(raw, list) else [raw]
                if not items:
                    raise c.err(f"{key}.{pname}", "must not be empty")
                vals = [c.micro_value(p, pname, key, x) for x in items]
                lists[pname] = tuple(dict.fromkeys(vals))
            else:
                if isinstance(raw, list):
                    raise c.err(f"{key}.{pname}", "is a setting and takes one value, not a list")
                settings[pname] = c.micro_value(p, pname, key, raw)
        if bench == "ptr_chase":
            if any(v > 32 for v in lists.get("lanes", ())):
                raise c.err(f"{key}.lanes", f"{max(lists['lanes'])}: the threads of one warp "
                            "chase, at most 32")
            if any(v > 32 for v in lists.get("warps", ())):
                raise c.err(f"{key}.warps", f"{max(lists['warps'])}: the warps of one CTA "
                            "chase, at most 32")
            if "atomic" in lists.get("cache", ()) and any(
                    mm != "device" for mm in lists.get("memory_mode", (spec["memory_mode"].default,))):
                raise c.err(f"{key}.cache", "'atomic' chases device memory only: set "
                            "memory_mode = \"device\"")
        micro.append(MicroGroup(bench, lists, settings))

    if not traversal and not micro and not traces:
        raise c.err("traversal", "the manifest has no [[traversal]], [[self_trace]] or [[micro]] group")
    # every case is measured by one group only (its rows would collide otherwise)
    owner: dict[str, str] = {}
    for i, g in enumerate(micro):
        for case in g.cases():
            if case in owner:
                raise c.err(f"micro[{i}]", f"case '{case}' is measured by {owner[case]} already")
            owner[case] = f"micro[{i}]"
    for i, t in enumerate(traversal):
        for k, gr, v, mm, b in itertools.product(t.kernels, t.graphs, t.variants, t.memory_modes, t.id_bytes):
            case = traversal_case_name(k, gr, v, mm, b)
            if case in owner:
                raise c.err(f"traversal[{i}]", f"case '{case}' is measured by {owner[case]} already")
            owner[case] = f"traversal[{i}]"
    return Manifest(path=path, name=name, seed=seed, description=description, graphs=graphs,
                    traversal=traversal, self_trace=traces, micro=micro, micro_rounds=micro_rounds)
