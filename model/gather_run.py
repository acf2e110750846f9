"""Predictions of a GNN feature gather (:class:`~hostlink.model.workload.Gather`) in every mode.

- ``zerocopy``, ``uvm_accessedby``, ``device`` and ``uvm_warm`` (a managed table
  already resident on the GPU: device memory): the sample's steady state stands
  for the run, as for :class:`~hostlink.model.workload.SampledRun`
  (:func:`hostlink.model.runs.predict_workload`): launch overhead plus the
  gathered bytes over the sample's bandwidth. The sample's requests cross the
  stream model with the table's addresses, so a table beyond the TLB's reach
  misses as the model's translation says (:mod:`hostlink.model.translation`:
  reach, walks in flight, walk latency), in the analytic bound and the DES alike;
- ``uvm`` / ``uvm_readmostly`` (first touch of a managed table): the UVM model on
  the sample; its time beyond the launch overhead and the run's one-off first
  fault scales with the pages the run touches over those the sample touches;
- ``cpu_gather``: host threads gather, one copy moves the rows
  (:mod:`hostlink.model.cpu_gather`).

Every prediction names its bound as the model found it (the analytic model's
least bound, ``latency``, ``translation``, ``uvm_service``, ...) and, in
``extra["bound_class"]``, the class of :data:`BOUND_CLASSES` it falls in:
``link``, ``requests_in_flight`` (tags, completion credits, the GPU's own limit,
or too few loads per warp), ``translation``, ``host_serve`` (the host's DRAM or
root complex), ``host_threads``, ``uvm_service``, ``device``, ``issue`` or
``launch``. ``extra["sample"]["launch_bounds"]`` keeps the sample's per-launch
bounds (:func:`hostlink.model.predict.launch_bounds`). A sample whose warps' latency
chain only waits behind the link term's busy phase (the two within 1%) is named
after the link term's bound: the chain is the queue, not its cause.

Assumptions: every warp of the sample does the same work on random rows (the
steady state of the first rounds is that of the run); the run's exact request
counts, where the workload carries them, replace the sample's scaled counts.
"""
from __future__ import annotations

from dataclasses import replace

from hostlink.model.errors import HostlinkError
from hostlink.model.result import Prediction
from hostlink.model.workload import Gather, SampledRun

#: a model's bound name -> the class a gather reports
BOUND_CLASSES = {
    "link_down": "link", "link_up": "link", "link": "link", "copy_engine": "link",
    "tags": "requests_in_flight", "cpl_credits": "requests_in_flight",
    "requester": "requests_in_flight", "latency": "requests_in_flight",
    "translation": "translation", "dram": "host_serve", "host_serve": "host_serve",
    "host_threads": "host_threads", "uvm_service": "uvm_service", "device": "device",
    "sm_issue": "issue", "compute": "issue", "hashed_lines": "issue",
    "cta_dispatch": "launch", "launch_overhead": "launch",
}


def bound_class(bound: str) -> str:
    """The class of a bound name (the name itself where it has none)."""
    return BOUND_CLASSES.get(bound, bound)


def _with_counts(pred: Prediction, run: Gather, mode: str) -> Prediction:
    """``pred`` under the gather's mode, with the run's exact request counts where the
    workload carries them and the bound's class."""
    counts = {}
    if run.requests_by_size_B and mode not in ("device", "uvm_warm", "cpu_gather"):
        by_size = {int(s): int(c) for s, c in run.requests_by_size_B}
        counts = {"requests_by_size_B": by_size, "requests": sum(by_size.values()),
                  "requested_B": sum(s * c for s, c in by_size.items())}
    merged = dict(pred.extra, bound_class=bound_class(pred.bound))
    return replace(pred, mode=mode, extra=merged, **counts)


