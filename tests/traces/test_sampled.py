"""Sampled BFS predictions (hostlink.traces.sampled) against the full prediction of the same run.

The full prediction is :func:`hostlink.model.predict.predict` of
:func:`hostlink.traces.traversal.traversal_workload` without device accesses
(``max_device_edges=0``, as the sample is built) on the h200-pcie5 preset. The
suite's graphs are small: on them no level is wide enough for CTA sampling
(2 x 8 groups x 4 waves x 8448 resident warps), so they check the narrow
levels' sampling (a shuffled grid of many levels), the exact path and the
CTA split itself; the CTA-sampled levels' error is measured on scale-21 graphs
by tests/bench/bench_sampled.py.
"""
from __future__ import annotations

import numpy as np
import pytest

from hostlink.model.cli.main import main
from hostlink.model.predict import predict, resolve_system
from hostlink.traces import sampled as sm
from hostlink.traces.emulator import emulate
from hostlink.traces.graphs import from_edges, generate, write_bel
from hostlink.traces.traversal import traversal_workload


@pytest.fixture(scope="module")
def h200():
    return resolve_system("h200-pcie5")


@pytest.fixture(scope="module")
def kron14():
    return generate("kron", 14, 16, 3, weighted=False).with_id_bytes(8)


def _grid(side: int):
    v = np.arange(side * side).reshape(side, side)
    src = np.concatenate([v[:, :-1].ravel(), v[:-1, :].ravel()])
    dst = np.concatenate([v[:, 1:].ravel(), v[1:, :].ravel()])
    perm = np.random.default_rng(2).permutation(side * side)
    return from_edges(perm[src], perm[dst], side * side, symmetrize=True).with_id_bytes(8)


def _full(csr, system, source):
    work = traversal_workload(csr, "bfs", "merged_aligned", system.gpu, source=source,
                              id_bytes=8, max_device_edges=0)
    return predict(work, system, mode="zerocopy", fidelity="des")


def test_bfs_levels_are_the_emulators_launches(kron14):
    level = sm.bfs_levels(kron14, 5)
    active = emulate(kron14, "bfs", "merged", source=5).active
    assert int(level.max()) + 1 == len(active)
    for lv, act in enumerate(active):
        assert np.array_equal(np.flatnonzero(level == lv), act)


def test_plan_widens_fractions_and_samples_narrow_levels_systematically():
    nv = np.array([1, 100, 10**6, 10**5, 5])
    p = sm.plan(nv, 1.0, 1000, 0.01)
    # a group needs 4 x 1000 warps: level 2 keeps 8 x 4000 / 1e6 = 3.2% of its CTAs and
    # level 3 32% (wide while at most half); level 1 would need 320 times its size
    assert p.frac[2] == pytest.approx(0.032) and p.frac[3] == pytest.approx(0.32)
    assert p.kind.count("wide") == 2 * sm.GROUPS and p.narrow_levels == 0
    assert sorted(set(p.level[np.array(p.kind) == "exact"])) == [0, 1, 4]
    many = np.full(400, 10)
    q = sm.plan(many, 1.0, 1000, 0.25)         # M = 8 / 0.25 = 32 slots, 400 >= 64
    assert q.narrow_levels == 400 and set(q.kind) == {"narrow"}
    for g in range(sm.GROUPS):                   # every 32nd level from the group's start
        lv = q.level[q.group == g]
        assert len(lv) in (12, 13) and set(np.diff(lv)) == {32}


def test_launch_split_keeps_whole_ctas_of_light_lists_in_disjoint_groups():
    offsets = np.arange(0, 8 * 64 + 1, 8, dtype=np.uint64)      # 64 vertices of degree 8
    offsets[17:] += np.uint64(1000)                               # vertex 16: 1008 edges
    level = np.zeros(64, dtype=np.int32)
    level[:2] = 1                                                 # vertices 0, 1: level 1
    whole = np.array([-1, 0])                                     # level 1 whole: launch 0
    wide_base = np.array([1, -1])                                 # level 0: launches 1..8
    heavy = np.array([100, 2**62])
    walk = sm._walk_elements(level, offsets, 1)
    forced = np.zeros(64, dtype=bool)
    forced[16] = True
    launch = sm._launch_of(level, whole, wide_base, np.array([0.5, 0.0]), 4, sm.GROUPS,
                           np.uint64(sm._SALT), walk, heavy, forced)
    assert launch[0] == launch[1] == 0
    assert launch[16] == sm.FORCED
    forced[16] = False
    launch = sm._launch_of(level, whole, wide_base, np.array([0.5, 0.0]), 4, sm.GROUPS,
                           np.uint64(sm._SALT), walk, heavy, forced)
    assert launch[16] == -1                                       # heavy: left out
    for cta in range(1, 16):                                      # whole CTAs of 4 vertices
        members = [v for v in range(4 * cta, 4 * cta + 4) if v != 16]
        assert len(set(launch[members])) == 1
        u = sm._uniform(cta, np.uint64(sm._SALT))
        want = -1 if u >= 0.5 else 1 + min(sm.GROUPS - 1, int(u / 0.5 * sm.GROUPS))
        assert launch[members[0]] == want
    kept = launch[2:] >= 1
    assert 0 < kept.sum() < 62


