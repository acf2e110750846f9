"""ReadMostly first touch: the per-run move cost, the SM-interleaved fault order,
and the H200's ReadMostly times from costs fitted on migrating first touch.

Hand-worked rules (hostlink.model.uvm.model): a batch costs ``batch_base_us``
+ ``block_us`` per VA block it services + ``move_run_us`` per contiguous run
of pages it moves off the host + ``move_page_us`` per such page + its
transfers; read-duplicated pages move nothing off the host. Faults reach the
buffer SM by SM: CTA c runs on SM c mod sm_count, and the k-th warp of every
SM comes before the (k+1)-th of any.

The last test uses the committed H200 measurements
(validation/experiments/first_run/runs/h200, gpu_kernels/micro/uvm_touch.cu, 64 and
512 MiB, advice none and readmostly) and the model's own fault dynamics.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import nnls

from hostlink.model.config import load_system, system_with
from hostlink.model.errors import ConfigError
from hostlink.model.uvm import simulate_uvm
from hostlink.model.uvm.model import sm_interleaved_warps
from hostlink.model.workload import SPACE_HOST, LaunchInfo, RequestStream
from hostlink.validation.data_tree import run_dir

PAGE = 4096
BASE = 0x7F0000000000
RUN_DIR = run_dir("first_run", "h200")


@pytest.fixture(scope="module")
def v100():
    # no prefetcher: every fault moves exactly its own page
    return system_with(load_system("v100-pcie3"), {"uvm.prefetch": False})


def one_instruction(pages, writes=()) -> RequestStream:
    """One warp, one instruction reading 128 B of each page (writing the ``writes``)."""
    pages = np.asarray(pages, dtype=np.int64)
    n = pages.shape[0]
    size = np.full(n, 128)
    return RequestStream(launch=np.zeros(n), warp=np.zeros(n), inst=np.zeros(n),
                         addr=(BASE + pages * PAGE).astype(np.uint64), size_B=size,
                         useful_B=size, space=np.full(n, SPACE_HOST),
                         is_write=np.isin(pages, list(writes)))


def test_moved_runs_pay_per_run(v100):
    # one batch, one VA block, pages 0-2, 5-6 and 9: six pages moved in three runs
    s = one_instruction([0, 1, 2, 5, 6, 9])
    r0 = simulate_uvm(s, v100)
    r = simulate_uvm(s, v100, block_us=10.0, move_run_us=4.0, move_page_us=0.5)
    assert r.batches == 1 and r.block_services == 1
    assert r.move_runs == 3 and r.migration_runs == 3
    assert r.service_time_s - r0.service_time_s == pytest.approx((10.0 + 3 * 4.0 + 6 * 0.5) * 1e-6)
    assert r.driver_time_s == pytest.approx(25e-6)


def test_read_duplication_moves_no_runs(v100):
    s = one_instruction([0, 1, 2, 5, 6, 9])
    dup = simulate_uvm(s, v100, read_mostly=True, block_us=10.0, move_run_us=4.0)
    assert dup.move_runs == 0 and dup.migration_runs == 3
    assert dup.driver_time_s == pytest.approx(10e-6)
    # a written page leaves the host even under ReadMostly: page 5 alone is one moved run,
    # its neighbour 6 a duplicate
    w = simulate_uvm(one_instruction([0, 1, 2, 5, 6, 9], writes=[5]), v100, read_mostly=True,
                     block_us=10.0, move_run_us=4.0, move_page_us=0.5)
    assert w.move_runs == 1
    assert w.driver_time_s == pytest.approx((10.0 + 4.0 + 0.5) * 1e-6)


def grid_stream(pages_by_warp, warps_per_cta: int) -> RequestStream:
    n = len(pages_by_warp)
    pages = np.asarray(pages_by_warp, dtype=np.int64)
    size = np.full(n, 128)
    return RequestStream(launch=np.zeros(n), warp=np.arange(n), inst=np.zeros(n),
                         addr=(BASE + pages * PAGE).astype(np.uint64), size_B=size,
                         useful_B=size, space=np.full(n, SPACE_HOST), is_write=np.zeros(n, bool),
                         launches=(LaunchInfo("k", n // warps_per_cta, warps_per_cta,
                                              32 * warps_per_cta),))


def test_sm_interleaved_labels():
    # 4 CTAs of 2 warps on 2 SMs: SM0 holds CTAs 0 and 2, SM1 CTAs 1 and 3; the k-th warp of
    # each SM in turn: warps 0 (SM0), 2 (SM1), 1 (SM0), 3 (SM1), 4, 6, 5, 7
    s = grid_stream(np.arange(8), warps_per_cta=2)
    key = sm_interleaved_warps(s, sm_count=2)
    assert list(np.argsort(key)) == [0, 2, 1, 3, 4, 6, 5, 7]
    # without launch records each warp is its own CTA: the order is the warps' own
    bare = RequestStream(**{k: getattr(s, k) for k in ("launch", "warp", "inst", "addr", "size_B",
                                                     "useful_B", "space", "is_write")})
    assert list(np.argsort(sm_interleaved_warps(bare, sm_count=2))) == list(range(8))


def test_fault_order_decides_what_shares_a_batch(v100):
    # warps 0,1 (CTA 0, SM0) fault in block A, warps 2,3 (CTA 1, SM1) in block B, then C, D;
    # batches of two entries: warp order pairs A0 A1 (one block per batch), the SM-interleaved
    # order A0 B0 (two blocks per batch)
    sysc = system_with(v100, {"gpu.sm_count": 2, "uvm.fault_batch_size": 2})
    pages = [0, 1, 512, 513, 1024, 1025, 1536, 1537]
    s = grid_stream(pages, warps_per_cta=2)
    by_warp = simulate_uvm(s, sysc, fault_order="warp")
    by_sm = simulate_uvm(s, sysc)
    assert by_warp.batches == by_sm.batches == 4
    assert by_warp.block_services == 4
    assert by_sm.block_services == 8
    assert by_warp.h2d_B == by_sm.h2d_B == 8 * PAGE


def test_bad_options_are_one_clear_error(v100):
    with pytest.raises(ConfigError, match="move_run_us"):
        simulate_uvm(one_instruction([0]), v100, move_run_us=-1.0)
    with pytest.raises(ConfigError, match="fault_order"):
        simulate_uvm(one_instruction([0]), v100, fault_order="random")


# ------------------------------------------------------------ H200 first touch, held out

def _h200_cases():
    from hostlink.validation.twins import build_micro, load_run
    run = load_run(RUN_DIR)
    # the batch cost is fitted below, so the preset's published 50 us is set aside
    system = system_with(load_system("h200-pcie5-datasheet"), {"uvm.batch_base_us": 0.0})
    out = {}
    for case, p in run.cases.items():
        if p.get("benchmark") != "uvm_touch" or p.get("advice") not in ("none", "readmostly"):
            continue
        twin = build_micro(case, p, system, hints=lambda m, c=case: run.hint(c, m))
        r = simulate_uvm(twin.stream, system, read_mostly=p["advice"] == "readmostly")
        t0_ms = (r.time_s * 1e6 + system.launch_overhead_us) * 1e-3
        counts = np.array([r.batches, r.block_services, r.move_runs, r.h2d_B / PAGE
                           if p["advice"] == "none" else 0.0], dtype=float)
        out[(p["advice"], p["pattern"], int(p["size_B"]))] = (t0_ms, counts,
                                                             run.hint(case, "time_ms"))
    return out


@pytest.mark.slow
def test_h200_readmostly_follows_from_costs_fitted_without_advice():
    """Fit per-batch, per-block and per-moved-run costs on migrating first touch (advice
    none, sequential and random, 64 and 512 MiB) and predict ReadMostly, held out: the
    sequential front keeps its many batches' costs and the random touch loses its runs'
    unmapping, so both land within the UVM target (25%). Putting the move cost on pages
    instead fits none as well but misses ReadMostly's sequential front by a third."""
    cases = _h200_cases()
    assert len(cases) == 8
    none = [k for k in cases if k[0] == "none"]
    dup = [k for k in cases if k[0] == "readmostly"]

    def fit(cols):
        a = np.array([cases[k][1][cols] for k in none]) * 1e-3          # us -> ms
        t0 = np.array([cases[k][0] for k in none])
        m = np.array([cases[k][2] for k in none])
        x, _ = nnls(a / m[:, None], 1.0 - t0 / m)                       # relative errors
        err = (a @ x + t0) / m - 1.0
        return x, err

    def mape(cols, x, pattern):
        keys = [k for k in dup if k[1] == pattern]
        pred = np.array([cases[k][0] + cases[k][1][cols] @ x * 1e-3 for k in keys])
        meas = np.array([cases[k][2] for k in keys])
        return float(np.mean(np.abs(pred / meas - 1.0))) * 100

    runs = [0, 1, 2]                                   # batch, block, moved run
    x, err = fit(runs)
    assert np.max(np.abs(err)) < 0.05
    assert 5.0 < x[2] < 20.0                           # us per moved run
    assert mape(runs, x, "seq") <= 25.0
    assert mape(runs, x, "random") <= 25.0

    pages = [0, 1, 3]                                  # batch, block, moved page
    xp, errp = fit(pages)
    assert np.max(np.abs(errp)) < 0.12
    assert mape(pages, xp, "seq") > 25.0
