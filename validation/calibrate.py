"""``hostlink validate calibrate``: fit a system's device-memory latencies, link, translation
and UVM parameters to microbenchmark measurements, and nothing else.

Calibration only ever looks at microbenchmark cases (``micro/...``); the
traversal cases it is later judged on are never read. Each step fits a few
config keys so that the predicted twins (:mod:`hostlink.validation.twins`) of
one set of microbenchmark groups match their measured medians, by
``scipy.optimize.least_squares`` on the log ratio predicted / measured (a
robust soft-L1 loss, so a few cases the model cannot represent do not drag
the fit), after a coarse scan of the parameter range. The measurements behind
each step, and the values fitted on the committed runs, are in the
experiments' folders (``validation/experiments/<experiment>/``, named below):

0. ``gpu.launch_ns`` and ``gpu.cta_dispatch_ns`` from empty kernels over grids of 1
   to 2^21 CTAs (``micro/launch/empty``): a launch takes a fixed time plus one
   dispatch interval per CTA (:func:`hostlink.model.predict.launch_floor`); the
   launches whose warps each load a device word (``micro/launch/label``) are held
   out;
0b. ``gpu.shared_write_ns`` from launches whose warps each write one word that all
   of them share (``micro/launch/flag``, the ``flag_writes`` experiment): the L2
   serves such writes one after another, so a launch lasts ``launch_ns`` plus the
   longer of its dispatch and its writes (:func:`hostlink.model.predict.launch_floor`).
   Fitted on reductions and stores by at most half the grid's warps; the warps
   that write both words, every warp of the grid and words of their own are held
   out. The traversal twins charge every launch's edge counter and ``changed``
   flag with it (:mod:`hostlink.traces.shared_writes`);
1. ``gpu.l1_hit_ns``, ``gpu.device_lat_ns`` (a load the L2 serves) and
   ``gpu.dram_lat_ns`` from the device pointer chase (``micro/ptr_chase/device``):
   each chase's timed loads replayed through the GPU's L1 and L2 with the
   program's flushes (:func:`hostlink.validation.twins.device_chase_levels`) take
   the latency of the level that served them
   (:mod:`hostlink.model.device_memory`), so the time is linear in the three and
   the start is a non-negative least-squares solution. The step runs on a run
   whose device chases include ``ld.cg`` ones (the ``launch_latency``
   experiment's latency sweep: the L1 bypassed beside the default operator);
   other runs' device chases are held out and judged. ``gpu.device_lat_ns`` is
   also what every device request of the traversal twins costs (their device
   arrays fit the L2);
1b. ``gpu.atomic_extra_ns`` and ``gpu.atomic_spread_ns`` from device chases whose
   every step is an ``atomicMin`` that returns the word (``micro/ptr_chase/atomic``,
   the ``atomic_chase`` experiment): a step the L2 serves waits the extra beyond a
   load of it, and a step of k lanes (k lines) waits for its slowest line,
   ``atomic_spread_ns * log2(k)`` more (:func:`hostlink.model.chase.atomic_step_ns`);
   linear in the two, so the start is a non-negative least-squares solution.
   Fitted on chases of 1 and 32 lanes over 64 KiB, with the base system's level
   latencies; the chases of 2 to 16 lanes, over 1 MiB and over fresh nodes are
   held out. The traversal twins charge SSSP's and CC's ``atomicMin`` with them
   (:mod:`hostlink.model.des.events`). Then ``gpu.atomic_sm_ns`` (step
   ``atomic_sm``, the ``atomic_warps`` experiment) from such chases by 16 warps
   of one SM, 32 lanes each: a round takes at least the warps' lines one SM turn
   apart (:func:`hostlink.model.chase.atomic_round_ns`); the other warp counts
   are held out;
1c. ``gpu.device_bw_GBps``, the rate device memory streams at, from warp-coalesced
   reads of device memory at full occupancy (``micro/zc_read/coalesced`` with
   ``memory_mode = device`` and ``warps = 0``): each line costs its bytes over the
   rate at the DRAM (:mod:`hostlink.model.des.inputs`), so where the DRAM binds
   the bandwidth is proportional to it and the start is the base rate times the
   median measured over predicted bandwidth. Assumption: the SMs reach less than
   the datasheet's rate, so the rate is fitted rather than taken from the
   datasheet (the ``device_stream`` experiment). Where the SMs' issue stage binds
   first (``gpu.sm_request_ns``) the rate is not identifiable and keeps its base
   value. The traversal twins' device arrays and migrated pages are read at the
   fitted rate;
2. ``link.rtt_ns`` from the host pointer chase (``micro/ptr_chase/host``): the
   model's latency of one dependent read is rtt_ns plus its serialisation and
   DRAM service (and a page walk on a TLB miss) plus ``gpu.host_path_ns`` (the
   GPU-internal part, held at its base value here), so the fitted rtt_ns is the
   measured latency less those parts; step 4b splits the sum;
3. ``link.dllp_overhead`` from the copy-engine plateau (``micro/memcpy/*``,
   copies of 16 MiB and more; smaller copies carry a setup cost the model
   lacks): the share of link time lost beyond what the packetiser counts.
   Then ``gpu.copy_setup_ns`` from the copies of every size: what each copy
   takes beyond its transfer (small copies are dominated by it);
4. ``link.cpl_buffer_B`` from the bandwidth against warps in flight
   (``micro/zc_warps``): Little's law, the plateau times the round trip, where
   the plateau lies below the link bound. The GPU's limit on reads in flight is
   taken as completion bytes (the PCIe completion data credits a requester
   reserves, PCIe Base Spec rev. 5.0 §2.6.1), not a count of reads. 128 B
   reads alone cannot tell the two apart; reads of two 64 B pieces per line
   (warps 64 B off the line) can, and they keep more reads in flight than a
   count fitted on 128 B reads allows, while a byte limit leaves the tags
   (``link.tags``) to bind them (the ``first_run`` and ``cpl_offsets``
   experiments). The count
   ``gpu.max_outstanding_host_reads`` keeps its base value. The same step fits
   ``link.rtt_at_full_link_ns``, the growth of the round trip with the
   link's load (:mod:`hostlink.model.loaded_rtt`), from the
   points below the plateau: the round trip each implies (reads in flight x
   size / bandwidth) against its share of the plateau;
4b. ``gpu.host_path_ns`` from 32 B reads against warps in flight
   (``micro/zc_warps/strided``: one 32 B sector per lane per load), with
   ``gpu.host_path_ns + link.rtt_ns`` kept at what the pointer chase gave: a
   read holds its PCIe tag for ``link.rtt_ns`` only, so where the tags bind the
   plateau is ``tags x 32 B / rtt_ns`` (plus the loaded growth), while one warp
   waits the whole load-to-use latency. 128 B lines cannot tell the two apart
   (768 tags of 128 B outrun the link), 32 B reads can. Only the points where
   the tags bind are used (:func:`_is_tag_bound`);
4c. ``host.serve_GBps``, the rate at which the host serves the 64 B bursts of the
   device's reads, from warp-coalesced reads off the 128 B line from pinned memory
   (``micro/zc_read/coalesced`` with ``offset_B`` not a multiple of 128): every
   offset but 64 B touches three 64 B host lines per 128 B read, and such reads
   run below what the link allows (the ``cpl_offsets`` experiment). The start is
   the largest measured bandwidth times the burst bytes per byte read; a rate
   that fits no better than none (the DRAM's own, the key unset) is not kept.
   The aligned reads are held out;
5. ``translation.tlb_entries`` and ``translation.miss_lat_ns`` from random
   128 B lines over growing regions of host memory (``micro/zc_read/random``): the region
   where bandwidth falls gives the reach (entries x page_B; page_B is kept),
   the depth of the fall the miss cost (``translation.walkers`` is kept: the
   bandwidth fixes only walkers over miss cost). The start is closed-form
   (:func:`hostlink.model.translation.reach_from_two_regions` on the two
   largest regions below the plateau). Pinned and registered memory only: managed
   memory left on the host is fitted apart (5a);
5a. ``translation.managed_walkers`` from random 128 B lines over regions of
   managed memory left on the host (``memory_mode = uvm_accessedby``) beyond
   the reach: the same reach and walk latency, the walks in flight where the
   bandwidth levels (:func:`hostlink.model.translation.managed_host_view`; the
   ``accessedby_reach`` experiment);
5b. ``gpu.random_load_ns`` and ``gpu.random_chain_ns``, the
   read kernel's own time per warp load of its random pattern on an SM and in one
   warp (two 64-bit hashes and a 64-bit modulo pick each line, the modulo a
   called routine), from random lines in device memory (``micro/zc_read/random``
   and ``micro/zc_warps/random`` with ``memory_mode = device``, the ``hot_lines``
   experiment), which the caches serve at the SMs' issue rate whatever the region
   at full occupancy and at one warp's dependent chain with one warp per SM; the
   same kernel's host reads that hit in the L1 are bounded by them
   (:func:`hostlink.model.kernel_costs.hashed_lines_floor_ns`). A run without
   such cases keeps the base values (0: no bound);
5c. ``gpu.cv_line_ns`` and ``gpu.cv_line_gap_ns``: ``ld.cv``
   reads of one host line do not overlap, and a read holds its line for
   ``cv_line_ns`` (at least the host round trip) plus the gap for every line read at
   once. From random ``ld.cv`` lines over host regions of at most 64 KiB with a warp
   per line (``micro/zc_warps/random``, the ``hot_lines`` experiment); the start is
   a straight line through the per-line hold times. The hold is absolute, not
   added to the round trip, so a later link that refits the round trip keeps it.
   A run without such cases keeps the base values (0: a line's read holds it one
   round trip);
6. ``uvm.batch_base_us`` and the driver's costs ``uvm.block_us`` (per
   VA block a batch services), ``uvm.copy_page_us`` (per page copied to
   the GPU, migrated or read-duplicated) and ``uvm.move_page_us`` (per
   page moved off the host, which the driver unmaps from the CPU; a
   read-duplicated page does not pay it) and ``uvm.first_fault_us``
   (once per run, with its first batch: the intercept of one line per VA
   block against the blocks touched) from UVM first touch without
   advice and with ReadMostly, dense (sequential, random) and sparse (one line
   per 4 KiB page, 64 KiB big page or 2 MiB VA block:
   ``micro/uvm_touch/*/sparse``), on freshly written host pages and on pages
   prefetched back from the GPU (``.../returned``). The step runs only on a run
   that has sparse touch without advice (the ``uvm_sparse`` or ``uvm_sizes``
   experiments): dense touch alone cannot tell a batch's, a block's and a
   page's cost apart, so a run without it keeps the costs of its base
   calibration and its first-touch groups are held out. The service time is
   linear in the costs once the fault dynamics are fixed, so the start is a
   non-negative least-squares solution. The cost is per page, not per
   contiguous run (``uvm.move_run_us`` keeps its base value): the driver copies
   a prefetched run in many small pieces (the ``uvm_counters`` experiment), and
   run costs fitted on first touch leave BFS too fast. The transfer curve keeps
   its base (UVMSmart's, scaled to the link);
7. ``uvm.launches_first_fault_us``, where the run splits first touch over
   launches (``uvm_touch`` with ``launches`` > 1:
   ``micro/uvm_touch/*/launches``, judged on ``first_launch_ms``). Assumption:
   a run's one-off cost is the wake-up of the driver's fault servicing, which
   grows with the host's idle time before the first faulting launch (the
   ``uvm_launches`` experiment). So the single-launch first touch of step 6
   (CPU fill, advice, L2 flush before it) and a traversal (residency reset,
   then launches back to back) pay different ones; a first touch of pages
   returned to the host split over launches that follow at once is a
   traversal's context (the ``uvm_session`` experiment compares the two). The
   two contexts therefore have a key each: the traversal twins and first touch
   split over launches take this one, a single launch step 6's
   ``first_fault_us``, and a record without this key (made before it, or by a
   chain without such a run) gives both contexts ``first_fault_us``
   (:func:`hostlink.model.uvm.model.first_fault_cost_us`); the start is the
   median of measured less predicted first launch without it. Step
   ``uvm_first_launch_one_block`` fits the same cost on the split first touch
   of buffers within one VA block alone (``uvm.launches_one_block_first_fault_us``):
   such buffers pay less (the ``uvm_alloc`` and ``uvm_launches`` experiments),
   and a traversal whose managed arrays each fit one VA block takes it;
8. ``uvm.prefetch_call_us``, ``cudaMemPrefetchAsync``'s fixed cost per
   call, from prefetched first touch of at most 16 MiB
   (``micro/uvm_touch/prefetch/*``, the ``uvm_sizes`` experiment; larger
   prefetches hide it, and a run without small ones keeps the base value and
   holds the prefetch groups out);
9. the host loop's item costs (``host_loop.launch_gap_us``, ``memset_small_us``,
   ``memset_us``, ``copy_us``, ``copy_return_us``, ``sync_us``, ``run_us``) from
   the ``host_loop`` microbenchmark's loops made of parts (walk, sync, a flag's
   reset or read-back, a memset of V bytes, an untimed kernel:
   ``micro/host_loop/parts``): a loop's time between its walks is linear in
   them (:mod:`hostlink.model.host_loop`), so the start is a non-negative
   least-squares solution; the traversal programs' own loops
   (``micro/host_loop/program``) are held out, and their twins' ``time_ms``
   takes these costs.

Every key a step fits is a field of the system config: the calibrated TOML
holds each with its provenance, and is a system like any preset in every
command that takes ``--system``.

A key the data do not constrain (its predictions move by less than
``SENSITIVITY_MIN`` for a 20% change, e.g. the requester limit when the link
saturates first) keeps its base value and the record says so; so do all keys
of a step whose best fit still misses its data by more than
``MAX_FIT_MAPE_PCT`` (the model lacks an effect there, and a forced value
would only spoil the predictions that depend on it). Pointer chases and
random lines prefer the ``cache = cv`` points where a run has both (the
default operator caches host lines in L1/L2, which the twins do not model);
random lines use regions of 1 MiB and more (smaller regions crowd the whole
grid's reads on a few lines, an effect outside the translation model). Every fitted
key's provenance names the results directory, the groups and the fit
residual. The groups used are recorded (``calibration_groups``) so that the
report judges only the others.

A calibration may pool other runs' points with its own (``pool``, the CLI's
``--pool``): each step is then fitted on the points of every run at once, each
point predicted by its own run's twin. This serves a cost that differs from
lease to lease more than within one (a run's one-off fault cost, step 7),
where one lease's value would carry that lease's deviation into every
prediction. Each run weighs the same in the fit and in its residual MAPE,
however many points it has. The record keeps each pooled run's residuals
(``FitRecord.pooled_residuals_pct``) and puts a link per pooled run into its
chain, so that a report of a pooled run judges the points fitted there as
fitted.
"""
from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from hostlink.model.config.schema import UvmConfig
from hostlink.model.errors import HostlinkError
from hostlink.model.geometry import LINE_B
from hostlink.model.host_loop import COST_KEYS as HOST_LOOP_COSTS
from hostlink.validation.calibration_chain import groups_fitted_on, same_run_dir  # noqa: F401
from hostlink.validation.twins import (MicroTwin, RunData, build_micro, load_run, micro_group,
                                       primary_metric, run_loads_in_flight)

