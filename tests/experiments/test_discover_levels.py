"""The H100's discover_levels probe (validation/experiments/discover_levels/runs/h100): its
per-launch tables are what device_work_summary.py makes of the committed files, and the
facts its README draws from them hold: grid3d's naive launches read what merged_aligned's
read, from the L2 alike; no warp waits on a full store queue; stores to a few hot lines
are cheap, reductions to them are taken one after another."""
from __future__ import annotations

import json
import shutil
import statistics

import pytest
from probe_files import csv_rows as rows
from probe_files import load_script
from hostlink.validation.data_tree import run_dir, script_path

RUN = run_dir("discover_levels", "h100")
SCRIPT = script_path("device_work", "device_work_summary.py")
OFFSETS = {"grid3d": ["--launch-offset", "120"], "dense16": []}


@pytest.mark.parametrize("graph", sorted(OFFSETS))
def test_the_committed_tables_are_the_summary_of_the_committed_files(tmp_path, graph):
    folder = RUN / graph
    for f in list(folder.glob("ncu_*.csv")) + [folder / "plain.jsonl"]:
        shutil.copy(f, tmp_path / f.name)
    assert load_script(SCRIPT).main([str(tmp_path), *OFFSETS[graph]]) == 0
    assert rows(tmp_path / "launches.csv") == rows(folder / "launches.csv")


def _launches(graph: str, variant: str) -> list[dict]:
    return [r for r in rows(RUN / graph / "launches.csv") if r["variant"] == variant]


def test_grid3d_naive_reads_what_merged_aligned_reads_and_takes_longer_per_instruction():
    naive, aligned = _launches("grid3d", "naive"), _launches("grid3d", "merged_aligned")
    assert [r["launch"] for r in naive] == [str(k) for k in range(120, 128)]
    for n, a in zip(naive, aligned):
        n_rd, a_rd = float(n["l2_read_sectors"]), float(a["l2_read_sectors"])
        assert n_rd == pytest.approx(a_rd, rel=0.02)
        for r in (n, a):
            assert 0.80 < float(r["l2_read_hit_sectors"]) / float(r["l2_read_sectors"]) < 0.88
        # a thirteenth of the instructions, and more than a quarter of the time
        assert float(n["warp_inst"]) < float(a["warp_inst"]) / 12
        assert float(n["event_ms"]) > float(a["event_ms"]) / 4
        assert float(n["stall_long_scoreboard"]) > 4 * float(a["stall_long_scoreboard"])


def test_no_warp_waits_on_a_full_store_queue():
    for graph in OFFSETS:
        for r in rows(RUN / graph / "launches.csv"):
            assert float(r["stall_lg_throttle"]) < 0.05
            assert float(r["stall_drain"]) < 0.25


def _hot_ns_per_instruction() -> dict[tuple[str, int, int], float]:
    """(op, region_B, warps) -> median ns per warp instruction (16 MiB of 4 B lanes)."""
    times: dict[tuple[str, int, int], list[float]] = {}
    for line in (RUN / "hot.jsonl").read_text().splitlines():
        rec = json.loads(line)
        if rec.get("type") != "measurement":
            continue
        p = rec["params"]
        key = (p.get("op", "load"), int(p["region_B"]), int(p["warps"]))
        times.setdefault(key, []).append(float(rec["metrics"]["time_ms"]))
    instructions = (16 << 20) // 4 // 32
    return {k: statistics.median(v) * 1e6 / instructions for k, v in times.items()}


def test_stores_to_hot_lines_are_cheap_and_reductions_wait_their_turn():
    ns = _hot_ns_per_instruction()
    assert ns[("store", 512, 8448)] < 0.5
    reds = [ns[("red", 512, w)] for w in (132, 528, 2112, 8448)]
    assert max(reds) < 1.01 * min(reds) and 6.0 < min(reds) < 6.3
    assert ns[("red", 16 << 20, 8448)] < 0.1 * min(reds)
