"""``hostlink predict-multi``: several GPUs of one host reading it at once.

``hostlink predict-multi --system PRESET --run GPU:NODE:KIND[:ARG] [--run ...]
[--mode MODE] [--fidelity F] [--json]``

``PRESET`` is a system with a ``[topology]`` (:mod:`hostlink.model.config.topology`).
Each ``--run`` is one GPU's workload with its buffers on NUMA node ``NODE``
(``local``: the GPU's own socket): ``copy:SIZE`` (a host-to-device cudaMemcpy of
SIZE bytes), ``copy-d2h:SIZE``, ``read:SIZE`` (zero-copy 128 B reads streaming over
SIZE bytes by every warp the GPU holds), ``trace:DIR`` (a trace folder) or
``graph:FILE`` (BFS, merged_aligned, over a graph file). ``--mode`` is the memory
mode of ``read``, ``trace`` and ``graph`` runs. Each run is predicted alone by
:func:`hostlink.model.predict.predict`, then all share the host
(:func:`hostlink.model.shared_host.predict_shared`).
"""
from __future__ import annotations

MODES = ("zerocopy", "uvm_accessedby", "uvm", "uvm_readmostly", "device")  # hostlink.model.predict.MODES
KINDS = ("copy", "copy-d2h", "read", "trace", "graph")
#: requests of a ``read`` run's sample; its steady state stands for the whole read
READ_SAMPLE_REQUESTS = 65536


def register(subparsers) -> None:
    # argparse's usual shape, alike to predict's register() on purpose
    p = subparsers.add_parser(
        "predict-multi", help="predict several GPUs reading one host at once (a [topology])",
        description="Predict each GPU's workload alone, then their shares of the host's links, "
                    "switch uplinks, inter-socket link and DRAM.")
    p.add_argument("--system", required=True, metavar="NAME_OR_TOML",
                   help="system preset with a [topology] (e.g. firepro-s9150-2s-pcie3)")
    p.add_argument("--run", dest="runs", action="append", required=True,
                   metavar="GPU:NODE:KIND[:ARG]",
                   help="one GPU's workload, buffers on NUMA node NODE (or 'local'); KIND: "
                        "copy:SIZE, copy-d2h:SIZE, read:SIZE, trace:DIR, graph:FILE (repeatable)")
    p.add_argument("--mode", choices=MODES, default="zerocopy",
                   help="memory mode of read, trace and graph runs (default zerocopy)")
    p.add_argument("--fidelity", choices=("analytic", "des"), default="analytic",
                   help="fidelity of each GPU's own prediction (default analytic)")
    p.add_argument("--json", action="store_true", help="print the whole result as JSON")
    p.set_defaults(func=_predict_multi)


def _size(text: str, spec: str) -> int:
    from hostlink.model.errors import HostlinkError
    from hostlink.model.units import UnitError, parse_quantity
    try:
        value = parse_quantity(text, "size_B")
    except UnitError as exc:
        raise HostlinkError(f"--run {spec}: {exc}") from None
    if value < 1 or not float(value).is_integer():
        raise HostlinkError(f"--run {spec}: size {text} must be a whole number of bytes >= 1")
    return int(value)


def parse_run(spec: str, system, mode: str):
    """A :class:`~hostlink.model.shared_host.GpuRun` from ``GPU:NODE:KIND[:ARG]``."""
    from hostlink.model.errors import HostlinkError
    from hostlink.model.shared_host import GpuRun
    from hostlink.model.workload import Copy
    parts = spec.split(":", 3)
    if len(parts) < 3:
        raise HostlinkError(f"--run {spec}: write GPU:NODE:KIND[:ARG], e.g. 0:local:copy:512MiB")
    gpu_text, node_text, kind = parts[:3]
    arg = parts[3] if len(parts) > 3 else ""
    try:
        gpu = int(gpu_text)
        node = None if node_text == "local" else int(node_text)
    except ValueError:
        raise HostlinkError(f"--run {spec}: GPU and NODE must be whole numbers (NODE may be "
                            "'local')") from None
    if kind not in KINDS:
        raise HostlinkError(f"--run {spec}: unknown kind '{kind}' (one of: {', '.join(KINDS)})")
    if not arg:
        raise HostlinkError(f"--run {spec}: {kind} needs an argument ({kind}:...)")
    if kind in ("copy", "copy-d2h"):
        return GpuRun(gpu, Copy(_size(arg, spec), to_device=kind == "copy"), "zerocopy", node,
                      spec)
    if kind == "trace":
        return GpuRun(gpu, arg, mode, node, spec)
    gpu_cfg = _own_gpu(system, gpu)
    if kind == "read":
        return GpuRun(gpu, _read_run(_size(arg, spec), gpu_cfg), mode, node, spec)
    from hostlink.traces.cli_gen import _default_source
    from hostlink.traces.graphs import read_graph
    from hostlink.traces.traversal import traversal_workload
    csr = read_graph(arg, id_bytes=8)
    return GpuRun(gpu, traversal_workload(csr, "bfs", "merged_aligned", gpu_cfg,
                                          source=_default_source(csr)), mode, node, spec)


def _own_gpu(system, gpu: int):
    """The GpuConfig of the topology's GPU ``gpu`` (its own system's, where it names one)."""
    topo = system.topology
    if not 0 <= gpu < len(topo.gpus) or topo.gpus[gpu].system is None:
        return system.gpu
    from hostlink.model.config import load_any_system
    return load_any_system(topo.gpus[gpu].system).gpu


def _read_run(size_B: int, g):
    """Zero-copy 128 B reads over ``size_B`` bytes by every warp GPU ``g`` holds, as a
    sample of :data:`READ_SAMPLE_REQUESTS` requests whose steady state stands for the run."""
    from hostlink.model.sweep.evaluate import synthetic_stream
    from hostlink.model.workload import SampledRun
    warps = g.sm_count * g.max_warps_per_sm
    n = max(1, min(READ_SAMPLE_REQUESTS, size_B // 128))
    stream = synthetic_stream({"requests": n, "warps": min(warps, n), "seed": 0,
                               "sizes_B": [128], "fractions": [1.0], "offset_B": 0})
    return SampledRun(stream, full_B=float(size_B), sample_B=float(n * 128),
                      warps=min(warps, n))


def _predict_multi(args) -> int:
    import json

    from hostlink.model.predict import resolve_system
    from hostlink.model.shared_host import predict_shared
    system = resolve_system(args.system)
    if system.topology is None:
        from hostlink.model.errors import ConfigError
        raise ConfigError(f"{args.system}: the system has no [topology] (e.g. "
                          "firepro-s9150-2s-pcie3 has one)")
    runs = [parse_run(spec, system, args.mode) for spec in args.runs]
    res = predict_shared(runs, system, fidelity=args.fidelity)
    if args.json:
        print(json.dumps(res.to_dict(), indent=2, sort_keys=True))
        return 0
    print(f"{len(res.runs)} run(s) at once on {res.system}: {res.total_GBps:.3f} GB/s in all, "
          f"bound: {res.bound}")
    for r in res.runs:
        where = "remote" if r.remote else "local"
        print(f"  {r.name} <- node {r.node} ({where}), {r.label}: {r.shared_GBps:.3f} GB/s "
              f"shared, {r.alone_GBps:.3f} alone, bound: {r.bound}")
    for name, util in sorted(res.utilisation.items()):
        print(f"  {name}: {util:.0%} of {res.capacity_GBps[name]:.4g} GB/s")
    return 0
