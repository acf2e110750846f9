"""A BFS predicted on samples of its launches, with a confidence interval: for graphs
too large, or too slow, to emulate whole.

``sampled_prediction(csr, variant, system, ...)`` first finds every vertex's BFS
level with a compiled top-down BFS over the (memory-mapped) CSR: 4 B a vertex
for the level and 4 B for the queue, no edge array. Each level is one launch.
The levels are then of two kinds, sampled in two ways:

- wide levels, whose frontier holds at least ``2 x GROUPS x MIN_GROUP_WARPS``
  warps: CTAs are sampled. Each CTA of the grid draws a fixed uniform u (a hash
  of its index); at a level the CTAs with u < f_l are kept and split into
  ``GROUPS`` groups by u. f_l is the asked fraction, raised where needed so
  that every group still has ``MIN_GROUP_WAVES`` times the GPU's resident
  warps. A level of more than ``EXACT_EDGES_MAX`` edges but too few vertices
  for that (the hubs' level of a large kron graph) keeps half its CTAs.
  Sampling CTAs, not single warps, keeps the neighbouring lists a CTA's warps
  read together, as the L1 sees them. A group pays the launch's tests of every
  vertex once, as the level does, so the issue floor applies to the level's
  estimate, not to the group's time (:func:`_issue_floors`). From host memory
  that floor also takes what the group's walks add to the tests
  (:func:`hostlink.model.predict.host_walks_ns`).

  At the des fidelity each group runs on a miniature of the GPU and its host
  of the group's share s = f_l / GROUPS, in whole SMs, ``MIN_MINIATURE_SMS`` at
  the least (f_l raised to match; :mod:`hostlink.model.des.miniature`): the
  sample then takes about as long as the level, its tail included. A
  miniature holding a share c of the level's edges stands for s / c of the
  level's time (the ratio estimator, Cochran, "Sampling Techniques", 3rd ed.,
  1977, ch. 6).
  A warp whose walk alone, a loaded round trip per trip, lasts
  ``TAIL_SHARE`` of the level's bytes at the link's rate can end the level by
  itself if it starts late, or if it is long enough to outlast the level from
  any start; so such walks go whole into every miniature, the longest first,
  then those that would end last (:func:`forced_walks`), not by chance into one
  in 1 / s, and the time their bytes hold the miniature's link beyond the GPU's,
  while it is busy, is taken off its estimate.

  At the analytic fidelity, which has no engine to shrink, a group's launch
  time is scaled by the ratio of the level's link bytes to the group's (a
  list's 32 B sectors plus a completion's overhead per 128 B line,
  :func:`completion_overhead_B`, less what the list before it in id order
  already fetched). A warp whose walk alone would last more than
  ``HEAVY_SHARE`` of a group's launch (:func:`heavy_list_elements`) stays out
  of the sample (it would set the group's time, which no ratio scales back);
  its lists count in the level's bytes, read at the sampled lists' rate.
- narrow levels (all the others: the first and last levels of a kron BFS,
  every level of a road-like graph): their time is latency, not edges, and
  one level stands for its neighbours. When there are at least ``2 x M`` of
  them (M = GROUPS / fraction), each group takes every M-th narrow level from
  its own random start (systematic sampling, Cochran ch. 8) and scales its sum
  by the narrow levels' count over its own; fewer are predicted whole.

Sampling sources instead would not shrink a run: every source's BFS reads the
whole component.

The sampled launches (whole narrow levels, and each wide level once per group)
are emulated (:func:`hostlink.traces.traversal.traversal_workload` with the
sampled active vertices) and predicted by :func:`hostlink.model.predict.predict`,
a stream per miniature's share, without the launches' fixed cost
(``without_launch``; the dispatcher's pace of the CTAs kept, which the engines
hold each CTA to by its place in the grid); each group's estimate of the run then adds the
launch floor (``max(work + shared writes, ctas x gpu.cta_dispatch_ns) +
gpu.launch_ns``, as :func:`hostlink.model.predict.launch_floor`, with each whole
level's writes to the edge counter and ``changed`` flag,
:func:`hostlink.traces.shared_writes.bfs_level_shared_writes`) to every level and the host loop
between launches (:func:`hostlink.model.host_loop.launch_gaps_ns`). The
estimate is the mean of the ``GROUPS`` group estimates and its 95% interval
the t interval of their batch means (Law and Kelton, "Simulation Modeling and
Analysis", 3rd ed., 2000, sec. 9.5.3). A run with no level sampled is exact:
its interval has no width.

Assumptions: BFS only (the other kernels' launches carry state from one wave
to the next); memory modes without page migration (zero-copy, UVM with the
host's pages accessed in place, device): a migrating UVM run's launches depend
on what the earlier ones moved. The sampled stream carries no device-array
accesses, as the full prediction of a graph over ``DEFAULT_MAX_DEVICE_EDGES``
edges (:mod:`hostlink.traces.traversal`); smaller graphs are predicted whole.
Byte and request counts of the result are the sample's scaled by the ratio of
the run's edges read to the sample's.
"""
from __future__ import annotations

import dataclasses
import time

import numpy as np
from numba import njit

