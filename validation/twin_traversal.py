"""Traversal twins: the traversal kernels of ``gpu_kernels/traversal`` predicted on their graphs.

A traversal case ``<kernel>/<graph>/<variant>/<memory_mode>/<id_bytes>B`` is
predicted on the same graph (regenerated from the manifest's generator and seed, or read
from the run's graph files), the same sources (``metadata.json``), the same
kernel, variant and id width, emulated by :mod:`hostlink.traces.emulator`
and predicted in the memory mode's model (zero-copy, UVM, device).

Edge-list loads with the default cache operator go through the caches
:func:`hostlink.traces.cache.host_read_cache` gives for the system's GPU, as the
microbenchmark twins' host loads do (:mod:`hostlink.validation.twin_micro`).

Assumptions of these twins (not of the model):
- a traversal twin carries the kernel's device-array accesses only on graphs of
  at most ``DEFAULT_MAX_DEVICE_EDGES`` edges (2^24: the scale-14 graphs, not the
  scale-21 and -24 ones, whose device accesses would not fit in memory) whose
  runs test at most ``DEFAULT_MAX_DEVICE_TESTS`` vertices in all launches
  (:mod:`hostlink.traces.traversal`: not a grid of thousands of levels); above
  it, the walk's dependent device steps stand in for them, one request each
  (:func:`hostlink.traces.emulator.visits.with_visit_skeleton`: a vertex's test
  and offsets, each trip's visit after its group's host loads), and the tests of
  inactive vertices are left to the launch's CTA dispatch.
- a traversal's launches follow one another at once, after its managed pages went
  back to the host (the harness's residency reset): in the UVM modes it pays the
  one-off fault cost of that context (``uvm.launches_first_fault_us`` where set,
  else ``uvm.first_fault_us``: :func:`hostlink.model.uvm.model.first_fault_cost_us`).
- SSSP and CC launches run in waves of the GPU's resident warps
  (:mod:`hostlink.traces.emulator.algorithms`), an approximation of how far
  updates spread within a launch.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from hostlink.model.errors import HostlinkError
from hostlink.traces.traversal import (  # noqa: F401  (requests_ahead: the twins' name)
    DEFAULT_MAX_DEVICE_EDGES, requests_ahead, traversal_workload)
from hostlink.validation.twin_common import PREDICT_MODE, RunData, TwinError, run_model


# ----------------------------------------------------------------------------
# Traversal twins


#: Where generated graphs are kept as .bel files between reports (and runs): the
#: environment's ``HOSTLINK_GRAPH_CACHE``, else ``$XDG_CACHE_HOME/hostlink/graphs``
#: (``~/.cache/hostlink/graphs``).
GRAPH_CACHE_ENV = "HOSTLINK_GRAPH_CACHE"


def graph_cache_dir() -> Path:
    """The folder generated graphs are kept in (:data:`GRAPH_CACHE_ENV`)."""
    import os
    env = os.environ.get(GRAPH_CACHE_ENV)
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "hostlink" / "graphs"


def _cache_graph(csr, prefix: Path) -> bool:
    """Write ``csr`` as ``prefix.bel.*``, each file under a temporary name first and
    the offsets (which a reader looks for) last, so that an interrupted write leaves
    no graph a later report would take for whole. False where it cannot be written."""
    import os

    from hostlink.traces.graphs.readers import bel_paths
    from hostlink.traces.graphs.writers import write_bel
    tmp = prefix.with_name(f"{prefix.name}.tmp{os.getpid()}")
    try:
        written = write_bel(csr, tmp)
        final = bel_paths(prefix)
        for key in sorted(written, key=lambda k: k == "col"):
            os.replace(written[key], final[key])
    except (OSError, HostlinkError):
        for leftover in bel_paths(tmp).values():
            try:
                leftover.unlink(missing_ok=True)
            except OSError:
                pass
        return False
    return True


#: graph kinds the twins build in memory from the manifest's parameters (kron, rmat and
#: urand are cached on disk)
BUILT_KINDS = ("grid", "road", "dataset")
BUILT_PARAMS = ("seed", "dims", "ids", "mean_degree", "name")


def generated_graph_key(kind: str, scale: int, degree: int, seed: int) -> str:
    """The cache name of a generated graph: its generator's parameters and the
    generators' source (an edited generator makes other graphs, which are not reused)."""
    import hashlib

    from hostlink.traces.graphs import csr, generators
    h = hashlib.sha256()
    for mod in (generators, csr):
        h.update(Path(mod.__file__).read_bytes())
    code = h.hexdigest()[:12]
    return f"{kind}_s{scale}_d{degree}_seed{seed}_{code}"


