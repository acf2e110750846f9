"""A traversal twin's memory modes share the engine's runs of their stream
(hostlink.model.stream_memo): pinned, registered and AccessedBy replay the same
loaded round-trip passes, so the second prediction replays none."""
from __future__ import annotations

import numpy as np

import hostlink.model.predict as predict_module
from hostlink.model import loaded_rtt
from hostlink.model.config import load_system
from hostlink.model.predict import predict
from hostlink.model.workload import SPACE_HOST, RequestStream


def _stream(n_warps=2000, per_warp=24, seed=3):
    rng = np.random.default_rng(seed)
    n = n_warps * per_warp
    warp = np.repeat(np.arange(n_warps), per_warp)
    inst = np.tile(np.arange(per_warp), n_warps)
    addr = (rng.integers(0, 1 << 24, n) * 128).astype(np.uint64)
    return RequestStream(launch=np.zeros(n, np.int64), warp=warp, inst=inst, addr=addr,
                         size_B=np.full(n, 128), useful_B=np.full(n, 128),
                         space=np.full(n, SPACE_HOST, np.uint8), is_write=np.zeros(n, bool))


def test_every_pass_of_a_loaded_round_trip_is_kept(monkeypatch):
    assert predict_module.DES_RUNS_KEPT >= loaded_rtt.PASSES + 2   # the passes and a device run
    calls = []
    real = predict_module._run_des
    monkeypatch.setattr(predict_module, "_run_des", lambda *a: calls.append(1) or real(*a))
    system = load_system("h100-pcie5", {"translation.enabled": False,
                                        "link.rtt_at_full_link_ns": 800.0})
    s = _stream()
    first = predict(s, system, fidelity="des")
    runs = len(calls)
    assert runs >= 2                       # the link is loaded: the round trip moved
    assert first.extra["loaded_rtt_ns"]["loaded"] > first.extra["loaded_rtt_ns"]["unloaded"]
    again = predict(s, system, fidelity="des")
    assert len(calls) == runs
    assert again.time_s == first.time_s
    assert np.array_equal(again.per_launch_kernel_s, first.per_launch_kernel_s)


def test_the_analytic_passes_are_kept_too(monkeypatch):
    """The analytic fidelity keeps its runs as the engine does: the prediction after
    the passes, and a second prediction, run nothing again; another round trip does."""
    calls = []
    real = predict_module._zerocopy_analytic
    monkeypatch.setattr(predict_module, "_zerocopy_analytic",
                        lambda *a: calls.append(1) or real(*a))
    system = load_system("h100-pcie5", {"translation.enabled": False,
                                        "link.rtt_at_full_link_ns": 800.0})
    s = _stream()
    first = predict(s, system, fidelity="analytic")
    passes = len(calls)
    assert passes >= 2 and first.extra["loaded_rtt_ns"]["loaded"] > system.link.rtt_ns
    again = predict(s, system, fidelity="analytic")
    assert len(calls) == passes and again.time_s == first.time_s
    slower = predict(s, load_system("h100-pcie5", {"translation.enabled": False,
                                                   "link.rtt_at_full_link_ns": 1600.0}),
                     fidelity="analytic")
    assert len(calls) > passes and slower.time_s > first.time_s