SENSITIVITY_MIN = 0.005       # |d log(prediction)| below this for a 20% step: not identifiable
MAX_FIT_MAPE_PCT = 25.0       # a best fit worse than this is rejected: the model lacks an effect
RANDOM_REGION_MIN_B = 1 << 20  # smaller regions crowd the grid's reads on a few lines
MANAGED_REGION_MIN_B = 1 << 30  # managed memory on the host: regions past the TLB's reach
HOT_CV_REGION_MAX_B = 64 << 10  # ld.cv over at most this many lines: the lines bind, not the link
DEFAULT_MAX_REQUESTS = 1 << 17
MEMCPY_PLATEAU_MIN_B = 16 << 20


class CalibrationError(HostlinkError):
    """Measurements that cannot calibrate the requested parameters."""


@dataclass(frozen=True)
class Param:
    key: str                  # dotted config key
    lo: float
    hi: float
    integer: bool = False
    log: bool = True          # fit in log space (positive parameters)
    sens_step: float = 0.05   # linear keys: smallest step of the identifiability test
    zero_neutral: bool = False  # 0 means "no limit" / "no effect": the fit must beat that
    unset_neutral: bool = False  # None (unset) means "no limit": the fit must beat that
    keeps_sum_with: str | None = None  # a key that moves the other way: their sum stays fixed
    partner_min: float = 0.0  # the least value that key may take (bounds this one's range)


@dataclass(frozen=True)
class Step:
    """One calibration step: config keys fitted to cases of some microbenchmark groups."""
    name: str
    params: tuple[Param, ...]
    groups: tuple[str, ...]
    select: Callable[[dict], bool] = lambda p: True
    fidelity: str | None = None       # None: the calibration's fidelity
    scan: int = 9                     # coarse grid points per parameter (when no guess)
    explain: str = ""
    guess: Callable | None = None     # (problem, system, base) -> {key: start value}
    prefer: tuple[str, str] | None = None   # (param, value): use only such cases when any exist
    select_doc: str = ""              # what ``select`` keeps, for the skip reason
    # groups the run must have for the step to run at all; an entry that is a tuple
    # is met by any one of its groups
    requires: tuple[str | tuple[str, ...], ...] = ()
    # a case the run must have among the step's (else the step is skipped and its
    # groups are held out), and what it is, for the skip reason
    requires_case: Callable[[dict], bool] | None = None
    requires_case_doc: str = ""


def _is_pinned_host(p: dict) -> bool:
    """Pinned (cudaHostAlloc) or registered (cudaHostRegister) host memory."""
    return p.get("memory_mode", "zerocopy") in ("zerocopy", "registered")


def _in_device_memory(p: dict) -> bool:
    return p.get("memory_mode") == "device"


def _is_cg_device_chase(p: dict) -> bool:
    """Device chases with ``ld.cg`` (past the L1): a run that has them chases device
    memory to measure its latencies (the ``launch_latency`` manifest)."""
    return _in_device_memory(p) and p.get("cache", "default") == "cg"


def _guess_device_levels(prob, system, base):
    """A device chase's time is its loads per level times the level's latency
    (:func:`hostlink.model.device_memory.dependent_chain_ns`): non-negative least
    squares on the relative errors; a level no chase reaches keeps its base value."""
    from scipy.optimize import nnls

    from hostlink.model.device_memory import LEVEL_KEYS

    counts = np.stack([np.asarray(t.extra["levels"], dtype=float) / max(1, t.steps)
                       for t in prob.twins])
    a = counts / prob.measured_arr[:, None]
    x, _ = nnls(a, np.ones(len(prob.measured_arr)))
    reached = counts.sum(axis=0) > 0
    return {k: float(v) if r and v > 0 else base[k] for k, v, r in zip(LEVEL_KEYS, x, reached)}


#: atomic chases the ``atomic`` step fits: chains the L2 holds from their second lap
#: (64 KiB, 512 lines), by one lane and by a whole warp; the lanes between, the 1 MiB
#: chains and the chains over fresh nodes are held out
ATOMIC_FIT_LANES = (1, 32)
ATOMIC_FIT_MAX_FOOTPRINT_B = 64 << 10


def _is_atomic_fit_point(p: dict) -> bool:
    return (p.get("cache") == "atomic" and int(p.get("lanes", 1)) in ATOMIC_FIT_LANES
            and int(p.get("footprint_B", 0)) <= ATOMIC_FIT_MAX_FOOTPRINT_B)


