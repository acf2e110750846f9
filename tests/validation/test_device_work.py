"""The H100's device_work probe (validation/results/h100/device_work): its per-launch
table is what validation/device/device_work_summary.py makes of the committed files,
and the facts the traversal twins rest on hold in it."""
from __future__ import annotations

import csv
import importlib.util
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FOLDER = ROOT / "validation" / "results" / "h100" / "device_work"
SCRIPT = ROOT / "validation" / "device" / "device_work_summary.py"


def summary_module():
    spec = importlib.util.spec_from_file_location("device_work_summary", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def rows(path: Path) -> list[dict]:
    with path.open() as f:
        return list(csv.DictReader(f))


def test_the_committed_table_is_the_summary_of_the_committed_files(tmp_path):
    for f in list(FOLDER.glob("ncu_*.csv")) + [FOLDER / "plain.jsonl"]:
        shutil.copy(f, tmp_path / f.name)
    assert summary_module().main([str(tmp_path)]) == 0
    assert rows(tmp_path / "launches.csv") == rows(FOLDER / "launches.csv")


def test_a_folder_without_profiles_is_an_error(tmp_path):
    shutil.copy(FOLDER / "plain.jsonl", tmp_path / "plain.jsonl")
    with pytest.raises(SystemExit, match="no ncu_"):
        summary_module().main([str(tmp_path)])


def launches(**want) -> list[dict]:
    return [r for r in rows(FOLDER / "launches.csv")
            if all(r[k] == str(v) for k, v in want.items())]


def test_scans_are_dispatch_bound_or_issue_bound():
    """BFS's last launch on urand21 tests every vertex and expands none: merged_aligned's
    262,144 CTAs take their dispatch (0.617 ns each, ../launch_latency), chunked's
    32,768 issue their 27.4 instructions per vertex near the SMs' 4 a cycle."""
    ma = launches(kernel="bfs", graph="urand21", memory_mode="device",
                  variant="merged_aligned", id_bytes=8)[-1]
    ch = launches(kernel="bfs", graph="urand21", memory_mode="device", variant="chunked",
                  id_bytes=8)[-1]
    assert int(float(ma["grid_ctas"])) == 262144
    assert float(ma["ncu_us"]) == pytest.approx(262144 * 0.617e-3, rel=0.05)
    assert float(ch["warp_inst"]) / (1 << 21) == pytest.approx(27.4, abs=0.1)
    assert 3.0 < float(ch["ipc_per_sm"]) <= 4.0
    # the programs' device record: 132 SMs at 1980 MHz; Hopper issues from 4 schedulers per SM
    floor_us = float(ch["warp_inst"]) / (132 * 4 * 1.98e3)
    assert floor_us < float(ch["ncu_us"]) < 1.4 * floor_us


def test_the_hubs_launch_runs_at_low_occupancy_and_pays_its_visits():
    """kron21's second BFS launch (first_run's first source) is the hub's walk: 1,357
    trips of one warp, about 0.48 us each in device memory and 0.71-0.75 from host memory
    (a quarter of the load's latency plus a visit of about 0.39 us)."""
    dev = launches(kernel="bfs", graph="kron21", memory_mode="device",
                   variant="merged_aligned", id_bytes=8)[1]
    host = launches(kernel="bfs", graph="kron21", memory_mode="zerocopy",
                    variant="merged_aligned", id_bytes=8)[1]
    assert float(dev["occupancy_pct"]) < 60 and float(host["occupancy_pct"]) < 60
    assert float(dev["ncu_us"]) / 1357 == pytest.approx(0.48, rel=0.05)
    assert float(host["ncu_us"]) / 1357 == pytest.approx(0.75, rel=0.06)
