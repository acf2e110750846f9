"""Predictions of the workloads described beyond a request stream.

:func:`hostlink.model.predict.predict` hands the workloads of
:data:`hostlink.model.workload.WORKLOADS` to :func:`predict_workload`, which times
each with the request-stream model and what the description adds:

- :class:`~hostlink.model.workload.SampledRun`: the stream's steady-state bandwidth
  (its loads' bytes over its kernel time, without the launch's own costs) stands for
  the run: launch overhead plus the run's bytes over that bandwidth, and at least the
  time its loads' hashes take (:func:`hostlink.model.kernel_costs.hashed_lines_floor_ns`);
- :class:`~hostlink.model.workload.FirstTouch`: the prefix's time beyond the launch
  overhead scales with the buffer, all but the run's one-off first fault
  (:func:`hostlink.model.uvm.model.first_fault_cost_us`); a prefetched buffer adds
  :func:`hostlink.model.uvm.prefetch_time_s` before the kernel; a read split over
  launches reports each launch as its event pair times it (kernel plus launch
  overhead);
- :class:`~hostlink.model.workload.PointerChase`: :mod:`hostlink.model.chase`;
- :class:`~hostlink.model.workload.Copy`: :mod:`hostlink.model.copy_engine`;
- :class:`~hostlink.model.workload.LaunchGrid`: ``launch_ns + max(work + shared writes
  x shared_write_ns, ctas x cta_dispatch_ns)`` (as
  :func:`hostlink.model.predict.launch_floor`), the work the sampled CTAs' device
  time scaled to the grid;
- :class:`~hostlink.model.workload.Gather`: :mod:`hostlink.model.gather_run`;
- :class:`~hostlink.model.workload.HostRead`: host threads reading rows
  (:func:`hostlink.model.cpu_gather.host_read_time`);
- :class:`~hostlink.model.workload.HostLoopRun`: the loop's time outside its walks
  (:func:`hostlink.model.host_loop.loop_gap_ns`) plus the walks as their events time
  them (``walk_us`` plus an empty launch's ``gpu.launch_ns``).

Assumptions: a sample holds every warp of the grid and enough loads per warp to reach
its steady state; what a kernel spends beyond its memory traffic is known only where
its description says so (hashed lines).
"""
from __future__ import annotations

import numpy as np

from hostlink.model.errors import HostlinkError
from hostlink.model.result import Prediction
from hostlink.model.workload import (Copy, FirstTouch, Gather, HostLoopRun, HostRead,
                                     LaunchGrid, PointerChase, SampledRun)

UVM_MODES = ("uvm", "uvm_readmostly")


def with_loads_in_flight(system, loads_in_flight: int):
    """``system`` with the kernel's instructions in flight per warp."""
    from hostlink.model.config import system_with
    if loads_in_flight == system.gpu.loads_in_flight_per_warp:
        return system
    return system_with(system, {"gpu.loads_in_flight_per_warp": int(loads_in_flight)})


def without_launch(system, keep_dispatch: bool = False):
    """``system`` without the launch's own costs (``gpu.launch_ns``,
    ``gpu.cta_dispatch_ns``): for the steady state of a sample and for time measured
    inside a kernel. ``keep_dispatch``: keep ``gpu.cta_dispatch_ns``, with which the
    discrete-event engines pace a launch's CTAs (for the launches of a traversal)."""
    from hostlink.model.config import system_with
    drop = {"gpu.launch_ns": 0.0}
    if not keep_dispatch:
        drop["gpu.cta_dispatch_ns"] = 0.0
    if all(getattr(system.gpu, k.split(".")[1]) == 0 for k in drop):
        return system
    return system_with(system, drop)


def _kernel_system(system, workload, mode: str):
    """The system a workload's kernel runs on and the stream model's mode: its loads in
    flight, and managed memory left on the host translated as such."""
    system = with_loads_in_flight(system, getattr(workload, "loads_in_flight", 1))
    if mode == "uvm_accessedby":
        from hostlink.model.translation import managed_host_view
        return managed_host_view(system), "zerocopy"
    return system, mode


def _stream_prediction(stream, system, mode, fidelity, opts, back_to_back=False,
                       managed=None):
    from hostlink.model.predict import predict
    return predict(stream, system, mode=mode, fidelity=fidelity, back_to_back=back_to_back,
                   managed=managed, **opts)