def _first_touch(run: Gather, system, mode, fidelity, opts) -> Prediction:
    from hostlink.model.runs import _made, _stream_prediction, with_loads_in_flight
    from hostlink.model.uvm.model import first_fault_cost_us
    system = with_loads_in_flight(system, run.loads_in_flight)
    pred = _stream_prediction(run.stream, system, mode, fidelity, opts)
    overhead_ns = system.launch_overhead_us * 1e3
    once_ns = first_fault_cost_us(system.uvm, False) * 1e3 if len(run.stream) else 0.0
    body_ns = float(pred.time_s) * 1e9 - overhead_ns
    scale = (run.pages / run.sample_pages if run.pages and run.sample_pages
             else run.rows / run.sample_rows)
    body_ns = once_ns + max(0.0, body_ns - once_ns) * scale
    time_ns = overhead_ns + body_ns
    return _made(mode, fidelity, system, time_ns, run.rows * run.row_B, bound=pred.bound,
                 base=pred, scale=run.rows / run.sample_rows, kernel_ns=[body_ns],
                 extra={"uvm": pred.extra.get("uvm"), "page_scale": scale,
                        "sample": {"launch_bounds": pred.extra.get("launch_bounds", [])}})


def _cpu_gather(run: Gather, system, fidelity) -> Prediction:
    from hostlink.model.cpu_gather import cpu_gather_time
    from hostlink.model.runs import _made
    time_ns, bound, terms = cpu_gather_time(system, run.rows, run.row_B, run.host_threads)
    return _made("cpu_gather", fidelity, system, time_ns, run.rows * run.row_B, bound=bound,
                 kernel_ns=[terms["copy"]],
                 extra={"cpu_gather_ns": {k: v for k, v in terms.items() if k != "dram_B"},
                        "host_dram_B": terms["dram_B"], "launch_bounds": [bound]})


def predict_gather(run: Gather, system, mode: str, fidelity: str, opts: dict) -> Prediction:
    """Prediction of a gather on a resolved system (see the module notes)."""
    if run.sample_rows < 1 or run.rows < 1 or (not len(run.stream) and mode != "cpu_gather"):
        raise HostlinkError("gather: the workload has no sampled rows to time")
    if mode == "cpu_gather":
        return _with_counts(_cpu_gather(run, system, fidelity), run, mode)
    if mode in ("uvm", "uvm_readmostly"):
        return _with_counts(_first_touch(run, system, mode, fidelity, opts), run, mode)
    from hostlink.model.runs import _sampled
    stream_mode = "device" if mode == "uvm_warm" else mode
    sampled = SampledRun(stream=run.stream, full_B=float(run.rows * run.row_B),
                         sample_B=float(run.sample_rows * run.row_B),
                         loads_in_flight=run.loads_in_flight)
    pred = _sampled(sampled, system, stream_mode, fidelity, opts)
    pred = _with_cold_walks(pred, run, system, mode)
    return _with_counts(replace(pred, bound=_behind_link(pred)), run, mode)


def _with_cold_walks(pred: Prediction, run: Gather, system, mode: str) -> Prediction:
    """``pred`` with the cold page-table fetches of a run that starts with its L2 flushed
    (zero-copy: a pinned or registered table;
    :func:`~hostlink.model.translation.cold_span_time_ns`), added to its kernel time."""
    from hostlink.model.translation import cold_span_time_ns
    if not run.l2_flushed or mode != "zerocopy":
        return pred
    cold_ns = cold_span_time_ns(run.table_spans, run.table_B, system.translation)
    if cold_ns <= 0:
        return pred
    time_s = pred.time_s + cold_ns * 1e-9
    kernel_s, launch_s = list(pred.per_launch_kernel_s), list(pred.per_launch_time_s)
    for column in (kernel_s, launch_s):
        if column:
            column[0] += cold_ns * 1e-9
    return replace(pred, time_s=time_s, bw_GBps=run.rows * run.row_B / (time_s * 1e9),
                   per_launch_kernel_s=kernel_s, per_launch_time_s=launch_s,
                   extra=dict(pred.extra, cold_span_ns=cold_ns))


def _behind_link(pred: Prediction) -> str:
    """The analytic sample's bound, with a latency chain that only waits behind the
    link term's busy phase (within 1% of it) named after the link term's own bound
    (the analytic model's least: the link, tags, translation, the host's DRAM)."""
    sample = pred.extra.get("sample") or {}
    terms, link_bound = sample.get("kernel_terms_ns"), sample.get("link_bound")
    if pred.bound != "latency" or not terms or not link_bound:
        return pred.bound
    link, chain = sum(terms.get("link", [])), sum(terms.get("latency", []))
    return link_bound if chain > 0 and link >= 0.99 * chain else pred.bound
