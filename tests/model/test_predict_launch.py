"""The launch itself in every mode's kernel time: a fixed time per launch and one
dispatch interval per CTA (``gpu.launch_ns``, ``gpu.cta_dispatch_ns``), and the UVM
mode's kernel run added to its fault service."""
from __future__ import annotations

import numpy as np
import pytest

from hostlink.model.config import system_with
from hostlink.model.predict import (MODES, launch_ctas, launch_floor, launch_shared_writes_ns,
                                    predict, shared_writes_added_ns)
from hostlink.model.workload import LaunchInfo, RequestStream

from test_predict import quiet, s  # noqa: F401  (s: the shared stream fixture)

# the H200's fit in validation/experiments/launch_latency/runs/h200 (micro/launch/empty)
LAUNCH_NS = 6392.0
DISPATCH_NS = 0.615


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("fidelity", ["analytic", "des"])
def test_a_launch_costs_at_least_its_fixed_time_and_its_dispatch(s, mode, fidelity):
    base = quiet()
    plain = predict(s, base, mode=mode, fidelity=fidelity)
    # dispatch far slower than the work: every launch takes ctas x dispatch + launch_ns
    slow = system_with(base, {"gpu.launch_ns": LAUNCH_NS, "gpu.cta_dispatch_ns": 1e5})
    p = predict(s, slow, mode=mode, fidelity=fidelity)
    ctas = np.array([i.ctas for i in s.launches], dtype=float)
    got = np.array(p.per_launch_kernel_s) * 1e9
    if fidelity == "analytic" or not mode.startswith("uvm") or mode == "uvm_accessedby":
        assert np.allclose(got, ctas * 1e5 + LAUNCH_NS)
    else:   # the engine's paced run follows the fault service, which the dispatch hid
        assert np.all(got >= ctas * 1e5 + LAUNCH_NS)
    assert p.bound == "cta_dispatch"
    # the measured H200 costs: the fixed time is added, the dispatch hides under the work
    # (the analytic model's maximum; the engines' paced CTAs end at most one dispatch of
    # the grid later)
    h200 = system_with(base, {"gpu.launch_ns": LAUNCH_NS, "gpu.cta_dispatch_ns": DISPATCH_NS})
    q = predict(s, h200, mode=mode, fidelity=fidelity)
    work = np.array(plain.per_launch_kernel_s) * 1e9
    expect = np.maximum(work, ctas * DISPATCH_NS) + LAUNCH_NS
    got = np.array(q.per_launch_kernel_s) * 1e9
    if fidelity == "analytic":
        assert np.allclose(got, expect, rtol=1e-9)
    else:
        assert np.all(got >= expect * (1 - 1e-9))
        assert np.all(got <= work + ctas * DISPATCH_NS + LAUNCH_NS + 1e-6)


def _with_shared_writes(stream, per_launch):
    from dataclasses import replace
    return replace(stream, launches=tuple(replace(info, shared_writes=int(n))
                                          for info, n in zip(stream.launches, per_launch)))


def test_shared_writes_add_to_the_work_and_hide_in_the_dispatch():
    """The L2 serves writes to a shared word one after another: they add to a launch's
    work, and only its wait on the dispatcher hides them (validation/experiments/
    flag_writes: writes alone take the longer of the two)."""
    s = _with_shared_writes(RequestStream(launch=np.zeros(1, int), warp=np.zeros(1, int),
                                          inst=np.zeros(1, int), addr=np.zeros(1, np.uint64),
                                          size_B=np.full(1, 32), useful_B=np.full(1, 32),
                                          space=np.ones(1, np.uint8),
                                          is_write=np.zeros(1, bool),
                                          launches=(LaunchInfo("k", 1000, 8, 256),) * 3),
                            [0, 3000, 6000])
    sysc = system_with(quiet(), {"gpu.shared_write_ns": 1.0, "gpu.cta_dispatch_ns": 5.0})
    work = np.full(3, 1000.0)
    shared = launch_shared_writes_ns(s, 3, sysc)
    assert shared.tolist() == [0.0, 3000.0, 6000.0]
    # the analytic model: its work plus the writes, the dispatch a floor
    assert shared_writes_added_ns(shared).tolist() == [0.0, 3000.0, 6000.0]
    out, _ = launch_floor(work, s, sysc)
    assert out.tolist() == [5000.0, 5000.0, 7000.0]
    # the engines serve them in the run itself (tests/model/test_des.py)
    assert not shared_writes_added_ns(shared, paced=True).any()
    assert np.array_equal(launch_floor(work, s, sysc, paced=True)[0], np.full(3, 5000.0))
    # a system that does not model them adds nothing
    assert not launch_shared_writes_ns(s, 3, quiet()).any()