class GraphSource:
    """The graphs of a run: read from the run's .bel files, else regenerated from the
    manifest's generator (kron, rmat and urand kept under :func:`graph_cache_dir`,
    keyed by the generator's kind, scale, degree and seed, for the next report that
    needs it; grid, road and dataset graphs, built in seconds, are not kept).

    A graph read from .bel files is mapped from them (``read_bel(mmap=True)``): its
    pages are the file's, which the OS may drop under memory pressure and read again,
    not the report's own (a scale-24 graph is 4.3 GB of neighbour ids beside a twin
    of 10+ GB). One graph is held at a time."""

    def __init__(self, run: RunData, graph_dir: str | Path | None = None):
        self.run = run
        self.graph_dir = Path(graph_dir) if graph_dir else None
        self._cache: dict[str, object] = {}
        self._specs = None
        self._streams: dict[tuple, tuple] = {}

    def emulated(self, config: tuple, source: int, make):
        """The emulated request stream of a configuration (graph, kernel, variant, id
        width, ...) and source; the memory modes of one configuration share it (the
        streams of the last configuration only are kept)."""
        if config not in self._streams:
            self._streams = {config: {}}
        per_source = self._streams[config]
        if source not in per_source:
            per_source[source] = make()
        return per_source[source]

    def _spec(self, name: str):
        if self._specs is None:
            from hostlink.validation.manifest import load_manifest
            mpath = self.run.path / "manifest.toml"
            self._specs = load_manifest(mpath).graphs if mpath.is_file() else {}
        return self._specs.get(name)

    def get(self, name: str):
        if name in self._cache:
            return self._cache[name]
        from hostlink.traces.graphs.generators import generate
        from hostlink.traces.graphs.readers import read_bel

        self._cache = {}                     # one graph at a time: the last one goes first
        weighted = self._weighted(name)      # only SSSP reads them (2 GiB at scale 24)

        def read(prefix):
            return read_bel(prefix, id_bytes=8, name=name, weights=weighted, mmap=True)

        csr = None
        prefixes = []
        if self.graph_dir is not None:
            prefixes.append(self.graph_dir / name)
        info = (self.run.metadata.get("graphs") or {}).get(name) or {}
        prefixes.append(self.run.path / "graphs" / name)
        spec = self._spec(name)
        for prefix in prefixes:
            if Path(f"{prefix}.bel.col").is_file() and Path(f"{prefix}.bel.dst").is_file():
                csr = read(prefix)
                break
        if csr is None:
            kind = getattr(spec, "kind", None) or info.get("kind")
            if kind in ("kron", "rmat", "urand"):
                scale = int(getattr(spec, "scale", None) or info.get("scale"))
                degree = int(getattr(spec, "degree", None) or info.get("degree"))
                seed = int(getattr(spec, "seed", None) or info.get("seed"))
                cached = graph_cache_dir() / generated_graph_key(kind, scale, degree, seed)
                if not Path(f"{cached}.bel.col").is_file():
                    made = generate(kind, scale, degree, seed, weighted=True, id_bytes=8,
                                    name=name)
                    if not _cache_graph(made, cached):
                        csr = made           # an unwritable cache: the graph in memory
                    del made
                if csr is None:
                    csr = read(cached)
            elif kind == "file" and spec is not None and spec.path is not None:
                csr = read(spec.path)
            elif kind in BUILT_KINDS:          # grid, road, dataset: built in memory
                from hostlink.traces.graphs.families import build_graph
                params = (spec.params() if spec is not None else
                          {k: v for k, v in info.items() if k in BUILT_PARAMS})
                csr = build_graph(kind, weighted=True, id_bytes=8, label=name, **params)
            else:
                raise TwinError(f"graph '{name}': no .bel files under "
                                f"{', '.join(map(str, prefixes))} and no generator in the manifest")
        if csr.weights is not None and not weighted:
            csr = csr.without_weights()
        self._cache = {name: csr}
        return csr

    def _weighted(self, name: str) -> bool:
        """Whether a traversal case of the run reads the graph's weights (SSSP)."""
        return any(p.get("kind") == "traversal" and p.get("graph") == name
                   and p.get("kernel") == "sssp" for p in self.run.cases.values())