def _guess_atomic(prob, system, base):
    """An atomic chase's step is a load's of its slowest level, plus ``atomic_extra_ns``
    where the L2 served it, plus ``atomic_spread_ns * log2(lanes)``
    (:func:`hostlink.model.chase.atomic_step_ns`): non-negative least squares
    on the relative errors."""
    from scipy.optimize import nnls

    zero = {"gpu.atomic_extra_ns": 0.0, "gpu.atomic_spread_ns": 0.0}
    rest = prob.predict(system, zero)
    a = np.stack([[float(t.extra["levels"][1]) / max(1, t.steps),
                   float(np.log2(max(1, int(t.extra.get("lanes", 1)))))] for t in prob.twins])
    y = prob.measured_arr - rest
    x, _ = nnls(a / prob.measured_arr[:, None], y / prob.measured_arr)
    return {"gpu.atomic_extra_ns": float(x[0]), "gpu.atomic_spread_ns": float(x[1])}


#: atomic chases the ``atomic_sm`` step fits: 16 warps of one SM, 32 lines each (twice
#: as long a round as one warp's; up to 8 warps take no longer: atomic_warps)
ATOMIC_SM_FIT_WARPS = 16


def _is_atomic_sm_fit_point(p: dict) -> bool:
    return (p.get("cache") == "atomic" and int(p.get("warps", 1)) == ATOMIC_SM_FIT_WARPS
            and int(p.get("lanes", 1)) == 32)


def _guess_atomic_sm(prob, system, base):
    """A round of W warps' atomics of k lines takes at least W x k SM turns: the median
    of the measured step over the lines."""
    per_line = [m / (int(t.extra.get("warps", 1)) * int(t.extra.get("lanes", 1)))
                for m, t in zip(prob.measured_arr, prob.twins)]
    return {"gpu.atomic_sm_ns": float(np.median(per_line))}


def _guess_launch(prob, system, base):
    """Empty launches take ``launch_ns + ctas x cta_dispatch_ns``: a line through the
    measured times (least squares, both coefficients kept positive)."""
    ctas = np.asarray([float(t.extra["ctas"]) for t in prob.twins])
    y = prob.measured_arr * 1e3                                   # us -> ns
    a = np.stack([np.ones_like(ctas), ctas], axis=1) / y[:, None]  # relative errors
    from scipy.optimize import nnls
    x, _ = nnls(a, np.ones_like(y))
    return {"gpu.launch_ns": max(1.0, float(x[0])), "gpu.cta_dispatch_ns": max(1e-3, float(x[1]))}


def _is_shared_write_fit_point(p: dict) -> bool:
    """Launches whose writing warps each write one shared word (a reduction or a store)
    and at most half the grid's warps write: where every warp of a CTA stores to one
    word at once, the SM's stores of it combine (the ``flag_writes`` experiment)."""
    warps = int(p.get("ctas", 1)) * int(p.get("threads_per_cta", 256)) // 32
    return p.get("write") in ("red", "store") and 0 < int(p.get("writers", 0)) <= warps // 2


def _guess_shared_writes(prob, system, base):
    """The measured time beyond the same launch with no shared write, over the writes:
    the median of the points where the writes outlast the grid's dispatch."""
    pred0 = prob.predict(system, {"gpu.shared_write_ns": 0.0}) * 1e3      # us -> ns
    y = prob.measured_arr * 1e3
    n = np.asarray([float(t.workload.shared_writes) for t in prob.twins])
    per = (y - pred0) / np.maximum(n, 1.0)
    keep = (n > 0) & (y > pred0)
    return {"gpu.shared_write_ns": float(np.median(per[keep])) if keep.any() else 0.5}


HOST_LOOP_KEYS = tuple(f"host_loop.{k}" for k in HOST_LOOP_COSTS)


def _guess_host_loop(prob, system, base):
    """A loop's gap per iteration is linear in the item costs
    (:func:`hostlink.model.host_loop.loop_terms`): non-negative least squares on the
    relative errors; a cost no loop carries keeps its base value."""
    from scipy.optimize import nnls

    from hostlink.model.host_loop import loop_terms

    rows, known = [], []
    for t in prob.twins:
        x = t.extra
        per_iter, per_run, iter_ns = loop_terms(x["loop"], x["vertices"], system)
        n = x["iterations"]
        rows.append((n * per_iter + per_run) / n)
        known.append(iter_ns * 1e-3)
    a = np.asarray(rows)
    y = prob.measured_arr - np.asarray(known)
    sol, _ = nnls(a / prob.measured_arr[:, None], y / prob.measured_arr)
    used = a.sum(axis=0) > 0
    return {f"host_loop.{k}": float(v) if u else base[f"host_loop.{k}"]
            for k, v, u in zip(HOST_LOOP_COSTS, sol, used)}


HOST_READ_KEYS = ("host.cpu_load_lat_ns", "host.cpu_line_ns", "host.cpu_stream_line_ns",
                  "host.cpu_thread_load", "host.cpu_dram_GBps")


def _guess_host_read(prob, system, base):
    """Least squares on the relative errors of the closed-form thread and DRAM terms
    (:func:`hostlink.model.cpu_gather.read_terms_ns`), from the base values and the
    fastest DRAM traffic a case reached as the DRAM cap; the step then refines it."""
    from scipy.optimize import least_squares

    from hostlink.model.cpu_gather import read_terms_ns

    start = dict(base)
    # the cap starts at the fastest DRAM traffic a case reached (B / ns = GB/s)
    start["host.cpu_dram_GBps"] = max(
        read_terms_ns(system, t.workload.rows, t.workload.row_B, t.workload.threads,
                      copy=t.workload.copy)["dram_B"] / (t.workload.rows * t.workload.row_B
                                                         / float(bw))
        for t, bw in zip(prob.twins, prob.measured_arr))
    start["host.cpu_thread_load"] = max(start["host.cpu_thread_load"], 0.01)
    x0 = np.log([start[k] for k in HOST_READ_KEYS])

    def rel(x):
        values = dict(zip(HOST_READ_KEYS, np.exp(x).tolist()))
        return np.log(prob.predict(system, values) / prob.measured_arr)

    sol = least_squares(rel, x0, max_nfev=400)
    return dict(zip(HOST_READ_KEYS, np.exp(sol.x).tolist()))


def _guess_additive(key: str):
    """Latency-like keys: the prediction moves one for one with the key."""
    def guess(prob, system, base):
        pred = prob.predict(system, {})
        return {key: base[key] + float(np.median(prob.measured_arr - pred))}
    return guess


def _guess_copy_setup(prob, system, base):
    """A copy's time is its setup plus its transfer: the median of measured less
    predicted time (size over bandwidth) moves the setup one for one."""
    size = np.asarray([float(t.size_B) for t in prob.twins])
    extra = size / prob.measured_arr - size / prob.predict(system, {})      # B / (B/ns) = ns
    return {"gpu.copy_setup_ns": max(1.0, base["gpu.copy_setup_ns"] + float(np.median(extra)))}


def _guess_dllp(prob, system, base):
    """Bandwidth scales with the link time left, 1 - dllp - skp."""
    from hostlink.model.pcie import spec
    skp = float(spec.skp_overhead(system.link.gen))
    ratio = float(np.median(prob.measured_arr / prob.predict(system, {})))
    left = (1.0 - base["link.dllp_overhead"] - skp) * ratio
    return {"link.dllp_overhead": min(0.5, max(0.0, 1.0 - skp - left))}


def _guess_requester(prob, system, base):
    """Little's law on the highest measured bandwidth: bytes in flight = bw x RTT; and
    below the plateau the round trip each point implies, reads x size / bw, against
    its share of the plateau (the link's load): the growth at full load."""
    i = int(np.argmax(prob.measured_arr))
    out = {"link.cpl_buffer_B": max(1, int(round(prob.measured_arr[i] * system.link.rtt_ns)))}
    plateau = prob.measured_arr[i]
    load, rtt = [], []
    for t, bw in zip(prob.twins, prob.measured_arr):
        if bw < 0.9 * plateau and t.stream is not None and len(t.stream):
            n = float(t.extra.get("warps", 0)) * int(t.params.get("unroll", 1) or 1)
            size = float(np.mean(t.stream.size_B))
            load.append(bw / plateau)
            rtt.append(n * size / bw)                     # B / (B/ns) = ns
    if len(load) >= 2:
        x, y = np.asarray(load), np.asarray(rtt) - system.link.rtt_ns
        out["link.rtt_at_full_link_ns"] = max(0.0, float(np.dot(x, y) / np.dot(x, x)))
    return out


#: 32 B-read points that inform the tag window: past the knee (warps) and with loads
#: in flight (unroll) enough that the tags bind.
TAG_WINDOW_MIN_WARPS = 264
TAG_WINDOW_MIN_UNROLL = 4


def _is_tag_bound(p: dict) -> bool:
    """Points where the tags bind: at least two warps per SM of a 132-SM GPU and four
    loads in flight per thread. Below the knee the bandwidth follows the whole
    load-to-use latency, which the pointer chase already fixes, and with one load in
    flight the twins sample too few of each warp's loads to see its L1 hits (their
    request cap), so those points would only blur the split."""
    return (int(p.get("warps", 0) or 0) >= TAG_WINDOW_MIN_WARPS
            and int(p.get("unroll", 1) or 1) >= TAG_WINDOW_MIN_UNROLL)


def _guess_tag_window(prob, system, base):
    """The plateau of 32 B reads is the tag window's: ``reads in flight x size / window``
    with the reads in flight the least of the tags, the GPU's count limit and its
    completion bytes; the GPU-internal path is the chase's latency less that window
    (the window's loaded growth is left to the fit)."""
    i = int(np.argmax(prob.measured_arr))
    t = prob.twins[i]
    if t.stream is None or not len(t.stream):
        return {}
    size = float(np.mean(t.stream.size_B))
    # the measured bandwidth counts useful bytes; the link carries whole sectors
    moved_per_useful = float(np.sum(t.stream.size_B)) / t.twin_bytes_B if t.twin_bytes_B else 1.0
    link, gpu = system.link, system.gpu
    reads = float(min(link.tags, gpu.max_outstanding_host_reads or link.tags))
    if link.cpl_buffer_B:
        reads = min(reads, link.cpl_buffer_B / size)
    window = reads * size / (prob.measured_arr[i] * moved_per_useful)   # B / (B/ns) = ns
    total = float(gpu.host_path_ns) + float(link.rtt_ns)
    return {"gpu.host_path_ns": min(max(0.0, total - window), total)}


