"""Results kept with a request stream (hostlink.model.stream_memo): predicting a
stream again gives exactly what a fresh copy of it gives, whatever changed in
between, and a memo goes with its stream."""
from __future__ import annotations

import dataclasses
import gc

import numpy as np
import pytest

from hostlink.model import stream_memo
from hostlink.model.config import system_with
from hostlink.model.predict import predict
from hostlink.model.stream_memo import memo_size, memoized
from hostlink.model.uvm import model as uvm_model
from hostlink.model.uvm import simulate_uvm

from test_predict import lists_stream, quiet


def fresh(stream):
    """The same requests in a new stream object (no memo)."""
    return dataclasses.replace(stream, addr=stream.addr.copy())


@pytest.fixture()
def s():
    return lists_stream(n_lists=1200, device_every=1)


def same(a, b):
    assert a.time_s == b.time_s
    assert np.array_equal(a.per_launch_kernel_s, b.per_launch_kernel_s)
    assert a.extra.keys() == b.extra.keys()


def test_memoized_computes_once_per_key_and_keeps_the_latest_few():
    class Thing:
        pass

    t = Thing()
    calls = []

    def value(k):
        return lambda: calls.append(k) or k * 10

    assert memoized(t, "kind", 1, value(1)) == 10
    assert memoized(t, "kind", 1, value(1)) == 10
    assert calls == [1]
    for k in range(2, 2 + stream_memo.KEEP_PER_KIND):
        memoized(t, "kind", k, value(k))
    assert memo_size(t) == stream_memo.KEEP_PER_KIND     # key 1 dropped, oldest first
    memoized(t, "kind", 1, value(1))
    assert calls.count(1) == 2
    memoized(t, "other", 1, value(1))                      # kinds are kept apart
    assert calls.count(1) == 3


def test_a_memo_goes_with_its_stream():
    s = lists_stream(n_lists=300)
    predict(s, quiet(), mode="uvm", fidelity="des")
    sid = id(s)
    assert memo_size(s) > 0
    del s
    gc.collect()
    assert sid not in stream_memo._MEMOS


@pytest.mark.parametrize("mode", ["zerocopy", "uvm_accessedby", "device", "uvm", "uvm_readmostly"])
def test_a_second_prediction_equals_a_fresh_streams(s, mode):
    system = quiet()
    first = predict(s, system, mode=mode, fidelity="des")
    again = predict(s, system, mode=mode, fidelity="des")
    same(first, again)
    same(again, predict(fresh(s), system, mode=mode, fidelity="des"))


def test_uvm_costs_change_the_uvm_part_only(s):
    base = quiet()
    costly = system_with(base, {"uvm.batch_base_us": base.uvm.batch_base_us * 3})
    a = predict(s, base, mode="uvm", fidelity="des")
    b = predict(s, costly, mode="uvm", fidelity="des")       # reuses a's kernel run
    assert b.time_s > a.time_s
    same(b, predict(fresh(s), costly, mode="uvm", fidelity="des"))
    opts = {"block_us": 20.0, "first_fault_us": 100.0}
    c = predict(s, base, mode="uvm", fidelity="des", uvm_options=opts)
    assert c.time_s > a.time_s
    same(c, predict(fresh(s), base, mode="uvm", fidelity="des", uvm_options=opts))


def test_any_other_key_runs_the_engine_again(s):
    base = quiet()
    slow = system_with(base, {"gpu.device_lat_ns": base.gpu.device_lat_ns * 4})
    a = predict(s, base, mode="device", fidelity="des")
    b = predict(s, slow, mode="device", fidelity="des")
    assert b.time_s > a.time_s
    same(b, predict(fresh(s), slow, mode="device", fidelity="des"))
    narrow = system_with(base, {"link.lanes": 4})
    z = predict(s, base, mode="zerocopy", fidelity="des")
    assert predict(s, narrow, mode="zerocopy", fidelity="des").time_s > z.time_s


@pytest.mark.parametrize("mode", ["device", "uvm"])
def test_systems_differing_in_link_or_host_memory_share_the_device_memory_run(s, mode,
                                                                              monkeypatch):
    # no request of a run in device memory crosses the link or reaches host memory, so a
    # sweep over links runs the engine once for device memory and for UVM's kernel
    import hostlink.model.predict as predict_module
    runs = []
    real = predict_module._run_des
    monkeypatch.setattr(predict_module, "_run_des",
                        lambda *a, **k: runs.append(1) or real(*a, **k))
    base = quiet()
    other = system_with(base, {"link.gen": 3, "link.tags": 64, "link.rtt_ns": 2000.0,
                               "host.burst_B": 128})
    a = predict(s, base, mode=mode, fidelity="des")
    b = predict(s, other, mode=mode, fidelity="des")
    assert len(runs) == 1
    same(b, predict(fresh(s), other, mode=mode, fidelity="des"))
    assert len(runs) == 2
    if mode == "device":
        assert np.array_equal(a.per_launch_kernel_s, b.per_launch_kernel_s)
        assert not {"tags", "requester", "cpl_credits"} & a.extra["des"]["utilisation"].keys()


