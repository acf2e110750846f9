"""The committed write_cost probe (validation/experiments/write_cost/runs/h100): its summary is
rebuilt from its raw records, and the README's figures are the records'."""
from __future__ import annotations

import csv
import importlib.util
from pathlib import Path

import pytest
from hostlink.validation.data_tree import run_dir, script_path

ROOT = Path(__file__).resolve().parents[2]
FOLDER = run_dir("write_cost", "h100")


@pytest.fixture(scope="module")
def summary():
    spec = importlib.util.spec_from_file_location(
        "write_cost_summary", script_path("write_cost", "write_cost_summary.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def rows_of(summary, name):
    return summary.read_points(FOLDER / name)[1]


def test_summary_is_rebuilt_from_the_records(summary):
    committed = list(csv.DictReader(open(FOLDER / "points.csv")))
    rebuilt = [r for name in summary.FILES for r in rows_of(summary, name)]
    assert len(rebuilt) == len(committed) == 157
    for c, r in zip(committed, rebuilt):
        assert (c["pattern"], int(c["knob_B"]), c["op"], int(c["warps"])) == \
            (r["pattern"], r["knob_B"], r["op"], r["warps"])
        assert float(c["glines_per_s"]) == pytest.approx(r["glines_per_s"], rel=1e-3)


def rate(rows, pattern, knob, op, warps, wpb=None):
    got = [r["glines_per_s"] for r in rows if (r["pattern"], r["knob_B"], r["op"], r["warps"]) ==
           (pattern, knob, op, warps) and (wpb is None or r["warps_per_block"] == wpb)]
    assert len(got) == 1
    return got[0]


def test_dram_limit_is_shared_and_l2_lines_are_faster(summary):
    # README: half the SMs get 97% of the DRAM-bound rate; L2 lines 4x the DRAM rate
    spread = rows_of(summary, "spread.jsonl")
    gib, mib16 = 1 << 30, 16 << 20
    on_132 = rate(spread, "scatter", gib, "load", 1056, 8)
    on_66 = rate(spread, "scatter", gib, "load", 1056, 16)
    assert on_66 / on_132 == pytest.approx(0.97, abs=0.01)
    plain = rows_of(summary, "plain.jsonl")
    dram = rate(plain, "scatter", gib, "load", 8448)
    l2 = rate(plain, "scatter", mib16, "load", 8448)
    assert dram == pytest.approx(31.4, abs=0.1) and l2 == pytest.approx(120.3, abs=0.5)
    # 132 SMs at 4.2 ns a line each: the issue stage's fitted SM cost (4.34 ns)
    assert 132 / dram == pytest.approx(4.2, abs=0.05)
    # an SM sends at least 1.34 G lines/s of L2 lines (33 SMs, 32 warps each)
    assert rate(spread, "scatter", mib16, "load", 1056, 32) / 33 == pytest.approx(1.34, abs=0.01)


def test_write_rates_by_level(summary):
    plain = rows_of(summary, "plain.jsonl")
    full = 8448
    got = {(op, knob): rate(plain, "scatter", knob, op, full)
           for op in ("store", "red") for knob in (64 << 10, 16 << 20, 1 << 30)}
    assert got[("red", 16 << 20)] == pytest.approx(81.9, abs=0.2)
    assert got[("red", 64 << 10)] == pytest.approx(67.5, abs=0.2)
    assert got[("store", 16 << 20)] == pytest.approx(56.6, abs=0.6)
    assert got[("store", 64 << 10)] == pytest.approx(29.4, abs=0.1)
    assert got[("red", 1 << 30)] == pytest.approx(13.6, abs=0.1)
    assert got[("store", 1 << 30)] == pytest.approx(13.5, abs=0.1)


def test_the_sass_has_the_write_instructions():
    sass = (FOLDER / "sass.txt").read_text()
    assert "REDG.E.ADD" in sass and "STG.E" in sass