def _is_misaligned_pinned(p: dict) -> bool:
    """Warp-coalesced reads off the 128 B line from pinned host memory."""
    return (int(p.get("offset_B", 0) or 0) % LINE_B != 0
            and p.get("memory_mode", "zerocopy") == "zerocopy")


def _is_device_stream(p: dict) -> bool:
    """Warp-coalesced reads of device memory with every warp the GPU holds
    (``warps = 0``): a stream the DRAM's rate bounds, not its latency."""
    return (_in_device_memory(p) and p.get("pattern") == "coalesced"
            and int(p.get("warps", 0) or 0) == 0)


def _guess_device_rate(prob, system, base):
    """Where the DRAM binds, the bandwidth is proportional to its rate: the base rate
    times the median of measured over predicted bandwidth."""
    key = "gpu.device_bw_GBps"
    pred = prob.predict(system, {key: base[key]})
    ok = np.isfinite(pred) & (pred > 0)
    if not ok.any():
        return {}
    return {key: float(base[key] * np.median(prob.measured_arr[ok] / pred[ok]))}


def _guess_serve(prob, system, base):
    """Where the host's bursts bind, the bandwidth is the serve rate times the useful
    bytes per burst byte: each case's measured bandwidth over that share bounds the rate
    from below, and the cases that bind give it, so the largest is the start."""
    from hostlink.model import dram as dram_model
    from hostlink.model.workload import SPACE_HOST
    burst_B = int(system.host.burst_B)
    rates = []
    for t, bw in zip(prob.twins, prob.measured_arr):
        if t.stream is None or not len(t.stream) or not t.twin_bytes_B:
            continue
        host = t.stream.space == SPACE_HOST
        touched = dram_model.bursts_touched(t.stream.addr[host], t.stream.size_B[host], burst_B)
        rates.append(float(bw) * float(np.sum(touched)) * burst_B / t.twin_bytes_B)
    return {"host.serve_GBps": max(rates)} if rates else {}


def _guess_random_load(prob, system, base):
    """Random lines in device memory run at the kernel's own rate: at full occupancy
    each SM spends the per-load time on its share of the warp loads (the SMs reading at
    once times a warp load's bytes over the bandwidth), with one warp per SM each warp
    its chain time per load (the warps times a warp load's bytes over the bandwidth);
    the median of each over the points with the most and with the fewest warps."""
    pts = []
    for t, bw in zip(prob.twins, prob.measured_arr):
        warps = int(t.extra.get("warps", 0) or 0) or system.gpu.sm_count
        pts.append((warps, 32 * int(t.params.get("bytes_per_lane", 4)), float(bw)))
    if not pts:
        return {}
    most, fewest = max(w for w, _, _ in pts), min(w for w, _, _ in pts)
    sms = system.gpu.sm_count
    out = {"gpu.random_load_ns":
           float(np.median([min(w, sms) * b / bw for w, b, bw in pts if w == most]))}
    if fewest <= sms:
        out["gpu.random_chain_ns"] = float(
            np.median([w * b / bw for w, b, bw in pts if w == fewest]))
    return out


def _is_hot_cv_point(p: dict) -> bool:
    """Random ``ld.cv`` lines of host memory over at most :data:`HOT_CV_REGION_MAX_B`
    (whose lines, one read each at a time, bind below the link) with at least one warp
    per line (every line has a read waiting: fewer warps measure their own chain)."""
    if _in_device_memory(p) or p.get("cache") != "cv" or p.get("pattern") != "random":
        return False
    region = int(p.get("region_B", 0) or 0)
    warps = int(p.get("warps", 0) or 0)
    return 0 < region <= HOT_CV_REGION_MAX_B and warps >= region // 128


def _guess_cv_lines(prob, system, base):
    """Each of a region's ``L`` lines has one read at a time, so a line's read takes
    ``L x 128 B / bandwidth = hold + gap x L``: least squares over the points (the gap
    0 from a single region)."""
    lines, extra = [], []
    for t, bw in zip(prob.twins, prob.measured_arr):
        n = int(t.params.get("region_B", 0) or 0) // 128
        warps = int(t.extra.get("warps", 0) or 0) or n
        if n > 0 and bw > 0:
            lines.append(float(min(n, warps)))
            extra.append(n * 128 / float(bw))
    if not lines:
        return {}
    x, y = np.asarray(lines), np.asarray(extra)
    if len(set(lines)) > 1:
        gap, hold = np.polyfit(x, y, 1)
    else:
        gap, hold = 0.0, float(np.mean(y))
    return {"gpu.cv_line_ns": float(max(0.0, hold)),
            "gpu.cv_line_gap_ns": float(max(0.0, gap))}


def _guess_translation(prob, system, base):
    """Uniform random lines over regions R: the LRU miss rate is 1 - E page_B / R
    (:func:`hostlink.model.translation.uniform_miss_rate`) and the walkers bound the
    bandwidth at S walkers / (m miss_lat). Two regions below the plateau give the
    reach E page_B from their bandwidth ratio, the larger one the miss cost."""
    from hostlink.model.translation import reach_from_two_regions

    cfg = system.translation
    pts = []
    for t, bw in zip(prob.twins, prob.measured_arr):
        region = int(t.params.get("region_B", 0) or 0)
        if region > 0 and t.stream is not None and len(t.stream):
            pts.append((region, float(bw), float(np.mean(t.stream.size_B))))
    if not pts:
        return {}
    plateau = max(bw for _, bw, _ in pts)
    low = {}
    for region, bw, size in pts:
        if bw < 0.8 * plateau:
            low.setdefault(region, []).append((bw, size))
    if not low:
        return {}
    regions = sorted(low)
    r2 = regions[-1]
    bw2 = float(np.median([b for b, _ in low[r2]]))
    size = float(np.median([z for _, z in low[r2]]))
    entries = base["translation.tlb_entries"]
    if len(regions) >= 2:
        r1 = regions[-2]
        bw1 = float(np.median([b for b, _ in low[r1]]))
        reach = reach_from_two_regions(r1, bw1, r2, bw2)
        if reach is not None:
            entries = max(1.0, reach / cfg.page_B)
    m2 = max(1e-6, 1.0 - entries * cfg.page_B / r2)
    lat = size * cfg.walkers / (m2 * bw2)          # B / (B/ns) = ns
    return {"translation.tlb_entries": entries, "translation.miss_lat_ns": lat}


def _is_managed_host(p: dict) -> bool:
    return p.get("memory_mode") == "uvm_accessedby"


def _is_managed_beyond_reach(p: dict) -> bool:
    """Random lines over managed memory on the host, over at least a GiB (past the
    reach of every fitted TLB so far: about 0.65 GiB on the H100 and H200)."""
    return _is_managed_host(p) and int(p.get("region_B", 0) or 0) >= MANAGED_REGION_MIN_B


def _guess_managed_walkers(prob, system, base):
    """Walker-bound bandwidth is ``S walkers / (m miss_lat)`` with ``m`` the uniform LRU
    miss rate over the region: the walks in flight each region beyond the reach
    needs, their median."""
    from hostlink.model.translation import uniform_miss_rate

    cfg = system.translation
    need = []
    for t, bw in zip(prob.twins, prob.measured_arr):
        region = int(t.params.get("region_B", 0) or 0)
        if region <= 0 or t.stream is None or not len(t.stream):
            continue
        m = uniform_miss_rate(region, cfg.tlb_entries, cfg.page_B)
        if m > 0.1:
            need.append(m * cfg.miss_lat_ns * float(bw) / float(np.mean(t.stream.size_B)))
    if not need:
        return {}
    return {"translation.managed_walkers": float(max(1.0, np.median(need)))}


def _guess_uvm_costs(prob, system, base):
    """The batch service time is linear in the step's costs (per batch, block, copied
    and moved page) once the fault dynamics are fixed (they do not depend on the costs without eviction):
    evaluate the twins at zero and unit costs and solve non-negative least squares on
    the relative errors."""
    from scipy.optimize import nnls

    keys = [p.key for p in prob.step.params]
    zero = {k: 0.0 for k in keys}
    p0 = prob.predict(system, zero)
    cols = []
    for k in keys:
        unit = dict(zero)
        unit[k] = 1.0
        cols.append(prob.predict(system, unit) - p0)
    a = np.stack(cols, axis=1) / prob.measured_arr[:, None]
    rhs = 1.0 - p0 / prob.measured_arr
    x, _ = nnls(a, rhs)
    return {k: float(v) for k, v in zip(keys, x)}


#: first touch without advice and with ReadMostly, on freshly written host pages and on
#: pages prefetched back from the GPU (``/returned``: what a traversal's timed
#: repetitions find; the two measure alike: the uvm_host_state experiment,
#: validation/experiments/uvm_host_state/)
HOST_STATES = ("", "/returned")
UVM_TOUCH_GROUPS = tuple(f"micro/uvm_touch/{advice}/{pattern}{state}"
                         for advice in ("none", "readmostly")
                         for pattern in ("seq", "random", "sparse") for state in HOST_STATES)

#: prefetched first touch, fresh and returned host pages
UVM_PREFETCH_GROUPS = tuple(f"micro/uvm_touch/prefetch/{pattern}{state}"
                            for pattern in ("seq", "random") for state in HOST_STATES)
#: the largest prefetch whose time shows the call's fixed cost (a 16 MiB prefetch
#: moves in about 0.4 ms, so a 0.1 ms cost is a quarter of it; at 64 MiB, 7%)
PREFETCH_CALL_MAX_B = 16 << 20


def _is_small_prefetch(p: dict) -> bool:
    return int(p.get("size_B", 0) or 0) <= PREFETCH_CALL_MAX_B


