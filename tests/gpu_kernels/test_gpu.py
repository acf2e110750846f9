"""The CUDA programs on a real GPU (marked ``gpu``: skipped, visibly, without one).

Tiny inputs only: each program runs, prints its JSON lines, passes its own
result checks; managed memory beyond the safety limit is refused; and the
BFS self-trace of every variant equals the walk model load for load.
"""
from __future__ import annotations

import json
import subprocess

import numpy as np
import pytest

from kernel_helpers import random_symmetric_graph, traced_edge_loads, write_bel
from walk_model import bfs_launches

pytestmark = pytest.mark.gpu

VARIANTS = ["naive", "merged", "merged_aligned", "chunked", "balanced"]
MODES = ["device", "zerocopy", "registered", "uvm_accessedby", "uvm", "uvm_readmostly"]


@pytest.fixture(scope="module")
def bin_dir(kernels_dir):
    p = subprocess.run(["make", "-C", str(kernels_dir), "-j4"], capture_output=True, text=True)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    return kernels_dir / "bin"


def run(bin_dir, program, *args, rc=0):
    p = subprocess.run([str(bin_dir / program), *map(str, args)], capture_output=True, text=True, timeout=300)
    lines = [json.loads(x) for x in p.stdout.splitlines() if x.strip()]
    assert p.returncode == rc, p.stdout[-3000:] + p.stderr[-2000:]
    return lines


def measurements(lines):
    return [x for x in lines if x["type"] == "measurement"]


@pytest.fixture(scope="module")
def graph(tmp_path_factory):
    offsets, dst, w = random_symmetric_graph(3000, 20000, seed=11)
    return write_bel(tmp_path_factory.mktemp("g") / "g3000", offsets, dst, w)


def test_memcpy(bin_dir):
    m = measurements(run(bin_dir, "memcpy_bw", "--size-B", "1MiB,4MiB", "--reps", 2))
    assert len(m) == 8 and all(x["metrics"]["bw_GBps"] > 0.1 for x in m)


def test_zc_read_patterns(bin_dir):
    m = measurements(run(bin_dir, "zc_read", "--pattern", "coalesced,strided,random", "--offset-B", "0,32",
                         "--region-B", "64KiB", "--total-B", "16MiB", "--reps", 1))
    assert len(m) == 4 and all(x["metrics"]["bw_GBps"] > 0 for x in m)
    # the read-only path (ld.global.nc) beside the default operator
    m = measurements(run(bin_dir, "zc_read", "--pattern", "random", "--cache", "default,nc",
                         "--region-B", "64KiB", "--total-B", "16MiB", "--reps", 1))
    assert sorted(x["params"]["cache"] for x in m) == ["default", "nc"]
    # probe flags: no L2 flush before a repetition, fresh random lines each time
    m = measurements(run(bin_dir, "zc_read", "--pattern", "random", "--region-B", "64KiB",
                         "--total-B", "16MiB", "--reps", 2, "--l2-flush", 0, "--seed-step", 1))
    assert [(x["params"]["l2_flush"], x["params"]["seed_step"]) for x in m] == [(0, 1), (0, 1)]
    run(bin_dir, "zc_read", "--l2-flush", 2, rc=2)


def test_zc_warps_writes_and_scatter(bin_dir):
    m = measurements(run(bin_dir, "zc_warps", "--pattern", "scatter,random", "--region-B", "64KiB",
                         "--op", "load,store,red", "--unroll", 1, "--warps", 264, "--total-B", "4MiB",
                         "--memory-mode", "device", "--reps", 1))
    assert len(m) == 6 and all(x["metrics"]["bw_GBps"] > 0 for x in m)
    # "op" is written for writes only: a load's record is as before
    assert sorted(x["params"].get("op", "load") for x in m) == ["load", "load", "red", "red",
                                                               "store", "store"]
    assert sum("op" not in x["params"] for x in m) == 2
    # a block of 16 warps puts 264 warps on 16.5 SMs' worth of blocks: refused, not rounded
    run(bin_dir, "zc_warps", "--warps", 264, "--warps-per-block", 16, "--memory-mode", "device",
        "--reps", 1, rc=2)
    m = measurements(run(bin_dir, "zc_warps", "--warps", 264, "--warps-per-block", 8,
                         "--memory-mode", "device", "--total-B", "4MiB", "--reps", 1))
    assert m[0]["metrics"]["warps_per_block"] == 8