from hostlink.model.errors import HostlinkError

#: independent groups (batch means) behind the interval
GROUPS = 8
#: warps each group keeps of a wide level, in multiples of the GPU's resident warps
MIN_GROUP_WAVES = 4
#: at the analytic fidelity, a wide level's warps whose walk alone would last more than
#: this share of a group's launch are left out of its sample (read at the sampled rate)
HEAVY_SHARE = 0.1
#: SMs a miniature keeps at the least (fewer where the GPU has fewer than GROUPS times
#: as many): on fewer, a level bound by the link comes out slow (urand21's merged BFS,
#: its sixth level alone on h200-pcie5: +2.2% on 2 SMs, +0.9% on 4, +0.2% on 6; kron22's
#: fourth, merged_aligned: +2.8% on 1 SM, -0.3% on 6; tests/bench/README.md)
MIN_MINIATURE_SMS = 6
#: a wide level's walks that alone last at least this share of the level's bytes at the
#: link's rate go whole into each of its miniatures (:func:`forced_walks`) ...
TAIL_SHARE = 0.1
#: ... those that would end last first, while their bytes stay within this share of a
#: miniature's (both chosen on kron21 and kron22: tests/bench/README.md)
FORCED_SHARE = 0.03
#: how many times slower than alone a walk's trips run while the other warps of its
#: level keep the link busy: 1.5 for the longest walk of kron21's third level and of
#: kron22's second (the DES on h200-pcie5, tests/bench/README.md)
LOADED_TRIP = 1.5
#: a level of more edges is sampled by CTAs even where its groups hold fewer than
#: MIN_GROUP_WAVES waves (the hub levels of a kron graph: about 1 GB of emulation)
EXACT_EDGES_MAX = 1 << 25
#: fraction of narrow levels predicted under ``--sample auto``
AUTO_NARROW_FRACTION = 0.25
CONFIDENCE = 0.95
SAMPLED_MODES = ("zerocopy", "uvm_accessedby", "device")
_SALT = 0x5A3C_96E1_0F2B_7D48


@njit(cache=True)
def _bfs_levels(offsets, dst, source, level, queue):
    """Level-synchronous top-down BFS: ``level`` (int32, -1 = not reached) filled;
    returns the reached count. Each frontier is sorted before it is expanded, so the
    lists are read in file order (a mapped graph larger than memory streams from disk)."""
    level[source] = 0
    queue[0] = source
    head, tail, depth = 0, 1, 0
    while head < tail:
        end = tail
        queue[head:end].sort()
        for i in range(head, end):
            v = queue[i]
            for e in range(offsets[v], offsets[v + 1]):
                u = dst[e]
                if level[u] < 0:
                    level[u] = depth + 1
                    queue[tail] = u
                    tail += 1
        head = end
        depth += 1
    return tail


@njit(cache=True, inline="always")
def _cost(offsets, v, elem_B, overhead_B, seen):
    """Link bytes the list of ``v`` adds to the lists before it in id order: its 32 B
    sectors and a completion's overhead for each 128 B line, those the previous
    list ended in not counted again (``seen``: [last sector, last line] counted, kept
    up to date): neighbouring lists share a line, which the L1 serves once."""
    a = np.int64(offsets[v]) * elem_B
    b = np.int64(offsets[v + 1]) * elem_B
    if b <= a:
        return 0.0
    s0, s1 = a // 32, (b + 31) // 32
    l0, l1 = a // 128, (b + 127) // 128
    sectors = s1 - max(s0, seen[0])
    lines = l1 - max(l0, seen[1])
    seen[0] = s1
    seen[1] = l1
    return 32.0 * max(sectors, 0) + overhead_B * max(lines, 0)


@njit(cache=True)
def _level_counts(offsets, level, levels, elem_B, overhead_B):
    """Per level: vertices, edges and link bytes of the lists."""
    nv = np.zeros(levels, dtype=np.int64)
    ne = np.zeros(levels, dtype=np.int64)
    nc = np.zeros(levels)
    seen = np.zeros((levels, 2), dtype=np.int64)
    for v in range(len(level)):
        lv = level[v]
        if lv >= 0:
            nv[lv] += 1
            ne[lv] += offsets[v + 1] - offsets[v]
            nc[lv] += _cost(offsets, v, elem_B, overhead_B, seen[lv])
    return nv, ne, nc


@njit(cache=True)
def _launch_cost(offsets, verts, bounds, elem_B, overhead_B):
    out = np.zeros(len(bounds) - 1)
    seen = np.zeros(2, dtype=np.int64)
    for k in range(len(bounds) - 1):
        seen[:] = 0
        for i in range(bounds[k], bounds[k + 1]):
            out[k] += _cost(offsets, verts[i], elem_B, overhead_B, seen)
    return out


def completion_overhead_B(system) -> float:
    """Downstream wire bytes of a 128 B read beyond its payload (completion header,
    digest and framing: :func:`hostlink.model.pcie.tlp.packetize_reads`)."""
    from hostlink.model.pcie.tlp import packetize_reads
    link = system.link
    p = packetize_reads(0, 128, gen=link.gen, mps_B=link.mps_B, mrrs_B=link.mrrs_B,
                        rcb_B=link.rcb_B, addr_64bit=link.addr_64bit, ecrc=link.ecrc,
                        framing_B=link.framing_B, flit_mode=link.uses_flit_mode,
                        cpl_split=getattr(link, "cpl_split", "mps"))
    return float(p.down_wire_B) - 128.0