def test_a_warps_walk_is_its_lists_of_one_level():
    # chunked geometry: a warp walks the lists of 8 consecutive vertices in turn
    offsets = np.arange(0, 8 * 16 + 1, 8, dtype=np.uint64)       # 16 vertices of degree 8
    offsets[4:] += np.uint64(42)                                  # vertex 3: 50 edges
    level = np.zeros(16, dtype=np.int32)
    level[5] = 1                                                  # vertex 5 on another level
    level[9] = -1                                                 # vertex 9 not reached
    walk = sm._walk_elements(level, offsets, 8)
    assert (walk[[0, 1, 2, 3, 4, 6, 7]] == 6 * 8 + 50).all() and walk[5] == 8
    assert walk[9] == 0 and (walk[[8, 10, 11, 12, 13, 14, 15]] == 7 * 8).all()
    assert np.array_equal(sm._walk_elements(level, offsets, 1)[:4], [8, 8, 8, 50])
    # a warp over its threshold is left out whole; the others are sampled (all kept here)
    launch = sm._launch_of(level, np.array([-1, 9]), np.array([0, -1]), np.array([1.0, 0.0]),
                           8, sm.GROUPS, np.uint64(sm._SALT), walk, np.array([98, 2**62]),
                           np.zeros(16, dtype=bool))
    assert (launch[[0, 1, 2, 3, 4, 6, 7]] == -1).all() and launch[5] == 9
    assert launch[9] == -1 and (launch[[8, 10, 11, 12, 13, 14, 15]] >= 0).all()


def test_forced_walks_are_the_longest_then_those_that_would_end_last_while_they_fit(h200):
    from hostlink.model.des.inputs import link_rate_Bpns
    level_B = 4e8
    level_ns = level_B / link_rate_Bpns(h200)
    trip_ns = h200.link.rtt_ns + h200.link.rtt_at_full_link_ns + h200.gpu.host_path_ns
    least = int(np.ceil(sm.TAIL_SHARE * level_ns / trip_ns)) * 32    # elements: 32 a trip
    # eight vertices of one level, one a warp (merged), in id order; the list of 100
    # elements between them sets where each walk starts
    walk = np.array([least * 3, 100, least * 2, 100, least, 100, least - 32, 100])
    at = np.arange(8)

    def forced(share, vpw=1, degree=walk):
        return sm.forced_walks(at, walk, degree, vpw, level_B, share, h200, "zerocopy",
                               "merged", 1, 8).tolist()

    # the bytes fit a whole machine's share: every walk of a tenth of the level or more
    assert forced(1.0) == [0, 2, 4]
    # the longest walk goes first, whatever its bytes: room for 2.5 x least elements of
    # 8 B holds it alone, though it does not fit (3 x least)
    room = 2.5 * least * 8 / (sm.FORCED_SHARE * level_B)
    assert forced(room) == [0]
    # then the walk that would end last: the shortest, which starts at 83% of the
    # level's bytes and runs on alone past them, before the second longest, which ends
    # at LOADED_TRIP x its time alone, before the level's bytes have moved. Room for
    # 4.5 x least holds the longest and the shortest, not the second (2 x least) too
    assert forced(room * 1.8) == [0, 4]
    assert forced(room * 2.5) == [0, 2, 4]
    # a warp's long lists go together (vpw 8: one warp, 6 x least elements): the
    # longest warp's, whatever its bytes
    assert forced(room, vpw=8) == [0, 2, 4]
    assert forced(1.0, vpw=8) == [0, 2, 4]