def test_launch_grid(bin_dir):
    m = measurements(run(bin_dir, "launch_grid", "--ctas", "1,65536", "--work", "empty,label", "--reps", 2))
    assert len(m) == 8
    t = {(x["params"]["work"], x["params"]["ctas"]): x["metrics"]["time_us"] for x in m if x["rep"] == 1}
    # dispatching 65536 CTAs takes longer than one (about 40 us against 6 us on an H200)
    assert t[("empty", 65536)] > t[("empty", 1)] > 0
    assert t[("label", 65536)] > 0


def test_launch_grid_spin_records_residency(bin_dir):
    m = measurements(run(bin_dir, "launch_grid", "--work", "spin", "--live-warps", "1,8", "--ctas", "132,4224",
                         "--spin-us", 10, "--reps", 1))
    assert len(m) == 4 and all(x["params"]["spin_us"] == 10 for x in m)
    got = {(x["params"]["live_warps"], x["params"]["ctas"]): x["metrics"] for x in m}
    # one CTA per SM at most when the grid has one per SM; every CTA spins its 10 us
    assert got[(1, 132)]["concurrent_ctas_max_sm"] == 1 and got[(1, 132)]["time_us"] >= 10
    # 256-thread CTAs with every warp spinning: at most 64 warps, 8 CTAs, on an SM
    assert got[(8, 4224)]["concurrent_ctas_max_sm"] <= 8
    # work spin alone takes --live-warps: a count above the CTA's warps is refused
    run(bin_dir, "launch_grid", "--work", "spin", "--live-warps", 9, "--ctas", 1, rc=2)


def test_ptr_chase_and_warps(bin_dir):
    m = measurements(run(bin_dir, "ptr_chase", "--memory-mode", "zerocopy,device", "--stride-B", "4096",
                         "--footprint-B", "4MiB", "--steps", 200, "--reps", 1))
    lat = {x["params"]["memory_mode"]: x["metrics"]["lat_ns"] for x in m}
    assert lat["zerocopy"] > lat["device"] > 0
    m = measurements(run(bin_dir, "zc_warps", "--warps", "1,132", "--total-B", "8MiB", "--reps", 1))
    assert len(m) == 4


def test_uvm_touch_small_and_refusal(bin_dir):
    m = measurements(run(bin_dir, "uvm_touch", "--size-B", "8MiB", "--reps", 1))
    assert len(m) == 8
    lines = run(bin_dir, "uvm_touch", "--size-B", "100000GiB", "--reps", 1, rc=3)
    assert lines[-1]["type"] == "error" and lines[-1]["kind"] == "refused" and "free memory" in lines[-1]["message"]


def test_uvm_touch_host_state_is_named_only_when_returned(bin_dir):
    m = measurements(run(bin_dir, "uvm_touch", "--size-B", "8MiB", "--pattern", "seq",
                         "--advice", "none,readmostly", "--host-state", "fresh,returned", "--reps", 1))
    states = [(x["params"]["advice"], x["params"].get("host_state")) for x in m]
    assert states == [("none", None), ("none", "returned"), ("readmostly", None),
                      ("readmostly", "returned")]
    assert all(x["metrics"]["time_ms"] > 0 for x in m)


def test_uvm_touch_split_over_launches(bin_dir):
    # the same 4 lines (one per VA block) in 1 or 4 launches, each timed; the launches
    # and the host's idle time are named only when they differ from one launch
    m = measurements(run(bin_dir, "uvm_touch", "--size-B", "8MiB", "--pattern", "sparse",
                         "--stride-B", "2MiB", "--advice", "none", "--launches", "1,4",
                         "--idle-us", "0,100", "--reps", 1))
    named = [(x["params"].get("launches"), x["params"].get("idle_us")) for x in m]
    assert named == [(None, None), (4, None), (4, 100)]
    assert "detail" not in m[0] and "first_launch_ms" not in m[0]["metrics"]
    for x in m[1:]:
        launch_ms = x["detail"]["launch_ms"]
        assert len(launch_ms) == 4 and all(t > 0 for t in launch_ms)
        # the first launch and the mean of the later ones, as metrics
        assert x["metrics"]["first_launch_ms"] == pytest.approx(launch_ms[0])
        assert x["metrics"]["later_launch_ms"] == pytest.approx(sum(launch_ms[1:]) / 3)
        assert sum(launch_ms) <= x["metrics"]["time_ms"] * 1.001
        assert x["metrics"]["lines_touched"] == 4
    # the waits count in the total, not in the launches
    assert m[2]["metrics"]["time_ms"] >= sum(m[2]["detail"]["launch_ms"]) + 3 * 0.1
    lines = run(bin_dir, "uvm_touch", "--size-B", "8MiB", "--launches", "0", "--reps", 1, rc=2)
    assert lines[-1]["type"] == "error" and "--launches" in lines[-1]["message"]