#: first touch with the read split over launches (uvm_touch launches > 1), judged on its
#: first launch
UVM_LAUNCH_GROUPS = tuple(f"micro/uvm_touch/{advice}/{pattern}{state}/launches"
                          for advice in ("none", "readmostly")
                          for pattern in ("seq", "sparse") for state in HOST_STATES)


def _within_one_va_block(p: dict) -> bool:
    """A managed buffer that lies within one VA block of the driver's (the UVM model's
    ``uvm.va_block_B`` default, 2 MiB)."""
    return 0 < int(p.get("size_B", 0)) <= UvmConfig().va_block_B


def _guess_added_us(key: str):
    """A guess for a cost in us that a group's time (ms) carries one for one (a first
    launch's one-off fault cost, a prefetch call's fixed cost): the median of measured
    less predicted time without it."""
    def guess(prob, system, base):
        pred = prob.predict(system, {key: 0.0})
        return {key: max(0.0, float(np.median(prob.measured_arr - pred)) * 1e3)}
    return guess


# one declaration per step: the steps repeat in shape on purpose
STEPS: tuple[Step, ...] = (
    Step("launch", (Param("gpu.launch_ns", 1.0, 1e6), Param("gpu.cta_dispatch_ns", 1e-3, 1e3)),
         ("micro/launch/empty",), guess=_guess_launch,
         explain="empty kernels against their grid: a fixed time per launch plus a time per "
                 "CTA dispatched"),
    Step("shared_writes", (Param("gpu.shared_write_ns", 1e-3, 1e3),),
         ("micro/launch/flag",), select=_is_shared_write_fit_point,
         select_doc="launches whose writing warps, at most half the grid's, each write one "
                    "shared word",
         requires=("micro/launch/flag",),
         explain="launches whose warps write one shared word (a reduction or a store): the "
                 "L2 serves them one after another, beyond the grid's dispatch",
         guess=_guess_shared_writes),
    Step("device_latency", (Param("gpu.l1_hit_ns", 1.0, 1e4), Param("gpu.device_lat_ns", 1.0, 1e5),
                            Param("gpu.dram_lat_ns", 1.0, 1e5)),
         ("micro/ptr_chase/device",), select=_in_device_memory,
         requires_case=_is_cg_device_chase,
         requires_case_doc="device chases with ld.cg (a device-latency sweep)",
         explain="device pointer chase: each load costs the latency of the level (L1, L2, "
                 "DRAM) that serves it in a replay of the chain through the caches",
         guess=_guess_device_levels),
    Step("atomic", (Param("gpu.atomic_extra_ns", 0.0, 1e4, log=False, sens_step=1.0),
                    Param("gpu.atomic_spread_ns", 0.0, 1e4, log=False, sens_step=1.0)),
         ("micro/ptr_chase/atomic",), select=_is_atomic_fit_point,
         select_doc="atomic chases by 1 and 32 lanes over 64 KiB (the L2 holds them)",
         explain="atomicMin chases (the word left as it is) against loads of the same "
                 "levels: what an atomic the L2 serves adds, and how a warp's atomic grows "
                 "with its lines (per doubling)",
         guess=_guess_atomic),
    Step("atomic_sm", (Param("gpu.atomic_sm_ns", 0.0, 1e3, log=False, sens_step=0.1),),
         ("micro/ptr_chase/atomic",), select=_is_atomic_sm_fit_point,
         select_doc="atomic chases by 16 warps of one SM, 32 lanes each",
         explain="atomic chases by many warps of one SM: the SM lets their lines out one "
                 "turn apart, which binds once the warps' lines outnumber one warp's spread",
         guess=_guess_atomic_sm),
    Step("device_stream", (Param("gpu.device_bw_GBps", 10.0, 1e5),),
         ("micro/zc_read/coalesced",), select=_is_device_stream,
         requires_case=_is_device_stream,
         requires_case_doc="warp-coalesced reads of device memory at full occupancy",
         select_doc="of device memory at full occupancy", guess=_guess_device_rate,
         explain="warp-coalesced reads of device memory by every warp the GPU holds: the "
                 "rate the DRAM streams at, where it binds before the SMs' issue stage"),
    Step("host_round_trip", (Param("link.rtt_ns", 50.0, 1e5),),
         ("micro/ptr_chase/host",), select=_is_pinned_host,
         explain="host pointer-chase latency less the model's serialisation, DRAM and walk parts",
         guess=_guess_additive("link.rtt_ns"), prefer=("cache", "cv")),
    Step("link_efficiency", (Param("link.dllp_overhead", 0.0, 0.6, log=False),),
         ("micro/memcpy/h2d", "micro/memcpy/d2h"),
         select=lambda p: int(p.get("size_B", 0)) >= MEMCPY_PLATEAU_MIN_B, fidelity="analytic",
         explain="copy-engine plateau (copies >= 16 MiB) against the link's TLP capacity",
         guess=_guess_dllp),
    Step("copy_setup", (Param("gpu.copy_setup_ns", 1.0, 1e6),),
         ("micro/memcpy/h2d", "micro/memcpy/d2h"), fidelity="analytic",
         explain="copies of every size: the time each takes beyond its transfer",
         guess=_guess_copy_setup),
    Step("requester_limit", (Param("link.cpl_buffer_B", 256, 1 << 24, integer=True,
                                   zero_neutral=True),
                             Param("link.rtt_at_full_link_ns", 0.0, 1e4, log=False,
                                   sens_step=50.0, zero_neutral=True)),
         ("micro/zc_warps",),
         explain="bandwidth against warps in flight: Little's law on the plateau gives the "
                 "completion bytes the GPU keeps in flight, the round trips below it their "
                 "growth with the reads in flight",
         guess=_guess_requester),
    Step("tag_window", (Param("gpu.host_path_ns", 0.0, 1e5, log=False, sens_step=20.0,
                              keeps_sum_with="link.rtt_ns", partner_min=50.0),),
         ("micro/zc_warps/strided",), guess=_guess_tag_window, select=_is_tag_bound,
         explain="32 B reads against warps in flight: the tags bind for the link round trip "
                 "alone, one warp waits the whole load-to-use latency (their sum kept from "
                 "the pointer chase)"),
    Step("host_serve", (Param("host.serve_GBps", 5.0, 1e4, unset_neutral=True),),
         ("micro/zc_read/coalesced",), select=_is_misaligned_pinned,
         requires_case=_is_misaligned_pinned,
         requires_case_doc="warp-coalesced reads off the 128 B line from pinned host memory",
         select_doc="off the 128 B line, from pinned host memory", guess=_guess_serve,
         explain="warp-coalesced reads off the 128 B line, each touching more 64 B host "
                 "lines per byte than aligned reads: the rate at which the host serves "
                 "the bursts of the device's reads, where that binds below the link"),
    Step("translation", (Param("translation.tlb_entries", 1, 1 << 20, integer=True),
                         Param("translation.miss_lat_ns", 1.0, 1e5)),
         ("micro/zc_read/random",), scan=5, prefer=("cache", "cv"), guess=_guess_translation,
         select=lambda p: (int(p.get("region_B", 0)) >= RANDOM_REGION_MIN_B
                           and _is_pinned_host(p)),
         select_doc=f"over regions of at least {RANDOM_REGION_MIN_B >> 20} MiB of pinned or "
                    "registered host memory",
         explain="random 128 B lines over growing regions: the knee gives the reach, "
                 "the fall the miss cost"),
    Step("managed_translation", (Param("translation.managed_walkers", 1, 1 << 14, integer=True),),
         ("micro/zc_read/random",), prefer=("cache", "cv"), guess=_guess_managed_walkers,
         select=_is_managed_beyond_reach, requires_case=_is_managed_beyond_reach,
         requires_case_doc=f"random lines over at least {MANAGED_REGION_MIN_B >> 30} GiB of "
                           "managed memory left on the host (uvm_accessedby)",
         select_doc=f"over at least {MANAGED_REGION_MIN_B >> 30} GiB of managed memory left "
                    "on the host",
         explain="random 128 B lines over managed memory left on the host (SetAccessedBy), "
                 "beyond the TLB's reach: the walks in flight that keep the bandwidth where "
                 "it levels (the reach and walk latency are pinned memory's)"),
    Step("random_kernel", (Param("gpu.random_load_ns", 0.0, 1e4, log=False,
                                 sens_step=1.0),
                           Param("gpu.random_chain_ns", 0.0, 1e5, log=False,
                                 sens_step=10.0)),
         ("micro/zc_read/random", "micro/zc_warps/random"), select=_in_device_memory,
         requires_case=_in_device_memory,
         requires_case_doc="random lines in device memory (a hot_lines run)",
         select_doc="in device memory", guess=_guess_random_load,
         explain="random lines in device memory, which the caches serve: the read kernel's "
                 "own time per warp load (two 64-bit hashes and a 64-bit modulo pick each "
                 "line) on an SM at full occupancy and in one warp's dependent chain, which "
                 "bound the random pattern wherever its loads hit"),
    Step("cv_lines", (Param("gpu.cv_line_ns", 0.0, 1e5, log=False,
                            sens_step=20.0),
                      Param("gpu.cv_line_gap_ns", 0.0, 1e3, log=False,
                            sens_step=0.2)),
         ("micro/zc_warps/random",), select=_is_hot_cv_point, requires_case=_is_hot_cv_point,
         requires_case_doc="ld.cv reads of few host lines against warps (a hot_lines run)",
         select_doc=f"ld.cv over at most {HOT_CV_REGION_MAX_B >> 10} KiB of host memory with "
                    "a warp per line", guess=_guess_cv_lines,
         explain="random ld.cv lines over small host regions: a line has one read at a "
                 "time, held for a fixed time (at least the round trip) plus a time per line "
                 "read at once"),
    Step("uvm_batches", (Param("uvm.batch_base_us", 0.0, 1e4, log=False, sens_step=10.0),
                         Param("uvm.block_us", 0.0, 1e4, log=False, sens_step=1.0),
                         Param("uvm.copy_page_us", 0.0, 1e3, log=False, sens_step=0.05),
                         Param("uvm.move_page_us", 0.0, 1e3, log=False, sens_step=0.05),
                         Param("uvm.first_fault_us", 0.0, 1e5, log=False, sens_step=20.0)),
         UVM_TOUCH_GROUPS, guess=_guess_uvm_costs,
         requires=(("micro/uvm_touch/none/sparse", "micro/uvm_touch/none/sparse/returned"),),
         explain="UVM first touch, dense and sparse, without advice and with ReadMostly: the "
                 "service time is linear in the per-batch, per-block, per-copied-page and "
                 "per-moved-page costs and a run's one-off first-fault cost"),
    Step("uvm_first_launch", (Param("uvm.launches_first_fault_us", 0.0, 1e5, log=False,
                                    sens_step=20.0),),
         UVM_LAUNCH_GROUPS, guess=_guess_added_us("uvm.launches_first_fault_us"),
         explain="UVM first touch split over launches that follow one another at once, after "
                 "the buffer's pages went to the GPU and back to the host, as a traversal's "
                 "launches find them: the first launch pays the run's one-off cost of waking "
                 "the driver's fault servicing, which differs from a single launch's (the "
                 "uvm_batches value): traversals pay this one"),
    Step("uvm_first_launch_one_block",
         (Param("uvm.launches_one_block_first_fault_us", 0.0, 1e5, log=False,
                sens_step=20.0),),
         UVM_LAUNCH_GROUPS, select=_within_one_va_block, requires_case=_within_one_va_block,
         requires_case_doc="first touch split over launches of a managed buffer within one "
                           "VA block",
         select_doc="of a managed buffer within one VA block",
         guess=_guess_added_us("uvm.launches_one_block_first_fault_us"),
         explain="UVM first touch split over launches, as uvm_first_launch's, of managed "
                 "buffers within one VA block: the first launch's one-off cost there, "
                 "which is smaller than larger buffers' (uvm_alloc, uvm_launches): "
                 "traversals whose managed arrays each fit one VA block pay this one"),
    Step("uvm_prefetch", (Param("uvm.prefetch_call_us", 0.0, 1e5, log=False, sens_step=20.0),),
         UVM_PREFETCH_GROUPS, select=_is_small_prefetch,
         select_doc=f"of at most {PREFETCH_CALL_MAX_B >> 20} MiB",
         guess=_guess_added_us("uvm.prefetch_call_us"),
         explain=f"prefetched first touch of at most {PREFETCH_CALL_MAX_B >> 20} MiB: "
                 "cudaMemPrefetchAsync's fixed cost per call, which larger prefetches hide"),
    Step("host_read", (Param("host.cpu_load_lat_ns", 1.0, 1e5),
                       Param("host.cpu_line_ns", 0.01, 1e4),
                       Param("host.cpu_stream_line_ns", 0.01, 1e4),
                       Param("host.cpu_thread_load", 1e-4, 10.0),
                       Param("host.cpu_dram_GBps", 1.0, 1e5, unset_neutral=True)),
         ("micro/host_read/sum", "micro/host_read/copy"), guess=_guess_host_read,
         requires=("micro/host_read/copy",),
         explain="host threads summing and copying random rows of growing size, one to "
                 "many threads: the first line's latency per row, the further lines before "
                 "and after the prefetchers stream the row, how threads slow one another, "
                 "and the DRAM rate the threads' copies reach"),
    Step("host_loop", tuple(Param(k, 0.0, 1e4, log=False, sens_step=0.2) for k in HOST_LOOP_KEYS),
         ("micro/host_loop/parts",), guess=_guess_host_loop,
         explain="loops of a walk launch and the stream items a program puts between its "
                 "walks: each item's cost on the GPU's timeline"),
)