@njit(cache=True, inline="always")
def _uniform(cta, salt):
    z = np.uint64(cta) ^ salt
    z += np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z = z ^ (z >> np.uint64(31))
    return (z >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@njit(cache=True)
def _walk_elements(level, offsets, vpw):
    """Per reached vertex, the elements its warp walks at the vertex's level: a warp
    walks the lists of its ``vpw`` vertices (consecutive ids) one after another, those
    of one level in one launch."""
    n = len(level)
    out = np.zeros(n, dtype=np.int64)
    for w0 in range(0, n, vpw):
        w1 = min(n, w0 + vpw)
        for v in range(w0, w1):
            if level[v] < 0:
                continue
            for x in range(w0, w1):
                if level[x] == level[v]:
                    out[v] += np.int64(offsets[x + 1] - offsets[x])
    return out


#: a vertex whose warp's walk is too long for a sample of its level (:func:`_launch_of`)
FORCED = -2


@njit(cache=True)
def _launch_of(level, whole, wide_base, frac, vpc, groups, salt, walk, heavy, forced):
    """Each reached vertex's launch in the sample (-1: left out): ``whole[l]`` for a
    level taken whole, :data:`FORCED` where ``forced``, else ``wide_base[l] + group``
    for a kept CTA of a wide level, left out where its warp walks ``heavy[l]``
    elements or more (``walk``: :func:`_walk_elements`)."""
    n = len(level)
    out = np.full(n, -1, dtype=np.int64)
    for v in range(n):
        lv = level[v]
        if lv < 0:
            continue
        if whole[lv] >= 0:
            out[v] = whole[lv]
        elif wide_base[lv] >= 0:
            if forced[v]:
                out[v] = FORCED
            elif walk[v] < heavy[lv]:
                u = _uniform(v // vpc, salt)
                if u < frac[lv]:
                    out[v] = wide_base[lv] + min(groups - 1, np.int64(u / frac[lv] * groups))
    return out


@njit(cache=True)
def _split(launch, count):
    """Vertices of each launch (sorted) as one array and its bounds, and edges per launch."""
    bounds = np.zeros(count + 1, dtype=np.int64)
    for v in range(len(launch)):
        if launch[v] >= 0:
            bounds[launch[v] + 1] += 1
    for k in range(count):
        bounds[k + 1] += bounds[k]
    pos = bounds[:count].copy()
    verts = np.empty(bounds[count], dtype=np.int64)
    for v in range(len(launch)):
        k = launch[v]
        if k >= 0:
            verts[pos[k]] = v
            pos[k] += 1
    return verts, bounds


def _with_level_writes(work, level_writes: np.ndarray, levels: list[int],
                       shares: list[float]):
    """``work`` whose launches (of the ``levels``, each a ``shares`` of its level's
    active vertices) write that share of their level's shared words."""
    from dataclasses import replace
    launches = tuple(replace(info, shared_writes=int(round(level_writes[lv] * sh)))
                     for info, lv, sh in zip(work.stream.launches, levels, shares))
    return replace(work, stream=replace(work.stream, launches=launches))


def bfs_levels(csr, source: int) -> np.ndarray:
    """Every vertex's BFS level from ``source`` (int32, -1: not reached)."""
    V = csr.num_vertices
    level = np.full(V, -1, dtype=np.int32)
    queue = np.empty(V, dtype=np.int32 if V < 2**31 else np.int64)
    _bfs_levels(np.asarray(csr.offsets), np.asarray(csr.dst), int(source), level, queue)
    return level


@dataclasses.dataclass(frozen=True)
class Plan:
    """Which launches the sample holds: per launch its level, its group (-1: all groups)
    and its kind ('exact', 'narrow', 'wide')."""
    level: np.ndarray
    group: np.ndarray
    kind: list
    frac: np.ndarray          # per level: the CTA fraction kept (wide levels), else 0
    narrow_levels: int        # narrow levels the sampled ones stand for (0: none sampled)


def plan(nv: np.ndarray, vertices_per_warp: float, resident_warps: int, fraction: float | None,
         seed: int = 0, ne: np.ndarray | None = None) -> Plan:
    """The sample's launches for levels of ``nv`` vertices (and ``ne`` edges) (module
    doc); ``fraction`` None: ``--sample auto``."""
    min_group_v = MIN_GROUP_WAVES * resident_warps * vertices_per_warp
    f_asked = 0.0 if fraction is None else float(fraction)
    L = len(nv)
    frac = np.zeros(L)
    wide = np.zeros(L, dtype=bool)
    for lv in range(L):
        need = GROUPS * min_group_v / max(1, nv[lv])
        big = ne is not None and ne[lv] > EXACT_EDGES_MAX
        if need <= 0.5 or big:      # a level too big to emulate whole: half its CTAs at most
            wide[lv] = True
            frac[lv] = min(0.5, max(f_asked, need)) if need > 0.5 else min(1.0, max(f_asked,
                                                                                   need))
    narrow = np.flatnonzero(~wide)
    f_narrow = AUTO_NARROW_FRACTION if fraction is None else f_asked
    M = max(GROUPS, int(round(GROUPS / f_narrow))) if f_narrow > 0 else 0
    pick = {}
    if M and len(narrow) >= 2 * M:
        starts = np.random.default_rng(seed).choice(M, GROUPS, replace=False)
        for g, s in enumerate(starts):
            for lv in narrow[s::M]:
                pick[int(lv)] = g
    levels, groups, kinds = [], [], []
    for lv in range(L):
        if wide[lv]:
            levels += [lv] * GROUPS
            groups += list(range(GROUPS))
            kinds += ["wide"] * GROUPS
        elif not pick or lv in pick:
            levels.append(lv)
            groups.append(pick.get(lv, -1))
            kinds.append("narrow" if pick else "exact")
    return Plan(np.array(levels, dtype=np.int64), np.array(groups, dtype=np.int64), kinds,
                frac, len(narrow) if pick else 0)


def _issue_floors(work, gpu, id_bytes: int, level_cost: np.ndarray, cost: np.ndarray,
                  kinds: list):
    """Per sampled launch, the instruction issue floor of the launch it stands for
    (:mod:`hostlink.model.compute`), and ``work`` without issue counts, whose
    prediction is then the launches' memory time alone.

    A launch of a traversal tests every vertex of the graph, active or not
    (:mod:`hostlink.traces.scan_cost`): a wide level's group pays those tests in full,
    once, as the level does. Scaling a group's time floored by them would count them
    ``level_cost / cost`` times over. So the floor is applied to the level's estimate:
    a wide level's is its tests plus its group's list instructions scaled by the
    level's link bytes over the group's; another launch's is its own."""
    from dataclasses import replace

    from hostlink.model.compute import issue_floor_ns
    from hostlink.traces.scan_cost import scan_warp_insts
    infos = work.stream.launches
    tests = scan_warp_insts(work.kernel, work.variant, id_bytes, work.vertices)
    total, longest, ctas, stall = [], [], [], []
    for k, info in enumerate(infos):
        insts = float(info.warp_insts)
        if kinds[k] == "wide" and cost[k] > 0:
            lists = max(insts - tests, 0.0)
            insts = insts - lists + lists * level_cost[k] / cost[k]
        total.append(insts)
        longest.append(info.longest_warp_insts)
        ctas.append(info.ctas)
        stall.append(info.stall_sm_clocks)
    floors = issue_floor_ns(total, longest, ctas, gpu, stall)
    bare = tuple(replace(info, warp_insts=0, longest_warp_insts=0, stall_sm_clocks=0.0)
                 for info in infos)
    return floors, replace(work, stream=replace(work.stream, launches=bare))


def _walk_trips(system, mode: str, variant: str, load_ahead: int) -> tuple[float, int]:
    """A walk's trip, ns (the fully loaded round trip and the data's way back to the
    warp, ``gpu.host_path_ns``; device memory's latency in ``device`` mode), and the
    elements a trip reads: ``load_ahead`` of a naive thread's own list, 32 times
    that for the other variants, whose warps walk one list 32 lanes wide
    (gpu_kernels/traversal/walk.cuh)."""
    from hostlink.traces.schema import WARP_SIZE
    link = system.link
    trip_ns = (float(system.gpu.device_lat_ns) if mode == "device" else
               float(link.rtt_ns + link.rtt_at_full_link_ns + system.gpu.host_path_ns))
    return trip_ns, max(1, int(load_ahead)) * (1 if variant == "naive" else WARP_SIZE)


def _rate_Bpns(system, mode: str) -> float:
    """The link's rate, B/ns (device memory's in ``device`` mode)."""
    from hostlink.model.des.inputs import link_rate_Bpns
    return float(system.gpu.device_bw_GBps) if mode == "device" else link_rate_Bpns(system)


def _bytes_ns(cost_B: float, system, mode: str) -> float:
    """The least time ``cost_B`` link bytes take: over :func:`_rate_Bpns`."""
    return cost_B / _rate_Bpns(system, mode)


def forced_walks(at: np.ndarray, walk: np.ndarray, degree: np.ndarray, vpw: int,
                 level_cost_B: float, share: float, system, mode: str, variant: str,
                 load_ahead: int, id_bytes: int) -> np.ndarray:
    """The vertices of a wide level whose walks go whole into every miniature of the
    level (``at``: the level's vertices in id order; ``walk``, ``degree``: per vertex,
    its warp's walk and its own list; ``vpw``: vertices a warp walks).

    A walk that alone, a round trip per trip, lasts at least ``TAIL_SHARE`` of the
    level's bytes at the link's rate can end the level if it starts late, so each
    miniature must hold it, not a ``share`` of the chance of it. A warp starts about
    when the level has moved the bytes of the lists before its own (CTAs start in id
    order as slots free), walks ``LOADED_TRIP`` times slower than alone while the
    other warps keep the link busy, and alone after they are done; after the longest
    (below), the walks that would end last go first, each whole with its warp's
    lists while their bytes fit in ``FORCED_SHARE`` of a miniature's (each stands
    for itself but moves on the miniature's link).

    The level's longest walk goes in first, whatever its bytes: how much the load slows
    its trips, and how long the level's other work lasts, vary from graph to graph
    (:data:`LOADED_TRIP` is 1.5 on the benchmark's kron21 and kron22, about 2 at the
    third level of the H200 first_run's kron21 from source 322668, whose other work
    outlasts its bytes at the link's rate by a quarter: tests/bench/README.md), and
    the longest walk is the one whose end they move most. Left to chance, it ends
    one group's sample and none of the others', and the estimate comes out short."""
    trip_ns, per_trip = _walk_trips(system, mode, variant, load_ahead)
    level_ns = _bytes_ns(level_cost_B, system, mode)
    if trip_ns <= 0 or len(at) == 0:
        return at[:0]
    alone_ns = np.ceil(walk / per_trip) * trip_ns
    long = np.flatnonzero(alone_ns >= TAIL_SHARE * level_ns)
    if not len(long):
        return at[:0]
    start_ns = (np.cumsum(degree) - degree)[long] / max(float(degree.sum()), 1.0) * level_ns
    alone_ns = alone_ns[long]
    busy_end = start_ns + LOADED_TRIP * alone_ns
    end_ns = np.where(busy_end <= level_ns, busy_end,
                      level_ns + alone_ns - (level_ns - start_ns) / LOADED_TRIP)
    # per warp: its latest end and its lists' bytes; warps by end, latest first, each
    # taken while it fits what is left
    warps, inv = np.unique(at[long] // vpw, return_inverse=True)
    w_end = np.full(len(warps), -np.inf)
    np.maximum.at(w_end, inv, end_ns)
    w_B = np.bincount(inv, weights=degree[long].astype(np.float64) * id_bytes)
    w_alone = np.zeros(len(warps))
    np.maximum.at(w_alone, inv, alone_ns)
    chosen = np.zeros(len(warps), dtype=bool)
    longest = int(np.argmax(w_alone))
    chosen[longest] = True
    room = FORCED_SHARE * level_cost_B * share - w_B[longest]
    for w in np.argsort(-w_end, kind="stable"):
        if not chosen[w] and w_B[w] <= room:
            chosen[w] = True
            room -= w_B[w]
    return at[long[chosen[inv]]]


def heavy_list_elements(group_cost_B: float, system, mode: str, variant: str,
                        load_ahead: int) -> int:
    """Elements from which a list is too long for a wide level's group launch that
    reads ``group_cost_B`` link bytes: one warp's walk of it, a round trip per trip,
    would last more than ``HEAVY_SHARE`` of the launch, which then ends with that
    list and not with the group's bytes.

    The launch lasts at least its bytes over the link's rate (device memory's in
    ``device`` mode); a trip, and the elements it reads, are :func:`_walk_trips`'."""
    trip_ns, per_trip = _walk_trips(system, mode, variant, load_ahead)
    if trip_ns <= 0:
        return np.iinfo(np.int64).max
    launch_ns = _bytes_ns(group_cost_B, system, mode)
    return max(per_trip, int(HEAVY_SHARE * launch_ns / trip_ns * per_trip))


def _busy_share(pred, mode: str) -> float:
    """The share of a des prediction's kernel time its busiest server was busy: the
    link's downstream direction or host DRAM, device memory in ``device`` mode."""
    util = pred.extra.get("des", {}).get("utilisation", {})
    if mode == "device":
        return min(1.0, float(util.get("device", 1.0)))
    return min(1.0, max(float(util.get("link_down", 1.0)), float(util.get("dram", 0.0))))


def _summed(preds: list):
    """The first of ``preds`` with the byte and request counts of them all."""
    first = preds[0]
    if len(preds) == 1:
        return first
    by_size = {}
    for p in preds:
        for k, v in p.requests_by_size_B.items():
            by_size[k] = by_size.get(k, 0) + v
    return dataclasses.replace(
        first, requests=sum(p.requests for p in preds), requests_by_size_B=by_size,
        useful_B=sum(p.useful_B for p in preds), requested_B=sum(p.requested_B for p in preds),
        wire_B_down=sum(p.wire_B_down for p in preds), wire_B_up=sum(p.wire_B_up for p in preds),
        dram_B=sum(p.dram_B for p in preds))


def _t_quantile(confidence: float, dof: int) -> float:
    from scipy.stats import t
    return float(t.ppf(0.5 + confidence / 2, dof))


def sampled_prediction(csr, variant: str, system, *, source: int, mode: str = "zerocopy",
                       fidelity: str = "des", fraction: float | None = None,
                       id_bytes: int = 8, load_ahead: int = 1, seed: int = 0):
    """A :class:`~hostlink.model.result.Prediction` of a BFS run (``variant``) on
    ``csr`` from a sample of its launches, its interval in ``extra["sampled"]``
    (module doc). ``fraction``: CTAs kept of a wide level and narrow levels
    predicted (None: as few as the groups need, and a quarter of the narrow levels)."""
    from hostlink.model.config import system_with
    from hostlink.model.des.inputs import link_rate_Bpns
    from hostlink.model.des.miniature import miniature_sms
    from hostlink.model.host_loop import launch_gaps_ns
    from hostlink.model.kernel_costs import HOST_MODES
    from hostlink.model.loaded_rtt import blends, settle_rtt
    from hostlink.model.predict import (host_walks_ns, predict, resolve_system,
                                        shared_writes_added_ns)
    from hostlink.model.runs import without_launch
    from hostlink.traces.emulator import AlgorithmRun
    from hostlink.traces.emulator.emit import THREADS_PER_CTA, grid_of, threads_of
    from hostlink.traces.schema import WARP_SIZE
    from hostlink.traces.shared_writes import bfs_level_shared_writes
    from hostlink.traces.traversal import traversal_workload

    if mode not in SAMPLED_MODES:
        raise HostlinkError(f"--sample: mode {mode} migrates pages from launch to launch, so "
                            f"sampled launches cannot stand for the run (use one of "
                            f"{', '.join(SAMPLED_MODES)})")
    if fraction is not None and not 0 < fraction <= 1:
        raise HostlinkError(f"--sample {fraction}: a fraction must lie in (0, 1]")
    from hostlink.model.progress import RUN, round_trip_blend, round_trip_pass, stage
    system = resolve_system(system)
    t0 = time.perf_counter()
    V = csr.num_vertices
    stage(RUN, "finding the BFS's levels")
    level = bfs_levels(csr, source)
    L = int(level.max()) + 1
    offsets = np.asarray(csr.offsets)
    overhead_B = completion_overhead_B(system)
    nv, ne, nc = _level_counts(offsets, level, L, id_bytes, overhead_B)
    bfs_s = time.perf_counter() - t0
    gpu = system.gpu
    resident = gpu.sm_count * gpu.max_warps_per_sm
    threads = threads_of(variant, V)
    vertices_per_warp = V * WARP_SIZE / threads
    vpc = max(1, int(round(V * THREADS_PER_CTA / threads)))
    p = plan(nv, vertices_per_warp, resident, fraction, seed, ne)
    n_launch = len(p.level)
    whole = np.full(L, -1, dtype=np.int64)
    wide_base = np.full(L, -1, dtype=np.int64)
    for k in range(n_launch):
        lv = int(p.level[k])
        if p.kind[k] == "wide":
            if wide_base[lv] < 0:
                wide_base[lv] = k
        else:
            whole[lv] = k
    # miniatures (des fidelity): a wide level's groups run on a machine of their share of
    # the GPU, its longest walks forced into every group; else its groups' times are
    # scaled by their bytes, and walks too long for a group's launch left out
    mini = fidelity == "des"
    vpw = 1 if variant == "naive" else max(1, int(round(vertices_per_warp)))
    walk = _walk_elements(level, offsets, vpw)
    heavy = np.full(L, np.iinfo(np.int64).max, dtype=np.int64)
    share = np.ones(L)
    forced = []
    for lv in np.flatnonzero(wide_base >= 0):
        if mini:
            # whole SMs: the groups then keep the share of the CTAs the miniature has
            sms = max(miniature_sms(gpu.sm_count, p.frac[lv] / GROUPS),
                      min(MIN_MINIATURE_SMS, gpu.sm_count // GROUPS))
            share[lv] = sms / gpu.sm_count
            p.frac[lv] = min(1.0, share[lv] * GROUPS)
            at = np.flatnonzero(level == lv)
            degree = (offsets[at + 1] - offsets[at]).astype(np.int64)
            forced.append(forced_walks(at, walk[at], degree, vpw, nc[lv], share[lv], system,
                                       mode, variant, load_ahead, id_bytes))
            del at, degree
        else:
            heavy[lv] = heavy_list_elements(nc[lv] * p.frac[lv] / GROUPS, system, mode,
                                            variant, load_ahead)
    forced = np.concatenate(forced) if forced else np.zeros(0, dtype=np.int64)
    is_forced = np.zeros(V, dtype=np.bool_)
    is_forced[forced] = True
    launch = _launch_of(level, whole, wide_base, p.frac, vpc, GROUPS, np.uint64(_SALT),
                        walk, heavy, is_forced)
    del is_forced
    forced = np.flatnonzero(launch == FORCED)       # in id order
    forced_level = level[forced]
    # each level's writes to the edge counter and the changed flag, from the whole run
    level_writes = bfs_level_shared_writes(offsets, variant, level)
    del level, walk
    verts, bounds = _split(launch, n_launch)
    del launch
    active = [verts[bounds[k]:bounds[k + 1]] for k in range(n_launch)]
    cost = _launch_cost(offsets, verts, bounds, id_bytes, overhead_B)   # the sampled lists'
    # edges of the sampled lists, and per level its forced walks' link bytes and edges
    edges = np.array([int((offsets[a + 1] - offsets[a]).sum()) for a in active], dtype=float)
    forced_cost = np.zeros(L)
    forced_edges = np.zeros(L)
    if mini:            # every group of a level holds its forced walks
        for lv in np.unique(forced_level):
            mine = forced[forced_level == lv]
            forced_cost[lv] = _launch_cost(offsets, mine, np.array([0, len(mine)]), id_bytes,
                                           overhead_B)[0]
            forced_edges[lv] = float((offsets[mine + 1] - offsets[mine]).sum())
            for k in np.flatnonzero((np.asarray(p.level) == lv)
                                    & (np.array(p.kind) == "wide")):
                active[k] = np.union1d(active[k], mine)
    # one workload per miniature's share (the whole machine's: the other launches)
    parts = {}
    for k in range(n_launch):
        parts.setdefault(float(share[p.level[k]]) if p.kind[k] == "wide" else 1.0,
                         []).append(k)
    works = {}
    for sh, ks in parts.items():
        run_ = AlgorithmRun("bfs", [active[k] for k in ks], np.zeros(0, dtype=np.uint32))
        w = traversal_workload(csr, "bfs", variant, gpu, source=source, id_bytes=id_bytes,
                               load_ahead=load_ahead, max_device_edges=0, run=run_)
        if mini:    # each sampled launch writes its share of its level's shared words
            w = _with_level_writes(w, level_writes, [int(p.level[k]) for k in ks],
                                   [len(active[k]) / max(1.0, nv[p.level[k]]) for k in ks])
        floors, bare = _issue_floors(w, gpu, id_bytes, nc[p.level[ks]], cost[ks],
                                     [p.kind[k] for k in ks])
        if mode in HOST_MODES:   # the walks' host reads, with the program's loads in flight
            floors = floors + host_walks_ns(w.stream, system_with(system, {
                "gpu.loads_in_flight_per_warp": int(w.loads_in_flight)}), floors)
        works[sh] = (np.array(ks), floors, bare)
    issue_ns = np.zeros(n_launch)
    for ks, floors, _ in works.values():
        issue_ns[ks] = floors
    dispatch_ns = grid_of(variant, V) * gpu.cta_dispatch_ns
    rate_Bpns = _rate_Bpns(system, mode)

    # the levels' shared writes: served in the miniatures' runs, added to a scaled one's
    added_ns = shared_writes_added_ns(level_writes * gpu.shared_write_ns, paced=mini)

    def floor(x, lv):
        return max(x + added_ns[lv], dispatch_ns) + gpu.launch_ns

    def estimate(k_ns, busy):
        """Per group, the run's kernel time; per level, the mean estimate (ns).
        ``busy``: per launch, the share of its time its busiest server was busy."""
        per_group = np.zeros(GROUPS)
        per_level = np.zeros(L)
        narrow_sum = np.zeros(GROUPS)
        narrow_n = np.zeros(GROUPS)
        for k in range(n_launch):
            lv, g, kind = int(p.level[k]), int(p.group[k]), p.kind[k]
            whole_ns = floor(max(k_ns[k], issue_ns[k]), lv)
            if kind == "exact":
                per_group += whole_ns
                per_level[lv] = whole_ns
            elif kind == "narrow":
                narrow_sum[g] += whole_ns
                narrow_n[g] += 1
                per_level[lv] = whole_ns
            else:
                if mini:
                    # a miniature of share s whose sample holds a share c of the level's
                    # other edges takes about s / c of the level's time (edges, not link
                    # bytes: a sample's lists share fewer lines with the lists beside them,
                    # which the L1 serves whole or not at all); its forced walks' bytes
                    # hold its link 1 / s times as long as they hold the GPU's, which
                    # delays the others while the link is busy
                    rest = ne[lv] - forced_edges[lv]
                    ratio = share[lv] * rest / edges[k] if edges[k] and rest > 0 else 1.0
                    over = forced_cost[lv] * (1 / share[lv] - 1) / rate_Bpns * busy[k]
                    scaled = k_ns[k] * ratio - over
                else:
                    scaled = k_ns[k] * nc[lv] / cost[k] if cost[k] else 0.0
                est = floor(max(scaled, issue_ns[k]), lv)
                per_group[g] += est
                per_level[lv] += est / GROUPS
        if p.narrow_levels:
            per_group += narrow_sum / narrow_n * p.narrow_levels
            mean_narrow = narrow_sum.sum() / narrow_n.sum()
            for lv in range(L):
                if per_level[lv] == 0 and wide_base[lv] < 0:
                    per_level[lv] = mean_narrow
        return per_group, per_level

    # The loaded round trip (hostlink.model.loaded_rtt) is the run's, not the sample's:
    # the link's share U is the run's completion bytes (the lists' link bytes, at the
    # sample's wire bytes per list byte) over its estimated kernel time.
    link = system.link
    loaded = mode in ("zerocopy", "uvm_accessedby") and link.rtt_at_full_link_ns > 0
    quiet = without_launch(system, keep_dispatch=True)   # the engines pace the CTAs
    if loaded:
        quiet = system_with(quiet, {"link.rtt_at_full_link_ns": 0.0})
    launches_cost = float(cost.sum())
    last = {}
    passes = []
    runs_at = {}        # per pass's round trip: launch times, busy shares, base, bounds

    def run(rtt_ns: float) -> tuple[float, float]:
        """The sample's estimate at a round trip: (its time, the run's link share)."""
        passes.append(rtt_ns)
        stage(RUN, f"{round_trip_pass(len(passes), rtt_ns)}, the samples" if loaded
              else "the samples")
        on = system_with(quiet, {"link.rtt_ns": rtt_ns}) if loaded else quiet
        k_ns = np.zeros(n_launch)
        busy = np.zeros(n_launch)
        preds = []
        for sh, (ks, _, w) in works.items():
            pred = predict(w, on, mode=mode, fidelity=fidelity, share=sh)
            k_ns[ks] = np.asarray(pred.per_launch_kernel_s) * 1e9
            busy[ks] = _busy_share(pred, mode)
            preds.append(pred)
        base = _summed(preds)
        per_group, per_level = estimate(k_ns, busy)
        last.update(base=base, per_group=per_group, per_level=per_level, rtt_ns=rtt_ns)
        runs_at[rtt_ns] = (k_ns, busy, base, [p.bound for p in preds])
        if not loaded:
            return float(per_group.mean()) * 1e-9, 0.0
        wire_B = base.wire_B_down * float(nc.sum()) / launches_cost if launches_cost else 0.0
        util = min(1.0, wire_B / (per_level.sum() * link_rate_Bpns(system)))
        return float(per_group.mean()) * 1e-9, util

    def between(rtt_ns: float, first_ns: float, second_ns: float, w: float) -> bool:
        """The samples at ``rtt_ns`` as the blend of two passes' launch times
        (hostlink.model.loaded_rtt), where the same resources bind both passes."""
        k1, b1, base1, bounds1 = runs_at[first_ns]
        k2, b2, base2, bounds2 = runs_at[second_ns]
        if bounds1 != bounds2:
            return False
        per_group, per_level = estimate(k1 + w * (k2 - k1), b1 + w * (b2 - b1))
        last.update(base=base2 if w >= 0.5 else base1, per_group=per_group,
                    per_level=per_level, rtt_ns=rtt_ns)
        stage(RUN, f"{round_trip_blend(rtt_ns)}, the samples")
        return True

    if loaded:      # settle_rtt's last pass, or the blend it takes, is the one it settles on
        settle_rtt(link.rtt_ns, link.rtt_at_full_link_ns, run,
                   between if blends(*(w.stream for _, _, w in works.values())) else None)
    else:
        run(link.rtt_ns)
    base, per_group, per_level = last["base"], last["per_group"], last["per_level"]
    used_rtt_ns = last["rtt_ns"]
    gaps_ns = launch_gaps_ns(system, "bfs", V, L)
    per_group += gaps_ns.sum()
    est_s = float(per_group.mean()) * 1e-9
    half_s = float(_t_quantile(CONFIDENCE, GROUPS - 1) * per_group.std(ddof=1)
                   / np.sqrt(GROUPS)) * 1e-9
    elem_B = id_bytes
    full_edges = int(ne.sum())
    read_B = sum(w.bytes_read_B for _, _, w in works.values())
    scale = full_edges * elem_B / read_B if read_B else 1.0
    sampled = {
        "fraction": "auto" if fraction is None else fraction, "groups": GROUPS,
        "confidence": CONFIDENCE, "time_s_low": est_s - half_s, "time_s_high": est_s + half_s,
        "half_width_s": half_s, "group_time_s": (per_group * 1e-9).tolist(),
        "levels": L, "wide_levels": int(np.count_nonzero(wide_base >= 0)),
        "narrow_levels_sampled": len({int(lv) for lv, kd in zip(p.level, p.kind)
                                      if kd == "narrow"}),
        "narrow_levels": p.narrow_levels,
        "wide_fraction": [float(x) for x in p.frac[wide_base >= 0]],
        "edges_read": full_edges,
        "sample_edges_read": int(sum(w.edges_read for _, _, w in works.values())),
        "miniature_share": [float(x) for x in share[wide_base >= 0]] if mini else [],
        "forced_walks": int(len(forced)) if mini else 0,
        "bfs_s": round(bfs_s, 3), "sampled_launches": n_launch,
    }
    per_kernel_ns = per_level.copy()
    useful = base.useful_B * scale
    out = dataclasses.replace(
        base, time_s=est_s, bw_GBps=useful / est_s * 1e-9 if est_s > 0 else 0.0,
        link_bw_GBps=base.requested_B * scale / est_s * 1e-9 if est_s > 0 else 0.0,
        requests=int(round(base.requests * scale)),
        requests_by_size_B={k: int(round(v * scale)) for k, v in base.requests_by_size_B.items()},
        useful_B=int(round(useful)), requested_B=int(round(base.requested_B * scale)),
        wire_B_down=base.wire_B_down * scale, wire_B_up=base.wire_B_up * scale,
        dram_B=int(round(base.dram_B * scale)), system=system.name,
        per_launch_time_s=((per_kernel_ns + gaps_ns) * 1e-9).tolist(),
        per_launch_kernel_s=(per_kernel_ns * 1e-9).tolist(),
        extra=dict(base.extra, sampled=sampled, launches=L, launch_bounds=[],
                   loaded_rtt_ns={"unloaded": link.rtt_ns, "loaded": used_rtt_ns}))
    return out
