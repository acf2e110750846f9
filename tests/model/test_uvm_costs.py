"""UVM service costs per VA block, per copied and moved page, per fault and per run, and explicit prefetch.

Expected values are hand-worked from the rules hostlink.model.uvm.model
documents: a batch costs ``batch_base_us`` + ``block_us`` per VA block it
services + ``move_page_us`` per page it moves off the host (not for
read-duplicated pages) + its transfers; ``cudaMemPrefetchAsync`` moves whole
VA blocks at the transfer curve (UVMSmart's ``(2a/pi) atan(k s_KB)`` with a =
12 GB/s at PCIe 3.0 x16 and k = 0.07292, sim_configs/uvm/driver_default.toml,
scaled by the link's raw rate).
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from hostlink.model.config import load_system, system_with
from hostlink.model.errors import ConfigError
from hostlink.model.uvm import (curve_peak_GBps, prefetch_time_s, simulate_uvm,
                                transfer_bw_GBps)
from hostlink.model.workload import SPACE_HOST, RequestStream

PAGE = 4096
BLOCK = 2 * 1024 * 1024
BASE = 0x7F0000000000


@pytest.fixture(scope="module")
def v100():
    # no prefetcher: every fault moves exactly its own page
    return system_with(load_system("v100-pcie3"), {"uvm.prefetch": False})


def pages_stream(pages, *, warp_per_page: bool = False) -> RequestStream:
    """128 B of each page, in one launch: one warp reading them in turn (one
    instruction per page), or with ``warp_per_page`` one warp per page, all at once."""
    pages = np.asarray(pages, dtype=np.int64)
    n = pages.shape[0]
    size = np.full(n, 128)
    warp, inst = (np.arange(n), np.zeros(n)) if warp_per_page else (np.zeros(n), np.arange(n))
    return RequestStream(launch=np.zeros(n), warp=warp, inst=inst,
                         addr=(BASE + pages * PAGE).astype(np.uint64), size_B=size, useful_B=size,
                         space=np.full(n, SPACE_HOST), is_write=np.zeros(n, bool))


def test_costs_add_per_block_and_per_moved_page(v100):
    # one warp, one page per instruction: one batch per page, each serving one VA block;
    # pages in three blocks (two in the first) -> 4 batches, 4 block services, 4 pages moved
    s = pages_stream([0, 1, 512, 1024])
    base = simulate_uvm(s, v100)
    costly = simulate_uvm(s, v100, block_us=10.0, move_page_us=0.5)
    assert base.batches == costly.batches == 4
    assert costly.block_services == 4 and costly.migration_runs == 4
    assert costly.service_time_s - base.service_time_s == pytest.approx(4 * (10.0 + 0.5) * 1e-6)
    assert costly.driver_time_s == pytest.approx(4 * 10.5e-6)


def test_read_duplication_pays_no_move_cost(v100):
    s = pages_stream([0, 1, 512, 1024])
    moved = simulate_uvm(s, v100, block_us=10.0, move_page_us=0.5)
    dup = simulate_uvm(s, v100, read_mostly=True, block_us=10.0, move_page_us=0.5)
    assert moved.h2d_B == dup.h2d_B == 4 * PAGE
    assert moved.service_time_s - dup.service_time_s == pytest.approx(4 * 0.5e-6)


def test_a_batch_over_many_blocks_pays_each_block(v100):
    # 64 warps fault at once on pages of 64 different blocks: one batch, 64 block services
    n = 64
    s = pages_stream(np.arange(n) * 512, warp_per_page=True)
    r0 = simulate_uvm(s, v100)
    r = simulate_uvm(s, v100, block_us=7.0)
    assert r.batches == 1 and r.block_services == n
    assert r.service_time_s - r0.service_time_s == pytest.approx(n * 7e-6)


@pytest.mark.parametrize("bad", [-1.0, float("nan"), "x"])
def test_bad_costs_are_one_clear_error(v100, bad):
    with pytest.raises(ConfigError, match="block_us"):
        simulate_uvm(pages_stream([0]), v100, block_us=bad)


def test_prefetch_moves_whole_blocks_at_the_curve():
    h200 = load_system("h200-pcie5")
    a = curve_peak_GBps(h200)
    # a = 12 GB/s x 63.02 / 15.75 (Gen5 x16 over Gen3 x16 raw) = 48.0 GB/s
    assert a == pytest.approx(12.0 * 4.0, rel=1e-3)
    bw = (2 * a / math.pi) * math.atan(0.07292 * BLOCK / 1024)
    assert float(transfer_bw_GBps(BLOCK, a, 0.07292)) == pytest.approx(bw)
    # 512 MiB = 256 blocks of 2 MiB, each one transfer
    assert prefetch_time_s(512 << 20, h200) == pytest.approx(256 * BLOCK / bw * 1e-9, rel=1e-9)
    # a partial last block moves as one smaller transfer
    part = prefetch_time_s(BLOCK + 65536, h200)
    bw64 = (2 * a / math.pi) * math.atan(0.07292 * 64)
    assert part == pytest.approx((BLOCK / bw + 65536 / bw64) * 1e-9, rel=1e-9)
    assert prefetch_time_s(0, h200) == 0.0
    with pytest.raises(ConfigError):
        prefetch_time_s(-1, h200)


def test_copied_pages_pay_in_both_modes_and_the_first_fault_once(v100):
    # 4 batches of one page each (as above): a copy cost per page whether the page
    # migrates or is read-duplicated, a fault cost per distinct page a batch fetches,
    # and the first-fault cost once, with the first batch
    s = pages_stream([0, 1, 512, 1024])
    for read_mostly in (False, True):
        base = simulate_uvm(s, v100, read_mostly=read_mostly)
        costly = simulate_uvm(s, v100, read_mostly=read_mostly, copy_page_us=0.25,
                              fault_us=2.0, first_fault_us=300.0)
        assert costly.batches == 4 and costly.faults_unique == 4
        assert costly.service_time_s - base.service_time_s == pytest.approx(
            (4 * 0.25 + 4 * 2.0 + 300.0) * 1e-6)
        assert costly.driver_time_s - base.driver_time_s == pytest.approx(
            (4 * 0.25 + 4 * 2.0 + 300.0) * 1e-6)
        assert costly.per_launch[0].service_time_s == pytest.approx(costly.service_time_s)


@pytest.mark.parametrize("key", ["copy_page_us", "fault_us", "first_fault_us", "raised_fault_us"])
def test_new_costs_must_be_non_negative(v100, key):
    with pytest.raises(ConfigError, match=key):
        simulate_uvm(pages_stream([0]), v100, **{key: -1.0})


def test_raised_faults_count_a_page_once_while_its_fault_is_pending(v100):
    # 32 warps miss on one page at once: one raised fault (the others wait on it), 32
    # entries fetched; 16 warps on 16 pages: 16 raised
    one = simulate_uvm(pages_stream(np.zeros(32, dtype=np.int64), warp_per_page=True), v100)
    assert one.faults_raised == 1 and one.faults == 32 and one.faults_unique == 1
    many = simulate_uvm(pages_stream(np.arange(16), warp_per_page=True), v100)
    assert many.faults_raised == 16 and many.faults_unique == 16
    assert many.per_launch[0].faults_raised == 16


def test_pages_the_prefetcher_brought_raise_no_fault():
    # one warp reads the 16 pages of one 64 KiB big page in turn: its first fault moves
    # the whole big page, so the other 15 reads hit (one raised fault, one batch); 16
    # warps reading them at once raise 16 faults before the batch that moves them
    h200 = load_system("h200-pcie5")
    seq = simulate_uvm(pages_stream(np.arange(16)), h200)
    assert seq.batches == 1 and seq.faults_raised == 1 and seq.h2d_B == 16 * PAGE
    wide = simulate_uvm(pages_stream(np.arange(16), warp_per_page=True), h200)
    assert wide.batches == 1 and wide.faults_raised == 16 and wide.h2d_B == 16 * PAGE


def test_raised_fault_cost_adds_per_raised_fault(v100):
    s = pages_stream(np.r_[np.zeros(8, dtype=np.int64), np.arange(1, 9)], warp_per_page=True)
    base = simulate_uvm(s, v100)
    costly = simulate_uvm(s, v100, raised_fault_us=0.5)
    assert costly.faults_raised == 9
    assert costly.service_time_s - base.service_time_s == pytest.approx(9 * 0.5e-6)
    assert costly.driver_time_s - base.driver_time_s == pytest.approx(9 * 0.5e-6)
