"""Host DRAM: peak, burst cost, efficiency, and bad input."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from hostlink.model import dram
from hostlink.model.errors import ConfigError


def test_peak_is_channels_times_rate_times_width():
    assert dram.peak_GBps(1, 2400) == pytest.approx(19.2)          # DDR4-2400, one channel
    assert dram.peak_GBps(8, 4800) == pytest.approx(8 * 38.4)      # DDR5-4800, 8 channels
    np.testing.assert_allclose(dram.peak_GBps([1, 2], 3200, 64), [25.6, 51.2])


def test_burst_sizes_of_the_standards():
    assert dram.DRAM_TYPES["DDR4"].burst_B == 64    # BL8 x 64 bit
    assert dram.DRAM_TYPES["DDR5"].burst_B == 64    # BL16 x 32-bit subchannel


def test_bursts_touched_and_read_efficiency():
    np.testing.assert_array_equal(dram.bursts_touched([0, 32, 60, 0], [32, 32, 8, 128], 64),
                                  [1, 1, 2, 2])
    np.testing.assert_allclose(dram.read_efficiency([0, 0, 0], [32, 64, 128], 64), [0.5, 1, 1])


def test_efficiency_factor_scales():
    got = dram.effective_read_GBps(64, channels=4, transfer_rate_MTps=2933, efficiency=0.8)
    assert got == pytest.approx(4 * 2933e6 * 8 / 1e9 * 0.8)


def test_host_memory_params_from_config():
    from hostlink.model.config import HostMemoryConfig
    host = HostMemoryConfig(channels=2, transfer_rate_MTps=3200.0, burst_B=64, efficiency=0.9)
    kw = dram.host_memory_params(host)
    assert dram.effective_read_GBps(32, **kw) == pytest.approx(2 * 25.6 * 0.9 / 2)


def test_the_host_serves_bursts_at_the_lower_of_its_dram_and_its_serve_rate():
    from hostlink.model.config import HostMemoryConfig
    host = HostMemoryConfig(channels=8, transfer_rate_MTps=4800.0, burst_B=64)
    assert dram.served_GBps(host) == pytest.approx(8 * 38.4)          # unset: the DRAM's
    capped = HostMemoryConfig(channels=8, transfer_rate_MTps=4800.0, burst_B=64, serve_GBps=54.0)
    assert dram.served_GBps(capped) == pytest.approx(54.0)
    loose = HostMemoryConfig(channels=1, transfer_rate_MTps=2400.0, burst_B=64, serve_GBps=54.0)
    assert dram.served_GBps(loose) == pytest.approx(19.2)             # the DRAM binds first
    # a 96 B read 32 B off a line touches two 64 B bursts: 96 of 128 bytes are useful
    kw = dram.host_memory_params(capped)
    assert dram.effective_read_GBps(96, 32, **kw) == pytest.approx(54.0 * 96 / 128)


@pytest.mark.parametrize("call, message", [
    (lambda: dram.peak_GBps(0, 2400), "host.channels"),
    (lambda: dram.peak_GBps(1, -1), "host.transfer_rate_MTps"),
    (lambda: dram.bursts_touched(0, 32, 48), "host.burst_B"),
    (lambda: dram.bursts_touched(0, 0, 64), "size_B"),
    (lambda: dram.sustained_GBps(1, 2400, efficiency=1.5), "host.efficiency"),
    (lambda: dram.effective_read_GBps(64, channels=1, transfer_rate_MTps=2400, serve_GBps=0),
     "host.serve_GBps"),
])
def test_bad_input(call, message):
    with pytest.raises(ConfigError, match=message):
        call()


@given(addr=st.integers(0, 1 << 40), size=st.integers(1, 4096),
       burst=st.sampled_from([32, 64, 128, 256]))
def test_efficiency_at_most_one_and_covers_the_request(addr, size, burst):
    n = dram.bursts_touched(addr, size, burst)
    assert n * burst >= size
    assert (n - 1) * burst < size + burst - 1
    assert 0 < dram.read_efficiency(addr, size, burst) <= 1
