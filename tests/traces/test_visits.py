"""The walk's dependent device steps added to a host-only stream (one request per step)."""
from __future__ import annotations

import numpy as np
import pytest

from hostlink.model.config import load_system, system_with
from hostlink.model.workload import SPACE_DEVICE, SPACE_HOST
from hostlink.traces.cache import host_read_cache
from hostlink.traces.coalescer import coalesce
from hostlink.traces.emulator import emulate
from hostlink.traces.emulator.issue_order import issue_order, walk_waits
from hostlink.traces.emulator.program import program
from hostlink.traces.emulator.visits import SkeletonError, with_visit_skeleton
from hostlink.traces.graphs.csr import CSR
from hostlink.traces.graphs.generators import generate
from hostlink.validation.twin_common import run_model

# device steps per unit and per trip (hostlink.traces.emulator.program): a vertex's test and
# its offsets; BFS reads its neighbours' labels, SSSP and CC read and atomically lower them,
# PageRank's reduction is posted
STEPS = {"bfs": (2, 1), "sssp": (2, 2), "cc": (2, 2), "pagerank": (2, 0)}


@pytest.fixture(scope="module")
def kron():
    return generate("kron", 10, 16, 1, weighted=True, id_bytes=8, name="k10")


def host_stream(csr, kernel, variant, source=0):
    em = emulate(csr, kernel, variant, source=source, id_bytes=8, include_device=False)
    return em, coalesce(em.trace(), include_device=False)


def by_inst(stream):
    """Per (launch, warp): the instructions in order, each (is_device, waits, rows)."""
    out = {}
    key = list(zip(stream.launch.tolist(), stream.warp.tolist(), stream.inst.tolist()))
    for r, k in enumerate(key):
        seq = out.setdefault(k[:2], {})
        seq.setdefault(k[2], []).append(r)
    return {w: [(bool(stream.space[rows[0]] == SPACE_DEVICE), bool(stream.waits[rows[0]]), rows)
                for _, rows in sorted(insts.items())] for w, insts in out.items()}


