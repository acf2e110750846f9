"""The host's rate of serving bursts (``host.serve_GBps``) bounds reads that touch
more 64 B lines than they carry, in both timing models."""
from __future__ import annotations

import numpy as np
import pytest

from hostlink.model.config import load_system
from hostlink.model.predict import predict
from hostlink.model.workload import LaunchInfo, RequestStream

LINE_B = 128


def misaligned_stream(lines: int = 1 << 16) -> RequestStream:
    """One 96 B read 32 B into each of ``lines`` lines: two 64 B bursts per read."""
    addr = np.arange(lines, dtype=np.uint64) * np.uint64(LINE_B) + np.uint64(32)
    return RequestStream(launch=np.zeros(lines), warp=np.arange(lines), inst=np.zeros(lines),
                         addr=addr, size_B=np.full(lines, 96), useful_B=np.full(lines, 96),
                         space=np.zeros(lines), is_write=np.zeros(lines, bool),
                         launches=(LaunchInfo("toy", lines // 8, 8, 256),))


@pytest.mark.parametrize("fidelity", ["analytic", "des"])
def test_a_serve_rate_below_the_link_bounds_reads_by_their_bursts(fidelity):
    stream = misaligned_stream()
    free = predict(stream, "h200-pcie5-datasheet", fidelity=fidelity)
    capped = predict(stream, "h200-pcie5-datasheet", fidelity=fidelity,
                     overrides={"host.serve_GBps": 20.0})
    # 96 useful bytes per 128 B of bursts at 20 GB/s of bursts (less the launch's fixed time)
    assert capped.link_bw_GBps == pytest.approx(20.0 * 96 / 128, rel=0.02)
    assert capped.bound == "dram"
    assert free.link_bw_GBps > 1.5 * capped.link_bw_GBps


def test_a_serve_rate_above_the_dram_changes_nothing():
    stream = misaligned_stream(1 << 12)
    a = predict(stream, "h200-pcie5-datasheet", fidelity="des")
    b = predict(stream, "h200-pcie5-datasheet", fidelity="des", overrides={"host.serve_GBps": 1e4})
    assert b.time_s == a.time_s
    assert load_system("h200-pcie5-datasheet").host.serve_GBps is None