def test_heavy_lists_are_those_a_warp_walks_for_a_tenth_of_a_group_launch(h200):
    from hostlink.model.des.inputs import link_rate_Bpns
    link, gpu = h200.link, h200.gpu
    launch_ns = 4e6 / link_rate_Bpns(h200)                        # 4 MB at the link's rate
    trips = sm.HEAVY_SHARE * launch_ns / (link.rtt_ns + link.rtt_at_full_link_ns
                                          + gpu.host_path_ns)
    assert sm.heavy_list_elements(4e6, h200, "zerocopy", "merged", 1) == int(trips * 32)
    assert sm.heavy_list_elements(4e6, h200, "zerocopy", "chunked", 4) == int(trips * 128)
    assert sm.heavy_list_elements(4e6, h200, "zerocopy", "naive", 1) == int(trips)
    device = sm.HEAVY_SHARE * 4e8 / gpu.device_bw_GBps / gpu.device_lat_ns
    assert device > 1 and sm.heavy_list_elements(4e8, h200, "device", "merged", 1) == int(
        device * 32)
    # never below one trip's elements
    assert sm.heavy_list_elements(1.0, h200, "zerocopy", "merged", 2) == 64


def test_a_wide_groups_issue_floor_is_the_levels_not_scaled_with_it(kron14, h200):
    """A group launch tests every vertex, as its level does: the floor of the level a
    wide group stands for is the tests plus the group's list instructions scaled."""
    from hostlink.model.compute import issue_floor_ns, stream_issue_floor_ns
    from hostlink.traces.emulator import AlgorithmRun
    from hostlink.traces.scan_cost import scan_warp_insts
    run = AlgorithmRun("bfs", [np.arange(0, 400, dtype=np.int64),
                               np.arange(400, 500, dtype=np.int64)], np.zeros(0, np.uint32))
    work = traversal_workload(kron14, "bfs", "merged_aligned", h200.gpu, source=5,
                              id_bytes=8, max_device_edges=0, run=run)
    floors, bare = sm._issue_floors(work, h200.gpu, 8, np.array([5e6, 1e5]),
                                    np.array([1e5, 1e5]), ["wide", "exact"])
    wide, exact = work.stream.launches
    tests = scan_warp_insts("bfs", "merged_aligned", 8, kron14.num_vertices)
    assert tests > 0 and wide.warp_insts > tests
    want = issue_floor_ns([tests + (wide.warp_insts - tests) * 50], [wide.longest_warp_insts],
                          [wide.ctas], h200.gpu, [wide.stall_sm_clocks])
    assert floors[0] == pytest.approx(want[0], rel=1e-12)
    assert floors[1] == pytest.approx(stream_issue_floor_ns(work.stream, h200.gpu, 2)[1],
                                      rel=1e-12)
    # the bare stream's prediction is the memory time alone: no floor applies to it
    assert all(i.warp_insts == 0 and i.stall_sm_clocks == 0 for i in bare.stream.launches)
    assert np.array_equal(bare.stream.addr, work.stream.addr)


def test_nothing_sampled_is_the_full_prediction(kron14, h200):
    full = _full(kron14, h200, 5)
    pred = sm.sampled_prediction(kron14, "merged_aligned", h200, source=5, fraction=None)
    s = pred.extra["sampled"]
    assert s["wide_levels"] == 0 and s["narrow_levels"] == 0
    reached = sm.bfs_levels(kron14, 5) >= 0
    assert s["sample_edges_read"] == s["edges_read"] == int(kron14.degrees()[reached].sum())
    assert pred.time_s == pytest.approx(full.time_s, rel=1e-9)
    assert s["time_s_low"] == pytest.approx(s["time_s_high"], rel=1e-12)
    assert pred.per_launch_time_s == pytest.approx(full.per_launch_time_s, rel=1e-9)


def test_sampled_grid_samples_levels_and_its_interval_holds_the_full_prediction(h200):
    grid = _grid(48)
    full = _full(grid, h200, 0)
    pred = sm.sampled_prediction(grid, "merged_aligned", h200, source=0, fraction=0.25)
    s = pred.extra["sampled"]
    # 8 groups of every 32nd level (M = 8 / 0.25): about a quarter of the levels
    assert s["narrow_levels"] == s["levels"] > 64
    assert s["narrow_levels_sampled"] < s["levels"] / 2
    assert s["time_s_low"] < s["time_s_high"]
    assert s["time_s_low"] <= full.time_s <= s["time_s_high"]
    assert abs(pred.time_s / full.time_s - 1) < 0.02
    assert pred.launches == len(full.per_launch_time_s)


