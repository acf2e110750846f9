"""Bands from the committed repeat runs: pooled per memory mode and per class of launch
length, as wide as nine in ten cases moved from one lease to the other."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hostlink.model.bands import add_bands, half_width_pct, repeat_cases, spread_pct, with_bands


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


def test_zero_copy_traversals_join_the_zero_copy_band_and_device_ones_their_own(tmp_path):
    rows = [(f"c{i}", "micro/zc_warps/x", 1.0) for i in range(9)]
    rows += [("t", "traversal/zerocopy", 40.0), ("d", "traversal/device", 80.0),
             ("u", "traversal/uvm", 5.0)]
    s = spread_pct(_fake(tmp_path, rows))
    assert s["zerocopy"]["cases"] == 10
    assert s["zerocopy"]["half_width_pct"] == pytest.approx(np.quantile([1.0] * 9 + [40.0], 0.9))
    # device traversals form device memory's own band; a mode with no repeat has none
    assert s["device"]["cases"] == 1 and s["device"]["half_width_pct"] == pytest.approx(80.0)
    assert half_width_pct(s, "device") == pytest.approx(80.0)
    assert half_width_pct(s, "uvm_prefetch") == pytest.approx(5.0)
    assert "device" not in spread_pct(_fake(tmp_path / "b", rows[:-2]))
    assert np.isnan(half_width_pct(spread_pct(_fake(tmp_path / "c", rows[:-2])), "device"))


def _fake_with_launches(tmp_path, rows, iterations):
    """A repeat run whose cases' primary metric is a time in ms, with the launches each
    recorded (results.parquet's ``iterations``)."""
    d = tmp_path / "x" / "runs" / "h0-repeat"
    d.mkdir(parents=True)
    pd.DataFrame(rows, columns=["case", "group", "unit", "first", "diff_pct"]).to_csv(
        d / "repeat_cases.csv")
    pd.DataFrame({"case": list(iterations), "metric": "iterations",
                  "value": [float(v) for v in iterations.values()]}).to_parquet(
        d / "results.parquet")
    return tmp_path


def test_short_launches_take_their_own_band(tmp_path):
    # ten cases of 10 us launches moving 20-29%, ten of 100 us launches moving 1-1.9%,
    # and a microbenchmark (no launch count) moving 3%: the last class's
    rows = [(f"s{i}", "traversal/zerocopy", "ms", 0.1, 20.0 + i) for i in range(10)]
    rows += [(f"l{i}", "traversal/zerocopy", "ms", 1.0, -(1.0 + i / 10)) for i in range(10)]
    rows += [("m", "micro/zc_read/x", "GB/s", 40.0, 3.0), ("u", "traversal/uvm", "ms", 9.0, 5.0)]
    iterations = {**{f"s{i}": 10 for i in range(10)}, **{f"l{i}": 10 for i in range(10)}}
    s = spread_pct(_fake_with_launches(tmp_path, rows, iterations))["zerocopy"]
    short, middle, long = s["by_launch"]
    assert (short["below_us"], middle["below_us"], long["below_us"]) == (20.0, 50.0, None)
    assert short["cases"] == 10 and middle["cases"] == 0 and long["cases"] == 11
    assert short["half_width_pct"] == pytest.approx(np.quantile(20.0 + np.arange(10), 0.9))
    assert middle["half_width_pct"] is None
    assert long["half_width_pct"] == pytest.approx(
        np.quantile(list(1.0 + np.arange(10) / 10) + [3.0], 0.9))
    assert s["cases"] == 21          # the pooled band keeps every case
    # a prediction takes its class's band; an empty class or no launch time the pooled one
    spread = {"zerocopy": s, "uvm": s}
    assert half_width_pct(spread, "zerocopy", 8.0) == short["half_width_pct"]
    assert half_width_pct(spread, "registered", 500.0) == long["half_width_pct"]
    for t in (30.0, None, float("nan")):
        assert half_width_pct(spread, "zerocopy", t) == s["half_width_pct"]


def test_with_bands_takes_the_class_of_each_rows_launches_and_stops_at_zero():
    spread = {"zerocopy": {"half_width_pct": 10.0, "by_launch": [
                  {"below_us": 20.0, "half_width_pct": 25.0},
                  {"below_us": 50.0, "half_width_pct": None},
                  {"below_us": None, "half_width_pct": 5.0}]},
              "uvm": {"half_width_pct": 30.0, "by_launch": [
                  {"below_us": 20.0, "half_width_pct": 120.0},
                  {"below_us": 50.0, "half_width_pct": 30.0},
                  {"below_us": None, "half_width_pct": 30.0}]}}
    f = with_bands(pd.DataFrame({"mode": ["zerocopy", "zerocopy", "zerocopy", "uvm"],
                                 "bw_GBps": [10.0, 10.0, 10.0, 5.0],
                                 "launch_us": [12.0, 35.0, 900.0, 12.0]}), spread=spread)
    assert list(f["bw_GBps_lo"]) == pytest.approx([7.5, 9.0, 9.5, 0.0])
    assert list(f["bw_GBps_hi"]) == pytest.approx([12.5, 11.0, 10.5, 11.0])


def test_committed_short_launches_moved_more_than_long_ones():
    for mode in ("zerocopy", "uvm"):
        short, _, long = spread_pct()[mode]["by_launch"]
        assert short["cases"] >= 50 and long["cases"] >= 300
        assert short["half_width_pct"] > 2 * long["half_width_pct"]


def test_the_naive_walk_takes_its_own_band_where_it_is_wider(tmp_path):
    # naive traversal cases moving 30-39%, merged_aligned ones 1-1.9%, all long launches
    rows = [(f"bfs/g{i}/naive/zerocopy/8B", "traversal/zerocopy", "ms", 10.0, 30.0 + i)
            for i in range(10)]
    rows += [(f"bfs/g{i}/merged_aligned/zerocopy/8B", "traversal/zerocopy", "ms", 10.0,
              1.0 + i / 10) for i in range(10)]
    iterations = {r[0]: 10 for r in rows}
    rows += [("u", "traversal/uvm", "ms", 9.0, 5.0)]
    s = spread_pct(_fake_with_launches(tmp_path, rows, iterations))["zerocopy"]
    assert s["by_variant"] == {"naive": {
        "half_width_pct": pytest.approx(np.quantile(30.0 + np.arange(10), 0.9)),
        "median_pct": pytest.approx(34.5), "cases": 10}}
    spread = {"zerocopy": s, "uvm": s}
    long_band = s["by_launch"][-1]["half_width_pct"]
    assert half_width_pct(spread, "zerocopy", 1000.0) == long_band
    assert half_width_pct(spread, "zerocopy", 1000.0, "merged_aligned") == long_band
    assert half_width_pct(spread, "zerocopy", 1000.0, "naive") == pytest.approx(38.1)
    # a narrower variant band leaves a wider launch class's band as it is
    narrow = {"zerocopy": {**s, "by_variant": {"naive": {"half_width_pct": 0.5}}}}
    assert half_width_pct(narrow, "zerocopy", 1000.0, "naive") == long_band
    f = with_bands(pd.DataFrame({"mode": ["zerocopy"] * 2, "bw_GBps": [10.0, 10.0],
                                 "variant": ["naive", "merged"]}), spread=spread)
    assert list(f["bw_GBps_hi"]) == pytest.approx([13.81, 10.0 * (1 + s["half_width_pct"] / 100)])


def test_committed_naive_walks_moved_more_than_long_launches():
    # the families BFS on six H100 leases: the naive walk's zero-copy cases moved about
    # three times as far as the long launches of every case pooled
    zc = spread_pct()["zerocopy"]
    naive = zc["by_variant"]["naive"]
    assert naive["cases"] >= 50
    assert naive["half_width_pct"] > 2 * zc["by_launch"][-1]["half_width_pct"]