@dataclass
class FitRecord:
    name: str
    keys: list[str]
    groups: list[str]
    base: dict[str, float]
    values: dict[str, float]
    identifiable: dict[str, bool]
    n: int
    mape_pct: float                           # pooled: each run weighs the same
    base_mape_pct: float
    residuals_pct: dict[str, float]           # the run calibrated: its cases' errors
    evaluations: int
    note: str = ""
    method: str = ""
    pooled_residuals_pct: dict[str, dict[str, float]] = field(default_factory=dict)
    # per run pooled with it (results directory): its cases' errors

    def mape_by_run(self, results_dir: str) -> dict[str, tuple[int, float]]:
        """Points and MAPE of the fit's residuals per run, the run calibrated first."""
        out = {}
        for where, res in [(results_dir, self.residuals_pct), *self.pooled_residuals_pct.items()]:
            if res:
                out[where] = (len(res), float(np.mean(np.abs(list(res.values())))))
        return out

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


@dataclass
class Calibration:
    system: object                    # the calibrated SystemConfig
    base_system: object
    results_dir: str
    fidelity: str
    fits: list[FitRecord] = field(default_factory=list)
    skipped: list[dict] = field(default_factory=list)
    groups_present: list[str] = field(default_factory=list)
    base_chain: list[dict] = field(default_factory=list)   # the base calibrations, oldest first
    pooled: list[str] = field(default_factory=list)   # runs whose points are pooled with its own

    @property
    def calibration_groups(self) -> list[str]:
        used = []
        for f in self.fits:
            used += [g for g in f.groups if g not in used]
        return used

    @property
    def held_out_groups(self) -> list[str]:
        used = set(self.calibration_groups)
        return [g for g in self.groups_present if g not in used]

    @property
    def chain(self) -> list[dict]:
        """Every calibration this one rests on, oldest first, and itself: the results
        directory, the groups each fitted (a report counts a group as calibration
        where any link fitted it on the run reported) and, per group, the cases its
        fits used (``fitted_cases``; the group's other cases are judged as held out)."""
        pooled = []
        for where in self.pooled:
            cases = self._cases_by_group(lambda f, w=where: f.pooled_residuals_pct.get(w))
            pooled.append({"results_dir": where, "pooled_into": self.results_dir,
                           "calibration_groups": list(cases), "fitted_cases": cases})
        # the pooled runs come before the record's own link: a report reads the last
        # link's cases from the record's fits
        return [*self.base_chain, *pooled, {"results_dir": self.results_dir,
                                            "calibration_groups": self.calibration_groups,
                                            "fitted_cases": self.fitted_cases}]

    @property
    def measured_on(self) -> str:
        """The runs a fit's points come from, as provenance names them."""
        if not self.pooled:
            return self.results_dir
        return f"{self.results_dir} pooled with {', '.join(self.pooled)}"

    @property
    def fitted_cases(self) -> dict[str, list[str]]:
        """Per calibration group, the cases the fits used (their residuals)."""
        return self._cases_by_group(lambda f: f.residuals_pct)

    def _cases_by_group(self, residuals_of: Callable[[FitRecord], dict | None]
                        ) -> dict[str, list[str]]:
        """Per group, sorted, the cases of every fit's residuals ``residuals_of(fit)``
        (one run's): each fit's cases count for each of its groups."""
        out: dict[str, set[str]] = {}
        for f in self.fits:
            residuals = residuals_of(f)
            if residuals:
                for g in f.groups:
                    out.setdefault(g, set()).update(residuals)
        return {g: sorted(c) for g, c in sorted(out.items())}

    def to_dict(self) -> dict:
        return {"results_dir": self.results_dir, "pooled": list(self.pooled),
                "base_system": getattr(self.base_system, "name", ""),
                "calibrated_system": getattr(self.system, "name", ""), "fidelity": self.fidelity,
                "calibration_groups": self.calibration_groups,
                "held_out_groups": self.held_out_groups,
                "chain": self.chain,
                "fits": [f.to_dict() for f in self.fits], "skipped": self.skipped}

    def write(self, toml_path: str | Path, json_path: str | Path | None = None) -> tuple[Path, Path]:
        from hostlink.model.config import write_resolved

        toml_path = Path(toml_path)
        json_path = Path(json_path) if json_path else toml_path.with_name("calibration.json")
        write_resolved(self.system, toml_path)
        json_path.parent.mkdir(parents=True, exist_ok=True)
        json_path.write_text(json.dumps(_clean(self.to_dict()), indent=1) + "\n")
        return toml_path, json_path


