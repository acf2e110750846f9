"""A traversal kernel's run on a graph as the GPU programs issue it: the workload to predict.

:func:`traversal_workload` emulates one run of a kernel (BFS, SSSP, CC,
PageRank) in one variant from one source (:mod:`hostlink.traces.emulator`),
coalesces its memory trace through the GPU's caches
(:func:`hostlink.traces.cache.host_read_cache`) and returns a
:class:`~hostlink.model.workload.TraversalWorkload`: the request stream, the
host requests a warp keeps in flight at the kernel's load-ahead
(:func:`requests_ahead`), the program's host loop between launches
(:mod:`hostlink.model.host_loop`) and the counts a report needs. Every command
that predicts a traversal from a graph builds it here (``hostlink predict
--graph``, the validation twins), so they predict the same run.

Assumptions:
- graphs of at most ``max_device_edges`` edges, whose runs test at most
  ``max_device_tests`` vertices (vertices x launches: every launch's warps test
  their vertex, active or not), carry the kernel's device-array
  accesses (vertex labels, offsets, atomics: :mod:`hostlink.traces.emulator.program`),
  put in the kernel's issue order at its load-ahead with what each instruction
  waits for (:mod:`hostlink.traces.emulator.issue_order`); larger graphs keep
  the edge list's requests and one device request per dependent step of the
  walk (:func:`hostlink.traces.emulator.visits.with_visit_skeleton`): the
  accesses themselves would need about 14 times the requests, and a graph of
  thousands of levels (a road network, :mod:`hostlink.traces.graphs.grid`)
  would test every vertex thousands of times.
- device and migrated managed memory are cached alike, so one stream serves
  every memory mode.
- SSSP and CC launches run in waves of the GPU's resident warps
  (:mod:`hostlink.traces.emulator.algorithms`).
- every BFS, SSSP and CC launch tests all the graph's vertices; the warp
  instructions of those tests, and the clocks they stall, as measured
  (:mod:`hostlink.traces.scan_cost`), join each launch's count
  (:func:`with_scan_insts`), so the issue floor times a launch that tests a
  million vertices and expands a few.
- each launch's warps write the run's edge counter and ``changed`` flag, one word
  each that the L2 serves one write at a time (:mod:`hostlink.traces.shared_writes`);
- each launch runs as many CTAs per SM as the program's registers allow
  (:mod:`hostlink.traces.kernel_registers`: the balanced walk's 40-61 registers
  a thread leave room for 4 to 6 CTAs of 8 warps, not 8).
"""
from __future__ import annotations

from hostlink.model.geometry import SECTOR_B
from hostlink.model.workload import TraversalWorkload
from hostlink.traces.kernel_registers import with_program_registers
from hostlink.traces.scan_cost import scan_stall_sm_clocks, scan_warp_insts
from hostlink.traces.shared_writes import with_shared_writes

#: Graphs up to this many edges carry their device-array accesses (the scale-14
#: graphs at degree 16, not the scale-21 and -24 ones).
DEFAULT_MAX_DEVICE_EDGES = 1 << 24
#: Runs up to this many vertex tests (vertices x launches) carry their device-array
#: accesses: the committed scale-14 runs test 16384 vertices in each of at most about
#: 22 launches (the measured iterations of validation/results/*/first_run), far below;
#: a 4 M-vertex grid's BFS would test 4 M vertices 4000 times.
DEFAULT_MAX_DEVICE_TESTS = 1 << 26
#: An edge weight: uint32 (gpu_kernels/traversal/walk.cuh).
WEIGHT_B = 4
#: Edge loads the balanced walk keeps in flight, by load-ahead (the programs are built
#: with 1 and 4): the SASS of walk<..., kBalanced, ...> on sm_90 waits for the first of
#: its four windows' loads before it issues the fourth, for every kernel and id width
#: (validation/experiments/sass/runs/h200, ``hostlink validate sass``).
BALANCED_LOADS_IN_FLIGHT = {1: 1, 4: 3}


