"""A miniature of the GPU and its host (hostlink.model.des.miniature): what it scales,
and that a uniform sample of a launch's CTAs takes about as long on it as the whole
launch on the whole machine."""
from __future__ import annotations

import numpy as np
import pytest

from hostlink.model.des import HOST_READ, build_inputs
from hostlink.model.des.miniature import miniature, miniature_sms
from hostlink.model.errors import ConfigError
from hostlink.model.predict import predict, resolve_system
from hostlink.traces.emulator import AlgorithmRun
from hostlink.traces.graphs import generate
from hostlink.traces.traversal import traversal_workload


@pytest.fixture(scope="module")
def h200():
    return resolve_system("h200-pcie5")


@pytest.fixture(scope="module")
def urand16():
    return generate("urand", 16, 16, 7, weighted=False).with_id_bytes(8)


def _level_work(graph, system, active):
    run = AlgorithmRun("bfs", list(active), np.zeros(0, dtype=np.uint32))
    return traversal_workload(graph, "bfs", "merged_aligned", system.gpu, source=0, id_bytes=8,
                              max_device_edges=0, run=run)


def test_a_miniature_scales_the_rates_credits_and_sms_and_keeps_an_idle_reads_time(h200, urand16):
    work = _level_work(urand16, h200, [np.arange(0, 4000, dtype=np.int64)])
    whole = build_inputs(work.stream, h200, translation=False)
    assert miniature(whole, 1.0) is whole
    mini = miniature(whole, 0.25)
    assert mini.sm_count == miniature_sms(h200.gpu.sm_count, 0.25) == 33
    assert mini.launch_slots[0] == round(whole.launch_slots[0] * 33 / h200.gpu.sm_count)
    assert mini.tags == round(whole.tags * 0.25)
    for name in ("ser_up_ns", "ser_down_ns", "dram_ns"):
        assert np.allclose(getattr(mini.costs, name), getattr(whole.costs, name) / 0.25)
    assert np.array_equal(mini.costs.size_B, whole.costs.size_B)
    assert (mini.host_path_ns, mini.issue_gap_ns.tolist(), mini.sm_request_ns) == (
        whole.host_path_ns, whole.issue_gap_ns.tolist(), whole.sm_request_ns)
    # a CTA keeps its place in the grid, so a sample's CTAs start when the whole grid's do
    assert whole.cta_start_ns is not None and mini.cta_start_ns is whole.cta_start_ns
    # an idle read takes as long: the round trip less the growth of the mean read's service
    own = (whole.ser_up_ns + whole.ser_down_ns + whole.dram_ns)[whole.kind == HOST_READ]
    assert mini.rtt_ns + 4 * own.mean() == pytest.approx(whole.rtt_ns + own.mean())
    assert miniature_sms(132, 0.001) == 1
    with pytest.raises(ValueError):
        miniature(whole, 0.0)


def test_a_sample_of_a_launchs_ctas_on_a_miniature_takes_as_long_as_the_launch(h200, urand16):
    """BFS's widest level of urand16 (about 5 waves of the H200's resident warps) on
    the whole machine, and a share of its CTAs (8 vertices each, drawn at random) on a
    miniature of that share of it: a quarter, and one SM."""
    level = np.full(urand16.num_vertices, -1)
    level[0] = 0
    frontier = np.array([0])
    offsets, dst = np.asarray(urand16.offsets), np.asarray(urand16.dst)
    widest = frontier
    while len(frontier):
        nxt = np.unique(np.concatenate([dst[offsets[v]:offsets[v + 1]] for v in frontier]))
        nxt = nxt[level[nxt] < 0]
        level[nxt] = 1
        widest = nxt if len(nxt) > len(widest) else widest
        frontier = nxt
    assert len(widest) > 4 * 8448
    full = predict(_level_work(urand16, h200, [widest]), h200, mode="zerocopy", fidelity="des")
    u = np.random.default_rng(3).random(urand16.num_vertices // 8 + 1)
    for asked in (0.25, 1 / 132):
        share = miniature_sms(h200.gpu.sm_count, asked) / h200.gpu.sm_count
        sample = widest[u[widest // 8] < share]
        small = predict(_level_work(urand16, h200, [sample]), h200, mode="zerocopy",
                        fidelity="des", share=share)
        alone = predict(_level_work(urand16, h200, [sample]), h200, mode="zerocopy",
                        fidelity="des")
        # the sample's bytes are about its share of the level's: correct for the difference
        estimate = small.per_launch_kernel_s[0] * share * len(widest) / len(sample)
        assert estimate == pytest.approx(full.per_launch_kernel_s[0], rel=0.03)
        # on the whole machine the same sample is much shorter than the launch
        assert alone.per_launch_kernel_s[0] < 0.5 * full.per_launch_kernel_s[0]


def test_a_miniature_is_for_request_streams_at_the_des_fidelity(h200, urand16):
    work = _level_work(urand16, h200, [np.arange(0, 100, dtype=np.int64)])
    for kwargs in ({"fidelity": "analytic"}, {"fidelity": "des", "mode": "uvm"},
                   {"fidelity": "des", "share": 1.5}):
        args = {"mode": "zerocopy", "share": 0.5, **kwargs}
        with pytest.raises(ConfigError, match="miniature"):
            predict(work, h200, **args)
