"""The families experiment's summary: errors per graph and placement, and winners."""
from __future__ import annotations

import pandas as pd
import pytest
from probe_files import load_script

from hostlink.validation.data_tree import script_path


@pytest.fixture(scope="module")
def summary_module():
    return load_script(script_path("families", "winners_summary.py"))


def _summary(rows):
    return pd.DataFrame([{"case": c, "metric": "kernel_time_ms", "unit": "ms", "measured": m,
                          "predicted": p, "error_pct": 100 * (p - m) / m} for c, m, p in rows])


def test_errors_are_per_graph_and_placement(summary_module):
    s = _summary([("bfs/road/naive/zerocopy/8B", 10.0, 11.0),
                  ("bfs/road/naive/registered/8B", 10.0, 8.0),
                  ("sssp/road/naive/zerocopy/4B", 10.0, 10.0),
                  ("bfs/road/naive/uvm/8B", 10.0, 13.0),
                  ("cc/dense/merged_aligned/device/8B", 2.0, 1.0)])
    e = summary_module.errors(s).set_index(["graph", "placement"])
    assert e.loc[("road", "zerocopy"), "cases"] == 3
    assert e.loc[("road", "zerocopy"), "mape_pct"] == pytest.approx(10.0)
    assert e.loc[("road", "zerocopy"), "bias_pct"] == pytest.approx(-10 / 3)
    assert e.loc[("road", "zerocopy"), "worst_pct"] == pytest.approx(-20.0)
    assert e.loc[("road", "uvm"), "mape_pct"] == pytest.approx(30.0)
    assert e.loc[("dense", "device"), "worst_pct"] == pytest.approx(-50.0)


def test_the_predicted_winner_is_judged_by_its_measured_time(summary_module):
    s = _summary([("bfs/road/naive/zerocopy/8B", 10.0, 12.0),
                  ("bfs/road/merged_aligned/zerocopy/8B", 10.5, 9.0),
                  ("bfs/road/naive/device/8B", 20.0, 30.0),
                  ("bfs/road/naive/zerocopy/4B", 1.0, 1.0)])   # 4 B ids: not an option
    (w,) = summary_module.winners(s).to_dict("records")
    assert w["measured_winner"] == "naive/zerocopy"
    assert w["predicted_winner"] == "merged_aligned/zerocopy"
    assert w["slower_pct"] == pytest.approx(5.0)
    assert w["options"] == 3


def test_a_partial_report_replaces_its_cases_only(summary_module):
    s = _summary([("bfs/road/naive/zerocopy/8B", 10.0, 12.0),
                  ("bfs/road/balanced/zerocopy/8B", 10.0, 5.0)])
    newer = _summary([("bfs/road/balanced/zerocopy/8B", 10.0, 9.0)])
    both = summary_module.replaced(s, newer).set_index("case")
    assert len(both) == 2
    assert both.loc["bfs/road/balanced/zerocopy/8B", "predicted"] == 9.0
    assert both.loc["bfs/road/naive/zerocopy/8B", "predicted"] == 12.0
