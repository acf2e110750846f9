"""The measured instructions of a traversal launch's vertex tests (traces/scan_cost.py):
their source, and what they do to a launch that tests many vertices and expands few."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from hostlink.model.config import load_system
from hostlink.model.predict import predict
from hostlink.traces.graphs.families import build_graph
from hostlink.traces.scan_cost import (SCAN_ISSUE_PER_CLK, SCAN_WARP_INSTS, per_vertex,
                                       scan_stall_sm_clocks, scan_warp_insts)
from hostlink.traces.traversal import traversal_workload, with_scan_insts
from hostlink.validation.data_tree import run_dir

LAUNCHES = run_dir("device_work", "h100") / "launches.csv"
TESTS = run_dir("vertex_tests", "h100") / "scale21"
VERTICES = {"kron14": 1 << 14, "urand14": 1 << 14, "kron21": 1 << 21, "urand21": 1 << 21}
KEYS = ["kernel", "graph", "memory_mode", "variant", "id_bytes"]


def _last_launches(path):
    last = pd.read_csv(path).groupby(KEYS).tail(1)
    return last.assign(per_v=last["warp_inst"] / last["graph"].map(VERTICES))


def _sm_and_clock(folder):
    """(SM count, SM clock MHz) of the GPU a probe's programs reported."""
    import json
    for line in (folder / "plain.jsonl").read_text().splitlines():
        rec = json.loads(line) if line.startswith("{") else {}
        if rec.get("type") == "device":
            return int(rec["sm_count"]), float(rec["sm_clock_MHz"])
    raise AssertionError(f"{folder}: no device record")


def test_the_table_is_the_probes_least_last_launch_per_vertex():
    last = _last_launches(LAUNCHES)
    balanced = _last_launches(TESTS / "launches.csv")
    last = pd.concat([last, balanced[balanced["variant"] == "balanced"]])
    least = last.groupby(["kernel", "variant", "id_bytes"])["per_v"].min()
    measured = {k: v for k, v in least.items() if k[0] in ("bfs", "sssp", "cc")}
    assert set(measured) == set(SCAN_WARP_INSTS)
    for key, value in SCAN_WARP_INSTS.items():
        assert value == pytest.approx(measured[key], abs=1e-3), key


def test_the_issue_rate_is_the_probes_busy_chunked_scans():
    d = pd.read_csv(LAUNCHES)
    last = d.groupby(["kernel", "graph", "memory_mode", "variant", "id_bytes"]).tail(1)
    busy = last[last["graph"].isin(["kron21", "urand21"]) & (last["variant"] == "chunked")]
    assert len(busy) == 6 and (busy["issue_active_pct"] > 80).all()
    assert SCAN_ISSUE_PER_CLK["chunked"] == pytest.approx(busy["ipc_per_sm"].mean(), abs=1e-4)
    # the merged variants wait for their CTAs' dispatch, not for issue: no rate of theirs
    merged = last[last["graph"].isin(["kron21", "urand21"]) & (last["variant"] != "chunked")]
    assert (merged["issue_active_pct"] < 40).all() and "merged_aligned" not in SCAN_ISSUE_PER_CLK


def test_the_balanced_rate_is_its_scans_timed_without_the_profiler():
    """The balanced tests wait on their loads (long-scoreboard stalls, a quarter of the
    cycles issuing), which Nsight Compute's cache flush slows: the rate is the last
    launches' instructions over the SM clocks of their event times less what the events
    add to a launch (gpu.launch_ns), and with it the road grid's mid-run launches (1 M
    vertices tested, about a thousand expanded) come within 10% of their time."""
    sms, mhz = _sm_and_clock(TESTS)
    launch_ns = load_system("h100-pcie5").gpu.launch_ns
    last = _last_launches(TESTS / "launches.csv")
    bal = last[last["variant"] == "balanced"]
    assert len(bal) == 2 and (bal["stall_long_scoreboard"] > 15).all()
    assert (bal["issue_active_pct"] < 30).all()
    rate = bal["warp_inst"] / (sms * (bal["event_ms"] * 1e6 - launch_ns) * mhz * 1e-3)
    assert SCAN_ISSUE_PER_CLK["balanced"] == pytest.approx(rate.mean(), abs=1e-4)
    road = pd.read_csv(TESTS.parent / "road" / "launches.csv")
    road = road[(road["variant"] == "balanced") & (road["memory_mode"] == "device")]
    floor_ns = scan_warp_insts("bfs", "balanced", 8, 1 << 20) / (
        sms * SCAN_ISSUE_PER_CLK["balanced"] * mhz * 1e-3)
    assert floor_ns + launch_ns == pytest.approx(road["event_ms"].median() * 1e6, rel=0.10)


