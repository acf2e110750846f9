"""naive_phases/lease_median.py: the naive BFS cases against every H100 lease of the
families runs, and the committed tables it writes."""
from __future__ import annotations

import csv
import statistics

import pytest
from probe_files import load_script

from hostlink.validation.data_tree import script_path


@pytest.fixture(scope="module")
def script():
    return load_script(script_path("naive_phases", "lease_median.py"))


@pytest.fixture(scope="module")
def times(script):
    return script.lease_times()


def test_every_lease_holds_the_families_bfs(script, times):
    assert len(times) >= 100
    assert all(len(t) == len(script.LEASES) for t in times.values())


def test_the_committed_tables_are_the_scripts(script, times):
    with open(script.HERE / "lease_median.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 14
    for row in rows:
        t = times[row["case"]]
        assert float(row["median_ms"]) == pytest.approx(statistics.median(t), abs=1e-4)
        assert float(row["one_load_error_pct"]) == pytest.approx(
            100 * (float(row["one_load_ms"]) / statistics.median(t) - 1), abs=0.06)
    with open(script.HERE / "lease_spread.csv", newline="") as f:
        spread = {(r["mode"], r["variant"]): r for r in csv.DictReader(f)}
    naive = [100 * (max(t) / min(t) - 1) for c, t in times.items() if "/naive/zerocopy/" in c]
    assert float(spread[("zerocopy", "naive")]["median_spread_pct"]) == pytest.approx(
        statistics.median(naive), abs=0.06)
    # the naive walk spreads several times as far as merged_aligned, in either memory
    for mode in ("zerocopy", "device"):
        assert float(spread[(mode, "naive")]["median_spread_pct"]) > 3 * float(
            spread[(mode, "merged_aligned")]["median_spread_pct"])
