"""A run on several GPUs and NUMA nodes, predicted case by case and compared.

A run of a manifest with ``[placement]`` (:mod:`hostlink.validation.placement`)
holds each case on each GPU alone and on all at once, with the host buffers on a
node. Each placed case's twin (the microbenchmark twin of
:mod:`hostlink.validation.twin_micro`; the traversal program's run on the same
graph from its first source, :func:`hostlink.traces.traversal.traversal_workload`)
goes on its GPU, and the GPUs that ran together are predicted together by
:func:`hostlink.model.shared_host.predict_shared` on a system with a
``[topology]``. The comparison is of each case's time (``time_ms``: a copy's, a
read's, a traversal's whole run), median over its repetitions.

Targets: both-at-once within 10% for copies and zero-copy reads,
15% for BFS (:data:`TOLERANCE`).

Assumptions: the topology's GPU k is CUDA device k and its socket k is NUMA node
k; a placed run's programs overlap for their whole timed work (the gate starts
them together; :mod:`hostlink.validation.placement`).
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from hostlink.model.errors import HostlinkError

if TYPE_CHECKING:
    import pandas as pd

# pandas is imported where a table is made: the CLI imports this module on every start
# to register its command

#: largest |predicted / measured - 1| accepted, by kind of case
TOLERANCE = {"memcpy": 0.10, "zc_read": 0.10, "zc_warps": 0.10, "traversal": 0.15}
COLUMNS = ("case", "base", "kind", "gpu", "host_node", "together", "measured_ms",
           "predicted_ms", "alone_ms", "bound", "error")


def placed_cases(cases: dict[str, dict]) -> dict[tuple, list[str]]:
    """Placed cases grouped by what ran at once: (base case, host node, the GPUs)."""
    groups: dict[tuple, list[str]] = {}
    for case, p in cases.items():
        if "gpu" not in p or "@" not in case:
            continue
        together = tuple(p.get("together") or ())
        key = (case.split("@", 1)[0], str(p["host_node"]), together or (int(p["gpu"]),))
        groups.setdefault(key, []).append(case)
    return groups


def _kind(params: dict) -> str:
    return params.get("benchmark") if params.get("kind") == "micro" else "traversal"


def _gpu_run(case: str, params: dict, system, run, graphs):
    """The :class:`~hostlink.model.shared_host.GpuRun` of one placed case."""
    from hostlink.model.shared_host import GpuRun, gpu_system
    gpu = int(params["gpu"])
    node = None if params["host_node"] == "local" else int(params["host_node"])
    base = case.split("@", 1)[0]
    own = gpu_system(system, gpu, system.topology.gpus[gpu].socket)
    if params.get("kind") == "micro":
        from hostlink.validation.twins import build_micro, run_loads_in_flight
        twin = build_micro(base, params, own, hints=lambda m: run.hint(case, m),
                           loads_in_flight=run_loads_in_flight(run.path))
        return GpuRun(gpu, twin.workload, twin.predict_mode, node, case, adjust=twin.system_for)
    from hostlink.traces.traversal import traversal_workload
    from hostlink.validation.twin_common import PREDICT_MODE
    sources = params.get("sources") or [0]
    work = traversal_workload(graphs.get(params["graph"]), params["kernel"], params["variant"],
                              own.gpu, source=int(sources[0]), id_bytes=int(params["id_bytes"]),
                              load_ahead=int(params.get("load_ahead", 1) or 1))
    return GpuRun(gpu, work, PREDICT_MODE[params["memory_mode"]], node, case)


def _measured_ms(run, case: str, params: dict) -> float:
    """Median time of a case's repetitions (a traversal's: its first source's, the one
    its twin walks from)."""
    df = run.measured
    rows = df[(df["case"] == case) & (df["metric"] == "time_ms")]
    if params.get("kind") != "micro":
        rows = rows[rows["rep"] < int(params.get("reps", 1) or 1)]
    return float(rows["value"].median()) if len(rows) else float("nan")


def compare(run_dir: str | Path, system, *, fidelity: str = "analytic",
            graph_dir: str | Path | None = None) -> pd.DataFrame:
    """One row per placed case: measured and predicted time, the prediction alone, the
    bound and the error (predicted / measured - 1)."""
    import pandas as pd

    from hostlink.model.predict import resolve_system
    from hostlink.model.shared_host import predict_shared
    from hostlink.validation.twin_traversal import GraphSource
    from hostlink.validation.twins import load_run
    system = resolve_system(system)
    if system.topology is None:
        raise HostlinkError(f"system {system.name}: no [topology] to share the host by")
    run = load_run(run_dir)
    groups = placed_cases(run.cases)
    if not groups:
        raise HostlinkError(f"{run_dir}: no placed cases (the manifest had no [placement])")
    graphs = GraphSource(run, graph_dir)
    rows = []
    for (base, node, gpus), cases in sorted(groups.items()):
        runs = [_gpu_run(c, run.cases[c], system, run, graphs) for c in cases]
        res = predict_shared(runs, system, fidelity=fidelity)
        for c, share in zip(cases, res.runs):
            p = run.cases[c]
            measured = _measured_ms(run, c, p)
            predicted = share.time_s * 1e3
            rows.append({"case": c, "base": base, "kind": _kind(p), "gpu": share.gpu,
                         "host_node": node, "together": "+".join(map(str, gpus)),
                         "measured_ms": measured, "predicted_ms": predicted,
                         "alone_ms": share.prediction.time_s * 1e3, "bound": share.bound,
                         "error": predicted / measured - 1 if measured else float("nan")})
    return pd.DataFrame(rows, columns=list(COLUMNS))


def verdict(table: pd.DataFrame) -> dict[str, dict]:
    """Per kind of case, of the runs at once: the cases, the largest error and whether
    every one is within :data:`TOLERANCE`."""
    out = {}
    together = table[table["together"].str.contains(r"\+", regex=True)]
    for kind, rows in together.groupby("kind"):
        worst = float(rows["error"].abs().max())
        tol = TOLERANCE.get(kind)
        out[kind] = {"cases": int(len(rows)), "worst_error": worst, "tolerance": tol,
                     "within": bool(tol is not None and worst <= tol)}
    return out


def _cmd(args) -> int:
    import json

    import pandas as pd
    table = compare(args.run, args.system, fidelity=args.fidelity, graph_dir=args.graph_dir)
    if args.csv:
        table.to_csv(args.csv, index=False)
    if args.json:
        print(json.dumps({"cases": table.to_dict(orient="records"), "verdict": verdict(table)},
                         indent=1, default=str))
        return 0
    with pd.option_context("display.max_rows", None, "display.width", 200):
        print(table.drop(columns=["base"]).to_string(index=False, float_format="%.4g"))
    for kind, v in verdict(table).items():
        print(f"{kind}: {v['cases']} case(s) at once, worst error {v['worst_error']:+.1%}"
              f" (tolerance {v['tolerance']:.0%}): {'within' if v['within'] else 'outside'}")
    return 0


def register_validate_commands(sub) -> None:
    p = sub.add_parser("multigpu", help="predict a run on several GPUs at once and compare")
    p.add_argument("run", metavar="RUN", help="a measured run folder of a manifest with [placement]")
    p.add_argument("--system", required=True,
                   help="system with a [topology] whose GPU k is CUDA device k")
    p.add_argument("--fidelity", choices=("analytic", "des"), default="analytic",
                   help="fidelity of each GPU's own prediction (default analytic)")
    p.add_argument("--graph-dir", default=None, help="where the run's graphs are (else regenerated)")
    p.add_argument("--csv", default=None, help="write the table here")
    p.add_argument("--json", action="store_true", help="print the table and verdict as JSON")
    p.set_defaults(func=_cmd)