def test_stalls_make_the_tests_issue_at_the_measured_rate():
    insts = scan_warp_insts("bfs", "chunked", 8, 1 << 21)
    stall = scan_stall_sm_clocks("bfs", "chunked", 8, 1 << 21)
    assert insts / 4 + stall == pytest.approx(insts / 3.2403)
    assert scan_stall_sm_clocks("sssp", "chunked", 8, 1000) > 0     # the same loop
    assert scan_stall_sm_clocks("bfs", "merged_aligned", 8, 1000) == 0.0
    assert scan_stall_sm_clocks("bfs", "naive", 8, 1000) == 0.0


def test_unmeasured_variants_get_none_and_widths_stand_in():
    assert per_vertex("bfs", "naive", 8) == 0.0 and per_vertex("sssp", "balanced", 8) == 0.0
    assert per_vertex("bfs", "balanced", 4) == SCAN_WARP_INSTS[("bfs", "balanced", 8)]
    assert per_vertex("sssp", "chunked", 4) == SCAN_WARP_INSTS[("sssp", "chunked", 8)]
    assert scan_warp_insts("bfs", "chunked", 8, 1000) == round(27.3758 * 1000)
    assert scan_warp_insts("pagerank", "chunked", 8, 1000) == 0


@pytest.fixture(scope="module")
def grid():
    # a 2-D grid with shuffled ids: about 90 BFS levels, each testing 4096 vertices
    return build_graph("grid", dims="64x64", ids="shuffled", seed=3)


def test_every_launch_counts_its_tests(grid):
    system = load_system("h200-pcie5")
    work = traversal_workload(grid, "bfs", "chunked", system.gpu, source=5, id_bytes=8)
    bare = traversal_workload(grid, "bfs", "naive", system.gpu, source=5, id_bytes=8)
    extra = scan_warp_insts("bfs", "chunked", 8, grid.num_vertices)
    assert all(info.warp_insts >= extra for info in work.stream.launches)
    # naive: not measured, the trace's own counts
    again = with_scan_insts(bare.stream, "bfs", "naive", 8, grid.num_vertices)
    assert again is bare.stream


def test_a_scan_of_many_vertices_is_bound_by_issue():
    # 262144 vertices tested, a few expanded: 7.2 M warp instructions on 132 SMs at the
    # measured 3.24 a clock, at the preset's clock
    system = load_system("h200-pcie5")
    g = build_graph("grid", dims="512x512", ids="shuffled", seed=3)
    work = traversal_workload(g, "bfs", "chunked", system.gpu, source=5, id_bytes=8)
    pred = predict(work, system, mode="device")
    floor_ns = scan_warp_insts("bfs", "chunked", 8, g.num_vertices) / (3.2403 * 132) \
        * 1e3 / system.gpu.clock_MHz
    kernel_ns = np.asarray(pred.per_launch_kernel_s) * 1e9
    assert np.median(kernel_ns) >= floor_ns
    # a launch expands a few vertices; the events around it add gpu.launch_ns
    assert np.median(kernel_ns) < 1.1 * floor_ns + system.gpu.launch_ns
    assert pred.extra["issue"]["binds"]
