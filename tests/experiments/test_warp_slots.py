"""The H200's warp_slots probe (validation/experiments/warp_slots/runs/h200): its table is what
validation/experiments/warp_slots/warp_slots_summary.py makes of the committed files, and the CTAs an
SM held at once are the facts its README states."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from probe_files import csv_rows as rows
from probe_files import load_script
from hostlink.validation.data_tree import run_dir, script_path

ROOT = Path(__file__).resolve().parents[2]
FOLDER = run_dir("warp_slots", "h200")
SCRIPT = script_path("warp_slots", "warp_slots_summary.py")


def summary_module():
    return load_script(SCRIPT)


def point(threads: int, live: int, ctas: int) -> dict:
    found = [r for r in rows(FOLDER / "residency.csv")
             if (int(r["threads_per_cta"]), int(r["live_warps"]), int(r["ctas"])) == (threads, live, ctas)]
    assert len(found) == 1, (threads, live, ctas)
    return {k: float(v) for k, v in found[0].items()}


def test_the_committed_table_is_the_summary_of_the_committed_files(tmp_path):
    for f in FOLDER.glob("spin*.jsonl"):
        shutil.copy(f, tmp_path / f.name)
    assert summary_module().main([str(tmp_path)]) == 0
    assert rows(tmp_path / "residency.csv") == rows(FOLDER / "residency.csv")


def test_bad_input_names_the_file_and_line(tmp_path):
    with pytest.raises(SystemExit, match="no spin"):
        summary_module().main([str(tmp_path)])
    (tmp_path / "spin.jsonl").write_text('{"type":"device"}\n{not json\n')
    with pytest.raises(SystemExit, match=r"spin\.jsonl:2: not JSON"):
        summary_module().main([str(tmp_path)])
    (tmp_path / "spin.jsonl").write_text(
        '{"type":"measurement","params":{"work":"spin","threads_per_cta":256,"ctas":1},"metrics":{}}\n')
    with pytest.raises(SystemExit, match=r"spin\.jsonl:1: spin measurement without 'live_warps'"):
        summary_module().main([str(tmp_path)])


def test_the_sms_limits_hold():
    """Every warp spinning: 32 one-warp CTAs (the CTA limit), 8 CTAs of 8 warps and 2 of
    32 (64 warp slots) on an SM at once, and the launch takes its rounds of the spin."""
    assert point(32, 1, 16896)["concurrent_max_sm"] == 32
    assert point(256, 8, 16896)["concurrent_max_sm"] == 8
    assert point(1024, 32, 2112)["concurrent_max_sm"] == 2
    one, full = point(256, 8, 132), point(256, 8, 16896)
    rounds = (full["time_us"] - one["time_us"]) / 20.0 + 1   # 20 us spins
    assert rounds == pytest.approx(16, rel=0.05)


def test_exited_warps_slots_are_reused_in_part():
    """256-thread CTAs with one warp spinning and seven exited: more than the 8 CTAs the
    warp slots allow with every warp live, growing with the CTAs queued (14 at 32 per SM,
    23 at 128), short of the CTA limit; 1024-thread CTAs gain nothing (2, at most 3)."""
    assert [point(256, 1, n)["concurrent_median_sm"] for n in (2112, 4224, 8448, 16896)] == [8, 14, 18, 23]
    assert point(256, 1, 16896)["concurrent_max_sm"] < 32
    assert point(1024, 1, 2112)["concurrent_median_sm"] == 2
    assert point(1024, 1, 2112)["concurrent_max_sm"] <= 3


def test_the_schedules_edges_are_the_committed_ones_and_the_emulators():
    """waves_ab.py's counts are waves_ab.csv's, its 'waves_by_id' is the emulator's own
    schedule (hostlink.traces.emulator.algorithms), and the README's reading holds: SSSP
    merged on kron14 reads within 0.5% of a Jacobi step, CC merged what the waves give."""
    import pandas as pd

    from hostlink.traces.emulator import algorithms
    from hostlink.validation.twin_common import load_run
    from hostlink.validation.twin_traversal import GraphSource

    ab = load_script(FOLDER / "waves_ab.py")
    table = pd.read_csv(FOLDER / "waves_ab.csv")
    graphs = GraphSource(load_run(ROOT / "validation/experiments/first_run/runs/h200"))
    for _, row in table[table.variant.isin(["merged", "chunked"])].iterrows():
        csr = graphs.get(row.graph)
        for schedule in ab.SCHEDULES:
            assert ab.edges_read(csr, row.kernel, row.variant, int(row.source), schedule) == row[schedule]
        run = algorithms.run(csr, row.kernel, source=int(row.source),
                             wave_vertices=algorithms.wave_vertices_of(row.variant, 132 * 64),
                             serial_steps=algorithms.serial_steps_of(row.variant))
        assert sum(int((csr.offsets[a + 1] - csr.offsets[a]).sum()) for a in run.active) \
            == row.waves_by_id
    sssp = table[(table.kernel == "sssp") & (table.graph == "kron14") & (table.variant == "merged")]
    assert ((sssp.jacobi / sssp.measured_median - 1).abs() < 0.005).all()
    cc = table[(table.kernel == "cc") & (table.variant == "merged")]
    assert ((cc.waves_by_id / cc.measured_median - 1).abs() < 0.01).all()
