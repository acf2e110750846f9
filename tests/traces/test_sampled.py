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
    launch = sm._launch_of(level, whole, wide_base, np.array([0.5, 0.0]), 4, sm.GROUPS,
                           np.uint64(sm._SALT), offsets, heavy)
    assert launch[0] == launch[1] == 0
    assert launch[16] == -1                                       # heavy: left out
    for cta in range(1, 16):                                      # whole CTAs of 4 vertices
        members = [v for v in range(4 * cta, 4 * cta + 4) if v != 16]
        assert len(set(launch[members])) == 1
        u = sm._uniform(cta, np.uint64(sm._SALT))
        want = -1 if u >= 0.5 else 1 + min(sm.GROUPS - 1, int(u / 0.5 * sm.GROUPS))
        assert launch[members[0]] == want
    kept = launch[2:] >= 1
    assert 0 < kept.sum() < 62


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
