"""The CPU halves of the traversal programs, built without a GPU: the graph
loader's checks, the references results are judged by, and the self-trace
writer (read back with hostlink.traces.accelsim)."""
from __future__ import annotations

import heapq
import json
import subprocess

import numpy as np
import pytest

from kernel_helpers import random_symmetric_graph, write_bel
from walk_model import bfs_levels


def run_ref(host_check, prefix, kernel, source=0):
    p = subprocess.run([str(host_check), "ref", str(prefix), kernel, str(source)], capture_output=True, text=True)
    assert p.returncode == 0, p.stdout[-500:] + p.stderr
    return p.stdout.split()


def dijkstra(offsets, dst, w, s):
    dist = np.full(len(offsets) - 1, np.inf)
    dist[s] = 0
    pq = [(0, s)]
    while pq:
        d, v = heapq.heappop(pq)
        if d > dist[v]:
            continue
        for i in range(offsets[v], offsets[v + 1]):
            nd = d + w[i]
            if nd < dist[dst[i]]:
                dist[dst[i]] = nd
                heapq.heappush(pq, (nd, int(dst[i])))
    return dist


def components(offsets, dst):
    V = len(offsets) - 1
    comp = np.arange(V)
    changed = True
    while changed:  # min-label propagation to the fixpoint
        changed = False
        for v in range(V):
            for u in dst[offsets[v]:offsets[v + 1]]:
                m = min(comp[v], comp[u])
                if comp[v] != m or comp[u] != m:
                    comp[v] = comp[u] = m
                    changed = True
    return comp


def pagerank(offsets, dst, iterations=10, d=0.85):
    V = len(offsets) - 1
    rank = np.full(V, 1.0 / V)
    deg = np.diff(offsets)
    src = np.repeat(np.arange(V), deg)
    for _ in range(iterations):
        nxt = np.zeros(V)
        np.add.at(nxt, dst, d * rank[src] / deg[src])
        rank = (1 - d) / V + nxt
    return rank


@pytest.fixture(scope="module")
def graph(tmp_path_factory):
    V = 300
    offsets, dst, w = random_symmetric_graph(V, 500, seed=4)
    prefix = write_bel(tmp_path_factory.mktemp("g") / "g", offsets, dst, w)
    return prefix, offsets, dst, w


def test_bfs_reference(host_check, graph):
    prefix, offsets, dst, _ = graph
    src = int(np.flatnonzero(np.diff(offsets))[0])
    got = np.array(run_ref(host_check, prefix, "bfs", src), dtype=np.int64)
    want = bfs_levels(offsets, dst, src)
    want[want < 0] = 0xFFFFFFFF
    assert (got == want).all() and (want == 0xFFFFFFFF).any()  # some vertices unreachable


def test_sssp_reference(host_check, graph):
    prefix, offsets, dst, w = graph
    for src in (0, 17):
        got = np.array(run_ref(host_check, prefix, "sssp", src), dtype=np.float64)
        want = dijkstra(offsets, dst, w, src)
        want[np.isinf(want)] = 0xFFFFFFFF
        assert (got == want).all()


def test_cc_reference(host_check, graph):
    prefix, offsets, dst, _ = graph
    got = np.array(run_ref(host_check, prefix, "cc"), dtype=np.int64)
    want = components(offsets, dst)
    assert (got == want).all() and len(np.unique(want)) > 1


def test_pagerank_reference(host_check, graph):
    prefix, offsets, dst, _ = graph
    got = np.array(run_ref(host_check, prefix, "pagerank"), dtype=np.float64)
    np.testing.assert_allclose(got, pagerank(offsets, dst), rtol=1e-12)


@pytest.mark.parametrize("damage, msg", [
    ("short_col", "header says 10 elements"),
    ("decreasing", "offsets decrease at vertex"),
    ("bad_end", "offsets end at"),
    ("bad_id", "names vertex 99"),
    ("missing", "cannot open"),
])
def test_loader_rejects_bad_graphs(host_check, tmp_path, damage, msg):
    offsets, dst = np.array([0, 2, 3, 4]), np.array([1, 2, 0, 0])
    if damage == "decreasing":
        offsets = np.array([0, 3, 2, 4])
    if damage == "bad_end":
        offsets = np.array([0, 2, 3, 3])
    if damage == "bad_id":
        dst = np.array([1, 99, 0, 0])
    prefix = write_bel(tmp_path / "g", offsets, dst)
    if damage == "short_col":
        with open(f"{prefix}.bel.col", "r+b") as f:
            np.array([10], dtype=np.uint64).tofile(f)
    if damage == "missing":
        (tmp_path / "g.bel.dst").unlink()
    p = subprocess.run([str(host_check), "ref", str(prefix), "bfs", "0"], capture_output=True, text=True)
    assert p.returncode == 2
    err = json.loads(p.stdout.strip().splitlines()[-1])
    assert err["type"] == "error" and msg in err["message"] and str(tmp_path) in err["message"]


def test_trace_writer_round_trips_through_the_accelsim_reader(host_check, tmp_path):
    accelsim = pytest.importorskip("hostlink.traces.accelsim")
    from hostlink.traces.schema import InstTable
    p = subprocess.run([str(host_check), "trace", str(tmp_path), "3"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    recs = [list(map(int, line.split())) for line in p.stdout.strip().splitlines()]
    t = accelsim.read_accelsim(tmp_path)
    tab = InstTable.concat(list(t.chunks))
    assert len(tab) == len(recs)
    # expected order: by CTA, then warp, then append order within a warp
    order = sorted(range(len(recs)), key=lambda i: (recs[i][0], recs[i][1], i))
    for row, i in enumerate(order):
        cta, warp, kind, mask = recs[i][:4]
        addrs = recs[i][4:]
        assert (tab.cta[row], tab.warp[row], tab.mask[row]) == (cta, warp, mask)
        assert tab.width_B[row] == (4 if kind == 1 else 8)
        assert tab.addrs[row].tolist() == addrs
    assert t.launches[0].name == "bfs_merged_aligned_u64" and t.launches[0].grid == (16, 1, 1)
    regions = json.loads((tmp_path / "regions.json").read_text())["regions"]
    assert [r["name"] for r in regions] == ["edges", "offsets"] and regions[0]["location"] == "host"
