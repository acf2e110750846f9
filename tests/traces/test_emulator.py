"""The kernel emulator against gpu_kernels/KERNELS.md and independent references.

- Results: BFS depths (breadth-first search with a deque), SSSP distances
  (Dijkstra with a heap), CC labels (union-find, minimum id per component),
  PageRank (float64, the formula of KERNELS.md, max relative error < 1e-3 as
  KERNELS.md requires of the GPU run): all written here in plain Python.
- Lane addresses: re-derived here from the variant definitions of
  KERNELS.md, one warp and one trip at a time, and compared row by row.
- Launch geometry: KERNELS.md "Launch geometry".
"""
from __future__ import annotations

import heapq
from collections import deque

import numpy as np
import pytest

from hostlink.model.errors import ConfigError, HostlinkError
from hostlink.traces.emulator import emulate
from hostlink.traces.graphs import GraphError, from_edges, kron, urand
from hostlink.traces.schema import InstTable, LOCATION_DEVICE, LOCATION_HOST, OP_LOAD

INF = 0xFFFFFFFF
VARIANTS = ("naive", "merged", "merged_aligned", "chunked", "balanced")


@pytest.fixture(scope="module")
def kgraph():
    return kron(9, 8, seed=21)


@pytest.fixture(scope="module")
def ugraph():
    return urand(8, 4, seed=22)


def _hub(g):
    return int(np.argmax(g.degrees()))


def _adj(g):
    return [g.dst[int(g.offsets[v]):int(g.offsets[v + 1])].tolist() for v in range(g.num_vertices)]


def _wadj(g):
    return [list(zip(g.dst[int(g.offsets[v]):int(g.offsets[v + 1])].tolist(),
                     g.weights[int(g.offsets[v]):int(g.offsets[v + 1])].tolist()))
            for v in range(g.num_vertices)]


# ------------------------------------------------------------- references
def ref_bfs(g, src):
    depth = [INF] * g.num_vertices
    depth[src] = 0
    q = deque([src])
    adj = _adj(g)
    while q:
        v = q.popleft()
        for u in adj[v]:
            if depth[u] == INF:
                depth[u] = depth[v] + 1
                q.append(u)
    return depth


def ref_dijkstra(g, src):
    dist = [INF] * g.num_vertices
    dist[src] = 0
    heap = [(0, src)]
    adj = _wadj(g)
    while heap:
        d, v = heapq.heappop(heap)
        if d > dist[v]:
            continue
        for u, w in adj[v]:
            if d + w < dist[u]:
                dist[u] = d + w
                heapq.heappush(heap, (d + w, u))
    return dist


def ref_components(g):
    parent = list(range(g.num_vertices))

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x
    for v, lst in enumerate(_adj(g)):
        for u in lst:
            a, b = find(v), find(u)
            if a != b:
                parent[max(a, b)] = min(a, b)
    return [find(v) for v in range(g.num_vertices)]  # roots are component minima


def ref_pagerank(g, iterations=10):
    V = g.num_vertices
    adj = _adj(g)
    rank = [1.0 / V] * V
    for _ in range(iterations):
        nxt = [0.0] * V
        for v, lst in enumerate(adj):
            if lst:
                c = 0.85 * rank[v] / len(lst)
                for u in lst:
                    nxt[u] += c
        rank = [0.15 / V + x for x in nxt]
    return np.array(rank)


# ----------------------------------------------------------------- results
@pytest.mark.parametrize("variant", VARIANTS)
def test_bfs_depths(kgraph, variant):
    emu = emulate(kgraph, "bfs", variant, source=_hub(kgraph))
    assert emu.result.tolist() == ref_bfs(kgraph, _hub(kgraph))
    # one launch per level, the last one finding nothing new
    assert len(emu.launches) == max(d for d in emu.result.tolist() if d != INF) + 1


@pytest.mark.parametrize("graph", ["kgraph", "ugraph"])
def test_sssp_distances(graph, request):
    g = request.getfixturevalue(graph)
    for src in (_hub(g), int(np.flatnonzero(g.degrees())[-1])):
        emu = emulate(g, "sssp", "merged_aligned", source=src)
        assert emu.result.tolist() == ref_dijkstra(g, src)


@pytest.mark.parametrize("graph", ["kgraph", "ugraph"])
def test_cc_labels(graph, request):
    g = request.getfixturevalue(graph)
    emu = emulate(g, "cc", "chunked")
    assert emu.result.tolist() == ref_components(g)
    assert len(emu.active[0]) == g.num_vertices  # iteration 0: every vertex active