@pytest.mark.parametrize("kernel", sorted(STEPS))
@pytest.mark.parametrize("variant", ["naive", "merged", "merged_aligned", "chunked", "balanced"])
def test_the_host_requests_stay_and_each_step_adds_one_request(kron, kernel, variant):
    em, host = host_stream(kron, kernel, variant, source=3)
    out = with_visit_skeleton(host, em, 4)
    is_host = out.space == SPACE_HOST
    key = lambda s, m: sorted(zip(s.launch[m].tolist(), s.warp[m].tolist(), s.addr[m].tolist(),
                                  s.size_B[m].tolist()))
    assert key(out, is_host) == key(host, np.ones(len(host), dtype=bool))
    # units of the host-only walk: warps' lists with at least one trip
    pro, per_trip = STEPS[kernel]
    P = len(program(kernel, 8, False).trip)
    host_insts = len(set(zip(host.launch.tolist(), host.warp.tolist(), host.inst.tolist())))
    trips = host_insts // P if variant != "naive" else None
    n_dev = int((~is_host).sum())
    if trips is not None:
        live = [a[np.diff(em.csr.offsets)[a] > 0] for a in em.active]
        units = sum(len(np.unique(lv // 8)) if variant == "balanced" else len(lv) for lv in live)
        assert n_dev == pro * units + per_trip * trips
    assert n_dev > 0
    # every warp's instructions are numbered 0..n-1
    w = out.warp.astype(np.int64) + (out.launch.astype(np.int64) << 32)
    for wk in np.unique(w)[:200]:
        insts = np.unique(out.inst[w == wk])
        np.testing.assert_array_equal(insts, np.arange(len(insts)))


@pytest.mark.parametrize("load_ahead", [1, 2, 4])
def test_a_group_of_trips_loads_then_visits_and_the_next_group_waits(kron, load_ahead):
    hub = int(np.argmax(np.diff(kron.offsets)))
    em, host = host_stream(kron, "bfs", "merged", source=hub)
    out = with_visit_skeleton(host, em, load_ahead)
    np.testing.assert_array_equal(out.waits, walk_waits(out))
    longest = max(by_inst(out).values(), key=len)
    kinds = "".join("d" if dev else "h" for dev, _, _ in longest)
    assert kinds.startswith("dd")                        # the vertex's test, then its offsets
    body = kinds[2:]
    groups = body.replace("dh", "d|h").split("|")
    assert len(groups) > 2
    for g in groups:                                     # <= load_ahead host loads, one visit each
        n = g.count("h")
        assert 1 <= n <= load_ahead and g == "h" * n + "d" * n
    assert all(waits for dev, waits, _ in longest if dev)      # device steps always wait
    waits_host = [w for (dev, w, _), prev in zip(longest[1:], longest[:-1]) if not dev]
    after_dev = [prev[0] for (dev, w, _), prev in zip(longest[1:], longest[:-1]) if not dev]
    assert waits_host == after_dev                       # a host load waits only after a visit


def test_the_skeleton_predicts_what_the_full_device_twin_does(kron):
    """One request per step costs what the device-inclusive twin's visits cost where they
    miss the caches (a model without L1 and L2): BFS merged_aligned on a kron graph, whose
    hub's warp paces its trips by its visits, zero-copy and device memory. Each launch
    comes out shorter by at most one device latency: the inactive vertices' tests, which
    the full twin carries and the skeleton leaves to the CTA dispatch."""
    system = system_with(load_system("h200-pcie5-datasheet"), {"gpu.loads_in_flight_per_warp": 4,
                                                     "gpu.l1_B": 0, "gpu.l2_B": 0})
    lat = system.gpu.device_lat_ns
    hub = int(np.argmax(np.diff(kron.offsets)))
    em = emulate(kron, "bfs", "merged_aligned", source=hub, id_bytes=8, include_device=True)
    full = coalesce(issue_order(em.trace(), program("bfs", 8, True), 4), include_device=True)
    full = full.with_waits(walk_waits(full))
    emh, host = host_stream(kron, "bfs", "merged_aligned", source=hub)
    skel = with_visit_skeleton(host, emh, 4)
    for mode in ("zerocopy", "device"):
        t_full = run_model(full, system, mode, "des").kernel_ns
        t_skel = run_model(skel, system, mode, "des").kernel_ns
        t_host = run_model(host, system, mode, "des").kernel_ns
        assert np.all(t_full - t_skel >= -1e-6) and np.all(t_full - t_skel <= 1.1 * lat), mode
        assert t_host.sum() < 0.5 * t_full.sum(), mode     # the edge list alone: far too fast


def test_a_hubs_trips_are_paced_by_their_visits():
    """One vertex with 32 x 64 neighbours, walked by one warp at load-ahead 4: 16 groups,
    each one host round trip then four visits of one device latency each."""
    n_nbr = 32 * 64
    offsets = np.array([0, n_nbr] + [n_nbr] * n_nbr, dtype=np.int64)
    csr = CSR(offsets, np.arange(1, n_nbr + 1, dtype=np.uint64), name="star")
    em, host = host_stream(csr, "bfs", "merged")
    system = system_with(load_system("h200-pcie5-datasheet"), {"gpu.loads_in_flight_per_warp": 4,
                                                     "gpu.launch_ns": 0.0})
    first = lambda s: s.__class__(**{k: getattr(s, k)[s.launch == 0] for k in
                                     ("launch", "warp", "inst", "addr", "size_B", "useful_B",
                                      "space", "is_write")}, launches=s.launches[:1])
    skel = with_visit_skeleton(host, em, 4)
    t_host = run_model(first(host), system, "zerocopy", "des").kernel_ns[0]
    t_skel = run_model(first(skel).with_waits(walk_waits(first(skel))), system, "zerocopy",
                       "des").kernel_ns[0]
    visits = 64 * system.gpu.device_lat_ns                 # one per trip, one after another
    prologue = 2 * system.gpu.device_lat_ns
    assert t_skel - t_host == pytest.approx(visits + prologue, rel=0.05)


def test_a_stream_that_is_not_the_walks_is_refused(kron):
    em, host = host_stream(kron, "bfs", "merged", source=3)
    bad = host.__class__(**{k: getattr(host, k) for k in ("launch", "warp", "addr", "size_B",
                                                          "useful_B", "space", "is_write")},
                         inst=host.inst + 1000, launches=host.launches)
    with pytest.raises(SkeletonError, match="launch 0: warp .* instruction .* is no trip"):
        with_visit_skeleton(bad, em, 4)


@pytest.mark.parametrize("variant", ["naive", "merged", "merged_aligned", "chunked", "balanced"])
def test_a_visit_stands_for_the_lines_its_trip_reads(kron, variant, monkeypatch):
    """trip_lines against a lane-by-lane count of each trip's distinct 128 B lines, in
    batches small enough to cut the edges several times."""
    import hostlink.traces.emulator.visits as visits
    from hostlink.traces.emulator.emit import align_elems, plan_launch

    monkeypatch.setattr(visits, "TRIP_LINES_BATCH_EDGES", 100)
    em, host = host_stream(kron, "bfs", variant, source=3)
    csr, prog = em.csr, program("bfs", em.id_bytes, False)
    offsets = csr.offsets.astype(np.int64)
    base, width = 4096 + 64, 4
    checked = 0
    for li, active in enumerate(em.active):
        plan = plan_launch(csr, variant, prog, active, li, False, em.id_bytes)
        got = visits.trip_lines(csr, plan, variant, base, width)
        want = []
        for u in range(len(plan.warp)):
            for t in range(int(plan.trips[u])):
                if variant == "naive":
                    lanes = [v for v in active if v // 32 == plan.warp[u]
                             and offsets[v + 1] - offsets[v] > t]
                    edges = [offsets[v] + t for v in lanes]
                elif variant == "balanced":
                    b = int(plan.win[int(plan.first_trip[u]) + t])
                    mine = [v for v in active if v // 8 == plan.warp[u]]
                    edges = [i for i in range(b, b + 32)
                             if any(offsets[v] <= i < offsets[v + 1] for v in mine)]
                else:
                    a = int(plan.a[u])
                    edges = [i for i in range(a + 32 * t, a + 32 * t + 32)
                             if plan.s[u] <= i < plan.e[u]]
                want.append(len({(base + int(csr.dst[i]) * width) // 128 for i in edges}) or 1)
        np.testing.assert_array_equal(got, want)
        checked += len(want)
    assert checked > 50
    # the skeleton's visits carry these counts; its other requests stand for one line
    out = with_visit_skeleton(host, em, 4)
    dev = out.space == SPACE_DEVICE
    assert out.lines is not None and np.all(out.lines[~dev] == 1)
    assert out.lines[dev].max() > 1


@pytest.mark.parametrize("kernel,variant", [("bfs", "merged_aligned"), ("sssp", "naive"),
                                            ("cc", "chunked")])
def test_the_steps_do_not_depend_on_the_batch_or_the_row_order(kron, kernel, variant,
                                                                monkeypatch):
    """The steps are built, and the host rows renumbered, a batch at a time (bounded
    memory at scale 24): batches of a few hundred, and host rows in any order, give
    the same stream."""
    import hostlink.traces.emulator.visits as visits
    from hostlink.model.workload import REQUEST_DTYPES, RequestStream

    em, stream = host_stream(kron, kernel, variant, source=int(np.argmax(kron.degrees())))
    whole = with_visit_skeleton(stream, em, 4)
    monkeypatch.setattr(visits, "SKELETON_BATCH_STEPS", 300)
    monkeypatch.setattr(visits, "HOST_BATCH_ROWS", 200)
    perm = np.random.default_rng(5).permutation(len(stream))
    shuffled = RequestStream(**{k: getattr(stream, k)[perm] for k in REQUEST_DTYPES},
                             launches=stream.launches)
    batched = with_visit_skeleton(shuffled, em, 4)
    handed = [RequestStream(**{k: getattr(stream, k).copy() for k in REQUEST_DTYPES},
                            launches=stream.launches)]
    taken = with_visit_skeleton(handed, em, 4)      # handed over: taken out of the list
    assert handed == []
    assert len(whole) > len(stream) > 1000
    for col in list(REQUEST_DTYPES) + ["waits", "lines"]:
        for other in (batched, taken):
            a, b = getattr(whole, col), getattr(other, col)
            assert a.dtype == b.dtype and np.array_equal(a, b), col


@pytest.mark.parametrize("kernel", sorted(STEPS))
def test_the_skeletons_atomic_steps_are_marked(kron, kernel):
    """SSSP's and CC's visits lower their neighbours with an atomic that returns: those
    steps are marked (the model charges them an atomic's cost); BFS's and PageRank's
    skeletons have none."""
    em, host = host_stream(kron, kernel, "merged", source=3)
    out = with_visit_skeleton(host, em, 4)
    if kernel in ("sssp", "cc"):
        assert out.atomic is not None
        assert (out.space[out.atomic] == SPACE_DEVICE).all()
        # one of each trip's two visit steps: the read, then the atomic
        dev = out.space == SPACE_DEVICE
        n_trip_steps = int(dev.sum()) - 2 * len(set(zip(out.launch[dev].tolist(),
                                                         out.warp[dev].tolist())))
        assert n_trip_steps > 0 and 2 * int(out.atomic.sum()) == n_trip_steps
    else:
        assert out.atomic is None


def test_merged_rows_are_the_stable_sort_of_host_rows_and_steps():
    """The skeleton's row order (visits._device_rows, _merged_column): a merge where the
    host rows and the device steps are each sorted (None where not, and the skeleton
    sorts), the stable (launch, warp, inst, addr) order with ties to the host rows."""
    import numpy as np

    from hostlink.traces.emulator.visits import _device_rows, _merged_column
    rng = np.random.default_rng(3)
    unsorted = 0
    for sort_parts in (True, False):
        for _ in range(50):
            n = int(rng.integers(1, 300))
            cols = [rng.integers(0, k, size=n).astype(dt) for k, dt in
                    ((3, np.uint32), (4, np.uint32), (5, np.uint32), (4, np.uint64))]
            split = int(rng.integers(0, n + 1))
            if sort_parts:
                for lo, hi in ((0, split), (split, n)):
                    o = np.lexsort(tuple(c[lo:hi] for c in reversed(cols)))
                    for c in cols:
                        c[lo:hi] = c[lo:hi][o]
            flags = _device_rows(*(c[:split] for c in cols), *(c[split:] for c in cols))
            if flags is None:
                assert not sort_parts
                unsorted += 1
                continue
            expected = np.lexsort(tuple(reversed(cols)))
            row = np.arange(n)
            assert np.array_equal(_merged_column(row[:split], row[split:], flags), expected)
    assert unsorted > 40