def test_miniatures_of_groups_of_a_tenth_of_a_wave_stand_for_their_levels(h200,
                                                                           monkeypatch):
    """urand16's two widest levels, sampled in groups of a tenth of the H200's resident
    warps (``MIN_GROUP_WAVES`` 0.1: the CTAs of 5 and 3 SMs a group), on miniatures of
    ``MIN_MINIATURE_SMS`` (6 SMs, 4.5% of their CTAs a group), against the whole run."""
    graph = generate("urand", 16, 16, 7, weighted=False).with_id_bytes(8)
    monkeypatch.setattr(sm, "MIN_GROUP_WAVES", 0.1)
    full = _full(graph, h200, 0)
    monkeypatch.setattr(sm, "MIN_MINIATURE_SMS", 1)
    unfloored = sm.sampled_prediction(graph, "merged_aligned", h200, source=0)
    assert np.array(unfloored.extra["sampled"]["miniature_share"]) * 132 == \
        pytest.approx([5, 3])
    monkeypatch.setattr(sm, "MIN_MINIATURE_SMS", 6)
    pred = sm.sampled_prediction(graph, "merged_aligned", h200, source=0)
    s = pred.extra["sampled"]
    assert s["wide_levels"] == 2 and s["miniature_share"] == pytest.approx([6 / 132] * 2)
    assert s["wide_fraction"] == pytest.approx([6 / 132 * sm.GROUPS] * 2)
    assert s["sample_edges_read"] < 0.4 * s["edges_read"]
    assert pred.time_s == pytest.approx(full.time_s, rel=0.01)
    wide = np.argsort(full.per_launch_kernel_s)[-2:]
    assert np.array(pred.per_launch_kernel_s)[wide] == pytest.approx(
        np.array(full.per_launch_kernel_s)[wide], rel=0.02)


def test_cli_sample_prints_interval_and_refuses_what_it_cannot_sample(tmp_path, capsys,
                                                                      kron14):
    write_bel(kron14, tmp_path / "k")
    rc = main(["predict", "--system", "h200-pcie5", "--graph", str(tmp_path / "k"),
               "--source", "5", "--sample", "auto"])
    out = capsys.readouterr().out
    assert rc == 0 and "95% interval" in out and "narrow levels whole" in out
    for extra, words in ((["--kernel", "sssp"], "only bfs"), (["--mode", "uvm"], "migrates")):
        rc = main(["predict", "--system", "h200-pcie5", "--graph", str(tmp_path / "k"),
                   "--sample", "auto", *extra])
        err = capsys.readouterr().err.strip()
        assert rc == 2 and len(err.splitlines()) == 1 and words in err
    with pytest.raises(SystemExit) as exit_:
        main(["predict", "--system", "h200-pcie5", "--graph", str(tmp_path / "k"),
              "--sample", "0"])
    assert exit_.value.code == 2 and "not in (0, 1]" in capsys.readouterr().err
    rc = main(["predict", "--system", "h200-pcie5", "--trace", str(tmp_path), "--sample", "auto"])
    assert rc == 2 and "needs --graph" in capsys.readouterr().err


def test_a_large_sample_settles_its_round_trip_between_two_passes(kron14, h200, monkeypatch):
    """Where the samples hold enough requests (BLEND_MIN_REQUESTS, lowered here), the
    loaded round trip settles between the first two passes (hostlink.model.loaded_rtt)
    and the estimate is within 0.02% of a third pass's."""
    from hostlink.model import loaded_rtt
    from hostlink.model.progress import listening

    def run():
        heard = []
        with listening(lambda level, text: heard.append(text)):
            pred = sm.sampled_prediction(kron14, "merged_aligned", h200, source=5)
        return pred, [t for t in heard if t.startswith("round trip")]
    monkeypatch.setattr(loaded_rtt, "BLEND_MIN_REQUESTS", 1 << 62)
    passes, passes_heard = run()
    monkeypatch.setattr(loaded_rtt, "BLEND_MIN_REQUESTS", 0)
    blended, blended_heard = run()
    assert len(passes_heard) == 3 and blended_heard[:2] == passes_heard[:2]
    assert blended_heard[2].startswith("round trip between passes 1 and 2: ")
    assert blended.time_s == pytest.approx(passes.time_s, rel=2e-4)
    assert blended.extra["loaded_rtt_ns"]["loaded"] == pytest.approx(
        passes.extra["loaded_rtt_ns"]["loaded"], abs=1.0)