def test_pagerank_within_kernels_tolerance(kgraph):
    emu = emulate(kgraph, "pagerank", "merged")
    ref = ref_pagerank(kgraph)
    rel = np.abs(emu.result.astype(np.float64) - ref) / ref
    assert rel.max() < 1e-3
    assert len(emu.launches) == 10
    assert emu.result.dtype == np.float32


def test_results_do_not_depend_on_variant(kgraph):
    src = _hub(kgraph)
    base = emulate(kgraph, "sssp", "naive", source=src).result
    for v in VARIANTS[1:]:
        assert np.array_equal(emulate(kgraph, "sssp", v, source=src).result, base)


# ---------------------------------------------------------- exact addresses
def reference_rows(g, variant, active_sets, id_bytes, base, weights_base=None):
    """(launch, global warp, mask, 32 addresses) of every host load, straight
    from KERNELS.md "Variants", one warp and one trip at a time."""
    V = g.num_vertices
    off = g.offsets.tolist()
    rows = []

    def trip_rows(launch, warp, lanes):
        # lanes: {lane: element index}; edges then (SSSP) weights
        mask = sum(1 << l for l in lanes)
        if not mask:
            return
        rows.append((launch, warp, mask, tuple(base + lanes.get(l, 0) * id_bytes if l in lanes
                                               else 0 for l in range(32))))
        if weights_base is not None:
            rows.append((launch, warp, mask, tuple(weights_base + lanes[l] * 4 if l in lanes
                                                   else 0 for l in range(32))))

    def aligned(launch, warp, v):
        s, e = off[v], off[v + 1]
        a = s - s % (128 // id_bytes)
        k = 0
        while a + 32 * k < e:
            trip_rows(launch, warp, {l: a + 32 * k + l for l in range(32)
                                     if s <= a + 32 * k + l < e})
            k += 1

    for launch, active in enumerate(active_sets):
        act = set(active.tolist())
        if variant == "naive":
            for w in range(-(-V // 32)):
                mine = [(l, 32 * w + l) for l in range(32) if 32 * w + l < V and 32 * w + l in act]
                trips = max((off[v + 1] - off[v] for _, v in mine), default=0)
                for k in range(trips):
                    trip_rows(launch, w, {l: off[v] + k for l, v in mine if k < off[v + 1] - off[v]})
        elif variant == "merged":
            for v in sorted(act):
                s, e = off[v], off[v + 1]
                k = 0
                while s + 32 * k < e:
                    trip_rows(launch, v, {l: s + 32 * k + l for l in range(32) if s + 32 * k + l < e})
                    k += 1
        elif variant == "merged_aligned":
            for v in sorted(act):
                aligned(launch, v, v)
        elif variant == "chunked":
            for w in range(-(-V // 8)):
                for v in range(8 * w, min(8 * w + 8, V)):
                    if v in act:
                        aligned(launch, w, v)
        else:  # balanced (gpu_kernels/traversal/README.md)
            A = 128 // id_bytes
            for w in range(-(-V // 8)):
                vs = range(8 * w, min(8 * w + 8, V))
                live = [v for v in vs if v in act and off[v + 1] > off[v]]
                if not live:
                    continue
                b = min(off[v] - off[v] % A for v in live)
                while b is not None:
                    trip_rows(launch, w, {l: b + l for l in range(32)
                                          if any(off[v] <= b + l < off[v + 1] for v in live)})
                    after = b + 32
                    nxt = [after if off[v] <= after else off[v] - off[v] % A
                           for v in live if off[v + 1] > after]
                    b = min(nxt) if nxt else None
    return rows


def _rows_of(emu):
    t = InstTable.concat(list(emu.chunks()))
    warp = t.cta.astype(np.int64) * 8 + t.warp
    return [(int(a), int(b), int(c), tuple(int(x) for x in d))
            for a, b, c, d in zip(t.launch, warp, t.mask, t.addrs)]


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("id_bytes", [4, 8])
def test_lane_addresses_follow_kernels_md(kgraph, variant, id_bytes):
    emu = emulate(kgraph, "bfs", variant, source=_hub(kgraph), id_bytes=id_bytes, chunk_rows=100)
    base = emu.address_map.base("edges")
    assert base % 4096 == 0
    assert _rows_of(emu) == reference_rows(kgraph, variant, emu.active, id_bytes, base)


@pytest.mark.parametrize("variant", ["naive", "chunked"])
def test_sssp_weights_follow_edges(ugraph, variant):
    emu = emulate(ugraph, "sssp", variant, source=_hub(ugraph), chunk_rows=64)
    amap = emu.address_map
    assert _rows_of(emu) == reference_rows(ugraph, variant, emu.active, 4, amap.base("edges"),
                                           amap.base("weights"))


def test_rows_are_instructions_of_the_right_kind(kgraph):
    emu = emulate(kgraph, "bfs", "merged", source=_hub(kgraph), id_bytes=8)
    t = InstTable.concat(list(emu.chunks()))
    assert np.all(t.op == OP_LOAD) and np.all(t.width_B == 8)
    assert {emu.opcodes[i] for i in np.unique(t.opcode)} == {"LDG.E.64"}
    assert len(np.unique(t.pc)) == 1


@pytest.mark.parametrize("variant,threads", [("naive", 1), ("merged", 32), ("merged_aligned", 32),
                                             ("chunked", 4)])
def test_launch_geometry(variant, threads):
    # V = 1000: naive V threads, merged 32 V, chunked 32 ceil(V / 8) = 4 V
    g = urand(10, 2, seed=1)
    keep = (g.sources() < 1000) & (g.dst < 1000)
    g = from_edges(g.sources()[keep], g.dst[keep], 1000, symmetrize=False)
    emu = emulate(g, "bfs", variant, source=int(np.flatnonzero(g.degrees())[0]))
    want = -(-threads * 1000 // 256)
    for launch in emu.launches:
        assert launch.grid == (want, 1, 1) and launch.block == (256, 1, 1)
        assert launch.name == f"bfs_{variant}"
    t = InstTable.concat(list(emu.chunks()))
    assert t.cta.max() < want and t.warp.max() < 8


def test_chunks_are_bounded_and_do_not_change_the_trace(kgraph):
    small = emulate(kgraph, "sssp", "naive", source=_hub(kgraph), chunk_rows=64)
    big = emulate(kgraph, "sssp", "naive", source=_hub(kgraph), chunk_rows=1 << 20)
    sizes = [len(c) for c in small.chunks()]
    assert max(sizes) <= 64 and len(sizes) > 10
    assert _rows_of(small) == _rows_of(big)
    # every chunk holds one launch
    assert all(len(np.unique(c.launch)) == 1 for c in small.chunks())


def test_same_seed_same_trace():
    a = emulate(kron(8, 8, seed=5), "cc", "merged")
    b = emulate(kron(8, 8, seed=5), "cc", "merged")
    assert _rows_of(a) == _rows_of(b)


# ---------------------------------------------------------------- memory map
def test_regions_and_memory_modes(kgraph):
    emu = emulate(kgraph, "sssp", "merged", source=0)
    names = {r.name: r for r in emu.regions}
    assert names["edges"].location == LOCATION_HOST and names["weights"].location == LOCATION_HOST
    assert names["offsets"].location == LOCATION_DEVICE and names["dist"].location == LOCATION_DEVICE
    assert names["edges"].size_B == kgraph.num_edges * 4
    assert all(r.start % 4096 == 0 for r in emu.regions)
    spans = sorted((r.start, r.end) for r in emu.regions)
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))  # no overlap
    dev = emulate(kgraph, "sssp", "merged", source=0, memory="device")
    assert {r.name: r.location for r in dev.regions}["edges"] == LOCATION_DEVICE
    assert len(dev.requests()) == 0


# ------------------------------------------------------------ device traces
@pytest.mark.parametrize("kernel", ["bfs", "sssp", "cc", "pagerank"])
@pytest.mark.parametrize("variant", ["naive", "merged", "chunked"])
def test_device_trace_contains_the_host_trace(kgraph, kernel, variant):
    src = _hub(kgraph)
    host = emulate(kgraph, kernel, variant, source=src, iterations=2)
    full = emulate(kgraph, kernel, variant, source=src, iterations=2, include_device=True,
                   chunk_rows=300)
    t = InstTable.concat(list(full.chunks()))
    edges = full.address_map["edges"]
    lane0 = t.addrs[np.arange(len(t)), np.argmax(
        ((t.mask[:, None] >> np.arange(32, dtype=np.uint32)) & 1).astype(bool), axis=1)]
    regions = full.address_map.regions
    in_host = np.zeros(len(t), dtype=bool)
    for r in regions:
        if r.location == LOCATION_HOST:
            in_host |= (lane0 >= r.start) & (lane0 < r.end)
    assert _rows_of(host) == [row for row, h in zip(_rows_of(full), in_host) if h]
    # every lane address lies in some region
    lanes = t.addrs[((t.mask[:, None] >> np.arange(32, dtype=np.uint32)) & 1).astype(bool)]
    inside = np.zeros(len(lanes), dtype=bool)
    for r in regions:
        inside |= (lanes >= r.start) & (lanes + 1 <= r.end)
    assert inside.all()
    assert (lane0 >= edges.start).any()


def test_bfs_device_stores_discover_each_vertex(kgraph):
    src = _hub(kgraph)
    emu = emulate(kgraph, "bfs", "merged_aligned", source=src, include_device=True)
    t = InstTable.concat(list(emu.chunks()))
    label = emu.address_map["label"]
    stores = t.op == 1
    lanes = ((t.mask[:, None] >> np.arange(32, dtype=np.uint32)) & 1).astype(bool)
    stored = t.addrs[stores[:, None] & lanes & (t.addrs >= label.start) & (t.addrs < label.end)]
    stored_v = np.unique((stored - label.start) // 4)
    reached = np.flatnonzero(emu.result != INF)
    # every reached vertex but the source had its label stored, and no other
    assert stored_v.tolist() == sorted(set(reached.tolist()) - {src})


# --------------------------------------------------------------- bad input
def test_bad_arguments(kgraph):
    with pytest.raises(ConfigError, match="unknown kernel"):
        emulate(kgraph, "tc", "merged")
    with pytest.raises(ConfigError, match="unknown variant"):
        emulate(kgraph, "bfs", "warp_centric")
    with pytest.raises(ConfigError, match="id_bytes"):
        emulate(kgraph, "bfs", "merged", id_bytes=2)
    with pytest.raises(ConfigError, match="memory mode"):
        emulate(kgraph, "bfs", "merged", memory="nvme")
    with pytest.raises(ConfigError, match="chunk_rows"):
        emulate(kgraph, "bfs", "merged", chunk_rows=3)
    with pytest.raises(GraphError, match="source vertex"):
        emulate(kgraph, "bfs", "merged", source=kgraph.num_vertices)
    with pytest.raises(GraphError, match="weights"):
        emulate(kgraph.without_weights(), "sssp", "merged")
    with pytest.raises(GraphError, match="iterations"):
        emulate(kgraph, "pagerank", "merged", iterations=0)
    assert issubclass(ConfigError, HostlinkError)


# ------------------------------------------------------------- properties
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@st.composite
def small_graphs(draw):
    V = draw(st.integers(1, 70))
    n = draw(st.integers(0, 300))
    src = draw(st.lists(st.integers(0, V - 1), min_size=n, max_size=n))
    dst = draw(st.lists(st.integers(0, V - 1), min_size=n, max_size=n))
    w = draw(st.lists(st.integers(1, 255), min_size=n, max_size=n))
    return from_edges(np.array(src, dtype=np.int64), np.array(dst, dtype=np.int64), V,
                      np.array(w, dtype=np.int64), symmetrize=draw(st.booleans()))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(g=small_graphs(), variant=st.sampled_from(VARIANTS), id_bytes=st.sampled_from([4, 8]),
       kernel=st.sampled_from(["bfs", "sssp", "cc", "pagerank"]), chunk_rows=st.integers(64, 200))
def test_property_rows_follow_kernels_md(g, variant, id_bytes, kernel, chunk_rows):
    src = int(np.argmax(g.degrees()))
    emu = emulate(g, kernel, variant, source=src, id_bytes=id_bytes, chunk_rows=chunk_rows,
                  iterations=2)
    amap = emu.address_map
    wb = amap.base("weights") if kernel == "sssp" else None
    assert _rows_of(emu) == reference_rows(g, variant, emu.active, id_bytes, amap.base("edges"), wb)
    if kernel == "bfs":
        assert emu.result.tolist() == ref_bfs(g, src)
    elif kernel == "sssp":
        assert emu.result.tolist() == ref_dijkstra(g, src)


def test_window_owners_are_the_last_list_starting_at_or_before_each_element():
    """The balanced walk's owner lanes (emit.window_owners: one galloping search per
    window from a hint, then a walk up the lists) are a binary search of every lane's
    element in the offsets, empty lists, hints off the graph and windows past its last
    edge included."""
    from hostlink.traces.emulator.emit import window_owners
    rng = np.random.default_rng(7)
    for _ in range(200):
        V = int(rng.integers(1, 80))
        deg = rng.integers(0, 6, size=V) * (rng.random(V) < 0.7)
        offsets = np.concatenate([[0], np.cumsum(deg)]).astype(np.uint64)
        first = rng.integers(0, int(offsets[-1]) + 40, size=64)
        hint = rng.integers(-3, V + 3, size=64)
        lanes = first[:, None] + np.arange(32)
        expected = np.clip(np.searchsorted(offsets, lanes.astype(np.uint64), side="right") - 1,
                           0, V - 1)
        assert np.array_equal(window_owners(offsets, first, hint), expected)


@pytest.mark.parametrize("variant", VARIANTS)
def test_host_only_rows_match_the_lane_arrays(variant, monkeypatch):
    """A host-only program's rows come from one compiled pass (emit._host_lanes); the
    lane-array path that rows with device instructions take gives the same rows."""
    import hostlink.traces.emulator.emit as emit
    from hostlink.traces.emulator import emulate
    from hostlink.traces.graphs.generators import kron

    csr = kron(10)
    em = emulate(csr, "bfs", variant, source=1, id_bytes=4, memory="zerocopy",
                 include_device=False)
    fast = list(em.chunks())
    made = []
    real_init = emit.Materialiser.__init__

    def lane_arrays(self, *a, **k):
        real_init(self, *a, **k)
        self.device = True          # take the lane-array path; no device state, no flags
        made.append(self)
    monkeypatch.setattr(emit.Materialiser, "__init__", lane_arrays)
    slow = list(em.chunks())
    assert made and len(fast) == len(slow) and len(fast) > 0
    for a, b in zip(fast, slow):
        for name in ("launch", "cta", "warp", "pc", "opcode", "op", "space", "width_B", "mask"):
            assert np.array_equal(getattr(a, name), getattr(b, name)), name
        assert np.array_equal(a.addrs, b.addrs)


@pytest.mark.parametrize("kernel", ["bfs", "sssp", "cc"])
def test_naive_rows_match_the_lane_arrays(kernel, monkeypatch):
    """The naive walk's rows with device arrays come from one compiled pass
    (emit._naive_rows); lane arrays built as the other variants build theirs give the
    same rows, flags included."""
    import hostlink.traces.emulator.emit as emit
    from hostlink.traces.emulator import emulate
    from hostlink.traces.graphs.generators import generate

    csr = generate("kron", 10, 16, 1, weighted=True, id_bytes=8, name="k10")
    hub = int(np.argmax(np.diff(csr.offsets)))
    em = emulate(csr, kernel, "naive", source=hub, id_bytes=8, include_device=True)
    em.chunk_rows = 256
    fast = list(em.chunks())
    used = []

    def lane_arrays(self, plan, is_trip, j, k, instr, warp_g):
        used.append(1)
        V = self.csr.num_vertices
        vl = warp_g[:, None] * 32 + np.arange(32)[None, :]
        in_range = vl < V
        vlc = np.where(in_range, vl, 0)
        act = in_range & plan.is_active_v[vlc]
        valid = act & (k[:, None] < self.deg[vlc]) & is_trip[:, None]
        idx_c = np.where(valid, self.csr.offsets[vlc].astype(np.int64) + k[:, None], 0)
        attempt, flagged = self._flags(plan, is_trip, j, valid, idx_c, vl, len(instr))
        addr = np.empty((len(instr), 32), dtype=np.uint64)
        mask = np.empty(len(instr), dtype=np.uint32)
        emit._device_lanes(self.i_lanes[instr], self.i_target[instr], self.i_base[instr],
                           self.i_width[instr], valid, flagged, attempt, in_range, act, idx_c,
                           vl.astype(np.int64), self.csr.dst, addr.view(np.int64), mask)
        return self._table(plan, instr, warp_g, addr, mask)
    monkeypatch.setattr(emit.Materialiser, "_naive_rows", lane_arrays)
    slow = list(em.chunks())
    assert used and len(fast) == len(slow) > 1
    for a, b in zip(fast, slow):
        for name, col in a.columns().items():
            assert np.array_equal(col, getattr(b, name)), name