def _clean(v):
    if isinstance(v, dict):
        return {str(k): _clean(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_clean(x) for x in v]
    if isinstance(v, (np.floating, np.integer)):
        v = v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def _get(system, key: str):
    """A system key's value; a UVM cost of one context that is unset (None) takes the
    cost it stands in for (:func:`hostlink.model.uvm.model.first_fault_cost_us`)."""
    section, _, name = key.partition(".")
    value = getattr(getattr(system, section), name)
    if value is not None or key not in ("uvm.launches_first_fault_us",
                                        "uvm.launches_one_block_first_fault_us"):
        return value
    from hostlink.model.uvm.model import first_fault_cost_us
    one_block = key == "uvm.launches_one_block_first_fault_us"
    return first_fault_cost_us(system.uvm, True, system.uvm.va_block_B if one_block else None)


def apply_overrides(system, overrides: dict):
    """``system`` with dotted overrides applied."""
    from hostlink.model.config import system_with

    return system_with(system, overrides) if overrides else system


def _base_value(system, p: Param) -> float:
    v = _get(system, p.key)
    if v is None:                     # derived from the spec: start from its derived value
        if p.key in ("host.serve_GBps", "host.cpu_dram_GBps"):   # no limit: the DRAM's rate
            from hostlink.model import dram as dram_model
            return dram_model.served_GBps(system.host)
        if p.key == "link.dllp_overhead":
            from hostlink.model.pcie import spec
            link = system.link
            return float(spec.dllp_overhead(link.gen, link.lanes, link.mps_B, link.uses_flit_mode))
        return p.lo
    return float(v)


class _Problem:
    """Cases of one step with their measured medians and a cached prediction function.

    ``runs``: the run calibrated and any runs pooled with it; ``sources[i]`` is the
    index of the run case ``i`` comes from (0: the run calibrated)."""

    def __init__(self, runs: list[RunData], step: Step, system, fidelity: str,
                 max_requests: int):
        self.step = step
        self.fidelity = step.fidelity or fidelity
        self.cases: list[str] = []
        self.sources: list[int] = []
        self.params: list[dict] = []
        self.metrics: list[str] = []
        self.measured: list[float] = []
        self.twins: list[MicroTwin] = []
        chosen = []
        for i, run in enumerate(runs):
            present = set(run.measured["case"].unique())
            chosen += [(i, c) for c in sorted(run.cases) if c in present
                       and run.cases[c].get("kind") == "micro"
                       and micro_group(run.cases[c]) in step.groups
                       and step.select(run.cases[c])]
        if step.prefer is not None:
            key, value = step.prefer
            preferred = [(i, c) for i, c in chosen if str(runs[i].cases[c].get(key)) == value]
            if preferred:
                chosen = preferred
        medians = {}
        in_flight = {}
        for i, case in chosen:
            run = runs[i]
            if i not in medians:
                medians[i] = run.measured.groupby(["case", "metric"])["value"].median()
                in_flight[i] = run_loads_in_flight(run.path)
            params = run.cases[case]
            metric = primary_metric(params)
            value = medians[i].get((case, metric))
            if value is None or not np.isfinite(value) or value <= 0:
                continue
            self.cases.append(case)
            self.sources.append(i)
            self.params.append(params)
            self.metrics.append(metric)
            self.measured.append(float(value))
            self.twins.append(build_micro(case, params, system,
                                          hints=lambda m, c=case, r=run: r.hint(c, m),
                                          max_requests=max_requests,
                                          loads_in_flight=in_flight[i]))
        self.measured_arr = np.asarray(self.measured)
        # every run weighs the same in a pooled fit, however many points it has (a
        # lease's deviation is one sample of the cost's spread); weights average 1
        src = np.asarray(self.sources, dtype=int)
        per_run = np.bincount(src, minlength=len(runs))
        self.weights = (len(src) / (np.count_nonzero(per_run) * per_run[src]) if len(src)
                        else np.ones(0))
        self.evaluations = 0
        self._memo: dict[tuple, np.ndarray] = {}

    def predict(self, system, overrides: dict) -> np.ndarray:
        key = tuple(sorted(overrides.items()))
        if key in self._memo:
            return self._memo[key]
        sysc = apply_overrides(system, _with_partners(self.step, system, overrides))
        out = np.array([t.predict(sysc, self.fidelity)[m]
                        for t, m in zip(self.twins, self.metrics)])
        self.evaluations += 1
        self._memo[key] = out
        return out


def _with_partners(step: Step, system, overrides: dict) -> dict:
    """``overrides`` with the partner of every key that keeps a sum (``Param.keeps_sum_with``):
    the partner moves by the opposite amount, so the two keys' sum stays the system's."""
    out = dict(overrides)
    for p in step.params:
        if p.keeps_sum_with and p.key in overrides and p.keeps_sum_with not in overrides:
            total = float(_get(system, p.key)) + float(_get(system, p.keeps_sum_with))
            out[p.keeps_sum_with] = total - float(overrides[p.key])
    return out


def _bounded_by_partners(step: Step, system) -> Step:
    """The step with each sum-keeping key's range cut where its partner would fall
    below ``partner_min``."""
    params = []
    for p in step.params:
        if p.keeps_sum_with:
            total = float(_get(system, p.key)) + float(_get(system, p.keeps_sum_with))
            p = dataclasses.replace(p, hi=max(p.lo, min(p.hi, total - p.partner_min)))
        params.append(p)
    return dataclasses.replace(step, params=tuple(params))


def _values(params: tuple[Param, ...], u: np.ndarray, base: dict[str, float]) -> dict:
    out = {}
    for p, x in zip(params, u):
        v = base[p.key] * math.exp(x) if p.log else base[p.key] + x
        v = min(max(v, p.lo), p.hi)
        if not p.log and abs(v - p.lo) < 1e-9 * max(1.0, abs(p.hi)):
            v = p.lo                  # rounding residue of a fit that ends at its bound
        out[p.key] = int(round(v)) if p.integer else float(v)
    return out


def _to_u(p: Param, value: float, b: float) -> float:
    value = min(max(float(value), p.lo), p.hi)
    return math.log(value / b) if p.log else value - b


def _u_bounds(p: Param, b: float) -> tuple[float, float]:
    if p.log:
        return math.log(p.lo / b), math.log(p.hi / b)
    return p.lo - b, p.hi - b


def fit_step(run: RunData | list[RunData], step: Step, system, *, fidelity: str = "des",
             max_requests: int = DEFAULT_MAX_REQUESTS
             ) -> tuple[FitRecord | None, object, str | None]:
    """Fit one step; returns (record or None, updated system, reason when skipped).
    ``run`` may be a list: the run calibrated first, then
    the runs whose points are pooled with its own."""
    from scipy.optimize import least_squares

    runs = list(run) if isinstance(run, (list, tuple)) else [run]
    step = _bounded_by_partners(step, system)
    prob = _Problem(runs, step, system, fidelity, max_requests)
    if not prob.cases:
        which = f" {step.select_doc}" if step.select_doc else ""
        return None, system, f"no measured cases of {', '.join(step.groups)}{which}"
    have = {micro_group(p) for p in prob.params}
    missing = [" or ".join(need) if isinstance(need, tuple) else need for need in step.requires
               if not ({need} if isinstance(need, str) else set(need)) & have]
    if missing:
        return None, system, (f"no measured cases of {', '.join(missing)}, which the step needs "
                              "to separate its keys: kept the base values")
    if step.requires_case is not None and not any(step.requires_case(p) for p in prob.params):
        return None, system, (f"no {step.requires_case_doc}, which the step is fitted on: kept "
                              "the base values, and these cases are held out")
    base = {p.key: _base_value(system, p) for p in step.params}
    for p in step.params:
        if p.log and base[p.key] <= 0:
            base[p.key] = p.lo
    meas = np.log(prob.measured_arr)
    weight = prob.weights
    root_w = np.sqrt(weight)

    def resid(u: np.ndarray) -> np.ndarray:
        pred = prob.predict(system, _values(step.params, u, base))
        with np.errstate(divide="ignore", invalid="ignore"):
            r = np.log(np.maximum(pred, 1e-300)) - meas
        return np.where(np.isfinite(r), r, 50.0)

    def weighted(u: np.ndarray) -> np.ndarray:
        return resid(u) * root_w

    def cost(u: np.ndarray) -> float:
        r = weighted(u)
        return float(np.sum(2.0 * (np.sqrt(1.0 + (r / 0.05) ** 2) - 1.0)))   # soft-L1

    def mape_of(values: dict) -> float:
        return float(np.average(np.abs(prob.predict(system, values) / prob.measured_arr - 1.0),
                                weights=weight)) * 100

    bounds = [_u_bounds(p, base[p.key]) for p in step.params]
    u0 = np.zeros(len(step.params))
    base_cost = cost(u0)
    r_base = resid(u0)
    best_u, best_c = u0.copy(), base_cost
    if step.guess is not None:
        g = step.guess(prob, system, base)
        u = np.array([_to_u(p, g.get(p.key, base[p.key]), base[p.key]) for p in step.params])
        u = np.clip(u, [b[0] for b in bounds], [b[1] for b in bounds])
        c = cost(u)
        if c < best_c:
            best_u, best_c = u, c
    else:
        # coarse scan over the range (log-spaced), one parameter at a time around the best point
        for _ in range(2 if len(step.params) > 1 else 1):
            for i, (lo, hi) in enumerate(bounds):
                for x in np.linspace(lo, hi, step.scan):
                    u = best_u.copy()
                    u[i] = x
                    c = cost(u)
                    if c < best_c - 1e-12:
                        best_u, best_c = u, c
    lo_b = np.array([b[0] for b in bounds])
    hi_b = np.array([b[1] for b in bounds])
    start = np.clip(best_u, lo_b + 1e-9, hi_b - 1e-9)
    sol = least_squares(weighted, start, bounds=(lo_b, hi_b), loss="soft_l1", f_scale=0.05,
                        diff_step=0.02, xtol=1e-4, ftol=1e-6, max_nfev=40)
    u_fit = sol.x if cost(sol.x) <= best_c else best_u
    if cost(u0) < cost(u_fit):
        u_fit = u0
    values = _values(step.params, u_fit, base)

    # identifiability: does a 20% change of each key move the predictions?
    identifiable = {}
    at_bound = []
    pred_fit = prob.predict(system, values)
    for i, p in enumerate(step.params):
        moved = 0.0
        for f in (0.8, 1.25):
            v = dict(values)
            if p.log:
                x = values[p.key] * f
            else:
                x = values[p.key] + (0.2 if f > 1 else -0.2) * max(abs(values[p.key]), p.sens_step)
            x = min(max(x, p.lo), p.hi)
            v[p.key] = int(round(x)) if p.integer else float(x)
            with np.errstate(divide="ignore", invalid="ignore"):
                d = np.abs(np.log(prob.predict(system, v) / pred_fit))
            moved = max(moved, float(np.nanmax(d)) if len(d) else 0.0)
        identifiable[p.key] = moved >= SENSITIVITY_MIN
        if (p.zero_neutral or p.unset_neutral) and identifiable[p.key]:
            # a limit the data do not need: no limit at all fits them as well (within half
            # a point of MAPE, the noise of a few repetitions)
            if mape_of({**values, p.key: None if p.unset_neutral else 0}) <= mape_of(values) + 0.5:
                identifiable[p.key] = False
    kept = [p.key for p in step.params if not identifiable[p.key]]
    if kept:
        # a key the data push to the end of its range moves little there, yet its base
        # value may fit much worse: keep the fitted value then (the data bound the key)
        restored = dict(values)
        for k in kept:
            orig = _get(system, k)
            restored[k] = base[k] if orig is None else orig
        if mape_of(restored) > mape_of(values) + 1.0:
            at_bound = [k for k in kept if values[k] != base[k]]
            kept = [k for k in kept if k not in at_bound]
            for k in at_bound:
                identifiable[k] = True
    for k in kept:
        orig = _get(system, k)
        orig = base[k] if orig is None else orig
        values[k] = int(round(orig)) if any(p.integer for p in step.params if p.key == k) \
            else float(orig)
    fitted = {k: v for k, v in values.items() if k not in kept}
    new_system = apply_overrides(system, _with_partners(step, system, fitted))
    pred = prob.predict(system, {**fitted}) if fitted else prob.predict(system, {})
    err = (pred / prob.measured_arr - 1.0) * 100.0
    best_mape = float(np.average(np.abs(err), weights=weight))
    rejected = best_mape > MAX_FIT_MAPE_PCT
    best_values = dict(fitted)
    if rejected:                      # keep every key of the step at its base value
        kept = [p.key for p in step.params]
        at_bound = []
        values = {p.key: _get(system, p.key) for p in step.params}
        fitted = {}
        new_system = system
        err = (prob.predict(system, {}) / prob.measured_arr - 1.0) * 100.0
    note = ""
    if rejected:
        best = ", ".join(f"{k} = {v:.4g}" for k, v in best_values.items())
        note = (f"fit rejected: the best fit leaves {best_mape:.1f}% MAPE (> {MAX_FIT_MAPE_PCT:g}%), "
                "so the model lacks an effect these data show; kept " + ", ".join(kept)
                + (f" (the rejected fit: {best})" if best else ""))
        identifiable = {k: False for k in identifiable}
    elif kept:
        note = ("not identifiable from these data (predictions move < "
                f"{SENSITIVITY_MIN:.1%} for a 20% change): kept " + ", ".join(kept))
        if "link.cpl_buffer_B" in kept or "gpu.max_outstanding_host_reads" in kept:
            note += ("; the link (or the tags) saturates before the GPU's own limit binds, "
                     "so the limit is only known to be at least the reads in flight at the plateau")
    if at_bound:
        note = (note + "; " if note else "") + (
            "at the end of the fitted range (the data put it there; its base value fits "
            "worse): " + ", ".join(at_bound))
    pooled: dict[str, dict[str, float]] = {}
    for c, i, e in zip(prob.cases, prob.sources, err):
        if i:
            pooled.setdefault(str(runs[i].path), {})[c] = float(e)
    rec = FitRecord(
        name=step.name, keys=[p.key for p in step.params], groups=list(step.groups),
        base={p.key: _get(system, p.key) for p in step.params}, values=values,
        identifiable=identifiable, n=len(prob.cases),
        mape_pct=float(np.average(np.abs(err), weights=weight)),
        base_mape_pct=float(np.average(np.abs((np.exp(r_base) - 1.0) * 100.0), weights=weight)),
        residuals_pct={c: float(e) for c, i, e in zip(prob.cases, prob.sources, err) if not i},
        pooled_residuals_pct=pooled,
        evaluations=prob.evaluations, note=note,
        method=f"{step.explain}; {prob.fidelity} twins, soft-L1 least squares on "
               "log(predicted/measured) after " + ("a closed-form start" if step.guess else f"a {step.scan}-point scan"))
    return rec, new_system, None


def calibrate(results_dir: str | Path, base_system, *, fidelity: str = "des",
              steps: tuple[Step, ...] = STEPS, only: list[str] | None = None,
              skip: list[str] | None = None,
              max_requests: int = DEFAULT_MAX_REQUESTS, progress: bool = False,
              pool: list[str | Path] | None = None,
              overrides: list[str] | dict | None = None) -> Calibration:
    """Fit ``base_system`` (a SystemConfig, preset name or file) to a run's microbenchmarks.

    ``only``: the steps to run (default all); ``skip``: steps not to run (a run whose
    points of that step are held out). ``pool``: other runs whose points each step
    fits together with the run's own (each predicted by its own run's twin).

    Every value a step fits is a field of the system, so the calibrated TOML is a
    complete system (:meth:`Calibration.write`). ``overrides``
    (``["link.rtt_ns=1.2us", ...]`` or a dict) change the base system's keys."""
    from hostlink.model.config import load_any_system, system_with

    base_chain = [] if hasattr(base_system, "link") else chain_beside(base_system)
    if not hasattr(base_system, "link"):
        base_system = load_any_system(str(base_system), overrides or None)
    elif overrides:
        base_system = system_with(base_system, overrides)
    if fidelity not in ("des", "analytic"):
        raise CalibrationError(f"fidelity must be 'des' or 'analytic', not '{fidelity}'")
    run = load_run(results_dir)
    present_cases = set(run.measured["case"].unique())
    groups = sorted({micro_group(run.cases[c]) for c in present_cases
                     if run.cases.get(c, {}).get("kind") == "micro"})
    if not groups:
        raise CalibrationError(f"{results_dir}: no microbenchmark results to calibrate from")
    pooled_runs = _pooled_runs(results_dir, pool or [])
    known = {s.name for s in steps}
    bad = [n for n in (only or []) + (skip or []) if n not in known]
    if bad:
        raise CalibrationError(f"unknown calibration step(s) {', '.join(bad)} "
                               f"(known: {', '.join(s.name for s in steps)})")
    system = base_system
    cal = Calibration(system=system, base_system=base_system, results_dir=str(results_dir),
                      fidelity=fidelity, groups_present=groups,
                      base_chain=base_chain, pooled=[str(r.path) for r in pooled_runs])
    for step in steps:
        if (only and step.name not in only) or (skip and step.name in skip):
            continue
        if progress:
            import sys
            sys.stderr.write(f"calibrate: {step.name} ...\n")
        rec, system, reason = fit_step([run, *pooled_runs], step, system,
                                       fidelity=fidelity, max_requests=max_requests)
        if rec is None:
            cal.skipped.append({"name": step.name, "keys": [p.key for p in step.params],
                                "reason": reason})
        else:
            cal.fits.append(rec)
    cal.system = _with_provenance(system, base_system, cal)
    return cal


def _pooled_runs(results_dir, pool: list) -> list[RunData]:
    """The runs to pool with ``results_dir``'s, each once, none of them the run itself,
    each with microbenchmark results."""
    out: list[RunData] = []
    for where in pool:
        if same_run_dir(where, results_dir) or any(same_run_dir(where, r.path) for r in out):
            raise CalibrationError(f"{where}: pooled twice (or pooled with itself); "
                                   "name each run once")
        other = load_run(where)
        if not any(other.cases.get(c, {}).get("kind") == "micro"
                   for c in other.measured["case"].unique()):
            raise CalibrationError(f"{where}: no microbenchmark results to pool")
        out.append(other)
    return out


def _record_beside(system_spec) -> dict:
    """The calibration record (calibration.json) beside a system TOML, or {}."""
    path = Path(str(system_spec))
    rec = path.with_name("calibration.json")
    if path.suffix != ".toml" or not rec.is_file():
        return {}
    try:
        return dict(json.loads(rec.read_text()))
    except json.JSONDecodeError as exc:
        raise CalibrationError(f"{rec}: not valid JSON ({exc.msg})") from None


def chain_beside(system_spec) -> list[dict]:
    """The chain of calibrations behind a calibrated system TOML (its record's
    ``chain``; a record made before chains were kept counts as one link)."""
    rec = _record_beside(system_spec)
    if not rec:
        return []
    if isinstance(rec.get("chain"), list):
        return [dict(link) for link in rec["chain"]]
    return [{"results_dir": rec.get("results_dir", ""),
             "calibration_groups": list(rec.get("calibration_groups") or [])}]


def _with_provenance(system, base, cal: Calibration):
    prov = dict(base.provenance)
    for f in cal.fits:
        for key in f.keys:
            if f.identifiable.get(key):
                prov[key] = (f"measured: {cal.measured_on}, {', '.join(f.groups)}, fit residual "
                             f"{f.mape_pct:.2f}% MAPE over {f.n} points (calibrate step {f.name})")
            else:
                prov[key] = (prov.get(key, "") + "; " if prov.get(key) else "") + \
                    f"not calibrated from {cal.measured_on} ({', '.join(f.groups)}): " + \
                    f.note.split(";")[0]
    name = f"{base.name}-calibrated" if not base.name.endswith("-calibrated") else base.name
    desc = f"{base.description} (calibrated from {cal.measured_on})".strip()
    return dataclasses.replace(system, name=name, description=desc, provenance=prov)


def format_summary(cal: Calibration) -> str:
    """A short text summary of a calibration, one line per key."""
    lines = [f"calibrated {getattr(cal.base_system, 'name', '')} from {cal.measured_on} "
             f"({cal.fidelity} twins)"]
    for f in cal.fits:
        for k in f.keys:
            tag = "" if f.identifiable[k] else "  (not identifiable: kept)"
            lines.append(f"  {k:36s} {_num(f.base[k]):>12s} -> {_num(f.values[k]):>12s}   "
                         f"residual {f.mape_pct:5.2f}% over {f.n} points{tag}")
        if f.pooled_residuals_pct:
            for where, (n, mape) in f.mape_by_run(cal.results_dir).items():
                lines.append(f"    {where}: {n} points, residual {mape:.2f}%")
    for s in cal.skipped:
        lines.append(f"  skipped {s['name']}: {s['reason']}")
    for where in cal.pooled:
        if not any(f.pooled_residuals_pct.get(where) for f in cal.fits):
            lines.append(f"  pooled {where}: no points of the steps fitted")
    lines.append(f"  calibration groups: {', '.join(cal.calibration_groups) or 'none'}")
    lines.append(f"  held-out groups:    {', '.join(cal.held_out_groups) or 'none'}")
    return "\n".join(lines)


def _num(v) -> str:
    if v is None:
        return "derived"
    if isinstance(v, int):
        return str(v)
    return f"{v:.5g}"
