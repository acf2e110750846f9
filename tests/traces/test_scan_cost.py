"""The measured instructions of a traversal launch's vertex tests (traces/scan_cost.py):
their source, and what they do to a launch that tests many vertices and expands few."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from hostlink.model.compute import stream_issue_floor_ns
from hostlink.model.config import load_system, system_with
from hostlink.model.predict import (host_latency_ns, host_walks_ns, launch_shared_writes_ns,
                                    predict)
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


def _longest_extra_chains_ns(stream, system, n):
    """Per launch, the most a warp's chain takes from host memory beyond device memory."""
    from hostlink.model.analytic_launch import warp_chains
    gpu = system.gpu
    args = (stream, host_latency_ns(system), gpu.device_lat_ns, gpu.loads_in_flight_per_warp)
    kw = dict(atomic_extra_ns=gpu.atomic_extra_ns, atomic_spread_ns=gpu.atomic_spread_ns,
              host_gap_ns=gpu.host_request_gap_ns, device_gap_ns=gpu.request_gap_ns)
    host = warp_chains(*args, as_device=False, **kw)
    device = warp_chains(*args, as_device=True, **kw)
    out = np.zeros(n)
    np.maximum.at(out, host.launch, host.chain_ns - device.chain_ns)
    return out


def _chunked_grid(dims: str):
    """h200-pcie5, a shuffled grid of ``dims``, chunked BFS on it, its launches and their
    tests' issue floors."""
    system = load_system("h200-pcie5")
    g = build_graph("grid", dims=dims, ids="shuffled", seed=3)
    work = traversal_workload(g, "bfs", "chunked", system.gpu, source=5, id_bytes=8)
    n = len(work.stream.launches)
    return system, g, work, n, stream_issue_floor_ns(work.stream, system.gpu, n)


def test_one_wave_of_ctas_adds_its_longest_walks_whole():
    # 16384 vertices, 256 CTAs of eight warps: one wave of the slots, no slack
    system, _, work, n, floor_ns = _chunked_grid("128x128")
    adds_ns = host_walks_ns(work.stream, system, floor_ns)
    assert adds_ns == pytest.approx(_longest_extra_chains_ns(work.stream, system, n))
    assert adds_ns.min() >= host_latency_ns(system) - system.gpu.device_lat_ns - 1e-6


def test_a_long_run_prices_its_walks_in_parts_of_whole_launches(monkeypatch):
    # a stream longer than a part is priced launch by launch in parts of whole launches;
    # every warp lies in one launch, so the parts add to the same, in or out of order
    import hostlink.model.predict as predict_module
    system, _, work, n, floor_ns = _chunked_grid("128x128")
    stream = work.stream
    whole_ns = host_walks_ns(stream, system, floor_ns)
    assert whole_ns.any()
    counts = np.bincount(stream.launch.astype(np.int64), minlength=n)
    part_requests = int(counts.max()) * 2
    monkeypatch.setattr(predict_module, "WALK_PART_REQUESTS", part_requests)
    scans = np.array([info.stall_sm_clocks > 0 for info in stream.launches])
    parts = list(predict_module._scan_parts(stream, scans))
    assert len(parts) > 2
    seen = np.concatenate([np.unique(p.launch) for p in parts])
    assert len(seen) == len(np.unique(seen)) and scans[seen].all()  # whole scan launches
    assert max(len(p) for p in parts) <= part_requests
    assert sum(len(p) for p in parts) == counts[scans].sum()
    assert np.array_equal(host_walks_ns(stream, system, floor_ns), whole_ns)
    shuffled = stream.select(np.random.default_rng(1).permutation(len(stream)))
    assert np.array_equal(host_walks_ns(shuffled, system, floor_ns), whole_ns)


def test_walks_from_host_memory_add_their_round_trips_to_the_tests():
    # a warp's walks read host memory between its tests: the launches the tests bind
    # take the tests' issue plus what the longest warp's chain takes beyond device memory
    # 262144 vertices tested a launch: the tests bind (as above)
    system, g, work, n, floor_ns = _chunked_grid("512x512")
    pred = predict(work, system, mode="zerocopy")
    loaded = system_with(system, {"link.rtt_ns": pred.extra["loaded_rtt_ns"]["loaded"],
                                  "link.rtt_at_full_link_ns": 0.0})
    adds_ns = host_walks_ns(work.stream, loaded, floor_ns)
    # less the launch itself and its writes to the edge counter and flag, which add to it
    kernel_ns = (np.asarray(pred.per_launch_kernel_s) * 1e9 - system.gpu.launch_ns
                 - launch_shared_writes_ns(work.stream, n, system))
    assert (kernel_ns >= floor_ns + adds_ns - 1e-6).all()
    assert (kernel_ns <= floor_ns + adds_ns + 1e-6).mean() > 0.5     # the tests bind most
    # a warp's walks wait a round trip each where device memory would have answered;
    # its CTA's wave ends early enough in this grid (4096 CTAs, about four waves of the
    # slots) that some launches hide part of it
    per_walk_ns = host_latency_ns(system) - system.gpu.device_lat_ns
    whole_ns = _longest_extra_chains_ns(work.stream, loaded, n)
    assert (adds_ns <= whole_ns + 1e-6).all() and (adds_ns < whole_ns - 1.0).any()
    assert whole_ns.min() >= per_walk_ns - 1e-6
    # in device memory the walks add nothing to the tests' measured rate
    device = predict(work, system, mode="device")
    dev_ns = (np.asarray(device.per_launch_kernel_s) * 1e9 - system.gpu.launch_ns
              - launch_shared_writes_ns(work.stream, n, system))
    assert (np.abs(dev_ns - floor_ns) < 1e-6).mean() > 0.5
    assert np.median(kernel_ns - dev_ns) == pytest.approx(np.median(adds_ns), rel=0.05)
    # variants whose tests were not measured at a rate get nothing added
    merged = traversal_workload(g, "bfs", "merged", system.gpu, source=5, id_bytes=8)
    m = len(merged.stream.launches)
    assert not host_walks_ns(merged.stream, system,
                             stream_issue_floor_ns(merged.stream, system.gpu, m)).any()
