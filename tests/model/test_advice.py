"""hostlink.model.advice: every variant x mode predicted and ranked, on constructed cases.

The orderings asserted on kron are the ones the H200 measured
(validation/experiments/first_run/runs/h200/summary.csv, BFS on kron14, 8 B ids,
time_ms): in device memory every variant beats its zero-copy run (naive 1.253 against
2.681 ms, merged 0.2599 against 0.4460, merged_aligned 0.2506 against 0.4433, chunked
0.2638 against 0.4877, balanced 0.2932 against 0.5022 ms), and merged_aligned zero-copy
beats naive zero-copy (0.4433 against 2.681 ms).
"""
from __future__ import annotations

import math

import pytest

from hostlink.model.advice import (MODES, VARIANTS, Advice, Option, advise, footprint_B,
                                   rank, verdict, write_advice)
from hostlink.model.config import load_system, system_with
from hostlink.model.errors import HostlinkError
from hostlink.traces.graphs import kron


@pytest.fixture(scope="module")
def graph():
    return kron(14, 16, weighted=False)   # as the measured runs (module docstring)


@pytest.fixture(scope="module")
def h200():
    return load_system("h200-pcie5")


@pytest.fixture(scope="module")
def advice(graph, h200):
    return advise(graph, h200, modes=("zerocopy", "device"), fidelity="analytic")


def test_rank_orders_by_time_and_gives_slowdowns():
    opts = [Option("naive", "zerocopy", 3.0, 1.0, "link"),
            Option("merged", "uvm", 1.5, 2.0, "uvm_service"),
            Option("merged_aligned", "device", 0.5, 6.0, "device")]
    ranked = rank(opts)
    assert [o.name for o in ranked] == ["merged_aligned/device", "merged/uvm", "naive/zerocopy"]
    assert [o.slowdown for o in ranked] == [1.0, 3.0, 6.0]
    # ties go to the earlier variant, then the earlier mode
    tie = rank([Option("balanced", "device", 1.0, 1.0, ""), Option("naive", "uvm", 1.0, 1.0, ""),
                Option("naive", "zerocopy", 1.0, 1.0, "")])
    assert [o.name for o in tie] == ["naive/zerocopy", "naive/uvm", "balanced/device"]


def test_verdict_names_the_winner_and_slowdowns():
    ranked = rank([Option("naive", "zerocopy", 1.8, 1.0, "latency"),
                   Option("merged_aligned", "zerocopy", 1.0, 1.0, "link"),
                   Option("merged_aligned", "uvm", 3.1, 1.0, "uvm_service")])
    assert verdict(_advice_of(ranked)) == (
        "merged_aligned/zerocopy wins; naive/zerocopy is 1.80x slower; "
        "merged_aligned/uvm is 3.10x slower")


def _advice_of(options):
    from hostlink.model.advice import Advice
    return Advice("g", "bfs", "s", "analytic", 0, 8, 1, 1, 1, 2, options)


def test_every_option_is_predicted_once(advice):
    assert sorted((o.variant, o.mode) for o in advice.options) == sorted(
        (v, m) for v in VARIANTS for m in ("zerocopy", "device"))
    times = [o.time_s for o in advice.options]
    assert times == sorted(times) and all(t > 0 for t in times)
    assert advice.options[0].slowdown == 1.0
    assert all(o.slowdown >= 1.0 for o in advice.options)


def test_a_graph_that_fits_ranks_device_first(advice):
    assert advice.device_fits and not advice.skipped
    assert advice.winner.mode == "device"
    for variant in VARIANTS:   # measured on kron14 (module docstring)
        assert advice.option(variant, "device").time_s < advice.option(variant, "zerocopy").time_s


def test_aligned_zero_copy_beats_naive_zero_copy_on_kron(advice):
    assert advice.option("merged_aligned", "zerocopy").time_s < \
        advice.option("naive", "zerocopy").time_s


def test_the_options_are_predicts_own(graph, h200, advice):
    from hostlink.model.predict import predict
    from hostlink.traces.traversal import traversal_workload
    work = traversal_workload(graph, "bfs", "chunked", h200.gpu, source=advice.source, id_bytes=8)
    pred = predict(work, h200, mode="zerocopy", fidelity="analytic")
    o = advice.option("chunked", "zerocopy")
    assert o.time_s == pred.time_s and o.bw_GBps == pred.bw_GBps and o.bound == pred.bound


def test_device_is_left_out_when_the_graph_does_not_fit(graph, h200):
    need = footprint_B(graph.num_vertices, graph.num_edges, "bfs", 8)
    # BFS's arrays (traces/emulator/layout.py): 8 B edges, 8 B offsets (V + 1), a 4 B
    # label per vertex and one 4 B flag
    v, e = graph.num_vertices, graph.num_edges
    assert need == 8 * e + 8 * (v + 1) + 4 * v + 4
    small = system_with(h200, {"gpu.memory_GiB": need / 2 / 2**30})
    a = advise(graph, small, variants=("merged_aligned",), modes=("zerocopy", "device"),
               fidelity="analytic")
    assert not a.device_fits
    assert [o.name for o in a.options] == ["merged_aligned/zerocopy"]
    assert "device" in a.skipped and "more than" in a.skipped["device"]
    with pytest.raises(HostlinkError, match="no memory mode left"):
        advise(graph, small, variants=("naive",), modes=("device",), fidelity="analytic")


def test_parallel_workers_give_the_same_options(graph, h200, advice):
    par = advise(graph, h200, modes=("zerocopy", "device"), fidelity="analytic", jobs=2)
    assert [(o.name, o.time_s) for o in par.options] == \
        [(o.name, o.time_s) for o in advice.options]


def test_bad_options_are_one_clear_error(graph, h200):
    with pytest.raises(HostlinkError, match="variant fast"):
        advise(graph, h200, variants=("fast",))
    with pytest.raises(HostlinkError, match="mode pinned"):
        advise(graph, h200, modes=("pinned",))
    with pytest.raises(HostlinkError, match="source 99999"):
        advise(graph, h200, source=99999)


def test_to_dict_is_json_ready(advice):
    d = advice.to_dict()
    assert d["winner"] == d["options"][0]
    assert d["device_fits"] is True and d["skipped"] == {}
    assert set(d["options"][0]) == {"variant", "mode", "time_s", "bw_GBps", "bound", "slowdown"}
    assert all(math.isfinite(o["time_s"]) for o in d["options"])
    t = advice.table("time_s")
    assert list(t.index) == list(VARIANTS) and list(t.columns) == [m for m in MODES
                                                                    if m in ("zerocopy", "device")]


def test_written_advice_reads_back_whole(advice, tmp_path):
    import json
    write_advice(tmp_path / "a", advice, {"inputs": "k"})
    data = json.loads((tmp_path / "a" / "advice.json").read_text())
    assert data["inputs"] == "k"
    assert Advice.from_dict(data) == advice