def requests_ahead(variant: str, load_ahead: int, id_bytes: int, weighted: bool = False) -> int:
    """Host requests a warp of a traversal kernel keeps in flight at load-ahead
    ``load_ahead`` (gpu_kernels/traversal/walk.cuh): the merged variants issue
    ``load_ahead`` warp-wide trips, each of one line or more (and as many loads of
    the weights where the kernel is ``weighted``), before the first use; the balanced
    variant one window fewer at load-ahead 4 (:data:`BALANCED_LOADS_IN_FLIGHT`);
    in the naive kernel a thread's ``load_ahead`` trips are consecutive elements of
    its own list, which share one 32 B sector while ``load_ahead x id_bytes <= 32``:
    the later loads wait on the first one's sector (an L1 hit in the stream), so
    only ``ceil(load_ahead x id_bytes / 32)`` requests are in flight (and
    ``ceil(load_ahead x WEIGHT_B / 32)`` of the weights)."""
    if variant == "naive":
        n = max(1, min(load_ahead, -(-load_ahead * id_bytes // SECTOR_B)))
        return n + (max(1, min(load_ahead, -(-load_ahead * WEIGHT_B // SECTOR_B)))
                    if weighted else 0)
    if variant == "balanced":
        load_ahead = BALANCED_LOADS_IN_FLIGHT.get(load_ahead, load_ahead)
    return max(1, load_ahead) * (2 if weighted else 1)


def with_scan_insts(stream, kernel: str, variant: str, id_bytes: int, vertices: int):
    """``stream`` with each launch's warp instructions raised by the tests of its
    ``vertices`` vertices, and its stall clocks by theirs (:mod:`hostlink.traces.scan_cost`),
    which the issue floor of :mod:`hostlink.model.compute` then sees; unchanged where
    the variant's tests were not measured."""
    from dataclasses import replace
    extra = scan_warp_insts(kernel, variant, id_bytes, vertices)
    if extra <= 0 or not stream.launches:
        return stream
    stall = scan_stall_sm_clocks(kernel, variant, id_bytes, vertices)
    launches = tuple(replace(info, warp_insts=int(info.warp_insts) + extra,
                             stall_sm_clocks=float(info.stall_sm_clocks) + stall)
                     for info in stream.launches)
    return replace(stream, launches=launches)


def host_buffers(regions) -> tuple[tuple[int, int], ...]:
    """The host arrays of a run's address map (the edge list, SSSP's weights) as
    (start, bytes) pairs: each is its own managed buffer in the UVM modes
    (gpu_kernels/traversal/driver.cuh allocates them apart)."""
    from hostlink.traces.schema import LOCATION_HOST
    return tuple((int(r.start), int(r.size_B)) for r in regions
                 if r.location == LOCATION_HOST and r.size_B > 0)


def traversal_workload(csr, kernel: str, variant: str, gpu, *, source: int = 0,
                       id_bytes: int = 8, load_ahead: int = 1, iterations: int = 10,
                       max_device_edges: int = DEFAULT_MAX_DEVICE_EDGES,
                       max_device_tests: int | None = DEFAULT_MAX_DEVICE_TESTS,
                       run=None) -> TraversalWorkload:
    """One run of ``kernel`` (``variant``) on ``csr`` from ``source`` on a GPU ``gpu``
    (its caches and resident warps), as a :class:`TraversalWorkload` (see the module
    docstring). ``iterations``: PageRank's; ``max_device_tests`` None: no bound on
    the vertex tests. ``run``: the launches' active vertices as an
    :class:`~hostlink.traces.emulator.AlgorithmRun` instead of the algorithm's own
    (:mod:`hostlink.traces.sampled` passes samples of a run's launches)."""
    from hostlink.traces.cache import CacheConfig, host_read_cache
    from hostlink.traces.coalescer import coalesce
    from hostlink.traces.emulator import emulate
    from hostlink.traces.emulator.issue_order import issue_order, walk_waits
    from hostlink.traces.emulator.program import program
    from hostlink.traces.emulator.visits import with_visit_skeleton
    from hostlink.model.page_advice import release_freed_memory
    from hostlink.model.progress import RUN, stage

    host_cache = host_read_cache(gpu)
    cache = host_cache if host_cache is not None else CacheConfig.from_gpu(gpu, l2=False)
    resident = gpu.sm_count * gpu.max_warps_per_sm
    with_device = csr.num_edges <= max_device_edges
    kw = {"iterations": int(iterations)} if kernel == "pagerank" else {}
    stage(RUN, f"emulating {kernel} ({variant})")
    em = emulate(csr, kernel, variant, source=source, id_bytes=id_bytes, memory="zerocopy",
                 include_device=with_device, resident_warps=resident, run=run, **kw)
    if with_device and max_device_tests is not None and \
            csr.num_vertices * len(em.active) > max_device_tests:
        with_device = em.include_device = False
    edges = int(sum(int((csr.offsets[a + 1] - csr.offsets[a]).sum()) for a in em.active))
    trace = em.trace()
    stage(RUN, f"coalescing the reads of its {len(em.active)} launches")
    if with_device:      # the kernel's order at its load-ahead, and its dependences
        trace = issue_order(trace, program(kernel, id_bytes, True), load_ahead)
    stream = coalesce(trace, cache=cache, cache_host=host_cache is not None,
                      include_device=with_device)
    if with_device:
        stream = stream.with_waits(walk_waits(stream))
    else:                # the walk's dependent device steps, one request each
        release_freed_memory()      # the coalescer's pieces, before the steps are built
        stage(RUN, "adding the walk's dependent device steps")
        handed, stream = [stream], None     # its columns go as the steps' join is built
        stream = with_visit_skeleton(handed, em, load_ahead)
    stream = with_scan_insts(stream, kernel, variant, id_bytes, csr.num_vertices)
    stream = with_program_registers(stream, kernel, variant, id_bytes, load_ahead)
    if run is None:     # a sample's launches are not the run's (traces.sampled counts them)
        stream = with_shared_writes(stream, csr.offsets, kernel, variant, em.active)
    elem_B = id_bytes + (WEIGHT_B if kernel == "sssp" else 0)
    iterations = len(em.active)
    managed = host_buffers(em.regions)
    del em, trace
    release_freed_memory()          # the emulation's and the coalescer's pieces
    return TraversalWorkload(
        stream=stream, kernel=kernel, variant=variant,
        loads_in_flight=requests_ahead(variant, load_ahead, id_bytes, weighted=kernel == "sssp"),
        vertices=csr.num_vertices, edges_read=edges, iterations=iterations,
        bytes_read_B=edges * elem_B, managed=managed)