def _made(mode, fidelity, system, time_ns: float, useful_B: float, *, bound: str,
          base: Prediction | None = None, scale: float = 1.0, per_launch_ns=None,
          kernel_ns=None, extra: dict | None = None) -> Prediction:
    """A Prediction of a described workload: its time and bytes, the traffic counts of
    the stream prediction ``base`` scaled by ``scale`` (the sample's share of the run)."""
    time_s = time_ns * 1e-9
    per_launch = [time_s] if per_launch_ns is None else [t * 1e-9 for t in per_launch_ns]
    kernel = per_launch if kernel_ns is None else [t * 1e-9 for t in kernel_ns]
    nan = float("nan")
    counts = {"requests_by_size_B": {}, "requests": 0, "requested_B": 0, "wire_B_down": 0.0,
              "wire_B_up": 0.0, "dram_B": 0, "outstanding_mean": nan, "outstanding_peak": nan,
              "read_amplification": 0.0, "link_bw_GBps": 0.0}
    if base is not None:
        counts.update(
            requests_by_size_B={k: int(round(v * scale)) for k, v in
                                base.requests_by_size_B.items()},
            requests=int(round(base.requests * scale)),
            requested_B=int(round(base.requested_B * scale)),
            wire_B_down=base.wire_B_down * scale, wire_B_up=base.wire_B_up * scale,
            dram_B=int(round(base.dram_B * scale)), outstanding_mean=base.outstanding_mean,
            outstanding_peak=base.outstanding_peak,
            read_amplification=base.read_amplification,
            link_bw_GBps=base.requested_B * scale / time_ns if time_ns > 0 else 0.0)
    return Prediction(mode=mode, fidelity=fidelity, system=system.name, time_s=time_s,
                      bw_GBps=useful_B / time_ns if time_ns > 0 else 0.0,
                      useful_B=int(round(useful_B)), bound=bound, per_launch_time_s=per_launch,
                      per_launch_kernel_s=kernel, extra=dict(extra or {}), **counts)


def _sampled(run: SampledRun, system, mode, fidelity, opts) -> Prediction:
    from hostlink.model.kernel_costs import hashed_lines_floor_ns

    system, stream_mode = _kernel_system(system, run, mode)
    pred = _stream_prediction(run.stream, without_launch(system), stream_mode, fidelity, opts)
    kernel_ns = float(np.sum(np.asarray(pred.per_launch_kernel_s, dtype=np.float64) * 1e9))
    if kernel_ns <= 0:
        raise HostlinkError("sampled run: the model predicted no time")
    bw = run.sample_B / kernel_ns                      # B/ns = GB/s
    host_B = float(pred.host_bytes_B or 0.0)
    host_GBps = host_B / kernel_ns if host_B > 0 else None
    traffic_ns = run.full_B / bw
    floor_ns = hashed_lines_floor_ns(run, system, stream_mode, bw, host_GBps)
    body_ns = max(traffic_ns, floor_ns)
    overhead_ns = system.launch_overhead_us * 1e3
    time_ns = overhead_ns + body_ns
    bound = "hashed_lines" if floor_ns > traffic_ns else pred.bound
    return _made(mode, fidelity, system, time_ns, run.full_B, bound=bound, base=pred,
                 scale=run.full_B / run.sample_B if run.sample_B else 1.0,
                 kernel_ns=[body_ns],
                 extra={"sample": {"kernel_s": kernel_ns * 1e-9, "bw_GBps": bw,
                                   "bound": pred.bound,
                                   "launch_bounds": pred.extra.get("launch_bounds", []),
                                   "kernel_terms_ns": pred.extra.get("kernel_terms_ns"),
                                   "link_bound": (pred.extra.get("analytic") or {}).get("bound")},
                        "hashed_lines_floor_s": floor_ns * 1e-9})


def _first_touch(run: FirstTouch, system, mode, fidelity, opts) -> Prediction:
    system, stream_mode = _kernel_system(system, run, mode)
    pred = _stream_prediction(run.stream, system, stream_mode, fidelity, opts,
                              back_to_back=run.back_to_back, managed=run.managed)
    overhead_ns = system.launch_overhead_us * 1e3
    body_ns = float(pred.time_s) * 1e9 - overhead_ns
    scale = run.full_B / run.sample_B if run.sample_B else 1.0
    if scale != 1.0:
        # a prefix stands for the buffer: its per-line time scales, the run's one-off
        # first fault (with the first batch) does not
        once_ns = 0.0
        if stream_mode in UVM_MODES and len(run.stream):
            from hostlink.model.uvm.model import first_fault_cost_us, largest_buffer_B
            once_ns = first_fault_cost_us(system.uvm, run.back_to_back,
                                          largest_buffer_B(run.managed)) * 1e3
        body_ns = once_ns + (body_ns - once_ns) * scale
    prefetch_ns = 0.0
    if run.prefetch:
        from hostlink.model.uvm import prefetch_time_s
        prefetch_ns = prefetch_time_s(run.size_B, system) * 1e9
    time_ns = overhead_ns + body_ns + prefetch_ns
    kernel_per = np.asarray(pred.per_launch_kernel_s, dtype=np.float64) * 1e9
    if run.back_to_back and len(kernel_per) > 1:
        # each launch as its event pair times it: its kernel time and the launch overhead
        per_launch = (kernel_per + overhead_ns).tolist()
    else:
        per_launch = [time_ns - prefetch_ns]
    return _made(mode, fidelity, system, time_ns, run.size_B, bound=pred.bound, base=pred,
                 scale=scale, per_launch_ns=per_launch,
                 kernel_ns=kernel_per.tolist() if len(per_launch) > 1 else [body_ns],
                 extra={"prefetch_s": prefetch_ns * 1e-9,
                        "kernel_with_launch_s": (time_ns - prefetch_ns) * 1e-9,
                        **({"uvm": pred.extra["uvm"]} if "uvm" in pred.extra else {})})


