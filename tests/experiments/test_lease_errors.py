"""families/lease_errors.py: the H200 report's latest predictions against both H200
leases of the families manifest, and the committed table it writes."""
from __future__ import annotations

import csv

import pytest
from probe_files import load_script

from hostlink.validation.data_tree import script_path


@pytest.fixture(scope="module")
def script():
    return load_script(script_path("families", "lease_errors.py"))


def assert_committed(path, rows: list[dict], count: int) -> None:
    """The CSV at ``path`` holds ``rows`` (``count`` of them), as the script writes them."""
    with open(path, newline="") as f:
        committed = list(csv.DictReader(f))
    assert len(rows) == len(committed) == count
    for row, old in zip(rows, committed):
        assert {k: str(v) for k, v in row.items()} == old


def test_the_committed_table_is_the_scripts(script):
    assert_committed(script.OUT, script.lease_errors(), 24)


def test_the_first_lease_is_the_reports_judgement(script):
    # the report's own MAPE per graph and placement, on the first lease
    with open(script.HERE / "runs" / "h200" / "latest" / "errors.csv", newline="") as f:
        report = {(r["graph"], r["placement"]): float(r["mape_pct"]) for r in csv.DictReader(f)}
    rows = script.lease_errors()
    for row in rows:
        assert row["mape_first_pct"] == pytest.approx(report[(row["graph"], row["placement"])],
                                                      abs=0.01)
    # the mean of two leases lies between them, pair by pair, or near it
    for row in rows:
        lo, hi = sorted((row["bias_first_pct"], row["bias_second_pct"]))
        assert lo - 0.5 <= row["bias_mean_pct"] <= hi + 0.5


def test_the_naive_rules_table_is_the_scripts(script):
    rows = script.naive_rules()
    assert_committed(script.RULES_OUT, rows, 23)
    # the group's rule, which keeps four loads in flight, is the faster of the two
    assert all(r["group_ms"] <= r["one_load_ms"] for r in rows)


def test_the_shared_writes_table_joins_its_two_reports(script):
    # the model of runs/h200/shared_writes, its four road SSSP cases from road_sssp/
    folder = script.HERE / "runs" / "h200" / "shared_writes"
    summaries = [folder / "summary.csv", folder / "road_sssp" / "summary.csv"]
    rows = script.lease_errors(summaries)
    assert_committed(folder / "lease_errors.csv", rows, 24)
    alone = {(r["graph"], r["placement"]): r["cases"] for r in script.lease_errors(summaries[0])}
    joined = {(r["graph"], r["placement"]): r["cases"] for r in rows}
    assert joined[("road_shuffled", "device")] == alone[("road_shuffled", "device")] + 2
    assert joined[("road_shuffled", "zerocopy")] == alone[("road_shuffled", "zerocopy")] + 2
    # and latest, which judges the run on the first lease, holds the same predictions
    assert rows == script.lease_errors()


@pytest.fixture(scope="module")
def whatif():
    return load_script(script_path("families", "launch_cost_whatif.py"))


def test_the_launch_cost_whatif_table_is_the_scripts(whatif, script):
    with open(whatif.OUT, newline="") as f:
        committed = list(csv.DictReader(f))
    extra = sorted({float(r["extra_us"]) for r in committed})
    assert extra == [0.0, 0.5, 1.0, 1.5, 2.0]
    for cost in (0.0, 1.0):
        rows = {(r["graph"], r["placement"]): r["mape_mean_pct"] for r in whatif.whatif(cost)}
        mine = {(r["graph"], r["placement"]): float(r["mape_mean_pct"])
                for r in committed if float(r["extra_us"]) == cost}
        assert rows == mine
    # no extra cost: the latest predictions as lease_errors judges them
    base = {(r["graph"], r["placement"]): r["mape_mean_pct"] for r in script.lease_errors()}
    assert base == {(r["graph"], r["placement"]): r["mape_mean_pct"] for r in whatif.whatif(0.0)}