@pytest.mark.parametrize("fidelity", ["analytic", "des"])
def test_a_traversal_launchs_shared_writes_lengthen_its_kernel_time(s, fidelity):
    base = system_with(quiet(), {"gpu.launch_ns": LAUNCH_NS, "gpu.cta_dispatch_ns": DISPATCH_NS})
    plain = np.array(predict(s, base, mode="device", fidelity=fidelity).per_launch_kernel_s)
    writes = _with_shared_writes(s, [10000] * len(s.launches))
    more = np.array(predict(writes, system_with(base, {"gpu.shared_write_ns": 0.8}),
                            mode="device", fidelity=fidelity).per_launch_kernel_s)
    added = (more - plain) * 1e9
    if fidelity == "analytic":      # added to the work
        np.testing.assert_allclose(added, 8000.0, rtol=1e-6)
    else:                           # served as the warps end: a quiet tail hides some
        assert np.all((added > 0.0) & (added <= 8000.0 + 1e-6))


def test_without_launch_costs_nothing_changes(s):
    k = np.array([1.0, 2.0, 3.0])
    out, bound = launch_floor(k, s, quiet())
    assert out is k and not bound


def test_ctas_come_from_the_launch_records_else_the_requests():
    n = 64
    warp = np.arange(n)
    stream = RequestStream(launch=np.zeros(n, int), warp=warp, inst=np.zeros(n, int),
                           addr=(warp * 128).astype(np.uint64), size_B=np.full(n, 128),
                           useful_B=np.full(n, 128), space=np.zeros(n, np.uint8),
                           is_write=np.zeros(n, bool), launches=())
    assert launch_ctas(stream, 1).tolist() == [64.0]       # one warp per CTA without records
    with_info = RequestStream(**{k: getattr(stream, k) for k in
                                 ("launch", "warp", "inst", "addr", "size_B", "useful_B",
                                  "space", "is_write")},
                              launches=(LaunchInfo("k", 1000, 8, 256),))
    assert launch_ctas(with_info, 1).tolist() == [1000.0]  # idle CTAs count too


@pytest.mark.parametrize("fidelity", ["analytic", "des"])
def test_uvm_adds_the_kernels_own_run_to_the_fault_service(s, fidelity):
    sysc = quiet()
    uvm = predict(s, sysc, mode="uvm", fidelity=fidelity)
    dev = predict(s, sysc, mode="device", fidelity=fidelity)
    service = np.zeros(len(s.launches))
    for row in uvm.extra["uvm"]["per_launch"]:
        service[row["launch"]] += row["service_time_s"]
    assert service.sum() > 0
    assert np.allclose(uvm.per_launch_kernel_s, service + np.array(dev.per_launch_kernel_s))
    # a slower device memory slows the UVM run by as much as the device run
    slow = system_with(sysc, {"gpu.device_lat_ns": 4 * sysc.gpu.device_lat_ns})
    du = predict(s, slow, mode="uvm", fidelity=fidelity).time_s - uvm.time_s
    dd = predict(s, slow, mode="device", fidelity=fidelity).time_s - dev.time_s
    assert du == pytest.approx(dd, rel=1e-6) and dd > 0
