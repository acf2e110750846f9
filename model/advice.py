"""Which kernel variant and which memory placement for a graph: every pair predicted, ranked.

:func:`advise` builds a traversal program's run on a graph once per kernel variant
(:func:`hostlink.traces.traversal.traversal_workload`, the run ``hostlink predict
--graph`` builds) and predicts it in each memory mode with
:func:`hostlink.model.predict.predict`. It adds no physics of its own: an option's
time, bandwidth and bound are predict's. The options are ranked by time (every
variant reads the same edges, so the fastest also has the most useful GB/s), and
each one's slowdown is its time over the winner's.

Assumptions:
- ``device`` is an option only where the run's arrays fit the GPU's memory
  (``gpu.memory_GiB``): the edge list (and SSSP's weights), the offsets and the
  kernel's per-vertex arrays as :func:`hostlink.traces.emulator.layout.address_map`
  lays them out for device memory. The managed modes may oversubscribe the GPU;
  the UVM model evicts pages as it does.
- one source and one run per option; no repeats or machine-to-machine spread.
- ``jobs`` above 1 forks its workers (the ``fork`` start method: Linux, macOS), so
  they share the graph the parent holds.

References: the variants are EMOGI's (Min et al., VLDB 2020, §3.3 and §4.3: naive,
merged, merged+aligned) and the chunked and balanced walks of
``gpu_kernels/traversal/walk.cuh``; the modes are the CUDA placements of
``gpu_kernels/common/memory.cuh`` (CUDA C++ Programming Guide, "Unified Memory",
cudaMemAdvise).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Callable

VARIANTS = ("naive", "merged", "merged_aligned", "chunked", "balanced")
MODES = ("zerocopy", "uvm_accessedby", "uvm", "uvm_readmostly", "device")
KERNELS = ("bfs", "sssp", "cc", "pagerank")
GiB = 1 << 30


@dataclass(frozen=True)
class Option:
    """One variant in one memory mode, as predict gave it."""
    variant: str
    mode: str
    time_s: float
    bw_GBps: float
    bound: str
    slowdown: float = 1.0      # time over the winner's (1.0: the winner)

    @property
    def name(self) -> str:
        return f"{self.variant}/{self.mode}"


@dataclass
class Advice:
    """Every option of one graph on one system, fastest first."""
    graph: str
    kernel: str
    system: str
    fidelity: str
    source: int
    id_bytes: int
    vertices: int
    edges: int
    footprint_B: int                  # the run's arrays, all in device memory
    device_capacity_B: int            # gpu.memory_GiB
    options: list[Option]             # ranked, fastest first
    skipped: dict[str, str] = field(default_factory=dict)   # mode -> why it was left out

    @property
    def winner(self) -> Option:
        return self.options[0]

    @property
    def device_fits(self) -> bool:
        return self.footprint_B <= self.device_capacity_B

    def option(self, variant: str, mode: str) -> Option:
        for o in self.options:
            if o.variant == variant and o.mode == mode:
                return o
        raise KeyError(f"{variant}/{mode}")

    def table(self, value: str = "time_s"):
        """``value`` (an Option field) with a row per variant and a column per mode,
        in :data:`VARIANTS` and :data:`MODES` order."""
        import pandas as pd
        df = pd.DataFrame([asdict(o) for o in self.options])
        t = df.pivot_table(index="variant", columns="mode", values=value, aggfunc="first")
        return t.reindex(index=[v for v in VARIANTS if v in t.index],
                         columns=[m for m in MODES if m in t.columns])

    @classmethod
    def from_dict(cls, data: dict) -> "Advice":
        """The advice :meth:`to_dict` gave (other keys are ignored)."""
        names = [f for f in cls.__dataclass_fields__ if f not in ("options", "skipped")]
        return cls(**{k: data[k] for k in names},
                   options=[Option(**o) for o in data["options"]],
                   skipped=dict(data.get("skipped") or {}))

    def to_dict(self) -> dict:
        """Plain, JSON-ready data: the facts of the run, the winner and every option."""
        from hostlink.model.result import _clean
        d = {k: v for k, v in asdict(self).items() if k not in ("options", "skipped")}
        d.update(device_fits=self.device_fits, winner=asdict(self.winner),
                 options=[asdict(o) for o in self.options], skipped=dict(self.skipped))
        return _clean(d)


def footprint_B(num_vertices: int, num_edges: int, kernel: str, id_bytes: int) -> int:
    """Bytes a run's arrays take when all live in device memory (the emulator's layout)."""
    from hostlink.traces.emulator.layout import address_map
    regions = address_map(num_vertices, num_edges, kernel, id_bytes=id_bytes,
                          memory="device").regions
    return int(sum(r.size_B for r in regions))


def rank(options: list[Option]) -> list[Option]:
    """``options`` fastest first (ties in variant, then mode order), each with its
    slowdown against the first."""
    if not options:
        return []
    order = sorted(options, key=lambda o: (o.time_s, VARIANTS.index(o.variant)
                                           if o.variant in VARIANTS else len(VARIANTS),
                                           MODES.index(o.mode) if o.mode in MODES else len(MODES)))
    best = order[0].time_s
    return [Option(o.variant, o.mode, o.time_s, o.bw_GBps, o.bound,
                   o.time_s / best if best > 0 else float("nan")) for o in order]


def _check(values, allowed, what: str) -> list[str]:
    from hostlink.model.errors import HostlinkError
    values = list(dict.fromkeys(values))
    bad = [v for v in values if v not in allowed]
    if bad or not values:
        raise HostlinkError(f"{what} {', '.join(bad) or '(none)'}: not one of {', '.join(allowed)}")
    return values


def advise(csr, system, *, kernel: str = "bfs", variants=VARIANTS, modes=MODES,
           source: int | None = None, id_bytes: int = 8, load_ahead: int = 1,
           iterations: int = 10, fidelity: str = "des", max_device_edges: int | None = None,
           jobs: int = 1, progress: Callable[[int, int, str], None] | None = None) -> Advice:
    """Predict ``kernel`` on ``csr`` in every variant x mode on ``system`` (a
    SystemConfig or a preset name or file) and rank the options. ``source``: BFS and
    SSSP's (default the lowest id with an edge, as ``hostlink predict --graph``);
    ``max_device_edges``: :func:`~hostlink.traces.traversal.traversal_workload`'s (None:
    its default; -1: the walk's dependent device steps only, as the main job's sweep);
    ``jobs``: worker processes, a variant each at a time (forked: they share the graph);
    ``progress(done, total, label)`` is called as predictions start and finish."""
    from hostlink.model.errors import HostlinkError
    from hostlink.model.predict import FIDELITIES, resolve_system
    from hostlink.traces.cli_gen import _default_source
    system = resolve_system(system)
    if kernel not in KERNELS:
        raise HostlinkError(f"kernel {kernel}: not one of {', '.join(KERNELS)}")
    if fidelity not in FIDELITIES:
        raise HostlinkError(f"fidelity {fidelity}: not one of {', '.join(FIDELITIES)}")
    variants = _check(variants, VARIANTS, "variant")
    modes = _check(modes, MODES, "mode")
    source = _default_source(csr) if source is None else int(source)
    if not 0 <= source < csr.num_vertices:
        raise HostlinkError(f"source {source}: the graph has {csr.num_vertices} vertices")
    need_B = footprint_B(csr.num_vertices, csr.num_edges, kernel, id_bytes)
    have_B = int(system.gpu.memory_GiB * GiB)
    skipped = {}
    if "device" in modes and need_B > have_B:
        modes = [m for m in modes if m != "device"]
        skipped["device"] = (f"the run's arrays take {need_B / 1e9:.3g} GB, more than the "
                             f"{system.gpu.memory_GiB:.4g} GiB of {system.gpu.name}")
    if not modes:
        raise HostlinkError("no memory mode left to predict: " + "; ".join(
            f"{m}: {why}" for m, why in skipped.items()))
    run = _Run(system, kernel, tuple(modes), source, id_bytes, load_ahead, iterations,
               fidelity, {} if max_device_edges is None else
               {"max_device_edges": int(max_device_edges)})
    total = len(variants) * len(modes)
    report = progress or (lambda done, total, label: None)
    options: list[Option] = []
    if jobs <= 1 or len(variants) == 1:
        for variant in variants:
            options += run.options(csr, variant, lambda mode: report(
                len(options) + run.modes.index(mode), total, f"predicting {variant}/{mode}"))
    else:
        import concurrent.futures as cf
        import multiprocessing as mp
        global _FORKED
        _FORKED = (csr, run)     # the workers inherit the graph through fork
        try:
            with cf.ProcessPoolExecutor(max_workers=min(jobs, len(variants)),
                                        mp_context=mp.get_context("fork")) as pool:
                report(0, total, f"predicting {len(variants)} variants on {jobs} processes")
                futures = [pool.submit(_forked_options, v) for v in variants]
                for future in cf.as_completed(futures):
                    options += future.result()
                    report(len(options), total, "predicting")
        finally:
            _FORKED = None
    report(total, total, "done")
    return Advice(graph=csr.name, kernel=kernel, system=system.name, fidelity=fidelity,
                  source=source, id_bytes=id_bytes, vertices=int(csr.num_vertices),
                  edges=int(csr.num_edges), footprint_B=need_B, device_capacity_B=have_B,
                  options=rank(options), skipped=skipped)


@dataclass(frozen=True)
class _Run:
    """What every option of one advice shares."""
    system: object
    kernel: str
    modes: tuple[str, ...]
    source: int
    id_bytes: int
    load_ahead: int
    iterations: int
    fidelity: str
    workload_kw: dict

    def options(self, csr, variant: str, before=None) -> list[Option]:
        """``variant``'s run built once (the same stream serves every memory mode) and
        predicted in each mode; ``before(mode)`` is called before each prediction."""
        from hostlink.model.predict import predict
        from hostlink.traces.traversal import traversal_workload
        work = traversal_workload(csr, self.kernel, variant, self.system.gpu,
                                  source=self.source, id_bytes=self.id_bytes,
                                  load_ahead=self.load_ahead, iterations=self.iterations,
                                  **self.workload_kw)
        out = []
        for mode in self.modes:
            if before:
                before(mode)
            pred = predict(work, self.system, mode=mode, fidelity=self.fidelity)
            out.append(Option(variant, mode, float(pred.time_s), float(pred.bw_GBps),
                              str(pred.bound)))
        return out


_FORKED = None    # (graph, _Run) of the advice in progress, for its forked workers


def _forked_options(variant: str) -> list[Option]:
    csr, run = _FORKED
    return run.options(csr, variant)


def write_advice(out, advice: Advice, extra: dict | None = None) -> None:
    """``advice.json`` (:meth:`Advice.to_dict`, with ``extra``'s keys) and ``advice.csv``
    (an option a row, fastest first) in the folder ``out``, made if need be."""
    import json
    from pathlib import Path

    import pandas as pd
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    data = {**advice.to_dict(), **(extra or {})}
    (out / "advice.json").write_text(json.dumps(data, indent=2, sort_keys=True) + "\n",
                                     encoding="utf-8")
    pd.DataFrame(data["options"]).to_csv(out / "advice.csv", index=False)


def verdict(advice: Advice) -> str:
    """One sentence: the winner, then the slowdown of each other variant in the winner's
    mode and of the winner's variant in each other mode (the full ranking is
    ``advice.options``)."""
    w = advice.winner
    same_mode = [o for o in advice.options[1:] if o.mode == w.mode]
    same_variant = [o for o in advice.options[1:] if o.variant == w.variant]
    parts = [f"{w.name} wins"]
    for group in (same_mode, same_variant):
        if group:
            parts.append(f"{group[0].name} is {group[0].slowdown:.2f}x slower" + "".join(
                f", {o.name} {o.slowdown:.2f}x" for o in group[1:]))
    return "; ".join(parts)
