"""Twins of the microbenchmarks: request streams built from the programs' access patterns."""
from __future__ import annotations

import numpy as np
import pytest

from hostlink.model.config import load_system, system_with
from hostlink.model.loaded_rtt import link_utilisation
from hostlink.validation import twins
from hostlink.validation.manifest import micro_case_name
from hostlink.validation.data_tree import EXPERIMENTS, run_dir


@pytest.fixture(scope="module")
def h100():
    return load_system("h100-pcie5-datasheet")


def zc(**kw):
    # ld.cv (no caches) unless a test asks for the default operator
    p = dict(benchmark="zc_read", pattern="coalesced", offset_B=0, bytes_per_lane=4, unroll=4,
             warps=64, memory_mode="zerocopy", total_B=1 << 20, max_per_warp_B=1 << 30,
             cache="cv")
    p.update(kw)
    return p


def test_mix64_is_splitmix64():
    # splitmix64 (Steele, Lea, Flood 2014; Vigna's reference code) seeded with 0 returns
    # 0xE220A8397B1DCDAF first: mix64 is that step, as in gpu_kernels/micro/zc_common.cuh
    assert int(twins.mix64(np.array([0], dtype=np.uint64))[0]) == 0xE220A8397B1DCDAF


def test_warps_per_block_follows_the_program():
    # zc_common.cuh: largest of 8, 4, 2, 1 dividing warps with warps / w >= min(warps, SMs)
    assert twins.warps_per_block(8448, 132) == 8
    assert twins.warps_per_block(132, 132) == 1
    assert twins.warps_per_block(264, 132) == 2
    assert twins.warps_per_block(6, 132) == 1


