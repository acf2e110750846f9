"""PCIe specification tables: rates, framing, DLLP cadence units, SKP, tags, checks."""
from __future__ import annotations

import numpy as np
import pytest

from hostlink.model.errors import ConfigError
from hostlink.model.pcie import spec


def test_raw_rates_follow_rate_times_encoding():
    # 2.5 GT/s x 8/10 / 8 bits = 0.25 GB/s per lane; 8 GT/s x 128/130 / 8 = 0.9846 GB/s.
    assert spec.raw_GBps_per_lane(1) == pytest.approx(0.25)
    assert spec.raw_GBps_per_lane(3) == pytest.approx(8 * 128 / 130 / 8)
    assert spec.raw_GBps_per_lane(6) == pytest.approx(8.0)   # 64 GT/s, 1b/1b
    lanes = np.array([1, 2, 4, 8, 16])
    np.testing.assert_allclose(spec.raw_GBps(4, lanes), lanes * 16 * 128 / 130 / 8)


def test_rates_double_per_generation():
    rates = spec.rate_GTps([1, 2, 3, 4, 5, 6])
    np.testing.assert_array_equal(rates, [2.5, 5, 8, 16, 32, 64])


def test_default_framing_and_flit_mode():
    np.testing.assert_array_equal(spec.default_framing_B([1, 2, 3, 4, 5, 6]),
                                  [8, 8, 8, 8, 8, 0])
    assert sum(spec.FRAMING_PARTS_B["gen1-2"].values()) == spec.DEFAULT_FRAMING_B[1]
    assert sum(spec.FRAMING_PARTS_B["gen3-5"].values()) == spec.DEFAULT_FRAMING_B[3]
    assert spec.FLIT_TLP_B + spec.FLIT_DLP_B + spec.FLIT_CRC_B + spec.FLIT_FEC_B == spec.FLIT_B
    np.testing.assert_array_equal(spec.resolve_flit_mode([3, 6]), [False, True])


def test_flit_mode_rules():
    with pytest.raises(ConfigError, match="flit mode needs PCIe 6"):
        spec.resolve_flit_mode(5, True)
    with pytest.raises(ConfigError, match="always runs in flit mode"):
        spec.resolve_flit_mode(6, False)


def test_dllp_cadence_is_in_symbol_times_per_lane():
    # Gen3 x16, MPS 256: interval 168 symbol times; two 8 B DLLPs per interval
    # over 16 lanes = 16 / (168 * 16) = 0.60%; with SKP (16 of every 6016
    # symbols) about 0.86%, the "about 0.9%" of the Base Spec rev. 5.0 tables
    # read in symbol times per lane.
    assert spec.dllp_interval_symbols(3, 16, 256) == 168
    assert spec.dllp_overhead(3, 16, 256) == pytest.approx(16 / (168 * 16))
    total = spec.dllp_overhead(3, 16, 256) + spec.skp_overhead(3)
    assert total == pytest.approx(0.0086, abs=0.0002)
    # Treating the same table as bytes (no lane factor), as
    # pcie-bench/pcie-model model/pcie.py does, gives about 9.8%.
    as_bytes = spec.DLLPS_PER_INTERVAL * spec.DLLP_B / 168 + 4 / 1538
    assert as_bytes == pytest.approx(0.098, abs=0.001)
    assert as_bytes / total > 10


def test_dllp_none_in_flit_mode_and_capacity():
    assert spec.dllp_overhead(6, 16, 256) == 0
    cap = spec.tlp_capacity_GBps(6, 16, 256)
    assert cap == pytest.approx(128 * (1 - spec.skp_overhead(6)))
    # An explicit DLLP share replaces the spec's; NaN entries keep it.
    got = spec.tlp_capacity_GBps(3, 16, 256, dllp_overhead_frac=np.array([0.05, np.nan]))
    raw = spec.raw_GBps(3, 16)
    np.testing.assert_allclose(got, [raw * (1 - 0.05 - spec.skp_overhead(3)),
                                     raw * (1 - spec.dllp_overhead(3, 16, 256)
                                            - spec.skp_overhead(3))])


def test_cadence_table_is_monotone_except_the_specs_x8_ack_factor_step():
    # Across lanes the per-link cadence (symbols x lanes) always grows; across
    # MPS it grows except at x8 from 256 B to 512 B, where the spec's Ack
    # factor falls from 2.5 to 1.0 (Base Spec Tables 3-7..3-9).
    table = spec._DLLP_INTERVAL_SYMBOLS
    lanes = np.array(spec.LANE_CHOICES)[None, :, None]
    per_link = table * lanes
    assert np.all(np.diff(per_link, axis=1) > 0)
    drops = np.argwhere(np.diff(table, axis=2) < 0)
    assert {(int(lane), int(mps)) for _, lane, mps in drops} == {(3, 1)}   # x8, 256 -> 512


def test_skp_fractions():
    assert spec.skp_overhead(2) == pytest.approx(4 / 1542)
    assert spec.skp_overhead(4) == pytest.approx(1 / 376)


def test_tags():
    assert spec.TAG_LIMITS == {5: 32, 8: 256, 10: 768, 14: 16384}
    np.testing.assert_array_equal(spec.max_tags([1, 3, 4, 5, 6]), [256, 256, 768, 768, 16384])
    assert spec.tag_limit(10) == 768
    with pytest.raises(ConfigError, match="tag bits"):
        spec.tag_limit(9)


def test_headers():
    assert spec.header_B("MRd", True) == 16
    assert spec.header_B("MWr", False) == 12
    assert spec.header_B("CplD") == 12
    with pytest.raises(ConfigError, match="TLP kind"):
        spec.header_B("Msg")


@pytest.mark.parametrize("call, message", [
    (lambda: spec.raw_GBps(7, 16), "link.gen: 7 is not one of"),
    (lambda: spec.raw_GBps(3, 3), "link.lanes: 3 is not one of"),
    (lambda: spec.dllp_overhead(3, 16, 100), "link.mps_B: 100 is not one of"),
    (lambda: spec.tlp_capacity_GBps(3, 16, 256, dllp_overhead_frac=1.5), "link.dllp_overhead"),
])
def test_bad_parameters_name_the_key(call, message):
    with pytest.raises(ConfigError, match=message):
        call()
