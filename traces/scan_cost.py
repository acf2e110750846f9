"""The warp instructions a traversal launch spends testing its vertices, as measured.

Every launch of the BFS, SSSP and CC programs (gpu_kernels/traversal/walk.cuh)
covers all V vertices of the graph and tests each one (``algo.active(v)``),
active or not. The emulated traces hold memory instructions only, so a launch
that tests a million vertices and expands a few hundred looks almost empty to
the model's issue floor (:mod:`hostlink.model.compute`), while on the GPU the
tests alone take tens of microseconds: the chunked kernel's last BFS launch on
a 2 M-vertex graph ran 68.5 us, its SMs issuing 3.2 of 4 warp instructions a
clock (``validation/experiments/device_work/runs/h100``).

:data:`SCAN_WARP_INSTS` holds the warp instructions per tested vertex of a
launch that expands no vertex: Nsight Compute's ``smsp__inst_executed`` of the
last launch of each run in that probe (``launches.csv``, column ``warp_inst``)
over the graph's vertices, the least over its graphs (a last launch that still
expanded a few vertices issues more). Measured on an H100 for sm_90 builds of
the same sources as the H200's (the same GH100 SM).
:func:`scan_warp_insts` adds them to a launch's count.

The balanced walk's counts come from a second probe of the same kind
(``validation/experiments/vertex_tests/runs/h100``, ``scale21/launches.csv``:
BFS on kron21 and urand21, device memory), the least of its last launches.

The SMs do not issue those tests at their peak of four warp instructions a
clock. :data:`SCAN_ISSUE_PER_CLK` holds the rate they did issue them at;
:func:`scan_stall_sm_clocks` turns the gap to four into SM clocks that the
issue floor (:mod:`hostlink.model.compute`) adds.

- chunked: ``ipc_per_sm`` of the same last launches, where the SMs were busy
  issuing (81-82% of cycles).
- balanced: its tests wait on their label loads (long-scoreboard stalls; its
  58 registers a thread leave room for 4 of its 8-warp CTAs an SM). Nsight
  Compute flushes the caches before each launch it profiles, which slows such
  loads, so the rate comes from the same launches timed without the profiler
  (CUDA events): their warp instructions over the SM clocks of the event time
  less ``gpu.launch_ns`` (what a pair of events adds to a launch). The run's
  README compares the rate with the road grid's mid-run launches.
- The merged variants' last launches issued at 1.3-1.4 a clock because their
  one-warp CTAs wait for dispatch (``gpu.cta_dispatch_ns`` times them), so
  they get no stall of their own.
- naive: a scan launch issues one warp instruction per vertex, and fixed
  costs, not issue, set its time (``vertex_tests``): it gets no count.

Assumptions: every vertex's test costs the same (the variant's loop over its
warp's vertices is the same for every warp); the measured count includes the
test's own loads, which a trace that carries the device accesses counts again
(one or two instructions of 8-31); the balanced rate, measured with the graph
in device memory, stands for every placement (from pinned host memory the
road grid's scan launches took 11% longer, ``vertex_tests``); an id width a
variant was not measured at takes the measured one of the same kernel and variant; every kernel's chunked tests
issue at BFS's measured rate (the same loop in gpu_kernels/traversal/walk.cuh,
only ``algo.active`` differs; SSSP's and CC's were measured on 16 K-vertex
graphs only, where a launch's latency, not its issue, sets its time).
"""
from __future__ import annotations

#: (kernel, variant, id bytes) -> warp instructions per tested vertex, from
#: validation/experiments/device_work/runs/h100/launches.csv (least warp_inst / V of
#: each configuration's last launch over kron14, urand14, kron21 and urand21); balanced
#: from validation/experiments/vertex_tests/runs/h100/scale21/launches.csv (the same
#: over kron21 and urand21).
SCAN_WARP_INSTS: dict[tuple[str, str, int], float] = {
    ("bfs", "merged", 4): 27.0007,
    ("bfs", "merged", 8): 28.0007,
    ("bfs", "merged_aligned", 4): 27.0008,
    ("bfs", "merged_aligned", 8): 28.0008,
    ("bfs", "chunked", 4): 26.3758,
    ("bfs", "chunked", 8): 27.3758,
    ("bfs", "balanced", 8): 8.2530,
    ("sssp", "merged_aligned", 8): 30.0060,
    ("sssp", "chunked", 8): 28.3815,
    ("cc", "merged_aligned", 8): 30.6583,
    ("cc", "chunked", 8): 28.3802,
}

#: variant -> warp instructions a clock per SM at which the SMs issued the vertex tests.
#: chunked: the mean ``ipc_per_sm`` of chunked BFS's last launches on kron21 and urand21
#: in validation/experiments/device_work/runs/h100/launches.csv (six launches,
#: 3.215-3.264); balanced: the mean over balanced BFS's last launches on kron21 and
#: urand21 of warp_inst / (SMs x (event_ms - gpu.launch_ns of h100-pcie5) x SM clock) in
#: validation/experiments/vertex_tests/runs/h100/scale21/launches.csv (1.391, 1.158).
SCAN_ISSUE_PER_CLK: dict[str, float] = {"chunked": 3.2403, "balanced": 1.2747}


def per_vertex(kernel: str, variant: str, id_bytes: int) -> float:
    """Warp instructions per tested vertex of ``kernel``'s ``variant`` launch (0 where
    not measured); another id width of the same kernel and variant stands in for one
    not measured."""
    if (kernel, variant, id_bytes) in SCAN_WARP_INSTS:
        return SCAN_WARP_INSTS[(kernel, variant, id_bytes)]
    same = [v for (k, var, _), v in SCAN_WARP_INSTS.items() if k == kernel and var == variant]
    return same[0] if same else 0.0


def scan_warp_insts(kernel: str, variant: str, id_bytes: int, vertices: int) -> int:
    """Warp instructions one launch of ``kernel``'s ``variant`` spends testing
    ``vertices`` vertices (0 where not measured)."""
    return int(round(per_vertex(kernel, variant, id_bytes) * max(0, int(vertices))))


def scan_stall_sm_clocks(kernel: str, variant: str, id_bytes: int, vertices: int) -> float:
    """SM clocks, summed over the SMs, that one launch's tests of ``vertices`` vertices
    take beyond their issue at four a clock (0 where the rate was not measured)."""
    rate = SCAN_ISSUE_PER_CLK.get(variant)
    if rate is None:
        return 0.0
    from hostlink.model.compute import ISSUE_PER_SM_PER_CLK
    insts = scan_warp_insts(kernel, variant, id_bytes, vertices)
    return insts * (1.0 / rate - 1.0 / ISSUE_PER_SM_PER_CLK)