def test_aligned_coalesced_reads_are_whole_lines(h100):
    t = twins.build_zc("c", zc(), h100)
    s = t.stream
    assert s.size_histogram() == {128: (1 << 20) // 128}
    assert int(s.useful_B.sum()) == 1 << 20 == t.full_bytes_B
    # warp w's j-th load covers block w + j * W
    w0 = s.addr[s.warp == 0]
    assert np.all(np.diff(w0.astype(np.int64)) == 64 * 128)


@pytest.mark.parametrize("offset, sizes", [(32, {32, 96}), (64, {64}), (96, {96, 32})])
def test_misaligned_blocks_split_into_head_and_tail(h100, offset, sizes):
    # emogi_vldb2020 §3: a warp 32 B off the 128 B boundary sends a 96 B and a 32 B request
    s = twins.build_zc("c", zc(offset_B=offset), h100).stream
    hist = s.size_histogram()
    assert set(hist) == sizes
    assert len(s) == 2 * ((1 << 20) // 128)
    assert int(s.useful_B.sum()) == 1 << 20


def test_wide_lanes_and_strided_chunks(h100):
    s16 = twins.build_zc("c", zc(bytes_per_lane=16), h100).stream
    assert s16.size_histogram() == {128: (1 << 20) // 128}
    # 512 B per load = 4 lines; the 4 loads of an unrolled group form one instruction
    assert set(np.bincount(s16.inst[s16.warp == 0])) == {16}
    st = twins.build_zc("s", zc(pattern="strided", chunk_B=4096), h100).stream
    assert st.size_histogram() == {32: len(st)}                    # one sector per lane and load
    assert set(st.useful_B.tolist()) == {4}
    st64 = twins.build_zc("s", zc(pattern="strided", chunk_B=64, bytes_per_lane=8), h100).stream
    assert set(st64.size_histogram()) == {32}                      # sectors 0 and 2 of each line


def test_random_lines_stay_in_the_region(h100):
    t = twins.build_zc("r", zc(pattern="random", region_B=1 << 22), h100)
    off = t.stream.addr.astype(np.int64) - twins.MICRO_BASE
    assert off.min() >= 0 and off.max() < 1 << 22 and np.all(off % 128 == 0)
    # 8192 uniform draws over 32768 lines hit 32768 (1 - exp(-1/4)) = 7250 distinct ones
    assert abs(len(np.unique(off)) - 7250) < 150


def test_scatter_lanes_read_the_programs_words(h100):
    # zc_common.cuh, kScatter: lane l of warp w's j-th load reads word
    # mix64(seed ^ mix64((first_w + j) * 32 + l)) % words, one 32 B sector each
    region = 1 << 22
    t = twins.build_zc("s", zc(pattern="scatter", region_B=region, bytes_per_lane=8,
                               total_B=1 << 18, unroll=1), h100)
    s = t.stream
    words = region // 8
    per_warp = (1 << 18) // 256 // 64
    lane = np.arange(32, dtype=np.uint64)
    want = twins.mix64(np.uint64(1) ^ twins.mix64(np.uint64(per_warp) * 32 + lane)) % words
    want_sectors = np.unique(twins.MICRO_BASE + want.astype(np.int64) * 8 // 32 * 32)
    got = s.addr[(s.warp == 1) & (s.inst == 0)].astype(np.int64)
    assert np.array_equal(np.sort(got), want_sectors)
    # lanes in neighbouring sectors of one line share a request, as the coalescer's are
    assert np.all(s.size_B % 32 == 0) and s.size_histogram()[32] > 0.9 * len(s)
    assert int(s.useful_B.sum()) == 1 << 18 == t.full_bytes_B
    with pytest.raises(twins.TwinError, match="device memory"):
        twins.build_zc("s", zc(pattern="scatter", memory_mode="device"), h100)


def test_large_runs_are_predicted_on_a_prefix(h100):
    t = twins.build_zc("c", zc(total_B=1 << 30, warps=0), h100, max_requests=1 << 14)
    assert t.extra["warps"] == h100.gpu.sm_count * h100.gpu.max_warps_per_sm
    # every warp keeps 8 x unroll loads, more than 2**14 requests in all
    assert len(t.stream) == t.extra["warps"] * 8 * 4 and t.scale == pytest.approx(31.03, rel=1e-3)
    assert t.full_bytes_B == 1 << 30


def test_an_unrolled_group_is_one_instruction(h100):
    # the program issues `unroll` loads, then uses them all before the next group: the
    # group completes when its last load does, so it is one instruction of the twin
    t = twins.build_zc("c", zc(unroll=8), h100)
    assert t.system_for(h100).gpu.loads_in_flight_per_warp == 1
    s = t.stream
    per_warp = (1 << 20) // 128 // 64                              # 128 loads per warp
    assert set(np.bincount(s.inst[s.warp == 0])) == {8}
    assert int(s.inst[s.warp == 0].max()) + 1 == per_warp // 8
    # warps x 128 B x unroll in flight: one group per round trip (its four requests
    # queue behind each other on the link and in DRAM, a few percent)
    p = zc(benchmark="zc_warps", warps=4, unroll=4, total_B=64 << 20, max_per_warp_B=1 << 16)
    one = twins.build_zc("w", dict(p, unroll=1), h100).predict(h100, "des")["bw_GBps"]
    four = twins.build_zc("w", p, h100).predict(h100, "des")["bw_GBps"]
    assert 0.93 * 4 * one < four < 4 * one


@pytest.mark.parametrize("fidelity", ["analytic", "des"])
def test_pointer_chase_latency_moves_with_rtt(h100, fidelity):
    p = dict(benchmark="ptr_chase", memory_mode="zerocopy", stride_B=4096, footprint_B=1 << 26,
             order="random", steps=200, cache="cv")
    t = twins.build_ptr_chase("p", p, h100)
    assert t.stream.size_histogram() == {32: 400}                  # untimed + timed pass
    from hostlink.model.config import system_with
    a = t.predict(system_with(h100, {"link.rtt_ns": 1000.0}), fidelity)["lat_ns"]
    b = t.predict(system_with(h100, {"link.rtt_ns": 1500.0}), fidelity)["lat_ns"]
    assert 1000.0 <= a < 1100.0
    assert b - a == pytest.approx(500.0, rel=1e-3)


def test_few_warps_follow_littles_law(h100):
    # one load of 128 B per warp in flight: bandwidth = warps x 128 B / latency
    p = zc(benchmark="zc_warps", warps=4, unroll=1, total_B=512 << 20, max_per_warp_B=1 << 16)
    t = twins.build_zc("w", p, h100)
    bw = t.predict(h100, "des")["bw_GBps"]
    lat = twins.build_ptr_chase("p", dict(benchmark="ptr_chase", stride_B=4096,
                                          footprint_B=1 << 26, steps=100, cache="cv"), h100
                                ).predict(h100, "des")["lat_ns"]
    assert bw == pytest.approx(4 * 128 / lat, rel=0.03)


def test_case_names_parse_back():
    params = dict(pattern="coalesced", offset_B=32, bytes_per_lane=8, memory_mode="zerocopy",
                  warps=0, unroll=4, cache="default")
    name = micro_case_name("zc_read", params)
    back = twins.params_from_name(name)
    assert {k: back[k] for k in params} == params
    assert back["total_B"] == 1 << 30                              # a setting's default
    trav = twins.params_from_name("bfs/kron21/merged_aligned/zerocopy/8B")
    assert trav["id_bytes"] == 8 and trav["kind"] == "traversal"
    with pytest.raises(twins.TwinError):
        twins.params_from_name("micro/zc_read/bogus=1")


def test_groups():
    g = twins.case_group
    assert g("x", {"kind": "micro", "benchmark": "zc_read", "pattern": "random"}) == "micro/zc_read/random"
    assert g("x", {"kind": "micro", "benchmark": "ptr_chase", "memory_mode": "registered"}) == \
        "micro/ptr_chase/host"
    assert g("x", {"kind": "traversal", "memory_mode": "uvm_accessedby"}) == "traversal/zerocopy"
    assert g("x", {"kind": "traversal", "memory_mode": "uvm_readmostly"}) == "traversal/uvm"
    assert g("x", {"kind": "traversal", "memory_mode": "device"}) == "traversal/device"


def test_synthesize_noise_is_seeded(h100):
    cases = {"micro/x": dict(kind="micro", benchmark="ptr_chase", stride_B=4096,
                             footprint_B=1 << 26, steps=50, cache="cv")}
    a = twins.synthesize(cases, h100, fidelity="analytic", noise_pct=2.0, reps=3, seed=3)
    b = twins.synthesize(cases, h100, fidelity="analytic", noise_pct=2.0, reps=3, seed=3)
    lat = a[a["metric"] == "lat_ns"]["value"].to_numpy()
    assert np.array_equal(lat, b[b["metric"] == "lat_ns"]["value"].to_numpy())
    assert lat.std() > 0 and set(a["model_kind"]) == {"measured"}


def kron10_run(tmp_path, variant: str, memory_mode: str):
    """A one-case measured run of BFS on kron10 from its hub (the graph regenerated by
    the twins from the metadata): its CSR, the case's parameters and its GraphSource."""
    import json

    from hostlink.traces.graphs.generators import generate
    from hostlink.validation.results_io import make_table, write_results
    csr = generate("kron", 10, 16, 27491095, weighted=True, id_bytes=8, name="kron10")
    source = int(np.argmax(np.diff(csr.offsets)))
    base = dict(kind="traversal", kernel="bfs", graph="kron10", variant=variant,
                memory_mode=memory_mode, id_bytes=8, reps=1, sources=[source])
    case = f"bfs/kron10/{variant}/{memory_mode}/8B"
    write_results(make_table([("r", "e", case, "measured", "kernel_time_ms", 1.0, "ms", 0)]),
                  tmp_path)
    (tmp_path / "metadata.json").write_text(json.dumps({"cases": {case: base}, "graphs": {
        "kron10": {"kind": "kron", "scale": 10, "degree": 16, "seed": 27491095}}}))
    return csr, base, twins.GraphSource(twins.load_run(tmp_path))


def test_a_graph_keeps_its_weights_only_for_sssp(tmp_path):
    # only SSSP reads the weights: a run without it holds the graph without them
    # (2 GiB of a scale-24 graph), and its neighbour lists are the same
    import json
    csr, base, graphs = kron10_run(tmp_path, "merged", "zerocopy")
    held = graphs.get("kron10")
    assert held.weights is None and np.array_equal(held.dst, csr.dst)
    meta = json.loads((tmp_path / "metadata.json").read_text())
    meta["cases"]["sssp/kron10/merged/zerocopy/8B"] = dict(base, kernel="sssp")
    (tmp_path / "metadata.json").write_text(json.dumps(meta))
    weighted = twins.GraphSource(twins.load_run(tmp_path)).get("kron10")
    assert np.array_equal(weighted.weights, csr.weights)


def test_a_generated_graph_is_kept_and_mapped_from_its_files(tmp_path, monkeypatch):
    # the first report generates the graph and keeps it under the cache folder; the
    # graph it holds is mapped from those files (pages the OS may drop), and a later
    # report reads them instead of generating the graph again
    import mmap

    from hostlink.traces.graphs import generators
    from hostlink.validation import twin_traversal
    monkeypatch.setenv("HOSTLINK_GRAPH_CACHE", str(tmp_path / "cache"))
    run = tmp_path / "run"
    run.mkdir()
    csr, _, graphs = kron10_run(run, "merged", "zerocopy")
    held = graphs.get("kron10")
    key = twin_traversal.generated_graph_key("kron", 10, 16, 27491095)
    kept = sorted(p.name for p in (tmp_path / "cache").iterdir())
    assert kept == [f"{key}.bel.{ext}" for ext in ("col", "dst", "val")]
    base = held.dst
    while base is not None and not isinstance(base, mmap.mmap):
        base = getattr(base, "base", None)
    assert base is not None, "the held graph is not mapped from the kept files"
    assert held.weights is None and np.array_equal(held.offsets, csr.offsets)
    assert np.array_equal(held.dst, csr.dst)

    def no_generation(*args, **kwargs):
        raise AssertionError("the kept graph should have been read")
    monkeypatch.setattr(generators, "generate", no_generation)
    again = twins.GraphSource(twins.load_run(run)).get("kron10")
    assert np.array_equal(again.dst, csr.dst)


def test_a_graph_that_cannot_be_kept_is_held_in_memory(tmp_path, monkeypatch):
    # a cache folder that cannot be written (here a file stands in its way): the
    # generated graph is used from memory, without its weights where nothing reads them
    blocker = tmp_path / "cache"
    blocker.write_text("not a folder")
    monkeypatch.setenv("HOSTLINK_GRAPH_CACHE", str(blocker / "graphs"))
    run = tmp_path / "run"
    run.mkdir()
    csr, _, graphs = kron10_run(run, "merged", "zerocopy")
    held = graphs.get("kron10")
    assert held.weights is None and np.array_equal(held.dst, csr.dst)
    assert blocker.read_text() == "not a folder"


def test_an_interrupted_graph_write_is_not_taken_for_whole(tmp_path, monkeypatch):
    # the offsets file is renamed into place last: files a crashed write left under
    # their temporary names, or without the offsets, make the next report generate again
    from hostlink.validation import twin_traversal
    cache = tmp_path / "cache"
    monkeypatch.setenv("HOSTLINK_GRAPH_CACHE", str(cache))
    key = twin_traversal.generated_graph_key("kron", 10, 16, 27491095)
    cache.mkdir()
    (cache / f"{key}.bel.dst").write_bytes(b"partial")
    (cache / f"{key}.tmp123.bel.col").write_bytes(b"partial")
    run = tmp_path / "run"
    run.mkdir()
    csr, _, graphs = kron10_run(run, "merged", "zerocopy")
    assert np.array_equal(graphs.get("kron10").dst, csr.dst)
    assert (cache / f"{key}.bel.dst").stat().st_size == 16 + 8 * csr.num_edges


def test_traversal_load_ahead_is_loads_in_flight(tmp_path):
    # the kernels issue load_ahead trips before using them (1 where a run does not say):
    # more loads in flight per warp, a shorter predicted kernel on a latency-bound graph
    _, base, graphs = kron10_run(tmp_path, "merged_aligned", "zerocopy")
    h200 = load_system("h200-pcie5-datasheet")
    t = {}
    for ahead in (None, 1, 4):
        p = dict(base) if ahead is None else dict(base, load_ahead=ahead)
        rows = twins.predict_traversal("c", p, h200, graphs, fidelity="des")
        t[ahead] = dict((m, v) for m, v, _ in rows)["kernel_time_ms"]
    assert t[None] == t[1]
    assert t[4] < 0.8 * t[1]


def test_default_cache_operator_loads_go_through_the_gpus_caches(h100):
    # H100 preset: host reads cached (gpu.caches_host_reads). Strided 4 B loads: a lane's
    # next loads of its 32 B sector hit, so far fewer requests than loads; ld.cv misses
    p = zc(pattern="strided", chunk_B=4096, total_B=1 << 21)
    cv = twins.build_zc("s", dict(p, cache="cv"), h100)
    cached = twins.build_zc("s", dict(p, cache="default"), h100)
    assert not cv.extra["cached"] and cached.extra["cached"]
    assert cv.twin_bytes_B == cached.twin_bytes_B                  # the loads read the same bytes
    assert len(cv.stream) == cv.twin_bytes_B / 4                   # one 32 B request per load
    # a sector serves its 8 loads of 4 B at best; the first load of each unrolled group of 4
    # may miss again
    assert len(cv.stream) / 8 <= len(cached.stream) <= len(cv.stream) / 4
    assert cached.predict(h100, "des")["bw_GBps"] > 2 * cv.predict(h100, "des")["bw_GBps"]
    # the unrolled group is still one instruction
    _, per_inst = np.unique(cached.stream.inst[cached.stream.warp == 0], return_counts=True)
    assert set(per_inst) <= set(range(1, 33))


def test_a_chase_over_a_few_lines_hits_in_the_l1(h100):
    # 32 nodes of 128 B, 200 steps: the timed pass (the L1 is empty at each launch)
    # misses once per node and hits otherwise; the chain waits gpu.l1_hit_ns for each hit
    p = dict(benchmark="ptr_chase", memory_mode="zerocopy", stride_B=128, footprint_B=4096,
             order="random", steps=200, cache="default")
    t = twins.build_ptr_chase("p", p, h100)
    timed = t.stream.select(t.stream.launch == 1)
    assert len(timed) == 32
    cv = twins.build_ptr_chase("p", dict(p, cache="cv"), h100).predict(h100, "des")["lat_ns"]
    cached = t.predict(h100, "des")["lat_ns"]
    assert cv > 900
    hit_ns = h100.gpu.l1_hit_ns
    assert hit_ns > 0
    assert cached == pytest.approx((cv * 32 + hit_ns * 168) / 200, rel=0.02)
    # slower L1 hits, slower chain; the misses' share unchanged
    slow = system_with(h100, {"gpu.l1_hit_ns": 4 * hit_ns})
    assert t.predict(slow, "des")["lat_ns"] == pytest.approx(cached + 3 * hit_ns * 168 / 200,
                                                            rel=0.02)


def test_a_chase_with_revisits_reported_times_fresh_nodes(h100):
    # programs that report `revisits` time the next `steps` links of the cycle
    p = dict(benchmark="ptr_chase", memory_mode="zerocopy", stride_B=4096, footprint_B=1 << 26,
             order="random", steps=100, cache="cv")
    old = twins.build_ptr_chase("p", p, h100).stream
    new = twins.build_ptr_chase("p", p, h100, revisits_hint=0.0).stream
    a0, a1 = old.addr[old.launch == 0], old.addr[old.launch == 1]
    b0, b1 = new.addr[new.launch == 0], new.addr[new.launch == 1]
    assert np.array_equal(a0, a1)                                  # the same nodes again
    assert len(np.intersect1d(b0, b1)) == 0 and len(np.unique(b1)) == 100
    # a chain shorter than 2 x steps wraps: the timed links revisit the first ones
    small = twins.build_ptr_chase("p", dict(p, footprint_B=150 * 4096), h100,
                                  revisits_hint=1.0).stream
    assert len(np.unique(small.addr)) == 150


def test_a_loaded_round_trip_slows_the_middle_of_the_warp_sweep(h100):
    # rtt = link.rtt_ns + d x (downstream link utilisation), settled over a few passes:
    # one warp barely loads the link; a saturated link stays saturated
    loaded_h100 = system_with(h100, {"link.rtt_at_full_link_ns": 500.0})
    p = zc(benchmark="zc_warps", unroll=1, total_B=256 << 20, max_per_warp_B=1 << 20)
    bw = {}
    for w in (1, 264, 4224):
        t = twins.build_zc("w", dict(p, warps=w), h100)
        bw[w] = (t.predict(h100, "des")["bw_GBps"], t.predict(loaded_h100, "des")["bw_GBps"])
    assert bw[1][1] == pytest.approx(bw[1][0], rel=0.01)
    assert bw[4224][1] == pytest.approx(bw[4224][0], rel=0.01)
    # 264 warps run the link at u = bw / (link bound); the round trip becomes rtt + 500 u
    plain, loaded = bw[264]
    u = loaded / bw[4224][0]
    rtt = h100.link.rtt_ns
    assert loaded == pytest.approx(plain * rtt / (rtt + 500.0 * u), rel=0.03)


def test_link_utilisation_of_a_saturated_stream_is_one(h100):
    from hostlink.model.predict import predict
    t = twins.build_zc("c", zc(warps=0, total_B=64 << 20), h100)
    pred = predict(t.stream, t.system_for(h100), mode="zerocopy", fidelity="des")
    assert link_utilisation(pred, h100) == pytest.approx(1.0, abs=0.03)


def test_cache_operators_pick_the_levels(h100):
    from hostlink.traces.cache import host_read_cache
    assert twins.host_cache_for({"cache": "default"}, h100) == host_read_cache(h100.gpu)
    assert twins.host_cache_for({"cache": "cv"}, h100) is None
    cg = twins.host_cache_for({"cache": "cg"}, h100)
    assert cg is None or cg.l1_size_B == 0


def launch_case(ctas, work, threads=256):
    return dict(kind="micro", benchmark="launch", ctas=ctas, threads_per_cta=threads, work=work)


def test_launch_twin_is_fixed_time_plus_dispatch_or_the_loads(h100):
    # values of the H200 fit (validation/experiments/launch_latency/runs/h200)
    from hostlink.model.config import system_with
    sysc = system_with(h100, {"gpu.launch_ns": 6392.0, "gpu.cta_dispatch_ns": 0.615,
                              "gpu.device_lat_ns": 184.0})
    for ctas in (1, 4096, 1 << 21):
        t = twins.build_micro("c", launch_case(ctas, "empty"), sysc).predict(sysc, "des")
        assert t["time_us"] == pytest.approx((6392.0 + ctas * 0.615) * 1e-3)
    # one device load per warp: a lone CTA waits for it; a huge grid is dispatch-bound
    one = twins.build_micro("c", launch_case(1, "label"), sysc).predict(sysc, "des")
    assert one["time_us"] * 1e3 >= 6392.0 + 184.0
    big = twins.build_micro("c", launch_case(1 << 21, "label"), sysc,
                            max_requests=1 << 14).predict(sysc, "des")
    assert big["time_us"] == pytest.approx((6392.0 + (1 << 21) * 0.615) * 1e-3, rel=0.02)
    assert twins.micro_group(launch_case(8, "label")) == "micro/launch/label"


def test_launch_twin_without_launch_costs_is_an_error(h100):
    # the model refuses it (a HostlinkError: one line, exit status 2 in the CLI)
    from hostlink.model.errors import HostlinkError
    with pytest.raises(HostlinkError, match="not modelled"):
        twins.build_micro("c", launch_case(8, "empty"), h100).predict(h100, "des")


def test_traversal_twins_carry_the_device_arrays_and_the_launches(tmp_path):
    # the kernels' own device loads (labels, offsets) are in the twin: a slower device
    # memory slows the device-mode prediction, and a slower CTA dispatch every mode's
    from hostlink.model.config import system_with
    csr, base, graphs = kron10_run(tmp_path, "merged", "device")
    h200 = load_system("h200-pcie5-datasheet")

    def kernel_ms(system, mode="device"):
        rows = twins.predict_traversal("c", dict(base, memory_mode=mode), system, graphs,
                                       fidelity="des")
        return dict((m, v) for m, v, _ in rows)["kernel_time_ms"]

    t = kernel_ms(h200)
    assert kernel_ms(system_with(h200, {"gpu.device_lat_ns": 2 * h200.gpu.device_lat_ns})) > 1.3 * t
    launches = dict((m, v) for m, v, _ in twins.predict_traversal(
        "c", base, h200, graphs, fidelity="des"))["iterations"]
    slow = system_with(h200, {"gpu.cta_dispatch_ns": 1000.0, "gpu.launch_ns": 1000.0})
    ctas = -(-32 * csr.num_vertices // 256)                 # merged: a warp per vertex
    for mode in ("device", "zerocopy", "uvm"):
        assert kernel_ms(slow, mode) >= launches * (ctas * 1000.0 + 1000.0) * 1e-6


def test_the_balanced_variant_has_a_twin(tmp_path):
    # hostlink's own variant (gpu_kernels/traversal/README.md) is predicted as the others
    # are: the edges merged_aligned reads, in fewer host requests than chunked's (adjacent
    # short lists share windows), with its device accesses or with its walk's steps
    csr, base, graphs = kron10_run(tmp_path, "balanced", "zerocopy")
    h200 = load_system("h200-pcie5-datasheet")

    def predicted(variant, limit=1 << 24, mode="zerocopy"):
        timing = {}
        rows = twins.predict_traversal("c", dict(base, variant=variant, load_ahead=4,
                                                 memory_mode=mode), h200, graphs,
                                       fidelity="des", max_device_edges=limit, timing=timing)
        return dict((m, v) for m, v, _ in rows)

    bal, aligned = predicted("balanced"), predicted("merged_aligned")
    assert bal["edges_read"] == aligned["edges_read"] > 0
    assert bal["iterations"] == aligned["iterations"]
    steps = predicted("balanced", limit=0)          # the walk's steps for its device accesses
    assert steps["edges_read"] == bal["edges_read"] and steps["kernel_time_ms"] > 0
    assert predicted("balanced", mode="device")["kernel_time_ms"] < bal["kernel_time_ms"]
    from hostlink.traces.emulator import emulate
    reqs = {v: len(emulate(graphs.get("kron10"), "bfs", v, source=base["sources"][0],
                           id_bytes=8).requests()) for v in ("balanced", "chunked")}
    assert reqs["balanced"] < reqs["chunked"]


def test_large_graphs_twins_carry_the_walks_dependent_steps(tmp_path):
    # above max_device_edges the twin keeps the edge list and one device request per
    # dependent step (validation/experiments/device_work/runs/h100): close to the twin with
    # every device access, and slower than the edge list alone, on the hub's walk
    _, base, graphs = kron10_run(tmp_path, "merged_aligned", "zerocopy")
    h200 = load_system("h200-pcie5-datasheet")
    timing = {}

    def kernel_ms(limit, **kw):
        rows = twins.predict_traversal("c", dict(base, load_ahead=4), h200, graphs,
                                       fidelity="des", max_device_edges=limit, **kw)
        return dict((m, v) for m, v, _ in rows)["kernel_time_ms"]

    full = kernel_ms(1 << 24)
    steps = kernel_ms(0, timing=timing)
    assert steps == pytest.approx(full, rel=0.1)
    from hostlink.traces.cache import host_read_cache
    from hostlink.traces.coalescer import coalesce
    from hostlink.traces.emulator import emulate
    from hostlink.validation.twin_common import run_model
    from hostlink.model.config import system_with
    em = emulate(graphs.get("kron10"), "bfs", "merged_aligned", source=base["sources"][0],
                 id_bytes=8, include_device=False)
    host = coalesce(em.trace(), cache=host_read_cache(h200.gpu), cache_host=True)
    alone = run_model(host, system_with(h200, {"gpu.loads_in_flight_per_warp": 4}),
                      "zerocopy", "des").kernel_ns.sum() * 1e-6
    assert alone < 0.8 * steps
    assert timing["requests"] > 2 * len(host)


def test_sparse_uvm_touch_touches_one_line_per_stride(h100):
    p = dict(kind="micro", benchmark="uvm_touch", size_B=64 << 20, pattern="sparse",
             stride_B=2 << 20, advice="none", warps=64)
    t = twins.build_micro("c", p, h100)
    assert len(t.stream) == 32
    assert np.all(np.diff(np.sort(t.stream.addr.astype(np.int64))) == 2 << 20)
    assert twins.micro_group(p) == "micro/uvm_touch/none/sparse"
    from hostlink.validation.manifest import expand_micro
    pts = expand_micro("uvm_touch", {"pattern": ["seq", "sparse"], "stride_B": [65536]})
    assert [("stride_B" in q) for q in pts] == [False, True]


def test_uvm_touch_prefix_keeps_a_line_and_scales_all_but_the_first_fault(h100):
    # one line in a 2 GiB buffer (validation/experiments/uvm_alloc/manifest.toml): the 1 GiB
    # prefix must still hold it, and stand for the whole buffer at scale 1
    one = dict(kind="micro", benchmark="uvm_touch", size_B=2 << 30, pattern="sparse",
               stride_B=2 << 30, advice="none", warps=64)
    t = twins.build_micro("c", one, h100)
    assert len(t.stream) == 1 and t.scale == 1.0
    # one line per 512 MiB over 2 GiB: two of the four in the prefix, scaled by two
    four = dict(one, stride_B=512 << 20)
    t4 = twins.build_micro("c", four, h100)
    assert len(t4.stream) == 2 and t4.scale == 2.0
    # the run's one-off first fault is paid once, not once per prefix
    ff_us = 500.0
    base = t4.predict(system_with(h100, {"uvm.first_fault_us": 0.0}), "analytic")["time_ms"]
    with_ff = t4.predict(system_with(h100, {"uvm.first_fault_us": ff_us}), "analytic")["time_ms"]
    assert with_ff - base == pytest.approx(ff_us * 1e-3, rel=1e-6)
    # whole buffers (scale 1) are unchanged by the rule
    small = dict(one, size_B=64 << 20, stride_B=2 << 20)
    ts = twins.build_micro("c", small, h100)
    assert ts.scale == 1.0 and len(ts.stream) == 32


def test_random_pattern_floor_the_kernels_own_time_and_one_read_per_line(h100):
    # zc_read's random lines: the kernel's hash and modulo bound loads the caches serve,
    # and ld.cv reads of one host line do not overlap
    base = dict(kind="micro", benchmark="zc_warps", pattern="random", bytes_per_lane=4,
                memory_mode="zerocopy", unroll=1, total_B=1 << 30, max_per_warp_B=1 << 30)
    opts = {"gpu.random_load_ns": 26.0, "gpu.random_chain_ns": 280.0}
    sms = h100.gpu.sm_count

    def bw(params, options=None):
        # enough loads per warp that the first misses of the 32 hot lines are a small part
        t = twins.build_micro("c", params, h100, max_requests=1 << 17)
        return t.predict(system_with(h100, options or {}), "analytic")["bw_GBps"]

    hot = dict(base, region_B=4096, cache="default")
    full, one = dict(hot, warps=64 * sms), dict(hot, warps=sms)
    # cache hits cost the model nothing: without the options both run faster than the bound
    assert bw(full) > 1.1 * sms * 128 / 26.0 and bw(one) > 1.1 * sms * 128 / 280.0
    assert bw(full, opts) == pytest.approx(sms * 128 / 26.0, rel=0.02)     # the SMs' issue
    assert bw(one, opts) == pytest.approx(sms * 128 / 280.0, rel=0.02)     # one warp's chain
    # ld.cv over 32 host lines: one read per line per round trip, however many warps
    cv = dict(base, region_B=4096, cache="cv", warps=64 * sms)
    round_trip = h100.link.rtt_ns + h100.gpu.host_path_ns
    assert bw(cv) == pytest.approx(32 * 128 / round_trip, rel=0.02)
    # neither bounds reads the link limits (a 1 GiB region), nor other patterns
    wide = dict(cv, region_B=1 << 30)
    assert bw(wide, opts) == pytest.approx(bw(wide), rel=1e-12) and bw(wide) > 20
    coal = dict(base, pattern="coalesced", cache="default", warps=64 * sms)
    assert bw(coal, opts) == bw(coal)
    # device memory has no host round trip per line
    dev = dict(cv, memory_mode="device")
    assert bw(dev) > 1000


def test_ld_cv_lines_held_longer_the_more_lines_are_read_at_once(h100):
    # ld.cv: a line's read holds it gpu.cv_line_ns (at least a round trip)
    # plus cv_line_gap_ns per line read at once; a warp's loads one after another (the
    # random pattern keeps one in flight)
    base = dict(kind="micro", benchmark="zc_warps", pattern="random", bytes_per_lane=4,
                memory_mode="zerocopy", unroll=1, cache="cv", total_B=1 << 30,
                max_per_warp_B=1 << 30)
    hold, gap, chain = 1600.0, 2.4, 280.0
    opts = {"gpu.cv_line_ns": hold, "gpu.cv_line_gap_ns": gap, "gpu.random_chain_ns": chain}
    sms = h100.gpu.sm_count
    round_trip = h100.link.rtt_ns + h100.gpu.host_path_ns

    def bw(region_B, warps, options=opts):
        t = twins.build_micro("c", dict(base, region_B=region_B, warps=warps), h100,
                              max_requests=1 << 17)
        return t.predict(system_with(h100, options), "analytic")["bw_GBps"]

    full = 64 * sms
    assert bw(4096, full) == pytest.approx(32 * 128 / (hold + 32 * gap), rel=0.02)
    assert bw(16384, full) == pytest.approx(128 * 128 / (hold + 128 * gap), rel=0.02)
    # fewer warps than lines: only the warps' reads are at once, each warp's loads one
    # after another, its chain plus a round trip apart
    assert bw(1 << 20, sms) == pytest.approx(sms * 128 / (chain + round_trip), rel=0.02)
    # the lines read at once are no more than the link carries in a round trip: with
    # 2048 lines the link binds (as measured), and a gap is paid for those reads only
    link = bw(256 << 10, full, {})
    assert bw(256 << 10, full) == pytest.approx(link, rel=0.02)
    at_once = link * round_trip / 128
    assert at_once < 2048
    wide_gap = {"gpu.cv_line_ns": hold, "gpu.cv_line_gap_ns": 50.0}
    assert bw(256 << 10, full, wide_gap) == pytest.approx(
        2048 * 128 / (hold + 50.0 * at_once), rel=0.02)
    # a hold below the round trip is the round trip
    short = {"gpu.cv_line_ns": 10.0}
    assert bw(4096, full, short) == pytest.approx(32 * 128 / round_trip, rel=0.02)
    # scatter: each lane reads a line of its own, 4 B of it, so a line read brings 4 B
    # and the 32 lines are read at once by many warps' lanes
    t = twins.build_micro("c", dict(base, pattern="scatter", region_B=4096, warps=full), h100,
                          max_requests=1 << 17)
    got = t.predict(system_with(h100, opts), "analytic")["bw_GBps"]
    assert got == pytest.approx(32 * 4 / (hold + 32 * gap), rel=0.02)


def test_requests_ahead_follow_the_kernels_load_ahead():
    from hostlink.validation.twins import requests_ahead
    # merged variants: every trip a line of its own
    assert [requests_ahead(v, 4, 8) for v in ("merged", "merged_aligned", "chunked")] == [4, 4, 4]
    # naive: a thread's trips are consecutive elements of its list, one 32 B sector
    assert requests_ahead("naive", 4, 8) == 1 and requests_ahead("naive", 4, 4) == 1
    assert requests_ahead("naive", 8, 8) == 2
    assert requests_ahead("naive", 1, 8) == 1 and requests_ahead("merged", 1, 4) == 1
    # SSSP loads the weights of every trip too: twice the loads per group
    assert requests_ahead("merged", 4, 8, weighted=True) == 8
    assert requests_ahead("naive", 4, 8, weighted=True) == 2      # a sector of each array
    assert requests_ahead("naive", 16, 8, weighted=True) == 4 + 2


def test_cold_l1_fill_adds_to_the_random_patterns_own_time(h100):
    # the default cache operator on host memory: each SM fetches the region's lines into
    # its empty L1 first, at the link's rate (a warp waits for its group's g lines) or a
    # round trip per line a warp keeps in flight, whichever is longer
    sms = h100.gpu.sm_count
    round_trip = h100.link.rtt_ns + h100.gpu.host_path_ns
    l1_B = twins.host_cache_for({"cache": "default"}, h100).l1_size_B

    def fill(host_GBps=50.0, in_flight=None, **kw):
        p = dict(kind="micro", benchmark="zc_warps", pattern="random", bytes_per_lane=4,
                 memory_mode="zerocopy", unroll=1, cache="default", region_B=64 << 10,
                 warps=64 * sms, total_B=1 << 30, max_per_warp_B=1 << 30)
        p.update(kw)
        # a record of the kernel's loads in flight other than the SASS's, for g's effect
        record = None if in_flight is None else {"zc_read": {"kernels": {
            twins.read_kernel_symbol(4, p["cache"], p["unroll"], "random"): in_flight}}}
        t = twins.build_micro("c", p, h100, max_requests=1 << 14, loads_in_flight=record)
        from hostlink.model.kernel_costs import cold_fill_ns
        return cold_fill_ns(t.workload, h100, t.predict_mode, host_GBps)

    link_ns = sms * (64 << 10) / 50.0
    # g: the loads a warp keeps in flight, as the SASS shows: one for the random loop
    # at every unroll (the call to its modulo routine waits for the load before it)
    assert fill(unroll=4) == fill(unroll=1) == pytest.approx(link_ns * 1 / 2, rel=1e-3)
    assert fill(unroll=4, in_flight=4) == pytest.approx(link_ns * 4 / 5, rel=1e-3)
    assert fill(unroll=4, in_flight=4, host_GBps=25.0) == pytest.approx(2 * link_ns * 4 / 5,
                                                                         rel=1e-3)
    # one warp per SM: its 512 lines, g at a time, one round trip after another
    assert fill(unroll=4, in_flight=4, warps=sms, host_GBps=500.0) == pytest.approx(
        512 / 4 * round_trip, rel=1e-3)
    assert fill(warps=sms, host_GBps=500.0) == pytest.approx(512 * round_trip, rel=1e-3)
    # a region beyond the L1 fills the L1's worth before its misses turn to capacity ones
    assert fill(unroll=4, in_flight=4, region_B=1 << 20) == pytest.approx(
        sms * l1_B / 50.0 * 4 / 5, rel=1e-3)
    # a short run touches the lines its loads pick: 512 loads per SM over 512 lines
    few = fill(unroll=4, in_flight=4, total_B=sms * 512 * 128)
    assert few == pytest.approx(link_ns * 4 / 5 * (1 - np.exp(-1)), rel=1e-3)
    # no L1 on the way: ld.cv, ld.cg, device memory; no rate known: nothing added
    assert fill(cache="cv") == fill(cache="cg") == fill(memory_mode="device") == 0.0
    assert fill(host_GBps=None) == 0.0


def test_cold_l1_fill_against_the_measured_hot_lines():
    """Random 128 B lines over 64 KiB of host memory with the default cache operator
    read 20-25% slower than over 4 KiB on the H200 (validation/experiments/hot_lines/runs/h200):
    the fill of 132 empty L1s from the host (Nsight Compute, ../l1_probe). Predicted
    with the first run's calibration, within 10% of the measurement at full occupancy."""
    from pathlib import Path

    import pandas as pd

    from hostlink.model.config import load_any_system

    cal = run_dir("first_run", "h200") / "calibrated.toml"
    system = load_any_system(str(cal))
    res = pd.read_parquet(run_dir("hot_lines", "h200") / "results.parquet")
    for region_B, unroll in ((4096, 1), (4096, 4), (65536, 1), (65536, 4)):
        params = dict(kind="micro", benchmark="zc_warps", pattern="random", region_B=region_B,
                      bytes_per_lane=4, memory_mode="zerocopy", warps=8448, unroll=unroll,
                      cache="default", total_B=256 << 20)
        name = micro_case_name("zc_warps", {k: v for k, v in params.items()
                                            if k not in ("kind", "benchmark", "total_B")})
        rows = res[(res["case"] == name) & (res["metric"] == "bw_GBps")]
        assert len(rows) == 3, name
        measured = float(rows["value"].median())
        got = twins.build_micro(name, params, system).predict(system, "des")
        assert got["bw_GBps"] == pytest.approx(measured, rel=0.10), name


def test_read_kernels_keep_the_loads_their_sass_shows_in_flight(h100):
    # the committed build's SASS (validation/experiments/sass/runs/h200): ptxas pairs wide loads,
    # unrolls the strided loop at unroll 1, and the random pattern waits for each load
    # before it calls its modulo routine; ld.cv loads count like the default's
    def n(**kw):
        p = dict(benchmark="zc_read", pattern="coalesced", bytes_per_lane=4, unroll=4,
                 cache="default")
        p.update(kw)
        return twins.read_kernel_in_flight(p)

    assert n() == 4 and n(bytes_per_lane=16) == 2
    assert n(pattern="strided", bytes_per_lane=8) == 2
    assert n(pattern="strided", unroll=1) == 4 and n(pattern="strided", unroll=1,
                                                     bytes_per_lane=16) == 4
    assert n(pattern="random", unroll=1) == n(pattern="random") == 1
    assert n(cache="cv") == 4 and n(cache="cv", pattern="random") == 1
    assert n(benchmark="zc_warps", unroll=1) == 1           # zc_warps: zc_read's kernels
    assert n(unroll=3) is None and n(cache="nc") is None    # no such kernel
    # a run's own record comes first
    sym = twins.read_kernel_symbol(4, "default", 4, "coalesced")
    assert sym == "_ZN2zc11read_kernelILi4ELi0ELi4ELi0EEEvNS_6LaunchE"
    own = {"zc_read": {"kernels": {sym: 3}}}
    assert twins.read_kernel_in_flight(dict(benchmark="zc_read", unroll=4), own) == 3
    # the twin's instruction is those loads: 16 B per lane strided at unroll 4 keeps one
    # sector of a lane in flight, not two, and one warp reads slower: 0.65 as fast, not
    # half, as with four in flight the warp's issue gaps bind (both fidelities)
    p = zc(pattern="strided", chunk_B=4096, bytes_per_lane=16, warps=1, cache="default",
           total_B=1 << 22)
    paired = twins.build_micro("c", p, h100)
    whole = twins.build_micro("c", p, h100, loads_in_flight={"zc_read": {"kernels": {
        twins.read_kernel_symbol(16, "default", 4, "strided"): 4}}})
    assert paired.extra["group"] == 2 and whole.extra["group"] == 4
    ratio = {f: paired.predict(h100, f)["bw_GBps"] / whole.predict(h100, f)["bw_GBps"]
             for f in ("analytic", "des")}
    assert ratio["des"] < 0.75
    assert ratio["analytic"] == pytest.approx(ratio["des"], rel=0.02)


def test_paired_wide_loads_against_the_measured_tag_window():
    """One and four warps reading 16 B per lane in 4 KiB chunks on the H100
    (validation/experiments/tag_window/runs/h100): unroll 1 reads 1.8 times as fast as unroll
    4 (1.25 against 0.70 GB/s for one warp), where the source's unroll would make it
    4 times slower: ptxas keeps 4 and 2 loads of a lane in flight (2 sectors and 1).
    Predicted with that run's calibration: the ratio within 15%, each point within
    25% (the model's one-warp round trip for 32 sectors at once is short by about as
    much for 4 B per lane, which every unroll reads one sector at a time)."""
    from pathlib import Path

    import pandas as pd

    from hostlink.model.config import load_any_system

    run = run_dir("tag_window", "h100")
    system = load_any_system(str(run / "calibrated.toml"))
    res = pd.read_parquet(run / "results.parquet")
    for warps in (1, 4):
        got, measured = {}, {}
        for unroll in (1, 4):
            naming = dict(pattern="strided", chunk_B=4096, bytes_per_lane=16,
                          memory_mode="zerocopy", warps=warps, unroll=unroll, cache="default")
            name = micro_case_name("zc_warps", naming)
            rows = res[(res["case"] == name) & (res["metric"] == "bw_GBps")]
            assert len(rows) == 3, name
            measured[unroll] = float(rows["value"].median())
            params = dict(kind="micro", benchmark="zc_warps", **naming, total_B=256 << 20)
            got[unroll] = twins.build_micro(name, params, system).predict(
                system, "des")["bw_GBps"]
            assert got[unroll] == pytest.approx(measured[unroll], rel=0.25), name
        assert got[1] / got[4] == pytest.approx(measured[1] / measured[4], rel=0.15)


def test_a_runs_record_of_loads_in_flight_is_read_or_refused(tmp_path):
    from hostlink.validation.twin_common import TwinError

    assert twins.run_loads_in_flight(tmp_path / "none") is None
    good = tmp_path / "good"
    good.mkdir()
    (good / "loads_in_flight.json").write_text(
        '{"tool": "cuobjdump -sass", "wait_model": "scoreboard", '
        '"programs": {"zc_read": {"kernels": {"k": 2}}}}')
    assert twins.run_loads_in_flight(good) == {"zc_read": {"kernels": {"k": 2}}}
    # a record read with an earlier wait model is set aside (the reference stands in)
    older = tmp_path / "older"
    older.mkdir()
    (older / "loads_in_flight.json").write_text(
        '{"tool": "cuobjdump -sass", "programs": {"zc_read": {"kernels": {"k": 2}}}}')
    assert twins.run_loads_in_flight(older) is None
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "loads_in_flight.json").write_text('{"programs": ')
    with pytest.raises(TwinError, match="loads_in_flight.json"):
        twins.run_loads_in_flight(bad)


def _one_warp_measured(run: str, naming: dict) -> float:
    from pathlib import Path

    import pandas as pd
    res = pd.read_parquet(EXPERIMENTS / run / "results.parquet")
    name = micro_case_name("zc_warps", naming)
    rows = res[(res["case"] == name) & (res["metric"] == "bw_GBps")]
    assert len(rows) == 3, name
    return float(rows["value"].median())


def _calibrated(run: str):
    from pathlib import Path

    from hostlink.model.config import load_any_system
    path = EXPERIMENTS / run / "calibrated.toml"
    return load_any_system(str(path))


@pytest.mark.parametrize("bpl", [4, 16])
def test_one_warps_ld_cv_loads_of_distinct_lines_overlap(bpl):
    """One warp reading consecutive lines with ld.cv steps with its loads in flight as
    the default operator does (validation/experiments/cv_overlap/runs/h200, an H200): the twin
    keeps the SASS's loads in flight for both, each point within 15% (its own
    calibration), and unroll 8 over unroll 1 within 15% of the measured ratio."""
    system = _calibrated("cv_overlap/runs/h200")
    got, measured = {}, {}
    for unroll in (1, 8):
        naming = dict(pattern="coalesced", offset_B=0, bytes_per_lane=bpl, memory_mode="zerocopy",
                      warps=1, unroll=unroll, cache="cv")
        measured[unroll] = _one_warp_measured("cv_overlap/runs/h200", naming)
        params = dict(kind="micro", benchmark="zc_warps", **naming, total_B=64 << 20,
                      max_per_warp_B=256 << 10)
        got[unroll] = twins.build_micro("c", params, system).predict(system, "des")["bw_GBps"]
        assert got[unroll] == pytest.approx(measured[unroll], rel=0.15), naming
    assert got[8] / got[1] == pytest.approx(measured[8] / measured[1], rel=0.15)
    assert measured[8] / measured[1] > 4


def test_strided_ld_cv_loads_of_one_line_go_one_at_a_time():
    """A lane's strided ld.cv loads fall in one line of its chunk and wait for each
    other: the twin's instruction is one load whatever the SASS keeps in flight."""
    from hostlink.validation.twin_micro import cv_lines_in_flight
    assert cv_lines_in_flight(4, 4) == 1 and cv_lines_in_flight(6, 16) == 1
    assert cv_lines_in_flight(8, 32) == 2 and cv_lines_in_flight(1, 16) == 1


def test_one_warps_strided_ld_cv_loads_read_at_the_measured_rate():
    """One warp at 4 and 8 B per lane reads within 15% of the H100's warp_rounds (one
    load per round trip at every unroll), predicted with that run's calibration. The
    load's 32 sector requests leave the SM's issue stage with its first (the stream's
    ``follows``): charged gpu.host_request_gap_ns each, as the default operator's are
    (validation/experiments/request_cost/runs/h100), the twin gave 1742 ns a round against
    1193-1347 measured."""
    system = _calibrated("warp_rounds/runs/h100")
    for bpl in (4, 8):
        for unroll in (1, 8):
            naming = dict(pattern="strided", chunk_B=4096, bytes_per_lane=bpl,
                          memory_mode="zerocopy", warps=1, unroll=unroll, cache="cv")
            params = dict(kind="micro", benchmark="zc_warps", **naming, total_B=64 << 20,
                          max_per_warp_B=256 << 10)
            twin = twins.build_micro("c", params, system)
            assert twin.extra["group"] == 1
            got = twin.predict(system, "des")["bw_GBps"]
            assert got == pytest.approx(_one_warp_measured("warp_rounds/runs/h100", naming), rel=0.15)


@pytest.mark.parametrize("cache", ["default", "cv"])
def test_the_random_pattern_pays_a_round_trip_per_load_that_misses(cache):
    """One warp reading random lines over 64 MiB of host memory: one load in flight
    (the SASS), each costing the kernel's chain plus a round trip, with either cache
    operator (0.090 GB/s measured at unroll 1 and 8 on the H200, cv_overlap); the
    twin within 10%, where without the serial bound the default operator's came
    out faster than ld.cv's."""
    system = _calibrated("cv_overlap/runs/h200")
    for unroll in (1, 8):
        naming = dict(pattern="random", region_B=64 << 20, bytes_per_lane=4,
                      memory_mode="zerocopy", warps=1, unroll=unroll, cache=cache)
        params = dict(kind="micro", benchmark="zc_warps", **naming, total_B=64 << 20,
                      max_per_warp_B=256 << 10)
        twin = twins.build_micro("c", params, system)
        got = twin.predict(system, "des")["bw_GBps"]
        assert got == pytest.approx(_one_warp_measured("cv_overlap/runs/h200", naming), rel=0.10)


@pytest.mark.parametrize("extra,match", [({"op": "red"}, "op 'red' has no twin"),
                                         ({"op": "store"}, "op 'store' has no twin"),
                                         ({"pattern": "scatter", "region_B": 1 << 24},
                                          "pattern 'scatter' in device memory has no twin")])
def test_write_and_scatter_points_have_no_twin(h100, extra, match):
    # zc_warps --op store/red and --pattern scatter in device memory
    # (validation/experiments/write_cost/write_cost_probe.sh) are measured, not predicted: a
    # twin that read them as plain loads of one level would be wrong
    params = {**zc(memory_mode="device", warps=132, unroll=1), **extra}
    with pytest.raises(twins.TwinError, match=match):
        twins.build_micro("micro/zc_warps/x", params, h100)


def test_a_load_point_without_op_is_a_load(h100):
    # the programs write "op" only for writes: a record without it is a load, as before
    a = twins.build_micro("a", zc(memory_mode="device", warps=132, unroll=1), h100)
    b = twins.build_micro("b", {**zc(memory_mode="device", warps=132, unroll=1), "op": "load"}, h100)
    assert a.predict(h100, "des") == b.predict(h100, "des")