def predict_traversal(case: str, params: dict, system, graphs: GraphSource, *,
                      fidelity: str = "des",
                      timing: dict | None = None,
                      max_sources: int | None = None,
                      max_device_edges: int = DEFAULT_MAX_DEVICE_EDGES) -> list[tuple[str, float, int]]:
    """(metric, value, rep) rows of a traversal case's twin, one set per source.

    The kernel's load-ahead (``load_ahead`` trips of loads issued before their
    visits; 1 where the run does not record it) sets the model's loads in flight
    per warp (:func:`requests_ahead`: the naive kernel's trips share a sector).
    A twin that carries the device accesses is put in the kernel's issue order at
    that load-ahead (a group's host loads, then its visits) and marks what each
    instruction waits for (:mod:`hostlink.traces.emulator.issue_order`): the visits
    run one after another and the next group waits for them.
    The kernel's loads of the edge list go through the GPU's caches
    (:func:`hostlink.traces.cache.host_read_cache`; one emulated stream serves every
    memory mode of a configuration: device and migrated managed memory are cached
    alike). ``timing`` (a dict) receives the wall-clock seconds spent emulating
    (``emulate_s``; a stream shared by memory modes counts once) and predicting
    (``model_s``), the sources and the requests predicted, and each source's kernel
    time per launch (``launch_ms``, a list per source; in the UVM modes also the
    bytes migrated to the GPU per launch, ``launch_h2d_B``). ``max_sources``: predict
    only the first sources (a sample; rep numbers stay those of the measured run,
    ``source_index * reps + repetition``). The twin holds the kernel's device-array
    accesses too (vertex labels, offsets, atomics: :mod:`hostlink.traces.emulator.program`)
    on graphs of at most ``max_device_edges`` edges; larger graphs (scale 21 and up
    at degree 16) keep the edge list's requests and one device request per dependent
    step of the walk (:func:`hostlink.traces.emulator.visits.with_visit_skeleton`), as
    the accesses themselves would need about 14 times the requests (9 GiB for a
    kron-21 BFS). Why the steps: a hub's warp walks its list alone for a whole launch
    of a Kronecker graph, and its trips are paced by their visits, which the edge list
    alone leaves out; the steps bring the prediction closer to the measured time (the
    ``device_work`` experiment, validation/experiments/device_work/runs/h100)."""
    import time

    kernel, variant = params["kernel"], params["variant"]
    mode_name = params["memory_mode"]
    if mode_name not in PREDICT_MODE:
        raise TwinError(f"case '{case}': unknown memory mode '{mode_name}'")
    mode = PREDICT_MODE[mode_name]
    id_bytes = int(params["id_bytes"])
    csr = graphs.get(params["graph"])
    reps = int(params.get("reps", 1) or 1)
    if kernel in ("bfs", "sssp"):
        sources = [int(s) for s in (params.get("sources") or [])]
        if not sources:
            raise TwinError(f"case '{case}': no sources recorded (metadata.json 'cases')")
        if max_sources is not None:
            sources = sources[:max(1, int(max_sources))]
    else:
        sources = [0]
    kw = {}
    if kernel == "pagerank":
        kw["iterations"] = int(params.get("iterations", 10))
    load_ahead = int(params.get("load_ahead", 1) or 1)
    # the edge list lives in host memory in every mode the model reads through the
    # link; uvm_accessedby is its own mode of the model (managed memory on the host)
    mode = "uvm_accessedby" if mode_name == "uvm_accessedby" else mode
    rows: list[tuple[str, float, int]] = []
    for si, source in enumerate(sources):
        def make(source=source):
            return traversal_workload(csr, kernel, variant, system.gpu, source=source,
                                      id_bytes=id_bytes, load_ahead=load_ahead,
                                      max_device_edges=max_device_edges, **kw)
        config = (params["graph"], kernel, variant, id_bytes, kw.get("iterations"),
                  load_ahead, max_device_edges, system.gpu)
        t0 = time.perf_counter()
        work = graphs.emulated(config, source, make)
        t1 = time.perf_counter()
        if len(work.stream) == 0:
            raise TwinError(f"case '{case}': the emulated run issues no requests")
        # a traversal's launches follow one another after its pages went back to the host
        run = run_model(work, system, mode, fidelity, back_to_back=True)
        if timing is not None:
            timing["emulate_s"] = timing.get("emulate_s", 0.0) + (t1 - t0)
            timing["model_s"] = timing.get("model_s", 0.0) + (time.perf_counter() - t1)
            timing["sources"] = timing.get("sources", 0) + 1
            timing["requests"] = timing.get("requests", 0) + len(work.stream)
            timing.setdefault("launch_ms", []).append((run.kernel_ns * 1e-6).tolist())
            if run.launch_h2d_B is not None:
                timing.setdefault("launch_h2d_B", []).append(run.launch_h2d_B.tolist())
        kernel_ns = float(np.sum(run.kernel_ns))
        values = {"time_ms": run.time_ns * 1e-6, "kernel_time_ms": kernel_ns * 1e-6,
                  "iterations": float(work.iterations), "edges_read": float(work.edges_read),
                  "loop_gap_us": (run.time_ns - kernel_ns) * 1e-3 / max(1, work.iterations),
                  "bytes_read_B": float(work.bytes_read_B),
                  "bw_GBps": work.bytes_read_B / kernel_ns if kernel_ns > 0 else math.nan}
        for r in range(reps):
            for metric, value in values.items():
                rows.append((metric, float(value), si * reps + r))
    return rows