@pytest.mark.parametrize("kernel", ["bfs", "sssp", "cc", "pagerank"])
@pytest.mark.parametrize("load_ahead", [1, 4])
def test_traversal_checks_pass_everywhere(bin_dir, graph, kernel, load_ahead):
    lines = run(bin_dir, kernel, "--graph", graph, "--variant", ",".join(VARIANTS), "--memory-mode",
                ",".join(MODES), "--id-bytes", "4,8", "--sources", 2, "--reps", 1, "--load-ahead", load_ahead)
    m = measurements(lines)
    per_source = 2 if kernel in ("bfs", "sssp") else 1
    assert len(m) == len(VARIANTS) * len(MODES) * 2 * per_source
    assert all(x["metrics"]["check_pass"] == 1 for x in m)
    assert lines[-1] == {"type": "done", "program": kernel, "check_failures": 0}
    # every variant reads the same edges in one configuration
    reads = {(x["params"]["variant"], x["params"].get("source")) for x in m}
    assert len(reads) == len(VARIANTS) * per_source


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("id_bytes", [4, 8])
@pytest.mark.parametrize("load_ahead", [1, 4])
def test_bfs_self_trace_equals_the_walk_model(bin_dir, graph, tmp_path, variant, id_bytes, load_ahead):
    offsets = np.fromfile(f"{graph}.bel.col", dtype=np.uint64)[2:].astype(np.int64)
    dst = np.fromfile(f"{graph}.bel.dst", dtype=np.uint64)[2:].astype(np.int64)
    source = int(np.flatnonzero(np.diff(offsets))[3])
    lines = run(bin_dir, "bfs", "--graph", graph, "--variant", variant, "--memory-mode", "zerocopy",
                "--id-bytes", id_bytes, "--source", source, "--load-ahead", load_ahead, "--self-trace", tmp_path)
    assert [x for x in lines if x["type"] == "trace"][0]["metrics"]["check_pass"] == 1
    assert traced_edge_loads(tmp_path, id_bytes) == bfs_launches(variant, offsets, dst, source, id_bytes)


def test_host_loop_gaps(bin_dir):
    m = measurements(run(bin_dir, "host_loop", "--loop", "walk,bfs", "--walk-us", 20, "--walk-ctas", "1,64",
                         "--walk-writes", "0,1", "--iterations", 4, "--reps", 2))
    assert len(m) == 16
    got = {(x["params"]["loop"], x["params"]["walk_ctas"], x["params"]["walk_writes"]): x["metrics"]
           for x in m if x["rep"] == 1}
    for (loop, _, _), x in got.items():
        # each walk sleeps its 20 us inside its events; the gap is what is left per iteration
        assert x["launches"] == 4 and x["kernel_time_ms"] >= 4 * 20e-3
        assert x["gap_us"] == pytest.approx((x["time_ms"] - x["kernel_time_ms"]) * 1e3 / 4)
    # a flag's reset, read-back and a synchronisation cost more than back-to-back walks
    # (about 15 against 2-3 us per iteration on an H200: validation/experiments/host_loop/runs/h200)
    assert got[("bfs", 1, 0)]["gap_us"] > got[("walk", 1, 0)]["gap_us"] > 0
    run(bin_dir, "host_loop", "--loop", "nosuch", rc=2)


def test_ptr_chase_atomic_and_lanes(bin_dir):
    m = measurements(run(bin_dir, "ptr_chase", "--memory-mode", "device", "--cache", "cg,atomic",
                         "--stride-B", 128, "--footprint-B", "64KiB", "--steps", 2000, "--lanes", "1",
                         "--reps", 1))
    lat = {x["params"]["cache"]: x["metrics"]["lat_ns"] for x in m}
    # an atomic on a line the L2 holds waits longer than a load of it (215 against
    # 168 ns on an H200: validation/experiments/atomic_chase/runs/h200)
    assert lat["atomic"] > lat["cg"] > 0
    m = measurements(run(bin_dir, "ptr_chase", "--memory-mode", "device", "--cache", "cg",
                         "--stride-B", 128, "--footprint-B", "64KiB", "--steps", 500,
                         "--lanes", "1,32", "--reps", 1))
    # a list of lane counts: one point each, lanes printed only above 1 (the names of
    # runs made before the flag existed)
    assert [x["params"].get("lanes") for x in m] == [None, 32]
    assert all(x["metrics"]["lat_ns"] > 0 for x in m)
    run(bin_dir, "ptr_chase", "--memory-mode", "device", "--lanes", 33, rc=2)
    # warps of one CTA, each with its lanes: printed only above 1 as well
    m = measurements(run(bin_dir, "ptr_chase", "--memory-mode", "device", "--cache", "atomic",
                         "--stride-B", 128, "--footprint-B", "256KiB", "--steps", 500,
                         "--lanes", 32, "--warps", "1,16", "--reps", 1))
    assert [(x["params"]["lanes"], x["params"].get("warps")) for x in m] == [(32, None), (32, 16)]
    # 16 warps' 512 atomic lines a round hold one SM longer than one warp's 32
    # (validation/experiments/atomic_warps/runs/h200: 508 against 302 ns)
    assert m[1]["metrics"]["lat_ns"] > m[0]["metrics"]["lat_ns"]
    run(bin_dir, "ptr_chase", "--memory-mode", "device", "--warps", 33, rc=2)
    # atomics on host memory are refused, not attempted
    run(bin_dir, "ptr_chase", "--memory-mode", "zerocopy", "--cache", "atomic", rc=2)


