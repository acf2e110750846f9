"""A gather's predictions in every mode, and the dissertation's claims about them."""
import numpy as np
import pytest

from hostlink.model.config import load_any_system, system_with
from hostlink.model.copy_engine import copy_bw_GBps
from hostlink.model.cpu_gather import cpu_gather_time, mean_row_read_B, thread_load_factor
from hostlink.model.errors import ConfigError
from hostlink.model.gather_run import bound_class
from hostlink.model.predict import GATHER_MODES, MODES, predict
from hostlink.traces.gather import GatherSpec, gather_workload

H200 = load_any_system("h200-pcie5")
RTX = load_any_system("rtx3090-pcie4")
GiB = 1 << 30


def _work(system, row_B, table_B, variant, rows=1 << 18, lane_B=4):
    spec = GatherSpec(row_B, table_B // row_B, rows, variant, lane_B)
    return gather_workload(spec, "uniform", system.gpu, exact_counts=False)


@pytest.fixture(scope="module")
def small():
    return _work(H200, 480, GiB, "aligned")


@pytest.mark.parametrize("mode", MODES + GATHER_MODES)
def test_every_mode_predicts(small, mode):
    p = predict(small, H200, mode=mode)
    assert p.mode == mode and p.time_s > 0 and p.bw_GBps > 0
    assert p.useful_B == small.rows * small.row_B
    assert p.extra["bound_class"] == bound_class(p.bound)


def test_gather_modes_need_a_gather(small):
    with pytest.raises(ConfigError, match="a gather also takes"):
        predict(small.stream, H200, mode="cpu_gather")


def test_a_table_beyond_the_reach_is_translation_bound():
    # h200-pcie5's translation: a reach of about 630 MiB (model/translation.py's notes)
    near, far = (predict(_work(H200, 512, t, "aligned"), H200) for t in (GiB, 16 * GiB))
    assert far.bw_GBps < 0.6 * near.bw_GBps
    assert far.bound == "translation" and far.extra["bound_class"] == "translation"
    off = system_with(H200, {"translation.enabled": False})
    assert predict(_work(H200, 512, 16 * GiB, "aligned"), off).bw_GBps > 2 * far.bw_GBps


def test_a_flushed_l2_costs_each_page_table_span_the_walks_touch():
    from dataclasses import replace

    from hostlink.model.translation import PAGE_TABLE_SPAN_B, cold_span_time_ns
    spec = GatherSpec(128, 16 * GiB // 128, 1 << 14, "aligned", 4)
    warm = gather_workload(spec, "uniform", H200.gpu, exact_counts=False)
    flushed = gather_workload(spec, "uniform", H200.gpu, exact_counts=False, l2_flushed=True)
    # 2**14 uniform rows among 2**19 spans of 32 KiB: N (1 - exp(-n / N)) distinct
    assert PAGE_TABLE_SPAN_B == 32 * 1024
    n, spans = 2**14, 16 * GiB // PAGE_TABLE_SPAN_B
    assert flushed.table_spans == pytest.approx(spans * -np.expm1(-n / spans), rel=0.01)
    assert not warm.l2_flushed and flushed.table_spans == warm.table_spans
    cold_ns = flushed.table_spans * H200.translation.cold_span_ns
    assert cold_span_time_ns(flushed.table_spans, spec.table_B, H200.translation) == cold_ns
    for mode in ("zerocopy", "uvm_accessedby", "device"):
        a, b = predict(warm, H200, mode=mode), predict(flushed, H200, mode=mode)
        if mode == "zerocopy":     # the flush adds its fetches to the kernel, nothing else
            assert b.time_s == pytest.approx(a.time_s + cold_ns * 1e-9, rel=1e-12)
            assert b.kernel_time_s == pytest.approx(a.kernel_time_s + cold_ns * 1e-9, rel=1e-12)
            assert b.extra["cold_span_ns"] == pytest.approx(cold_ns)
        else:
            assert b.time_s == a.time_s
    # inside the reach only each translation page's first walk fetches cold
    small_B = 64 << 20
    pages = small_B // H200.translation.page_B
    assert cold_span_time_ns(2048, small_B, H200.translation) == pages * H200.translation.cold_span_ns
    off = system_with(H200, {"translation.cold_span_ns": 0.0})
    assert predict(replace(flushed), off, mode="zerocopy").time_s == pytest.approx(
        predict(warm, off, mode="zerocopy").time_s, rel=1e-12)


def test_uvm_first_touch_is_slower_than_warm(small):
    cold, warm = (predict(small, H200, mode=m) for m in ("uvm", "uvm_warm"))
    assert cold.time_s > warm.time_s
    assert cold.extra["bound_class"] == "uvm_service"


def test_cpu_gather_adds_the_gather_to_one_copy():
    rows, row_B = 1 << 20, 1024
    t_ns, bound, terms = cpu_gather_time(H200, rows, row_B)
    copy_ns = rows * row_B / copy_bw_GBps(H200)
    assert t_ns > copy_ns and terms["copy"] >= copy_ns
    assert t_ns == pytest.approx(terms["copy"] + max(terms["host_serve"], terms["host_threads"]))
    _, one_bound, one = cpu_gather_time(H200, rows, row_B, threads=1)
    # 16 threads by default, each slowed by the others
    assert one["host_threads"] == pytest.approx(
        16 * terms["host_threads"] / thread_load_factor(H200.host, 16))
    assert one_bound == "host_threads"
    # the bound is the longer of the gather's terms and the copy
    assert bound == max(("link", terms["copy"]), ("host_serve", terms["host_serve"]),
                        ("host_threads", terms["host_threads"]), key=lambda x: x[1])[0]


def test_a_row_off_its_bursts_reads_the_partial_bursts():
    assert mean_row_read_B(128, 64) == 128
    assert mean_row_read_B(96, 64) == 128          # rows at 0 (2 bursts) and 96 (2 bursts)
    assert mean_row_read_B(480, 64) > 480


# min_dissertation_2022 ch. 3.4.2, on the system of its Table 3.3 (RTX 3090, PCIe 4.0,
# cudaMemcpy 25.8 GB/s): "When the node feature size is 1024 B ... the upper bound
# efficiency of zero-copy access is about 95.1%. With more misaligned accesses, the
# efficiency of the naive zero-copy implementation drops to 78-82% while the optimized
# zero-copy implementation can achieve 88-93% of efficiency." Its sweep is 1024-1044 B.
# Efficiency here: the gather's useful bandwidth over the model's copy bandwidth.
def _efficiency(system, row_B, table_B, variant):
    return predict(_work(system, row_B, table_B, variant), system).bw_GBps / copy_bw_GBps(system)


@pytest.mark.parametrize("row_B", [1028, 1044])
def test_alignment_reaches_about_93_percent_of_a_copy(row_B):
    aligned = _efficiency(RTX, row_B, GiB, "aligned")
    naive = _efficiency(RTX, row_B, GiB, "naive")
    assert 0.88 <= round(aligned, 2) <= 0.93
    assert 0.78 <= round(naive, 2) <= 0.82
    # 1024 B rows: the best of the sweep, at most the text's upper bound
    assert 0.93 <= round(_efficiency(RTX, 1024, GiB, "naive"), 2) <= 0.95


@pytest.mark.xfail(strict=True, reason=(
    "the claim was measured on the wikipedia features (Table 3.4: 17.1 GB), beyond the "
    "reach of rtx3090-pcie4's translation preset (gpu_default: 2048 entries of 2 MB, 8 "
    "walks of 600 ns, all assumptions), which makes the gather translation-bound at about "
    "a fifth of a copy's bandwidth; the RTX 3090's TLB reach and walk throughput are not measured"))
def test_alignment_reaches_about_93_percent_on_the_wikipedia_table():
    assert 0.88 <= round(_efficiency(RTX, 1028, 17_100_000_000, "aligned"), 2) <= 0.93
