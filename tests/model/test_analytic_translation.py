"""The analytic model's translation bound, and predict() feeding it a stream's TLB miss rate."""
from __future__ import annotations

import numpy as np
import pytest

from hostlink.model.analytic import SizeHistogram, evaluate, predict_system, translation_params
from hostlink.model.config import load_system
from hostlink.model.predict import predict
from hostlink.model.workload import LaunchInfo, RequestStream

GEN5 = dict(gen=5, lanes=16, tags=768, rtt_ns=1000.0)


def test_bound_is_walkers_over_walk_time_per_missing_read():
    hist = SizeHistogram.of(128)
    r = evaluate(hist, **GEN5, tlb_miss_rate=0.5, walkers=8, walk_lat_ns=200.0).item()
    # 8 walks per 200 ns, one per two reads: 0.08 reads/ns x 128 B = 10.24 GB/s
    assert r["bw_translation_GBps"] == pytest.approx(8 * 128 / (0.5 * 200.0))
    assert r["bound"] == "translation" and r["bw_GBps"] == pytest.approx(10.24)


def test_no_misses_no_bound_and_monotone_in_miss_rate():
    hist = SizeHistogram.of(128)
    assert np.isinf(evaluate(hist, **GEN5).item()["bw_translation_GBps"])
    rates = np.array([0.0, 0.01, 0.1, 0.5, 1.0])
    bw = evaluate(hist, **GEN5, tlb_miss_rate=rates, walkers=8, walk_lat_ns=600.0).bw_GBps
    assert np.all(np.diff(bw) <= 0)


def test_translation_disabled_means_no_misses():
    system = load_system("h200-pcie5", {"translation.enabled": False})
    assert translation_params(system, 0.9)["tlb_miss_rate"] == 0.0


def _lines(addr: np.ndarray) -> RequestStream:
    n = len(addr)
    return RequestStream(launch=np.zeros(n), warp=np.arange(n) % 4096, inst=np.arange(n) // 4096,
                         addr=addr.astype(np.uint64), size_B=np.full(n, 128),
                         useful_B=np.full(n, 128), space=np.zeros(n), is_write=np.zeros(n, bool),
                         launches=(LaunchInfo("lines", 512, 8, 256),))


def test_scattered_lines_are_bound_by_translation_streaming_ones_are_not():
    """Random 128 B lines over 64 GiB miss a TLB reach of 2048 x 2 MiB = 4 GiB
    nearly always; the same number of lines read in order stay in few pages."""
    system = load_system("h200-pcie5")
    rng = np.random.default_rng(7)
    n = 1 << 16
    scattered = predict(_lines(rng.integers(0, (64 << 30) // 128, n) * 128), system)
    streaming = predict(_lines(np.arange(n) * 128), system)
    assert scattered.extra["analytic"]["bound"] == "translation"
    assert streaming.extra["analytic"]["bound"] != "translation"
    assert scattered.time_s > streaming.time_s
