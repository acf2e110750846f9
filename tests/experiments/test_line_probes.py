"""The scatter_l2, naive_lists and naive_phases probes: their committed tables are what their
summary scripts make of the committed raw files, and the figures their READMEs
quote come out of them."""
from __future__ import annotations

import pandas as pd
import pytest
from probe_files import load_script

from hostlink.model.config import load_system
from hostlink.validation.data_tree import run_dir, script_path

SCATTER = run_dir("scatter_l2", "h100")
NAIVE = run_dir("naive_lists", "h100")


@pytest.fixture(scope="module")
def scatter():
    mod = load_script(script_path("scatter_l2", "scatter_l2_summary.py"))
    return mod.summary(mod.points(SCATTER / "plain.jsonl"))


def test_the_scatter_table_is_the_scripts(scatter):
    committed = pd.read_csv(SCATTER / "summary_by_point.csv")
    assert len(committed) == len(scatter) == 26
    for col in ("time_ms", "sm_line_ns", "lines_per_ns"):
        assert committed[col].to_numpy() == pytest.approx(scatter[col].to_numpy(), rel=1e-5)


def _line_ns(scatter, region_B, warps_per_sm, unroll=1):
    pick = scatter[(scatter.region_B == region_B) & (scatter.warps_per_sm == warps_per_sm)
                   & (scatter.unroll == unroll) & (scatter.l2_flush == 0)]
    return pick.sm_line_ns.to_numpy()


def test_the_l2_lets_an_sm_send_lines_four_times_as_fast_as_dram(scatter):
    l2 = _line_ns(scatter, 8 << 20, 32)
    dram = _line_ns(scatter, 4 << 30, 32)
    assert l2 == pytest.approx([1.0, 1.0], abs=0.02)        # default and ld.cg
    assert dram == pytest.approx([4.16, 4.16], abs=0.02)
    # the issue stage's turn, fitted on strided reads that DRAM served, is DRAM's rate
    assert load_system("h100-pcie5").gpu.sm_request_ns == pytest.approx(dram[0], rel=0.05)


def test_the_naive_table_is_the_scripts():
    mod = load_script(script_path("naive_lists", "naive_lists_summary.py"))
    made = mod.summary(NAIVE)
    committed = pd.read_csv(NAIVE / "summary_by_launch.csv")
    assert list(made.columns) == list(committed.columns)
    assert len(made) == len(committed) == 22
    for col in ("ncu_us", "host_sectors", "event_us"):
        assert committed[col].to_numpy() == pytest.approx(made[col].to_numpy(), rel=1e-5)


def test_the_naive_walk_reads_each_host_sector_about_once():
    s = pd.read_csv(NAIVE / "summary_by_launch.csv")
    naive = s[(s.graph == "dense16") & (s.variant == "naive")]
    # dense16 has 16,744,584 edges of 8 B: 4.19 M sectors if the L1 keeps every one
    assert naive.host_sectors.sum() / (16_744_584 * 8 / 32) == pytest.approx(1.0, abs=0.03)


def test_the_naive_phases_table_is_the_scripts():
    run = run_dir("naive_phases", "h100")
    made = load_script(script_path("naive_phases", "naive_phases_summary.py")).summary(run)
    committed = pd.read_csv(run / "summary_by_graph.csv")
    assert len(made) == len(committed) == 14
    assert committed["launch1_us"].to_numpy() == pytest.approx(made["launch1_us"].to_numpy(),
                                                               rel=1e-5)
    t = made.set_index(["graph", "load_ahead"])["launch1_us"]
    # at load-ahead 4 four sector phases cost what one does; at load-ahead 1 2.5 times
    assert t["hubs24_20001", 4] == pytest.approx(t["hubs24_20000", 4], rel=0.05)
    assert t["hubs24_20001", 1] > 2.4 * t["hubs24_20000", 1]