def _chase(run: PointerChase, system, mode, fidelity, opts) -> Prediction:
    from hostlink.model.chase import device_chase_ns, host_chase_ns

    if run.levels is not None:          # device memory: one dependent step at a time
        timed_ns = device_chase_ns(system.gpu, run.levels, atomic=run.atomic, lanes=run.lanes,
                                   warps=run.warps)
    else:
        if run.stream is None:
            raise HostlinkError("pointer chase: give its stream (host) or levels (device)")
        system, stream_mode = _kernel_system(system, run, mode)
        missed = int(np.count_nonzero(np.asarray(run.stream.launch) == run.timed_launch))
        if missed > run.steps:
            host_chase_ns(0.0, run.steps, missed, system.gpu)      # raises
        miss_ns = 0.0
        if missed:
            pred = _stream_prediction(run.stream, without_launch(system), stream_mode,
                                      fidelity, opts)
            if len(pred.per_launch_kernel_s) <= run.timed_launch:
                raise HostlinkError("pointer chase: the model returned no time for the "
                                    "timed launch")
            miss_ns = float(pred.per_launch_kernel_s[run.timed_launch] * 1e9)
        timed_ns = host_chase_ns(miss_ns, run.steps, missed, system.gpu)
    return _made(mode, fidelity, system, timed_ns, float(run.load_B * run.steps),
                 bound="latency", extra={"step_ns": timed_ns / run.steps})


def _copy(run: Copy, system, mode, fidelity, opts) -> Prediction:
    from hostlink.model.copy_engine import copy_time_ns
    time_ns = copy_time_ns(system, run.size_B, run.to_device)
    return _made(mode, fidelity, system, time_ns, run.size_B, bound="copy_engine")


def _launch_grid(run: LaunchGrid, system, mode, fidelity, opts) -> Prediction:
    work_ns = 0.0
    if run.stream is not None:
        kernel_system, _ = _kernel_system(system, run, "device")
        pred = _stream_prediction(run.stream, without_launch(kernel_system), "device",
                                  fidelity, opts)
        scale = run.ctas / run.sample_ctas if run.sample_ctas else 1.0
        work_ns = float(np.sum(np.asarray(pred.per_launch_kernel_s) * 1e9)) * scale
    gpu = system.gpu
    dispatch_ns = run.ctas * gpu.cta_dispatch_ns
    shared_ns = run.shared_writes * gpu.shared_write_ns
    time_ns = max(work_ns + shared_ns, dispatch_ns) + gpu.launch_ns
    if time_ns <= 0:
        raise HostlinkError("launch: the model predicted no time (gpu.launch_ns and "
                            "gpu.cta_dispatch_ns are 0: the launch is not modelled)")
    bound = ("cta_dispatch" if dispatch_ns >= work_ns + shared_ns
             else "shared_writes" if shared_ns >= work_ns else "device")
    return _made(mode, fidelity, system, time_ns, 0.0, bound=bound,
                 extra={"ns_per_cta": time_ns / run.ctas})


def _host_loop(run: HostLoopRun, system, mode, fidelity, opts) -> Prediction:
    from hostlink.model.host_loop import LOOPS, loop_gap_ns, parse_loop
    if run.loop not in LOOPS:
        raise HostlinkError(f"unknown host loop '{run.loop}' (known: {', '.join(LOOPS)})")
    gap_ns = loop_gap_ns(system, run.loop, run.vertices, run.iterations)
    walks = run.iterations * sum(1 for i in parse_loop(run.loop) if i.op == "walk")
    kernel_ns = walks * (run.walk_us * 1e3 + system.gpu.launch_ns)
    return _made(mode, fidelity, system, gap_ns + kernel_ns, 0.0, bound="host_loop",
                 kernel_ns=[kernel_ns],
                 extra={"gap_per_iteration_ns": gap_ns / run.iterations})


def _gather(run, system, mode, fidelity, opts) -> Prediction:
    from hostlink.model.gather_run import predict_gather
    return predict_gather(run, system, mode, fidelity, opts)


def _host_read(run: HostRead, system, mode, fidelity, opts) -> Prediction:
    from hostlink.model.cpu_gather import host_read_time
    time_ns, bound, terms = host_read_time(system, run.rows, run.row_B, run.threads,
                                           copy=run.copy)
    return _made(mode, fidelity, system, time_ns, run.rows * run.row_B, bound=bound,
                 kernel_ns=[0.0],
                 extra={"host_read_ns": {k: v for k, v in terms.items() if k != "dram_B"},
                        "host_dram_B": terms["dram_B"], "launch_bounds": [bound]})


_TIMERS = {Gather: _gather, HostRead: _host_read, SampledRun: _sampled, FirstTouch: _first_touch,
           PointerChase: _chase, Copy: _copy, LaunchGrid: _launch_grid, HostLoopRun: _host_loop}


def predict_workload(workload, system, mode: str, fidelity: str, **opts) -> Prediction:
    """Prediction of a described workload on a resolved system (``opts``: the stream
    model's ``engine`` and ``nbins``)."""
    return _TIMERS[type(workload)](workload, system, mode, fidelity, opts)
