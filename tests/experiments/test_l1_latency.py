"""The H200's L1 latency probe (validation/experiments/l1_latency/runs/h200): its table is what
validation/experiments/l1_latency/l1_latency_summary.py makes of the committed files, and the strided
reads of device memory lose in the L1 what those of pinned host memory lose, though
the host kernels take many times as long."""
from __future__ import annotations

import statistics
from pathlib import Path

import pytest
from probe_files import csv_rows as rows
from probe_files import load_script
from hostlink.validation.data_tree import run_dir, script_path

ROOT = Path(__file__).resolve().parents[2]
FOLDER = run_dir("l1_latency", "h200")
SUMMARY = script_path("l1_latency", "l1_latency_summary.py")
POLICY = run_dir("l1_policy", "h200") / "refetch.csv"


def table() -> dict[tuple[str, int, int, int], dict]:
    return {(r["memory_mode"], int(r["chunk_B"]), int(r["bytes_per_lane"]),
             int(r["warps_per_sm"])): r for r in rows(FOLDER / "refetch.csv")}


def test_the_committed_table_is_the_summary_of_the_committed_files(tmp_path):
    out = tmp_path / "refetch.csv"
    assert load_script(SUMMARY).write_csv(FOLDER, out) == 34
    assert rows(out) == rows(FOLDER / "refetch.csv")


def test_host_sectors_all_come_from_system_memory_and_device_ones_none():
    for (mode, *_), r in table().items():
        assert float(r["sysmem_share"]) == (1.0 if mode == "zerocopy" else 0.0)


def test_device_memory_loses_what_host_memory_loses():
    t = table()
    points = [k[1:] for k in t if k[0] == "device"]
    assert len(points) == 17 and all(("zerocopy", *p) in t for p in points)
    for chunk, bpl, warps in points:
        dev = float(t[("device", chunk, bpl, warps)]["refetch"])
        host = float(t[("zerocopy", chunk, bpl, warps)]["refetch"])
        if warps <= 16:
            # nothing lost at 16 warps per SM or fewer, in either memory
            assert dev == pytest.approx(1.0, abs=0.003) and host == pytest.approx(1.0, abs=0.003)
        elif chunk == 512:
            assert dev == pytest.approx(host, abs=0.1), (chunk, bpl, warps)
            if warps >= 40:
                assert dev == pytest.approx(host, abs=0.011), (chunk, bpl, warps)
        else:
            assert dev == pytest.approx(host, abs=0.14), (chunk, bpl, warps)
    # and it is a real loss there: nearly two sectors a sector at 48 warps, 512 B chunks
    assert float(t[("device", 512, 4, 48)]["refetch"]) > 1.85


def test_the_host_points_repeat_the_earlier_lease():
    policy = {(int(r["chunk_B"]), int(r["bytes_per_lane"]), int(r["warps_per_sm"])):
              float(r["refetch"]) for r in rows(POLICY) if r["rounds"] == "1"}
    diffs = {k[1:]: abs(float(r["refetch"]) - policy[k[1:]])
             for k, r in table().items() if k[0] == "zerocopy"}
    assert max(d for (c, _, _), d in diffs.items() if c == 512) < 0.04
    assert max(d for (c, _, _), d in diffs.items() if c == 2048) < 0.11


def test_the_host_kernels_take_many_times_as_long():
    bw = {k: float(r["bw_GBps"]) for k, r in table().items()}
    ratios = [bw[("device", *p)] / bw[("zerocopy", *p)] for (m, *p) in bw if m == "device"]
    assert statistics.median(ratios) > 50