def test_changing_a_prediction_changes_no_later_one(s):
    system = quiet()
    a = predict(s, system, mode="device", fidelity="des")
    a.extra["des"]["stats"]["host_reads"] = -1.0
    a.requests_by_size_B.clear()
    b = predict(s, system, mode="device", fidelity="des")
    assert b.extra["des"]["stats"]["host_reads"] != -1.0
    assert b.requests_by_size_B


def test_uvm_accesses_are_kept_for_small_streams_only(s, monkeypatch):
    system = quiet()
    simulate_uvm(s, system)
    kept = memo_size(s)
    assert kept == 1
    big = fresh(s)
    monkeypatch.setattr(uvm_model, "PREPARED_MEMO_MAX_REQUESTS", 10)
    r_big = simulate_uvm(big, system)
    assert memo_size(big) == 0
    r = simulate_uvm(s, system)                      # from the memo
    assert r.service_time_s == r_big.service_time_s
    assert r.faults == r_big.faults and r.h2d_B == r_big.h2d_B


def test_whether_pages_fit_is_counted_once_per_stream_and_translation_section(s, monkeypatch):
    from hostlink.model.des import inputs as des_inputs

    counted = []
    count = des_inputs._pages_fit
    monkeypatch.setattr(des_inputs, "_pages_fit",
                        lambda stream, cfg: counted.append(cfg.tlb_entries) or count(stream, cfg))
    small = system_with(quiet(), {"translation.enabled": True, "translation.tlb_entries": 1,
                                  "translation.page_B": 4096})
    large = system_with(small, {"translation.tlb_entries": 1 << 20})
    rtt = system_with(small, {"link.rtt_ns": 2000.0})        # a later pass of the round trip
    assert not des_inputs.pages_fit(s, small)
    assert not des_inputs.pages_fit(s, rtt)
    assert counted == [1]
    assert des_inputs.pages_fit(s, large)
    assert counted == [1, 1 << 20]
    assert des_inputs.pages_fit(fresh(s), small) is False and counted == [1, 1 << 20, 1]


def _pages_touched(pages: int, n_warps: int = 512, per_warp: int = 8):
    """Warps reading 128 B lines, warp w on 2 MiB page w mod ``pages``: each page's
    first touch walks, all at the start."""
    from hostlink.model.workload import SPACE_HOST, RequestStream
    warp = np.repeat(np.arange(n_warps), per_warp)
    inst = np.tile(np.arange(per_warp), n_warps)
    addr = ((warp % pages) * (2 << 20) + (warp // pages) * 4096 + inst * 128).astype(np.uint64)
    n = len(addr)
    return RequestStream(launch=np.zeros(n, np.int64), warp=warp, inst=inst, addr=addr,
                         size_B=np.full(n, 128), useful_B=np.full(n, 128),
                         space=np.full(n, SPACE_HOST, np.uint8), is_write=np.zeros(n, bool))


@pytest.mark.parametrize("pages, waits", [(4, False), (64, True)])
def test_managed_memory_on_the_host_takes_pinned_memorys_runs_where_no_walk_waited(
        pages, waits, monkeypatch):
    """Managed memory left on the host (uvm_accessedby) differs from pinned memory in
    its page walkers alone (translation.managed_walkers): where no walk waited for one
    of pinned memory's walkers, more change no event, and its prediction takes the
    pinned runs with the walkers' busy share alone rescaled; where walks waited, it
    runs the engine. Either way it is what a fresh stream gives."""
    import hostlink.model.predict as predict_module
    from hostlink.model.config import load_system
    runs = []
    real = predict_module._run_des
    monkeypatch.setattr(predict_module, "_run_des",
                        lambda *a, **k: runs.append(1) or real(*a, **k))
    system = load_system("h200-pcie5")
    s = _pages_touched(pages)
    pinned = predict(s, system, mode="zerocopy", fidelity="des")
    assert (pinned.extra["des"]["stats"]["sum_walk_wait_ns"] > 0) == waits
    assert pinned.extra["des"]["stats"]["walks"] == pages
    before = len(runs)
    managed = predict(s, system, mode="uvm_accessedby", fidelity="des")
    assert (len(runs) > before) == waits
    again = predict(fresh(s), system, mode="uvm_accessedby", fidelity="des")
    same(managed, again)
    assert managed.bound == again.bound
    assert managed.extra["des"] == again.extra["des"]
    if not waits:
        stats = managed.extra["des"]["stats"]
        assert stats["walk_busy_ns"] == pytest.approx(
            pinned.extra["des"]["stats"]["walk_busy_ns"] * 8 / 70, rel=1e-12)
