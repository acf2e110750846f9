"""Bands from the committed repeat runs: pooled per memory mode, as wide as nine in
ten cases moved from one lease to the other."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hostlink.model.bands import add_bands, repeat_cases, spread_pct, with_bands


def _fake(tmp_path, rows):
    d = tmp_path / "x" / "runs" / "h0-repeat"
    d.mkdir(parents=True)
    pd.DataFrame(rows, columns=["case", "group", "diff_pct"]).to_csv(d / "repeat_cases.csv")
    return tmp_path


def test_half_width_is_the_90th_percentile_of_the_absolute_differences(tmp_path):
    rows = [(f"c{i}", "micro/zc_read/x", d) for i, d in enumerate(range(-10, 11))]
    rows += [(f"u{i}", "traversal/uvm", 3.0 * d) for i, d in enumerate(range(1, 11))]
    rows += [("m", "micro/memcpy/h2d", 99.0)]        # neither mode's group
    s = spread_pct(_fake(tmp_path, rows))
    assert s["zerocopy"]["half_width_pct"] == pytest.approx(np.quantile(
        np.abs(np.arange(-10, 11)), 0.9))
    assert s["uvm"]["half_width_pct"] == pytest.approx(np.quantile(3.0 * np.arange(1, 11), 0.9))
    assert s["zerocopy"]["cases"] == 21 and s["uvm"]["runs"] == ["x/h0-repeat"]


RESULTS = Path(__file__).resolve().parents[2] / "validation" / "experiments"


def test_committed_repeats_give_uvm_a_wider_band_than_zero_copy():
    cases = repeat_cases(RESULTS)
    assert len(cases) > 100
    s = spread_pct()
    assert 0 < s["zerocopy"]["half_width_pct"] < s["uvm"]["half_width_pct"]


def test_the_packaged_band_is_the_committed_repeats_spread():
    # make presets writes it; the model reads no results tree at run time
    assert spread_pct() == json.loads(json.dumps(spread_pct(RESULTS)))


def test_with_bands_and_the_figures():
    spread = {"zerocopy": {"half_width_pct": 10.0}, "uvm": {"half_width_pct": 30.0}}
    f = with_bands(pd.DataFrame({"mode": ["zerocopy", "uvm_readmostly"],
                                 "bw_GBps": [10.0, 5.0]}), spread=spread)
    assert list(f["bw_GBps_lo"]) == pytest.approx([9.0, 3.5])
    assert list(f["bw_GBps_hi"]) == pytest.approx([11.0, 6.5])
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots()
    ax.plot([3, 4], [1.0, 2.0], label="merged, uvm")
    ax.bar([0], [4.0], label="zerocopy")
    add_bands(fig, spread)
    band = ax.collections[0].get_paths()[0].vertices[:, 1]
    assert band.min() == pytest.approx(0.7) and band.max() == pytest.approx(2.6)
    plt.close(fig)


def test_no_repeats_is_one_clear_error(tmp_path):
    from hostlink.model.errors import HostlinkError
    with pytest.raises(HostlinkError, match="no committed repeat runs"):
        spread_pct(tmp_path)


def test_zero_copy_traversals_join_the_zero_copy_band_and_device_ones_do_not(tmp_path):
    rows = [(f"c{i}", "micro/zc_warps/x", 1.0) for i in range(9)]
    rows += [("t", "traversal/zerocopy", 40.0), ("d", "traversal/device", 80.0),
             ("u", "traversal/uvm", 5.0)]
    s = spread_pct(_fake(tmp_path, rows))
    assert s["zerocopy"]["cases"] == 10
    assert s["zerocopy"]["half_width_pct"] == pytest.approx(np.quantile([1.0] * 9 + [40.0], 0.9))