def test_gather_every_mode_passes_its_checks(bin_dir, tmp_path):
    # 480 B rows (not a multiple of 128 B) and 1024 B rows, both variants, 4 and 16 B
    # lanes; cpu_gather prints one point per row size
    modes = "device,zerocopy,registered,uvm_accessedby,uvm,uvm_warm,cpu_gather"
    m = measurements(run(bin_dir, "gather", "--table-B", "8MiB", "--row-B", "480,1024",
                         "--variant", "naive,aligned", "--lane-B", "4,16", "--memory-mode", modes,
                         "--rows", 4096, "--reps", 1, "--threads", 2))
    assert len(m) == 6 * 2 * 2 * 2 + 2
    assert all(x["metrics"]["check_pass"] == 1 and x["metrics"]["bw_GBps"] > 0 for x in m)


def test_gather_reads_sampled_ids(bin_dir, tmp_path):
    ids = np.arange(2048, dtype=np.uint64) % 1024
    path = tmp_path / "ids.u64"
    np.concatenate([np.array([1024, len(ids)], dtype=np.uint64), ids]).tofile(path)
    m = measurements(run(bin_dir, "gather", "--ids", "sampled", "--ids-file", path,
                         "--table-B", "4MiB", "--row-B", "1000", "--rows", 2048, "--reps", 1))
    assert len(m) == 1 and m[0]["metrics"]["check_pass"] == 1


def test_gather_probe_flags_take_out_the_stores_and_id_loads(bin_dir):
    # gather_walks' probe: the rows folded in registers (checked against the ids' sum)
    # and the uniform ids computed in the kernel; the records name both
    m = measurements(run(bin_dir, "gather", "--table-B", "8MiB", "--row-B", "480", "--lane-B", "4,16",
                         "--variant", "naive,aligned", "--rows", 4096, "--reps", 1,
                         "--store", "fold", "--id-source", "hash"))
    assert len(m) == 2 * 2
    assert all(x["metrics"]["check_pass"] == 1 for x in m)
    assert {(x["params"]["store"], x["params"]["id_source"]) for x in m} == {("fold", "hash")}
    # the table through ld.global.ca instead of the read-only path
    m = measurements(run(bin_dir, "gather", "--table-B", "8MiB", "--row-B", "1024", "--rows", 4096,
                         "--reps", 1, "--load", "ca"))
    assert len(m) == 1 and m[0]["metrics"]["check_pass"] == 1 and m[0]["params"]["load"] == "ca"
    run(bin_dir, "gather", "--store", "none", rc=2)
    run(bin_dir, "gather", "--load", "cg", rc=2)
    run(bin_dir, "gather", "--ids", "sampled", "--id-source", "hash", rc=2)


def test_host_read_passes_its_checks(bin_dir):
    # rows summed and copied, 1 and 2 threads, a row size that is no power of two
    m = measurements(run(bin_dir, "host_read", "--region-B", "8MiB", "--row-B", "64,1000",
                         "--threads", "1,2", "--op", "sum,copy", "--rows", 4096, "--reps", 1))
    assert len(m) == 2 * 2 * 2
    assert all(x["metrics"]["check_pass"] == 1 and x["metrics"]["bw_GBps"] > 0 for x in m)
    assert {(x["params"]["row_B"], x["params"]["threads"], x["params"]["op"]) for x in m} == {
        (r, t, o) for r in (64, 1000) for t in (1, 2) for o in ("sum", "copy")}
    run(bin_dir, "host_read", "--row-B", "66", rc=2)
