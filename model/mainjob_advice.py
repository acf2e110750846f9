"""The main job's "which variant and placement" section: its graph's advice.

:func:`main_advice` runs :func:`hostlink.model.advice.advise` on the main job's own
graph traversal (the sweep's workload: graph, kernel, ids, source) on the sweep's
system at the preset's own link generation, every kernel variant in every memory
mode, written to ``advice.json`` and ``advice.csv`` and taken back from there on a
run with the same inputs. :func:`advice_markdown` is the report's section.

Assumptions: the section is predicted by the analytic model, not the sweep's
discrete-event model, to keep the main job quick: on the default graph (kron scale
18) the 25 options take about 55 s analytic and 97 s des in one process on the
2-core machine (a shared one, 2026-12-05); ``ADVICE_FIDELITY``. The closed forms are
within 15% of the DES on the committed first-run traversals
(``tests/bench/bench_fidelity_agreement.py``). The run is built as the sweep builds
it (the walk's dependent device steps only, unless the workload asks for its device
accesses), so its zero-copy and UVM times are the sweep's at that generation, up to
the fidelity.
"""
from __future__ import annotations

import json
from pathlib import Path

ADVICE_FIDELITY = "analytic"


def main_advice(spec, out=None, *, jobs: int | None = None, progress: bool = False):
    """The advice for ``spec``'s graph traversal at the preset's own link generation
    (else the sweep's last point), or None where the sweep has no graph point. With
    ``out``, the advice is written there (:func:`hostlink.model.advice.write_advice`)
    and taken back from there when its inputs (the point's resolved system and
    workload, less the variant and mode, and the fidelity) are the same, as the sweep
    resumes its points."""
    from hostlink.model.advice import Advice, advise, write_advice
    from hostlink.model.cli.progress import bar
    from hostlink.model.predict import resolve_system
    from hostlink.model.sweep.evaluate import load_graph, pick_source
    from hostlink.model.sweep.runner import default_jobs, resolve_points
    points = [rp for rp in resolve_points(spec) if rp.workload.get("kind") == "graph"]
    if not points:
        return None
    gen = resolve_system(spec.system).link.gen
    rp = next((p for p in points if p.system.link.gen == gen), points[-1])
    w = rp.workload
    key = _inputs_key(rp)
    saved = Path(out) / "advice.json" if out is not None else None
    if saved is not None and saved.exists():
        try:
            data = json.loads(saved.read_text(encoding="utf-8"))
            if data.get("inputs") == key:
                return Advice.from_dict(data)
        except (ValueError, KeyError, TypeError):   # torn or older: predict again
            pass
    csr = load_graph(w)
    src = w.get("source", "auto")
    with bar("which variant and placement", quiet=not progress) as update:
        advice = advise(csr, rp.system, kernel=w["kernel"],
                        source=pick_source(csr) if src == "auto" else int(src),
                        id_bytes=w["id_bytes"], load_ahead=w.get("load_ahead", 1),
                        iterations=w.get("iterations", 10), fidelity=ADVICE_FIDELITY,
                        max_device_edges=csr.num_edges if w.get("include_device") else -1,
                        jobs=default_jobs() if jobs is None else jobs,
                        progress=lambda done, total, label: update(done, total))
    if out is not None:
        write_advice(out, advice, {"inputs": key})
    return advice


def _inputs_key(rp) -> str:
    """A hash of what the advice depends on: the point's resolved system and its
    workload less the variant and mode, and :data:`ADVICE_FIDELITY`."""
    import hashlib
    w = {k: v for k, v in rp.workload.items() if k not in ("variant", "mode")}
    text = json.dumps([rp.config_json, w, ADVICE_FIDELITY], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def advice_markdown(advice) -> str:
    """The report's section: the time table, the winner, each option's slowdown and
    bound, and whether device memory holds the graph."""
    from hostlink.model.advice import verdict
    a = advice
    times, bws = a.table("time_s"), a.table("bw_GBps")
    head = ["variant", *times.columns]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for variant, row in times.iterrows():
        lines.append("| " + " | ".join([variant] + [
            "-" if row[m] != row[m] else f"{row[m] * 1e3:.4g} ms, {bws.loc[variant, m]:.3g} GB/s"
            for m in times.columns]) + " |")
    rank = ["| rank | option | time (ms) | slower than the winner | bound |", "|---|---|---|---|---|"]
    rank += [f"| {i} | {o.name} | {o.time_s * 1e3:.4g} | {o.slowdown:.2f}x | {o.bound} |"
             for i, o in enumerate(a.options, start=1)]
    fits = (f"The run's arrays take {a.footprint_B / 1e9:.3g} GB; the GPU has "
            f"{a.device_capacity_B / 2**30:g} GiB" +
            (", so device memory is an option." if a.device_fits else "."))
    skipped = "".join(f" {m} is left out: {why}." for m, why in a.skipped.items())
    return f"""
## Which variant and placement

The main job's graph ({a.graph}, {a.vertices:,} vertices, {a.edges:,} edges, {a.id_bytes} B
ids), {a.kernel} from vertex {a.source}, on `{a.system}` at its own link, in every kernel
variant and memory mode (`hostlink advise`; {a.fidelity} model, the sweep above is des).
{fits}{skipped}

{chr(10).join(lines)}

**{verdict(a)}.**

{chr(10).join(rank)}

Files: `advice.json`, `advice.csv`.
"""
