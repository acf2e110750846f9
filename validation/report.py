"""``hostlink validate report``: predicted twins against measurements, per case and per group.

For a measured run and a (calibrated) system, every case's twin is predicted
(:mod:`hostlink.validation.twins`) and compared with the measurement:

- ``summary.csv``: one row per (case, metric) measured and predicted, with
  columns ``case, metric, unit, measured, predicted, error_pct``; ``measured``
  is the median over the case's repetitions (for traversal cases: over sources
  and repetitions), ``predicted`` the median of the twin's values over the
  same repetitions, and ``error_pct = 100 (predicted - measured) / measured``
  (positive: the model predicts more than was measured; for a time that is
  slower, for a bandwidth faster);
- per group (:func:`hostlink.validation.twins.case_group`) the mean absolute
  percentage error (MAPE) of the primary metric of its cases
  (:data:`hostlink.validation.twins.PRIMARY_METRIC`; traversal cases: kernel
  time), its bias (mean signed error) and its worst cases;
- targets (the validation issue's acceptance): microbenchmark groups NOT used
  for calibration <= 10 %, traversal zero-copy <= 15 %, UVM first touch
  (held-out uvm_touch groups and the traversal UVM group) <= 25 %. Groups
  used for calibration are listed with their fit residual and no target;
- where a group misses its target, the report names the effect the model
  lacks, from the error's sign and from the case parameter it follows most
  closely (rank correlation), with the candidate effects of that group;
- plots (matplotlib, Agg): predicted against measured with y = x (a panel per
  unit), error by group, MAPE per group with its target.

A full report predicts hundreds of twins (tens of minutes on a small machine),
so predictions are kept as each case finishes (:class:`PredictionStore`:
``OUT/predictions.parquet`` with the tidy rows, ``OUT/predictions.json`` with what
they were made with): a report interrupted by an exception, Ctrl-C or a kill
resumes where it stopped when started again with the same system values,
fidelity, request and source limits and twin version
(:data:`TWIN_VERSION`); anything else starts afresh and keeps the old
predictions as ``predictions.stale.*``. A stored case is reused only while the
source code its twin runs on is unchanged (:func:`kind_code_hash`: the model,
the traces and the twins of its kind), so an edit of the microbenchmark twins
predicts the microbenchmarks again and keeps the traversals, and the other way
round. The report's header names the ``hostlink validate report`` command that
makes it (:func:`report_command`). With ``--jobs N`` the twins are predicted in N
worker processes (:mod:`hostlink.validation.parallel`) with the same numbers; this
process alone writes the stored predictions, as the cases arrive.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import shlex
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from hostlink.model.errors import HostlinkError
from hostlink.validation import twins as _twins
from hostlink.validation.twins import (PRIMARY_METRIC, TRAVERSAL_PRIMARY, case_group,
                                       params_from_name, primary_metric)

SUMMARY_COLUMNS = ("case", "metric", "unit", "measured", "predicted", "error_pct")
MICRO_TARGET_PCT = 10.0
ZEROCOPY_TARGET_PCT = 15.0
UVM_TARGET_PCT = 25.0
#: a group with no target (device-memory traversals) is diagnosed like one that misses
#: its target when its MAPE is above the loosest target
UNTARGETED_DIAGNOSE_PCT = UVM_TARGET_PCT


class ReportError(HostlinkError):
    """Inputs of a report that do not fit together."""


# ----------------------------------------------------------------------------
# The numbers


def summarise(measured: pd.DataFrame, predicted: pd.DataFrame) -> pd.DataFrame:
    """Median measured against median predicted for every (case, metric) both have.

    Both tables are tidy results (``case, metric, unit, value, rep``; other
    columns are ignored). Rows with a non-finite or zero measured median are
    dropped (no relative error exists for them).
    """
    def med(df: pd.DataFrame, name: str) -> pd.DataFrame:
        d = df[np.isfinite(df["value"].to_numpy(dtype=float))]
        return (d.groupby(["case", "metric", "unit"], sort=False)["value"].median()
                .rename(name).reset_index())

    m = med(measured, "measured")
    p = med(predicted, "predicted")
    out = m.merge(p, on=["case", "metric", "unit"], how="inner", sort=False)
    out = out[(out["measured"] != 0) & np.isfinite(out["predicted"])].copy()
    out["error_pct"] = (out["predicted"] - out["measured"]) / out["measured"] * 100.0
    return out[list(SUMMARY_COLUMNS)].reset_index(drop=True)


def mape(error_pct) -> float:
    """Mean absolute percentage error of a set of errors in percent (NaN when empty)."""
    e = np.asarray(error_pct, dtype=float)
    e = e[np.isfinite(e)]
    return float(np.mean(np.abs(e))) if len(e) else math.nan


#: suffix of the group that holds a calibration group's cases no fit used
NOT_FITTED = " (not fitted)"


def target_for(group: str, calibration_groups: set[str]) -> tuple[str, float | None]:
    """(role, target MAPE in percent or None) of a group.

    A calibration group's cases that no fit used (group ``<group> (not fitted)``,
    :func:`mark_not_fitted`) are predicted, not fitted: held out, with the target
    of their kind."""
    if group.startswith("micro/"):
        if group in calibration_groups:
            return "calibration", None
        base = group.removesuffix(NOT_FITTED)
        uvm = (base.startswith("micro/uvm_touch/")
               and not base.startswith("micro/uvm_touch/accessedby"))
        kinds = ["UVM first touch"] * uvm + ["not fitted"] * (base != group)
        role = "held-out" + (f" ({', '.join(kinds)})" if kinds else "")
        return role, UVM_TARGET_PCT if uvm else MICRO_TARGET_PCT
    if group == "traversal/zerocopy":
        return "traversal", ZEROCOPY_TARGET_PCT
    if group == "traversal/uvm":
        return "traversal", UVM_TARGET_PCT
    return "traversal" if group.startswith("traversal/") else "other", None


def annotate(summary: pd.DataFrame, cases: dict[str, dict]) -> pd.DataFrame:
    """The summary with ``group``, ``params`` and ``primary`` (the row is the case's judged metric)."""
    s = summary.copy()
    params = [cases.get(c) or params_from_name(c) for c in s["case"]]
    s["params"] = params
    s["group"] = [case_group(c, p) for c, p in zip(s["case"], params)]
    s["primary"] = [m == primary_metric(p) for m, p in zip(s["metric"], params)]
    return s


def fitted_cases(calibration: dict | None, results_dir) -> dict[str, set[str]]:
    """Per calibration group of ``results_dir``, the cases its fits used.

    From the record's own fits (their ``residuals_pct``: one entry per case a fit
    used) when the record was calibrated on ``results_dir``, and from the
    ``fitted_cases`` of every earlier link of its chain calibrated on
    ``results_dir`` (a run calibrated in the chain, then reported with a later
    link's system; the chain's last link is the record itself, whose fits speak
    for it); a group none of these names (a link recorded without its cases, or a
    record without residuals) is absent: all its cases count as fitted."""
    if not calibration:
        return {}
    from hostlink.validation.calibrate import same_run_dir
    out: dict[str, set[str]] = {}
    for link in (calibration.get("chain") or [])[:-1]:
        cases = link.get("fitted_cases") if isinstance(link, dict) else None
        if isinstance(cases, dict) and same_run_dir(link.get("results_dir", ""), results_dir):
            for group, names in cases.items():
                out.setdefault(group, set()).update(names)
    if calibration.get("results_dir") and same_run_dir(calibration["results_dir"], results_dir):
        for fit in calibration.get("fits") or []:
            residuals = fit.get("residuals_pct")
            if not isinstance(residuals, dict) or not residuals:
                continue
            for group in fit.get("groups") or []:
                out.setdefault(group, set()).update(residuals)
    return out


def mark_not_fitted(annotated: pd.DataFrame, fitted: dict[str, set[str]]) -> pd.DataFrame:
    """``annotated`` with the cases of a calibration group that none of its fits used
    moved to the group ``<group> (not fitted)`` (judged as held out, :func:`target_for`):
    a fit's selection (the plateau of a sweep, the regions past the L1) leaves the rest
    of its group predicted, and their errors are not a fit residual."""
    if not fitted:
        return annotated
    out = annotated.copy()
    out["group"] = [g + NOT_FITTED if g in fitted and c not in fitted[g] else g
                    for g, c in zip(out["group"], out["case"])]
    return out


@dataclass
class GroupStats:
    group: str
    role: str
    target_pct: float | None
    n: int
    mape_pct: float
    bias_pct: float
    worst: pd.DataFrame
    metric: str

    @property
    def passed(self) -> bool | None:
        if self.target_pct is None or not np.isfinite(self.mape_pct):
            return None
        return self.mape_pct <= self.target_pct


def group_stats(annotated: pd.DataFrame, calibration_groups: set[str], n_worst: int = 3) -> list[GroupStats]:
    out = []
    prim = annotated[annotated["primary"]]
    for group, d in prim.groupby("group", sort=True):
        role, target = target_for(group, calibration_groups)
        order = d["error_pct"].abs().sort_values(ascending=False).index
        out.append(GroupStats(group, role, target, len(d), mape(d["error_pct"]),
                              float(d["error_pct"].mean()), d.loc[order[:n_worst]],
                              str(d["metric"].iloc[0])))
    return out


# ----------------------------------------------------------------------------
# What a group misses


#: Candidate effects per group: (when the model is too fast, too slow).
EFFECTS = {
    "micro/zc_read/coalesced": (
        "completions split at 64 B boundaries: a root complex that returns reads in 64 B "
        "units and merges only whole aligned 128 B lines sends a 96 B read 32 B off a line as "
        "32 + 64 B CplDs (the H200's 38 GB/s at offsets 32 and 96 against 43 GB/s at 64 fits "
        "that; the packetiser's 'mps' split sends one 96 B CplD); or a host whose root "
        "complex or IOMMU pays per partial-line read or per registered page (the H100 "
        "first_run lease's host: 24-29 GB/s at offsets 32 and 96 and 40 GB/s from "
        "cudaHostRegister buffers, against 38 and 51 GB/s on the H200's; later H100 leases "
        "read 35-40 GB/s at offset 32, validation/results/h100/micro_tags*); in device memory, "
        "DRAM that streams below the rate the twin reads it at (gpu.device_bw_GBps, which "
        "calibrate step device_stream fits on a run's device reads at full occupancy; a "
        "run without them keeps the datasheet's: the H100's coalesced device reads ran at "
        "2.87-2.91 TB/s in all twelve committed H100 runs that have them, 86-87% of its "
        "3.35 TB/s, where the twin at that rate gives 3.29); with few warps, DRAM's "
        "latency: the twin serves every device read at the L2's (gpu.device_lat_ns), where "
        "a stream's lines come from DRAM "
        "(gpu.dram_lat_ns; one warp per SM reads its 512 B round in 482 ns on an H200, the "
        "twin in 165, validation/results/h200/device_stream)",
        "the GPU merging the two halves of a misaligned line (the model sends them as "
        "separate requests), or a link efficiency above the one fitted on pinned copies; in "
        "device memory, an SM that lets lines out faster than the H100's 4.34 ns "
        "(gpu.sm_request_ns, validation/results/h100/request_share): the H200's coalesced "
        "device reads ran at 3.97-4.09 TB/s, where that rate holds the twin to 3.81"),
    "micro/zc_read/strided": (
        "the host's rate of 32 B reads, which differs by machine more than the link does "
        "(4 KiB chunks, which lose nothing in the L1: 17.1-22.2 GB/s on the lent H100s, "
        "23.3-23.8 on the H200s, validation/results/h100/micro_rounds/README.md) and moves "
        "within a session, where the calibration chain's tag window (micro/zc_warps/strided) "
        "comes from another machine: fitted on 32 B reads among the run's own rounds "
        "(manifest micro_tags) it follows them. Or host sectors the L1 fetches again beyond "
        "the twin's: on a GH100 the twin takes them from the measured table "
        "(model/l1_losses.py, validation/results/h200/l1_policy: from 24 warps per SM "
        "on, up to 2.28 host sectors per sector read), which stands for a round or more "
        "with 8 warps per SM or more, and whose points at 40-48 warps move by up to 0.2 "
        "between two launches; elsewhere (other GPUs, runs under one round) the twin "
        "replays the L1 in LRU order, which comes no closer than 0.07 sectors per sector "
        "to the GPU's losses (validation/device/l1_replay_ab.py)",
        "a tag window (link.rtt_ns) longer than the split of the load-to-use latency gives: "
        "gpu.host_path_ns is fitted from 32 B reads against warps in flight (micro/zc_warps/"
        "strided) on the H100, and the H200 takes the H100's value (validation/results/h200/"
        "base_system.toml); or an L1 that keeps more than the measured table gives at the "
        "case's point (its points at 40-48 warps per SM move by up to 0.2 sectors per "
        "sector between launches), or than the LRU replay where the table does not stand"),
    "micro/zc_read/random": (
        "translation misses beyond the TLB reach (large regions); without a hot_lines "
        "calibration in the chain, the kernel's own instructions (each load's block is a "
        "64-bit hash and modulo of its index, gpu_kernels/micro/zc_common.cuh: gpu."
        "random_load_ns and random_chain_ns, fitted on random lines in device "
        "memory) and how long an ld.cv read holds its line (gpu.cv_line_ns and "
        "cv_line_gap_ns, fitted on ld.cv over 4-64 KiB against warps); with the default "
        "cache operator, L1 misses beyond the compulsory ones of the empty L1s (which the "
        "twin adds: 132 x 64 KiB over 64 KiB, validation/results/h200/l1_probe), or L1 "
        "misses that lengthen a warp's chain where few warps read (the floor does not add "
        "a load's latency to the chain)",
        "translation reach larger than configured (fewer misses); for managed memory left "
        "on the host (uvm_accessedby) past the reach, more page walks in flight than "
        "translation.managed_walkers (fitted on such reads, calibrate step "
        "managed_translation; a run without them walks it as pinned memory: on an H100, "
        "1-16 GiB of it read at 43-48 GB/s where pinned memory read at 4.9-14, "
        "validation/results/h100/accessedby_reach); or, for regions the caches hold, a "
        "kernel rate above the one fitted on device memory"),
    "micro/zc_warps/random": (
        "with ld.cv and fewer warps than twice the lines, warps that pick a line already "
        "being read wait for it (the floor takes every warp's read to be at once: 16 KiB "
        "with 132 warps, 6.9 GB/s against 8.8), or, with few warps, L1 misses that "
        "lengthen a warp's chain of instructions beyond the chain fitted on 4 KiB of device "
        "memory (the twin adds the empty L1s' fill from the host, not the misses of a "
        "chain that is short of warps)",
        "a kernel rate above the one fitted on device memory, or, with ld.cv over 2048 "
        "lines and more, a hold that grows with the lines read at once beyond what the "
        "link keeps in flight"),
    "micro/zc_warps": (
        "a per-warp issue cost of back-to-back loads (one warp's 4 loads take 1.33 us on the "
        "H200 against 1.22 us for one, about 37 ns per further load); the engines issue an "
        "instruction's loads at once (the round trip's growth with the link's load is in the "
        "twins' mean-field loaded round trip)",
        "more requests in flight per warp than the unroll (the hardware runs ahead)"),
    "micro/zc_warps/strided": (
        "a tag window longer than the fitted split of the load-to-use latency gives (the "
        "GPU-internal path, gpu.host_path_ns, holds no tag), the round trip's growth with "
        "the link's load, or, with few warps, a warp's instruction of 32 sectors taking "
        "longer than one pointer-chase round trip (one warp at 4 B per lane: 0.63 GB/s on "
        "the H100, 1.6 us per instruction, where the chase's round trip is 1.3 us and the "
        "twin gives 0.79 GB/s; validation/results/h100/tag_window); with ld.cv and "
        "several warps, a GPU-wide cost of ld.cv host reads that grows with the pages a "
        "load spans and with the warps (16 warps, 4 B per lane: 0.80 GB/s with one page a "
        "load, 0.36 with 32, where the default operator reads 8.6-8.7 at either; "
        "validation/results/h100/cv_pages)",
        "reads in flight beyond the tags (a larger tag window than configured), a shorter "
        "loaded round trip, or more loads in flight than the kernels' SASS shows"),
    "micro/memcpy": (
        "a per-copy setup cost above the fitted one for this size and direction",
        "larger copy-engine requests than 256 B"),
    "micro/ptr_chase/device": (
        "loads served nearer than the cache replay finds (an L1 or L2 that keeps more of the "
        "chain than its modelled size and LRU do), or an L2 partition nearer the SM than the "
        "average the one L2 latency stands for",
        "translation misses or DRAM row misses (the model gives each level one latency: on "
        "the H100 and H200, 4 GiB chains at 2 MiB strides miss at the same 340-353 ns as "
        "128 B strides), or the far L2 partition"),
    "micro/ptr_chase/atomic": (
        "a spread over an atomic's lines that grows faster than log2 of its lines at first "
        "(validation/results/h200/atomic_chase: 27 and 24 ns for the first two doublings, "
        "11-17 ns for the later ones, against one fitted 19.4), or an L2 slower on this "
        "lease than the base system's load latency",
        "an atomic extra or spread fitted on a lease whose L2 was slower than this one's "
        "(the two leases of validation/results/h200/atomic_chase differ by up to 1.3%)"),
    "micro/ptr_chase": (
        "a latency shorter than the calibrated round trip for this stride (cache or TLB hits)",
        "TLB misses of the chase (translation miss cost or reach)"),
    "micro/uvm_touch/accessedby": (
        "host pages of 4 KiB behind managed memory read remotely: a translation of the "
        "device's reads on the host's side (an IOMMU, or a hypervisor's second-level "
        "tables) that pays per 4 KiB page where pinned cudaHostAlloc memory does not; the "
        "twin gives these reads the pinned path (link-bound). On the H100's first_run "
        "lease random AccessedBy lines ran 5-7% slower than sequential ones (64 MiB: 45.7 "
        "against 49.0 GB/s) and cudaHostRegister buffers read 40 GB/s against 50 from "
        "pinned memory; on a later H100 lease random lines lost 1.5-3% "
        "(validation/results/h100/accessedby_session), on the H200's lease nothing",
        "remote lines the GPU's caches serve more than once, or a link efficiency above "
        "the one fitted on pinned copies"),
    "micro/uvm_touch/prefetch": (
        "the GPU's prefetch moving faster than the model's transfer curve, or a fixed cost "
        "per call below the fitted one",
        "cudaMemPrefetchAsync's fixed cost per call (uvm.prefetch_call_us), which a run "
        "without prefetches of at most 16 MiB cannot fit and keeps at its base value "
        "(about 0.1 ms on an H100, validation/results/h100/uvm_sizes)"),
    "micro/uvm_touch": (
        "fault-service costs the page, block, batch and first-fault costs do not hold: one "
        "line per 64 KiB big page costs the GPU more than the big-page migrations the model "
        "gives it; a run's first fault that depends on the size of the managed buffer it "
        "falls in, which the model's one first-fault cost does not (one line: 0.05-0.08 ms "
        "in a 2 MiB buffer on both GPUs, 0.17-0.22 ms in 2 GiB on the H100, 0.11-0.33 ms "
        "from 8 MiB up on the H200: validation/results/*/uvm_alloc); and UVM first touch "
        "varies from run to run by more than the other microbenchmarks "
        "(validation/results/h200/uvm_sparse): the first faulting launch wakes the driver's "
        "fault servicing, which takes longer the longer the host was idle before it (one "
        "VA block per launch: 36 us back to back, 161 us after 3 ms idle on the H200, 38 "
        "and 98 us on the H100: validation/results/*/uvm_launches)",
        "fault batches that the driver overlaps or that serve more faults than modelled"),
    "traversal/zerocopy": (
        "the SM's issue stage where a report predates it or a system leaves it at 0 "
        "(gpu.request_gap_ns, gpu.host_request_gap_ns, gpu.sm_request_ns: each line of a "
        "load beyond the first costs a warp 6.5 ns in device memory and 13.6 ns from host "
        "memory, an SM lets one line out per 4.3 ns, validation/results/h100/request_cost "
        "and request_share), which paces a hub's walk by its visits (a visit's 32 label "
        "reads take 0.39 us on kron21's hub where one L2 access takes 0.14: "
        "validation/results/h100/device_work); the loop's cost per load instruction beyond "
        "its lines (about 28 ns in the read kernel: request_cost); on graphs above 2^24 edges, whose twins carry one request per dependent step of "
        "the walk (traces/emulator/visits.py), the tests of inactive vertices, which bind "
        "chunked's launches by instruction issue (70 us at scale 21 against 26 modelled); "
        "a loaded round trip above the run's mean for launches busier than the average; "
        "or SSSP/CC launches that converge later on the GPU than in the model's waves",
        "host-memory sectors served by the GPU's caches that the cache model misses, a "
        "tag window longer than the fitted split of the load-to-use latency (see "
        "micro/zc_read/strided), a loaded round trip below the run's mean for its many "
        "quiet launches, or SSSP/CC launches that converge sooner on the GPU than in the "
        "model's waves"),
    "traversal/uvm": (
        "the kernel's own work beyond its loads' latencies (the SM's issue stage where a "
        "report predates it: it makes a visit of 32 neighbours cost more than one device "
        "access, validation/results/h100/device_work), fault-service costs a level's scattered "
        "lists pay beyond first touch's, and the run-to-run spread of UVM on small graphs "
        "(tenths of a millisecond)",
        "prefetching or batching in the driver that the model under-credits, per-page "
        "costs (fitted on first touch) above what a traversal's pages cost, or, on small "
        "graphs, a run's one-off first-fault cost fitted above what one fault costs: the "
        "uvm_sparse fits give 243 us (H100) and 418 us (H200), where one line in a buffer "
        "of a scale-14 edge list's size (2-8 MiB) takes 0.05-0.08 ms on the H100 and "
        "0.05-0.28 ms on the H200 in all (validation/results/*/uvm_alloc); the H100's "
        "traversals need the larger value (at 103 us they come out 26% too fast), so it "
        "stands for a per-run cost the first-touch microbenchmarks do not show. That cost "
        "is the wake-up of the driver's fault servicing at a run's first faulting launch, "
        "which grows with the host's idle time before it (a one-block launch: 36-38 us "
        "back to back, 98-161 us after 3 ms; a BFS's first level on kron14, one fault: "
        "100-190 us on the H200, validation/results/*/uvm_launches), so it differs between "
        "a microbenchmark and a traversal and from run to run; a traversal's later "
        "launches follow at once and pay about 20 us more per faulting launch than the "
        "same faults within one launch. A first touch split over back-to-back launches "
        "in the run's own session gives the traversal's one-off cost (calibrate step "
        "uvm_first_launch, uvm.launches_first_fault_us, which traversals pay and a "
        "single launch does not: an H100's traversals from 31-41% to 21.7-21.9%, "
        "validation/results/h100/uvm_session); one fitted on another lease carries the "
        "machines' difference (the same traversals ran 1.0-1.5x apart on H100 leases), and "
        "one pooled over several leases' split first touch (calibrate --pool) is the "
        "chains' (validation/results/README.md)"),
    "micro/host_loop": (
        "costs a program's loop carries beyond its parts: the SSSP and CC flags' reset "
        "straight after the read-back costing more than a reset and the return from the "
        "copy apart, PageRank's update kernel's own memory work (the parts' kernels are "
        "empty), or a lease whose host is slower to return from a synchronisation",
        "stream items the host's round trip hides: after a synchronisation the GPU waits "
        "for the host to enqueue the next walk, and a flag's reset enqueued before it runs "
        "in that wait, which the additive item costs charge (on host_loop's lease the BFS "
        "loop took 13.0-14.6 us per iteration, within 0.6 us of a walk, the flag's "
        "read-back and a synchronisation alone, 13.6-14.3; on host_loop_repeat's, 1.1-2.1 "
        "us longer); how much hides differs from lease to lease, as the programs' loops "
        "do (validation/results/h200/host_loop/README.md)"),
    "traversal/device": (
        "the kernel's work in device memory beyond one latency per dependent step: the SM's "
        "issue stage where a report predates it (an SM lets one read line out per 4.3 ns: "
        "kron21 BFS from 62% too fast to 6-12%, validation/results/h100/request_share), "
        "the stores and reductions it does not charge (PageRank's), the flags the twins "
        "leave out or give no latency, the instruction issue of scans "
        "(chunked: 3.3 of 4 warp instructions a cycle on every SM) and warps stalled on "
        "loads at 62-81% occupancy in the bulk levels (kron21 BFS: 2.0 ms measured against "
        "0.62 predicted for its largest level: validation/results/h100/device_work); and "
        "loads that miss the L2 (the request-stream models give every device load past the "
        "L1 the L2's latency, gpu.device_lat_ns; gpu.dram_lat_ns, about 340-350 ns on the "
        "H100 and H200, is used by the pointer chase's cache replay only)",
        "device-memory caching beyond the L1 that the model does not credit, or an SM "
        "that lets lines out faster than request_share's 4.3 ns (its reads came from DRAM; "
        "an L2-resident graph's lines return sooner: urand21 chunked BFS comes out 57-60% "
        "slow with the issue stage)"),
}


def _effects_for(group: str) -> tuple[str, str] | None:
    for key in sorted(EFFECTS, key=len, reverse=True):
        if group.startswith(key):
            return EFFECTS[key]
    return None


def _numeric_params(rows: pd.DataFrame) -> dict[str, np.ndarray]:
    out = {}
    keys = set()
    for p in rows["params"]:
        keys.update(k for k, v in p.items() if isinstance(v, (int, float)) and not isinstance(v, bool))
    for k in sorted(keys):
        vals = np.array([float(p.get(k, np.nan)) if isinstance(p.get(k), (int, float)) else np.nan
                         for p in rows["params"]])
        if np.isfinite(vals).sum() >= 3 and len(np.unique(vals[np.isfinite(vals)])) >= 3:
            out[k] = vals
    return out


def _spearman(x: np.ndarray, y: np.ndarray) -> float:
    ok = np.isfinite(x) & np.isfinite(y)
    if ok.sum() < 3:
        return math.nan
    rx = pd.Series(x[ok]).rank().to_numpy()
    ry = pd.Series(y[ok]).rank().to_numpy()
    if rx.std() == 0 or ry.std() == 0:
        return math.nan
    return float(np.corrcoef(rx, ry)[0, 1])


def diagnose(stats: GroupStats, rows: pd.DataFrame) -> list[str]:
    """Sentences on what the model lacks for a group (its primary-metric rows)."""
    lines = []
    e = rows["error_pct"].to_numpy(dtype=float)
    metric = stats.metric
    higher_is_faster = metric.endswith("GBps")
    over = stats.bias_pct > 0
    consistent = np.mean(np.sign(e) == np.sign(stats.bias_pct)) if len(e) else 0.0
    if len(e) and consistent >= 0.8 and abs(stats.bias_pct) >= 0.5 * stats.mape_pct:
        fast = over == higher_is_faster
        lines.append(f"The model is systematically too {'fast' if fast else 'slow'}: "
                     f"{metric} is {'over' if over else 'under'}-predicted by "
                     f"{abs(stats.bias_pct):.1f}% on average ({consistent:.0%} of cases share the sign).")
    else:
        lines.append(f"The errors scatter around a bias of {stats.bias_pct:+.1f}%: the model "
                     f"misses a dependence on the case rather than a constant.")
    best = None
    for k, vals in _numeric_params(rows).items():
        rho = _spearman(np.log(np.maximum(vals, 1e-12)), e)
        if np.isfinite(rho) and (best is None or abs(rho) > abs(best[1])):
            best = (k, rho)
    if best is not None and abs(best[1]) >= 0.6:
        lines.append(f"The error {'grows' if best[1] > 0 else 'falls'} with `{best[0]}` "
                     f"(rank correlation {best[1]:+.2f}).")
    for cat in ("variant", "graph", "kernel", "id_bytes", "pattern", "advice", "memory_mode",
                "cache"):
        vals = [p.get(cat) for p in rows["params"]]
        if len(set(map(str, vals))) < 2:
            continue
        by = pd.Series(e).groupby(pd.Series([str(v) for v in vals])).mean()
        if by.max() - by.min() >= max(5.0, 0.5 * stats.mape_pct):
            parts = ", ".join(f"{k} {v:+.1f}%" for k, v in by.sort_values().items())
            lines.append(f"Mean error by {cat}: {parts}.")
    eff = _effects_for(stats.group)
    if eff is not None:
        fast = (stats.bias_pct > 0) == higher_is_faster
        lines.append("Effect the model lacks, by the sign of the error: "
                     + (eff[0] if fast else eff[1]) + ".")
    return lines


# ----------------------------------------------------------------------------
# Output


def _fmt(x: float, digits: int = 3) -> str:
    if x is None:
        return "derived"
    if not np.isfinite(x):
        return "n/a"
    return f"{x:.{digits}g}"


def timing_table(timings: dict[str, dict], annotated: pd.DataFrame) -> pd.DataFrame:
    """Per traversal case: the twin's wall-clock seconds per source (emulation, model)
    against the measured kernel time, and their ratio."""
    rows = []
    kt = annotated[(annotated["metric"] == TRAVERSAL_PRIMARY)].set_index("case")["measured"]
    for case, t in timings.items():
        n = int(t.get("sources", 0))
        if not n or case not in kt.index:
            continue
        model_s = t.get("model_s", 0.0) / n
        kernel_s = float(kt[case]) * 1e-3
        rows.append((case, t.get("emulate_s", 0.0) / n, model_s, t.get("requests", 0) / n,
                     kernel_s * 1e3, model_s / kernel_s if kernel_s > 0 else math.nan))
    return pd.DataFrame(rows, columns=["case", "emulate_s", "model_s", "requests",
                                       "measured_kernel_ms", "model_over_kernel"])


def markdown(annotated: pd.DataFrame, stats: list[GroupStats], *, title: str, system_name: str,
             fidelity: str, calibration: dict | None, results_dir: str,
             unpredicted: list[str], timings: dict | None = None,
             notes: list[str] | None = None) -> str:
    lines = [f"# {title}", ""]
    lines += [f"- measured results: `{results_dir}`",
              f"- system: `{system_name}`; fidelity: {fidelity}",
              f"- cases compared: {annotated['case'].nunique()} "
              f"({int(annotated['primary'].sum())} judged on their primary metric)"]
    if calibration:
        used = ", ".join(f"`{g}`" for g in calibration.get("calibration_groups", [])) or "none"
        lines.append(f"- calibrated from microbenchmark groups: {used}; every other group is "
                     "predicted, not fitted, and so are the cases of these groups that no "
                     f"fit used (reported as `<group>{NOT_FITTED}`, held out)")
        chain = calibration.get("chain") or []
        if len(chain) > 1:
            lines.append("- calibration chain, each link fitted on its own run from the one before: "
                         + " -> ".join(f"`{link.get('results_dir', '')}`" for link in chain))
    else:
        lines.append("- no calibration record: every microbenchmark group counts as held out")
    for note in notes or []:
        lines.append(f"- {note}")
    lines += ["", "error_pct = 100 (predicted - measured) / measured; MAPE = mean |error_pct| "
              "over a group's cases, on its primary metric (bandwidth for the zero-copy and "
              "memcpy benchmarks, latency for the pointer chase, time for UVM first touch and "
              "kernel time for traversals).", ""]
    lines += ["## MAPE per group", "",
              "| group | role | metric | cases | MAPE % | bias % | target % | verdict |",
              "|---|---|---|---:|---:|---:|---:|---|"]
    for s in stats:
        verdict = {True: "meets", False: "**misses**", None: "-"}[s.passed]
        if s.role == "calibration":
            verdict = "fit residual"
        lines.append(f"| `{s.group}` | {s.role} | {s.metric} | {s.n} | {_fmt(s.mape_pct)} | "
                     f"{s.bias_pct:+.1f} | {_fmt(s.target_pct) if s.target_pct else '-'} | {verdict} |")
    lines.append("")
    if calibration and calibration.get("fits"):
        lines += ["## Calibrated parameters", "",
                  "| key | base | calibrated | from | fit residual (MAPE %) | note |",
                  "|---|---:|---:|---|---:|---|"]
        for fit in calibration["fits"]:
            for key, val in fit.get("values", {}).items():
                base = fit.get("base", {}).get(key)
                note = fit.get("note", "")
                lines.append(f"| `{key}` | {_fmt(base, 5)} | {_fmt(val, 5)} | "
                             f"{', '.join(fit.get('groups', []))} | {_fmt(fit.get('mape_pct'))} | {note} |")
        lines.append("")
    lines += ["## Groups", ""]
    for s in stats:
        rows = annotated[annotated["primary"] & (annotated["group"] == s.group)]
        lines += [f"### `{s.group}`: MAPE {_fmt(s.mape_pct)}%"
                  + (f" (target {s.target_pct:g}%)" if s.target_pct else ""), ""]
        lines += ["| case | measured | predicted | error % |", "|---|---:|---:|---:|"]
        for _, r in s.worst.iterrows():
            lines.append(f"| `{r['case']}` | {_fmt(r['measured'], 4)} {r['unit']} | "
                         f"{_fmt(r['predicted'], 4)} {r['unit']} | {r['error_pct']:+.1f} |")
        lines.append("")
        if s.passed is False or (s.target_pct is None and s.mape_pct > UNTARGETED_DIAGNOSE_PCT):
            lines += ["What the model lacks here:", ""]
            lines += [f"- {t}" for t in diagnose(s, rows)]
            lines.append("")
    if timings:
        tt = timing_table(timings, annotated)
        if len(tt):
            lines += ["## Model run time", "",
                      "Wall-clock seconds of the twin per source on this machine (emulating the "
                      "kernel's requests; predicting them at this fidelity), against the "
                      "measured kernel time of one run. A stream shared by memory modes is "
                      "emulated once.", "",
                      "| case | emulate s | model s | requests | measured kernel ms | "
                      "model / kernel |", "|---|---:|---:|---:|---:|---:|"]
            for _, r in tt.iterrows():
                lines.append(f"| `{r['case']}` | {r['emulate_s']:.1f} | {r['model_s']:.1f} | "
                             f"{r['requests']:.3g} | {_fmt(r['measured_kernel_ms'], 4)} | "
                             f"{r['model_over_kernel']:.3g} |")
            lines.append("")
    if unpredicted:
        lines += ["## Cases without a prediction", ""]
        lines += [f"- `{c}`" for c in unpredicted[:50]]
        if len(unpredicted) > 50:
            lines.append(f"- ... and {len(unpredicted) - 50} more")
        lines.append("")
    lines += ["## Plots", "", "![predicted against measured](plots/predicted_vs_measured.png)", "",
              "![error by group](plots/error_by_group.png)", "",
              "![MAPE per group](plots/mape_by_group.png)", ""]
    return "\n".join(lines)


def figure_error_by_group(prim: pd.DataFrame, *, system: str | None = None,
                          workload: str | None = None):
    """Each case's error in its primary metric, a row per group, with the group's median."""
    from hostlink.model import plot_style as style

    groups = sorted(prim["group"].unique())
    fig = style.new_figure(style.FIG_W_IN, max(3.5, 0.3 * len(groups) + 1.8))
    ax = fig.add_subplot()
    for i, g in enumerate(groups):
        e = prim[prim["group"] == g]["error_pct"].to_numpy()
        jitter = (np.arange(len(e)) % 7 - 3) * 0.05
        ax.plot(e, i + jitter, linestyle="none", marker="o", markersize=3, alpha=0.7,
                color=style.COLOURS[0], label="case" if i == 0 else "_case")
        if len(e):
            ax.plot([np.median(e)] * 2, [i - 0.3, i + 0.3], color="black", lw=1.5,
                    label="median of the group" if i == 0 else "_median")
    ax.axvline(0, color="black", lw=0.8, label="_zero")
    ax.set_yticks(range(len(groups)))
    ax.set_yticklabels(groups, fontsize="small")
    ax.invert_yaxis()                      # the first group on top, as in the tables
    ax.set_xlabel("error (%) = 100 (predicted - measured) / measured")
    ax.set_ylabel("case group")
    ax.set_title(style.title("error of each case's primary metric (%)", system=system,
                             workload=workload, detail="by group"), fontsize="medium")
    ax.grid(True, axis="x", alpha=0.3)
    style.legend_outside(ax)
    return fig


MAPE_STATUS = (("meets its target", "#2ca02c"), ("misses its target", "#d62728"),
               ("calibration or no target", "#7f7f7f"))


def figure_mape_by_group(stats: list[GroupStats], *, system: str | None = None,
                         workload: str | None = None):
    """Each group's MAPE as a bar coloured by its verdict, with its target as a tick."""
    from hostlink.model import plot_style as style

    fig = style.new_figure(style.FIG_W_IN, max(3.5, 0.3 * len(stats) + 1.8))
    ax = fig.add_subplot()
    status = [2 if s.passed is None else 0 if s.passed else 1 for s in stats]
    for k, (label, colour) in enumerate(MAPE_STATUS):
        rows = [i for i, st in enumerate(status) if st == k]
        if rows:
            ax.barh(rows, [stats[i].mape_pct for i in rows], color=colour, label=label)
    first = True
    for i, s in enumerate(stats):
        if s.target_pct:
            ax.plot([s.target_pct] * 2, [i - 0.4, i + 0.4], color="black", lw=1.5,
                    label="target" if first else "_target")
            first = False
    ax.set_yticks(range(len(stats)))
    ax.set_yticklabels([s.group for s in stats], fontsize="small")
    ax.invert_yaxis()
    ax.set_xlabel("MAPE (%)")
    ax.set_ylabel("case group")
    ax.set_title(style.title("MAPE of the primary metric (%)", system=system,
                             workload=workload, detail="by group"), fontsize="medium")
    ax.grid(True, axis="x", alpha=0.3)
    style.legend_outside(ax)
    return fig


def plots(annotated: pd.DataFrame, stats: list[GroupStats], out_dir: Path, *,
          system: str | None = None, workload: str | None = None) -> list[Path]:
    """The three figures of the report, as PNG files in ``out_dir``: predicted against
    measured (primary metrics; a panel per unit), error by group, MAPE per group."""
    from hostlink.model import plot_style as style
    from hostlink.model.plots import plot_predicted_vs_measured

    out_dir.mkdir(parents=True, exist_ok=True)
    prim = annotated[annotated["primary"]]
    figures = {
        "predicted_vs_measured.png": plot_predicted_vs_measured(
            prim, system=system, workload=workload),
        "error_by_group.png": figure_error_by_group(prim, system=system, workload=workload),
        "mape_by_group.png": figure_mape_by_group(stats, system=system, workload=workload),
    }
    return [style.save(fig, out_dir / name) for name, fig in figures.items()]


def write_summary(summary: pd.DataFrame, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    summary[list(SUMMARY_COLUMNS)].to_csv(path, index=False, float_format="%.6g")
    return path


def read_summary(path: str | Path) -> pd.DataFrame:
    path = Path(path)
    try:
        df = pd.read_csv(path)
    except (OSError, ValueError) as exc:
        raise ReportError(f"{path}: cannot read summary ({exc})") from None
    missing = [c for c in SUMMARY_COLUMNS if c not in df.columns]
    if missing:
        raise ReportError(f"{path}: missing column(s) {', '.join(missing)}")
    return df


def load_calibration(path: str | Path | None, system_path: str | Path | None) -> dict | None:
    """The calibration record: ``path``, else calibration.json beside the system file."""
    candidates = []
    if path is not None:
        candidates.append(Path(path))
    elif system_path is not None and Path(system_path).suffix == ".toml":
        candidates.append(Path(system_path).with_name("calibration.json"))
    for c in candidates:
        if c.is_file():
            try:
                return json.loads(c.read_text())
            except json.JSONDecodeError as exc:
                raise ReportError(f"{c}: not valid JSON ({exc.msg})") from None
        if path is not None:
            raise ReportError(f"{c}: no such calibration record")
    return None


# ----------------------------------------------------------------------------
# Predictions kept as they finish


#: Version of the twins' predictions: bumped when a change of the twins changes
#: what they predict (``hostlink.validation.twins.TWINS_VERSION`` where the twins
#: define it). Stored predictions of another version are recomputed.
_OWN_TWIN_VERSION = "1"
TWIN_VERSION = str(getattr(_twins, "TWINS_VERSION", _OWN_TWIN_VERSION))

PREDICTIONS_PARQUET = "predictions.parquet"
PREDICTIONS_JSON = "predictions.json"
STALE_PARQUET = "predictions.stale.parquet"
STALE_JSON = "predictions.stale.json"
STORE_FORMAT = 2                  # 2: the code hash per case kind, not per store
#: The store is rewritten when this many cases finished since the last write, or
#: this many seconds passed, and at the end (a choice: a crash loses at most that much).
FLUSH_EVERY_CASES = 20
FLUSH_EVERY_S = 5.0
_SYSTEM_LABELS = ("name", "description", "provenance")   # no effect on predictions


def _sha256(obj) -> str:
    blob = json.dumps(obj, sort_keys=True, default=repr, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


def _plain(obj):
    """``obj`` as it reads back from JSON (tuples as lists, keys as strings)."""
    return json.loads(json.dumps(obj, sort_keys=True, default=repr))


def system_hash(system) -> str:
    """SHA-256 of the resolved system config's values (its name, description and
    provenance left out: they do not change a prediction)."""
    from hostlink.model.config import system_to_dict
    d = system_to_dict(system)
    for k in _SYSTEM_LABELS:
        d.pop(k, None)
    return _sha256(d)


#: The code whose edits can change a prediction, per kind of case: every Python file
#: of these packages (or the module's own file).
PREDICTION_CODE = {
    "micro": ("hostlink.model", "hostlink.traces", "hostlink.validation.twin_common",
              "hostlink.validation.twin_micro", "hostlink.validation.twins",
              "hostlink.validation.sass",
              "hostlink.validation.manifest", "hostlink.validation.results_io"),
    "traversal": ("hostlink.model", "hostlink.traces", "hostlink.validation.twin_common",
                  "hostlink.validation.twin_traversal", "hostlink.validation.twins",
                  "hostlink.validation.manifest", "hostlink.validation.results_io"),
}

#: Measured tables a kind's twins read, hashed with its code: the L1's losses of
#: strided reads (:mod:`hostlink.model.l1_losses`) and the read kernels' loads in flight.
PREDICTION_DATA = {
    "micro": ("hostlink.model.l1_losses:TABLE_CSV",
              "hostlink.validation.twin_micro:REFERENCE_LOADS_IN_FLIGHT"),
}


def code_hash(modules: tuple[str, ...] | None = None, data: tuple[str, ...] | None = None) -> str:
    """SHA-256 of the source of the code behind the predictions (file names and bytes):
    of ``modules`` and of the tables ``data`` (``module:ATTRIBUTE`` naming a path, whose
    bytes are hashed too); by default every module of :data:`PREDICTION_CODE`, and
    every table of :data:`PREDICTION_DATA` where ``modules`` is not given either.

    Any edit of that code makes stored predictions made with it stale, whether or
    not it changes a number: reuse never mixes predictions of two versions of the
    code (the twin version alone would miss edits of the model)."""
    import importlib
    if data is None:
        data = (tuple(dict.fromkeys(d for ds in PREDICTION_DATA.values() for d in ds))
                if modules is None else ())
    if modules is None:
        modules = tuple(dict.fromkeys(m for mods in PREDICTION_CODE.values() for m in mods))
    h = hashlib.sha256()
    for ref in data:
        name, _, attr = ref.partition(":")
        path = Path(getattr(importlib.import_module(name), attr))
        h.update(f"{ref}\0".encode())
        h.update(path.read_bytes() if path.is_file() else b"<missing>")
        h.update(b"\0")
    for name in modules:
        mod = importlib.import_module(name)
        roots = list(getattr(mod, "__path__", []) or [])
        files = ([(f, f.relative_to(r)) for r in map(Path, roots) for f in sorted(r.rglob("*.py"))
                  if "__pycache__" not in f.parts]
                 if roots else [(Path(mod.__file__), Path(Path(mod.__file__).name))])
        for f, rel in files:
            h.update(f"{name}/{rel.as_posix()}\0".encode())
            h.update(f.read_bytes())
            h.update(b"\0")
    return h.hexdigest()


def kind_code_hash(kind: str) -> str:
    """:func:`code_hash` of the code and tables a case of ``kind`` (micro, traversal)
    is predicted with; a kind not in :data:`PREDICTION_CODE` takes all of it."""
    if kind not in PREDICTION_CODE:
        return code_hash()
    return code_hash(PREDICTION_CODE[kind], PREDICTION_DATA.get(kind, ()))


def case_options(params: dict, uvm: dict | None) -> dict:
    """The part of the system's ``uvm`` section a case's twin reads: all of it for the
    traversals in managed memory that migrates (``uvm``, ``uvm_readmostly``) and the UVM
    first-touch microbenchmarks, none for the others (their predictions read no UVM
    cost: :mod:`hostlink.model.stream_memo` keys engine runs the same way)."""
    from hostlink.validation.twin_common import UVM_MODES
    kind = params.get("kind")
    if ((kind == "traversal" and params.get("memory_mode") in UVM_MODES)
            or (kind == "micro" and params.get("benchmark") == "uvm_touch")):
        return {"uvm": dict(uvm or {})}
    return {}


def case_options_hash(params: dict, uvm: dict | None) -> str:
    """SHA-256 of :func:`case_options`."""
    return _sha256(_plain(case_options(params, uvm)))


def uvm_section(system) -> dict:
    """The system's ``uvm`` section as plain values."""
    from hostlink.model.config import system_to_dict
    return dict(system_to_dict(system).get("uvm") or {})


def prediction_key(system, *, fidelity: str, max_requests: int | None,
                   max_sources: int | None) -> dict:
    """What stored predictions were made with; predictions are reused only under an equal
    key, the system's ``uvm`` section aside: each stored case records the hash of the
    part of it its twin reads (:func:`case_options_hash`), and a case is predicted again
    when that changed, so a new UVM cost leaves the other cases' predictions in place."""
    from dataclasses import replace

    from hostlink.model.config.schema import UvmConfig
    return _plain({
        "system_sha256": system_hash(replace(system, uvm=UvmConfig())),
        "uvm": uvm_section(system),
        "fidelity": fidelity,
        "max_requests": int(_twins.DEFAULT_MAX_REQUESTS if max_requests is None else max_requests),
        "max_sources": None if max_sources is None else max(1, int(max_sources)),
        "twin_version": TWIN_VERSION,
    })


def case_inputs_hash(run, case: str) -> str:
    """SHA-256 of what a case's twin is built from in the measured run: its parameters,
    the measured launch facts a microbenchmark twin reads, a traversal's graph."""
    params = run.cases.get(case) or {}
    extra: dict = {}
    if params.get("kind") == "micro":
        extra = {m: run.hint(case, m) for m in ("warps_launched", "revisits")}
    elif params.get("kind") == "traversal":
        info = (run.metadata.get("graphs") or {}).get(params.get("graph")) or {}
        extra = {"graph": {k: v for k, v in info.items() if k not in ("prefix", "path")}}
    return _sha256({"params": params, "hints": extra})


class PredictionStore:
    """A report's predictions kept as each case finishes.

    ``OUT/predictions.parquet`` holds the tidy predicted rows (results_io columns)
    and ``OUT/predictions.json`` the key they were made with (:func:`prediction_key`)
    and, per finished case, the hash of its inputs (:func:`case_inputs_hash`), of
    the code of its kind (:func:`kind_code_hash`) and of the part of the system's
    ``uvm`` section its twin reads (:func:`case_options_hash`), its row count, its failure message or null, and its run time
    (traversal twins).
    Both are written to a temporary file and moved into place (the Parquet file
    first: the JSON never names a case the Parquet file lacks). A case counts as
    done only when the JSON names it with the same inputs and the Parquet file
    holds its rows; a case whose inputs or code changed is predicted again; stored
    predictions made under another key are moved to ``predictions.stale.*``, never
    mixed with new ones."""

    def __init__(self, out: str | Path, key: dict, *, flush_every_cases: int | None = None,
                 flush_every_s: float | None = None):
        self.out = Path(out)
        self.key = _plain(key)
        self.parquet = self.out / PREDICTIONS_PARQUET
        self.json = self.out / PREDICTIONS_JSON
        self.flush_every_cases = FLUSH_EVERY_CASES if flush_every_cases is None else flush_every_cases
        self.flush_every_s = FLUSH_EVERY_S if flush_every_s is None else flush_every_s
        self.uvm = dict(self.key.get("uvm") or {})
        self.cases: dict[str, dict] = {}
        self._code: dict[str, str] = {}
        self._frames: list[pd.DataFrame] = []
        self._pending = 0
        self._last_flush = time.monotonic()
        self.messages: list[str] = []

    def code_for(self, run, case: str) -> str:
        """The code hash of ``case``'s kind (computed once per kind)."""
        kind = str((run.cases.get(case) or {}).get("kind", ""))
        if kind not in self._code:
            self._code[kind] = kind_code_hash(kind)
        return self._code[kind]

    def options_for(self, run, case: str) -> str:
        """The hash of the part of the ``uvm`` section ``case``'s twin reads
        (:func:`case_options_hash`)."""
        return case_options_hash(run.cases.get(case) or {}, self.uvm)

    # -- reading

    def open(self, run, *, fresh: bool = False) -> set[str]:
        """Load what is stored for ``run``; returns the cases already done."""
        from hostlink.validation.results_io import read_results

        if not self.parquet.exists() and not self.json.exists():
            return set()
        if fresh:
            self._retire("--fresh")
            return set()
        if not self.json.is_file():
            self._retire(f"{self.parquet} has no {PREDICTIONS_JSON} naming what it was made with")
            return set()
        try:
            meta = json.loads(self.json.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            self._retire(f"{self.json} cannot be read ({exc})")
            return set()
        if not isinstance(meta, dict) or meta.get("format") != STORE_FORMAT:
            self._retire(f"{self.json} is not a format-{STORE_FORMAT} prediction record")
            return set()
        old = meta.get("key") if isinstance(meta.get("key"), dict) else {}
        diff = sorted(k for k in set(old) | set(self.key)
                      if k != "uvm" and old.get(k) != self.key.get(k))
        if diff:
            self._retire(f"made with another {', '.join(diff)}")
            return set()
        old_uvm = old.get("uvm") if isinstance(old.get("uvm"), dict) else {}
        entries = meta.get("cases") if isinstance(meta.get("cases"), dict) else {}
        table = None
        if self.parquet.is_file():
            try:
                table = read_results(self.parquet)
            except HostlinkError as exc:
                self._retire(str(exc))
                return set()
        counts = table["case"].value_counts().to_dict() if table is not None else {}
        keep, changed, recoded, reoptioned = {}, [], {}, 0
        for case, entry in entries.items():
            ok = (isinstance(entry, dict) and case in run.cases
                  and entry.get("inputs") == case_inputs_hash(run, case)
                  and int(counts.get(case, 0)) == int(entry.get("rows", -1)))
            if not ok:
                changed.append(case)
            elif entry.get("code") != self.code_for(run, case):
                kind = str(run.cases[case].get("kind", ""))
                recoded[kind] = recoded.get(kind, 0) + 1
            elif (entry.get("options") or case_options_hash(run.cases[case], old_uvm)) \
                    != self.options_for(run, case):
                reoptioned += 1
            else:
                keep[case] = {**entry, "options": self.options_for(run, case)}
        if changed:
            self.messages.append(f"{len(changed)} stored case(s) whose inputs changed or whose "
                                 "rows are incomplete are predicted again")
        for kind, n in sorted(recoded.items()):
            self.messages.append(f"{n} stored {kind} case(s) made with other code of the model "
                                 f"or the {kind} twins are predicted again")
        if reoptioned:
            self.messages.append(f"{reoptioned} stored case(s) made with other UVM costs "
                                 "that their twins read are predicted again")
        if changed or recoded or reoptioned or old_uvm != self.uvm:
            self._pending += 1                      # the next write leaves them out
        self.cases = keep
        if table is not None and len(table):
            self._frames = [table[table["case"].isin(set(keep))].reset_index(drop=True)]
        return set(keep)

    def _retire(self, why: str) -> None:
        moved = []
        for src, dst in ((self.parquet, STALE_PARQUET), (self.json, STALE_JSON)):
            if src.exists():
                os.replace(src, self.out / dst)
                moved.append(dst)
        self.messages.append(f"stored predictions not reused ({why}); kept as "
                             f"{' and '.join(moved)}, predicting afresh")

    # -- writing

    def add(self, case: str, rows: pd.DataFrame, failure: str | None, inputs: str,
            timing: dict | None = None, code: str | None = None,
            options: str | None = None) -> None:
        """Keep a finished case (its rows, failure or None, inputs hash, run time, the
        code hash of its kind, :meth:`code_for`, and of the UVM costs its twin reads,
        :meth:`options_for`)."""
        self.cases[case] = {"inputs": inputs, "code": code, "options": options,
                            "rows": int(len(rows)), "failure": failure,
                            "timing": _plain(timing) if timing else None}
        if len(rows):
            self._frames.append(rows)
        self._pending += 1
        if (self._pending >= self.flush_every_cases
                or time.monotonic() - self._last_flush >= self.flush_every_s):
            self.flush()

    def table(self) -> pd.DataFrame:
        from hostlink.validation.results_io import make_table
        frames = [f for f in self._frames if len(f)]
        if not frames:
            return make_table([])
        if len(frames) > 1:
            self._frames = [pd.concat(frames, ignore_index=True)]
        return self._frames[0]

    def failures(self) -> dict[str, str]:
        return {c: e["failure"] for c, e in self.cases.items() if e.get("failure")}

    def timings(self) -> dict[str, dict]:
        return {c: dict(e["timing"]) for c, e in self.cases.items() if e.get("timing")}

    def flush(self, force: bool = False) -> None:
        """Write both files (temporary file, then os.replace) if anything changed."""
        if not self._pending and not force:
            return
        self.out.mkdir(parents=True, exist_ok=True)
        table = self.table()
        tmp = self.out / f".{PREDICTIONS_PARQUET}.{os.getpid()}.tmp"
        table.to_parquet(tmp, index=False)
        os.replace(tmp, self.parquet)
        meta = {"format": STORE_FORMAT, "key": self.key, "code": dict(sorted(self._code.items())),
                "cases": self.cases}
        tmp = self.out / f".{PREDICTIONS_JSON}.{os.getpid()}.tmp"
        tmp.write_text(json.dumps(meta, indent=1, sort_keys=True, default=repr) + "\n")
        os.replace(tmp, self.json)
        self._pending = 0
        self._last_flush = time.monotonic()


# ----------------------------------------------------------------------------
# Progress


def _clock(seconds: float) -> str:
    s = int(round(seconds))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


class CaseProgress:
    """Cases done of the total (resumed cases count as done) and the time left.

    The time left is the sum over the classes of the remaining cases (``classes``:
    case -> class, e.g. microbenchmark and traversal, whose twins differ in cost by
    orders of magnitude) of the mean time of the cases of that class that finished
    in this session times the number left; failed cases do not count in the means.
    Where a class has no timed case yet, the time is a lower bound (shown with a
    "+"). A rich progress bar on a terminal, else one plain line per case on
    ``stream`` (stderr)."""

    def __init__(self, total: int, done: int = 0, *, enabled: bool = True, stream=None,
                 classes: dict[str, str] | None = None):
        self.total, self.done, self.new = int(total), int(done), 0
        self.enabled = enabled
        self.stream = stream if stream is not None else sys.stderr
        self.classes = dict(classes or {})
        self.left_by_class: dict[str, int] = {}
        for c in self.classes.values():
            self.left_by_class[c] = self.left_by_class.get(c, 0) + 1
        unclassed = max(0, self.total - self.done - len(self.classes))
        if unclassed:
            self.left_by_class[""] = unclassed
        self.spent_s: dict[str, float] = {}
        self.timed: dict[str, int] = {}
        self.t0 = self._last = time.monotonic()
        self._rich = None
        if not enabled:
            return
        if done:
            self.stream.write(f"{done}/{total} cases already predicted (resumed)\n")
            self.stream.flush()
        isatty = getattr(self.stream, "isatty", None)
        if isatty is not None and isatty():
            try:
                from rich.console import Console
                from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                                           TimeElapsedColumn)
                from rich.table import Column
            except ImportError:
                return
            fixed = dict(no_wrap=True)
            self._rich = Progress(
                TextColumn("predicting", table_column=Column(**fixed)), BarColumn(bar_width=20),
                MofNCompleteColumn(table_column=Column(**fixed)),
                TimeElapsedColumn(table_column=Column(**fixed)),
                TextColumn("{task.fields[left]}", table_column=Column(min_width=12, **fixed)),
                TextColumn("{task.fields[case]}",
                           table_column=Column(ratio=1, overflow="ellipsis", **fixed)),
                console=Console(file=self.stream), transient=False, expand=True)
            self._task = self._rich.add_task("predict", total=total, completed=done,
                                             left="", case="")
            self._rich.start()

    def time_left(self) -> tuple[float, bool] | None:
        """(seconds left, whether that is exact for every class left), None before any timing."""
        if not self.timed:
            return None
        left, whole = 0.0, True
        for cls, n in self.left_by_class.items():
            if n <= 0:
                continue
            if self.timed.get(cls):
                left += self.spent_s[cls] / self.timed[cls] * n
            else:
                whole = False
        return left, whole

    def _left_text(self) -> str:
        t = self.time_left()
        if t is None:
            return "?"
        return f"{_clock(t[0])}{'' if t[1] else '+'} left"

    def line(self, case: str, failure: str | None = None) -> str:
        pct = 100.0 * self.done / self.total if self.total else 100.0
        tail = " (failed)" if failure else ""
        return f"[{self.done}/{self.total}] {pct:3.0f}%  {self._left_text()}  {case}{tail}"

    def step(self, case: str, failure: str | None = None) -> None:
        now = time.monotonic()
        cls = self.classes.get(case, "")
        self.left_by_class[cls] = self.left_by_class.get(cls, 0) - 1
        if failure is None:
            self.spent_s[cls] = self.spent_s.get(cls, 0.0) + (now - self._last)
            self.timed[cls] = self.timed.get(cls, 0) + 1
        self._last = now
        self.done += 1
        self.new += 1
        if not self.enabled:
            return
        if self._rich is not None:
            self._rich.update(self._task, completed=self.done, case=case,
                              left=self._left_text())
        else:
            self.stream.write(self.line(case, failure) + "\n")
            self.stream.flush()

    def close(self) -> None:
        if self._rich is not None:
            self._rich.stop()
            self._rich = None


# ----------------------------------------------------------------------------
# The report


DEFAULT_FIDELITY = "des"


def report_command(results_dir, system_spec, *, fidelity: str = DEFAULT_FIDELITY,
                   out_dir=None, calibration_path=None, graph_dir=None, only: str | None = None,
                   max_requests: int | None = None, max_sources: int | None = None) -> str:
    """The ``hostlink validate report`` command line that makes this report."""
    args = ["hostlink", "validate", "report", str(results_dir), "--system", str(system_spec)]
    if fidelity != DEFAULT_FIDELITY:
        args += ["--fidelity", fidelity]
    for flag, value in (("--calibration", calibration_path), ("--graph-dir", graph_dir),
                        ("--only", only), ("--max-requests", max_requests),
                        ("--max-sources", max_sources), ("--out", out_dir)):
        if value is not None:
            args += [flag, str(value)]
    return " ".join(shlex.quote(a) for a in args)


def _case_order(run, case: str) -> tuple:
    """The order in which :func:`hostlink.validation.twins.predict_run` predicts cases."""
    p = run.cases.get(case) or {}
    return (p.get("kind") != "micro", str(p.get("graph", "")), str(p.get("kernel", "")),
            str(p.get("variant", "")), int(p.get("id_bytes", 0) or 0), case)


def stored_record(out: str | Path) -> dict | None:
    """The prediction record (``OUT/predictions.json``) as stored, whatever its key;
    None when absent or unreadable. Read only: nothing is retired."""
    path = Path(out) / PREDICTIONS_JSON
    try:
        meta = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None
    if not isinstance(meta, dict) or meta.get("format") != STORE_FORMAT \
            or not isinstance(meta.get("cases"), dict):
        return None
    return meta


def build_report(results_dir: str | Path, system_spec: str | Path, *, fidelity: str = "des",
                 out_dir: str | Path | None = None, calibration_path: str | Path | None = None,
                 graph_dir: str | Path | None = None, only: str | None = None,
                 max_requests: int | None = None, progress: bool = False,
                 notes: list[str] | None = None, max_sources: int | None = None,
                 fresh: bool = False, jobs: int = 1, from_summary: bool = False) -> dict:
    """Predict every case of a run, write summary.csv, report.md and plots/; return the stats.

    ``notes`` are added to the report's header after the command that makes the report
    (:func:`report_command`). ``max_sources`` samples the
    traversal cases: each is predicted for its first sources only and compared with
    the measurements of those sources (the header says so).

    Predictions are kept in OUT as they finish (:class:`PredictionStore`); a report
    started again in the same OUT with the same key predicts only the cases not yet
    done. ``fresh`` predicts every case again (the old files are kept as
    ``predictions.stale.*``). ``progress`` shows cases done and the time left on stderr.

    ``from_summary``: predict nothing; render report.md and plots/ again from OUT's
    summary.csv (a change of how a report is judged or drawn needs no new predictions).
    The header still names the command that made the numbers, and says that they were
    rendered again and with which model code they were predicted (from the stored
    prediction record, whose failures and run times are used where it names every
    case of the summary).

    ``jobs``: worker processes predicting the cases (:mod:`hostlink.validation.parallel`;
    0 = one per CPU); the numbers are those of one process (1, the default), the
    stored predictions are written by this process alone as cases arrive."""
    from hostlink.model.config import load_any_system
    from hostlink.validation.calibrate import groups_fitted_on
    from hostlink.validation.twins import load_run, sampled_measurements, selected

    run = load_run(results_dir)
    system = load_any_system(str(system_spec))
    calibration = load_calibration(calibration_path, system_spec)
    fitted = groups_fitted_on(calibration, results_dir) if calibration else []
    cal_groups = set(fitted)
    if calibration:
        calibration = {**calibration, "calibration_groups": fitted}
    out = Path(out_dir) if out_dir is not None else Path(results_dir)
    wanted = [c for c in run.measured["case"].unique() if selected(c, only)]
    command = report_command(results_dir, system_spec, fidelity=fidelity, out_dir=out_dir,
                             calibration_path=calibration_path, graph_dir=graph_dir, only=only,
                             max_requests=max_requests, max_sources=max_sources)
    notes = ["made with `" + command + "`"] + list(notes or [])
    measured = sampled_measurements(run, max_sources)
    measured = measured[[selected(c, only) for c in measured["case"]]]

    if from_summary:
        summary_path = out / "summary.csv"
        if not summary_path.is_file():
            raise ReportError(f"{summary_path}: no summary to render again (make the report "
                              "without --from-summary first)")
        summary = read_summary(summary_path)
        summary = summary[[selected(c, only) for c in summary["case"]]].reset_index(drop=True)
        record = stored_record(out)
        entries = (record or {}).get("cases") or {}
        codes = (record or {}).get("code") or {}
        if record is None or not set(summary["case"]) <= set(entries):
            entries, codes = {}, {}
        wanted_set = set(wanted)
        entries = {c: e for c, e in entries.items() if c in wanted_set and isinstance(e, dict)}
        failures = {c: e["failure"] for c, e in entries.items() if e.get("failure")}
        timings = {c: dict(entries[c]["timing"])
                   for c in sorted(entries, key=lambda c: _case_order(run, c))
                   if entries[c].get("timing")}
        notes.append("rendered again from its summary.csv by `" + command + " --from-summary`"
                     + ("; predicted with code sha256 " + ", ".join(
                         f"{kind} {h[:12]}" for kind, h in sorted(codes.items()) if h)
                        if codes else
                        "; no prediction record names every case, so the run times and "
                        "failures of the prediction run are not shown"))
        resumed, predicted_now, store_path, store_messages = len(wanted), 0, None, []
    else:
        summary, failures, timings, resumed, store = _predict_cases(
            run, system, out, wanted, measured, calibration=calibration, fidelity=fidelity,
            graph_dir=graph_dir, only=only, max_requests=max_requests,
            max_sources=max_sources, progress=progress, fresh=fresh, jobs=jobs)
        predicted_now, store_path, store_messages = (len(wanted) - resumed, store.parquet,
                                                     list(store.messages))

    if max_sources is not None:
        notes.append(f"traversal cases sampled: the first {max_sources} source(s) of each BFS "
                     "and SSSP case, predicted and compared with the measurements of those "
                     "sources only")
    if max_requests is not None:
        notes.append(f"microbenchmark twins hold about {max_requests} requests each (a prefix "
                     "of their traffic; the steady-state bandwidth stands for the run)")
    if summary.empty:
        raise ReportError(f"{results_dir}: no case could be compared "
                          f"({len(failures)} twins failed)")
    if not from_summary:
        write_summary(summary, out / "summary.csv")
    ann = mark_not_fitted(annotate(summary, run.cases), fitted_cases(calibration, results_dir))
    stats = group_stats(ann, cal_groups)
    unpredicted = sorted(set(measured["case"]) - set(summary["case"])
                         - {c for c in measured["case"].unique() if c.startswith("trace/")})
    unpredicted = [f"{c}: {failures[c]}" if c in failures else c for c in unpredicted]
    plots(ann, stats, out / "plots", system=getattr(system, "name", str(system_spec)),
          workload=f"validation run {run.experiment}")
    md = markdown(ann, stats, title=f"Validation report: {run.experiment}",
                  system_name=getattr(system, "name", str(system_spec)), fidelity=fidelity,
                  calibration=calibration, results_dir=str(results_dir), unpredicted=unpredicted,
                  timings=timings, notes=notes)
    (out / "report.md").write_text(md)
    return {"summary": summary, "groups": stats, "unpredicted": unpredicted, "out": out,
            "timings": timing_table(timings, ann), "resumed": resumed,
            "predicted": predicted_now, "predictions": store_path,
            "store_messages": store_messages}


def _predict_cases(run, system, out: Path, wanted: list[str], measured: pd.DataFrame, *,
                   calibration: dict | None,
                   fidelity: str, graph_dir, only, max_requests, max_sources, progress: bool,
                   fresh: bool, jobs: int):
    """Predict the ``wanted`` cases not stored yet (:class:`PredictionStore`); returns
    (summary against ``measured``, failures, timings, cases resumed, the store)."""
    from hostlink.validation.parallel import resolve_jobs
    from hostlink.validation.twins import predict_run

    n_jobs = resolve_jobs(jobs)
    kw = {} if max_requests is None else {"max_requests": max_requests}
    out.mkdir(parents=True, exist_ok=True)
    store = PredictionStore(out, prediction_key(system, fidelity=fidelity,
                                                max_requests=max_requests,
                                                max_sources=max_sources))
    done = store.open(run, fresh=fresh)
    if progress:
        for m in store.messages:
            sys.stderr.write(f"{out / PREDICTIONS_PARQUET}: {m}\n")
    resumed = sum(c in done for c in wanted)
    bar = CaseProgress(len(wanted), resumed, enabled=progress,
                       classes={c: str(run.cases[c].get("kind", "")) for c in wanted
                                if c not in done})
    new_timings: dict[str, dict] = {}

    def on_case(case: str, rows: pd.DataFrame, failure: str | None,
                timing: dict | None = None) -> None:
        store.add(case, rows, failure, case_inputs_hash(run, case),
                  timing if timing is not None else new_timings.get(case),
                  code=store.code_for(run, case), options=store.options_for(run, case))
        bar.step(case, failure)

    try:
        if n_jobs == 1:
            predict_run(run, system, fidelity=fidelity, graph_dir=graph_dir, only=only,
                        progress=False, timings=new_timings,
                        max_sources=max_sources, skip_cases=done, on_case=on_case, **kw)
        else:
            from hostlink.validation.parallel import predict_parallel
            predict_parallel(run, system, [c for c in wanted if c not in done], jobs=n_jobs,
                             on_case=on_case, fidelity=fidelity, graph_dir=graph_dir, only=only,
                             max_sources=max_sources, **kw)
    finally:
        bar.close()
        store.flush(force=True)
    wanted_set = set(wanted)
    failures = {c: f for c, f in store.failures().items() if c in wanted_set}
    stored_timings = store.timings()
    timings = {c: stored_timings[c] for c in sorted(stored_timings, key=lambda c: _case_order(run, c))
               if c in wanted_set}
    return summarise(measured, store.table()), failures, timings, resumed, store


def register_validate_commands(sub) -> None:
    """Hook for ``hostlink validate``: adds ``report`` (see cli_calibrate_report)."""
    from hostlink.validation.cli_calibrate_report import register_report
    register_report(sub)
