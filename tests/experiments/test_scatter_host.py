"""scatter_host's scripts: the summary of a run's zc_read lines and the twin's parameters
for each of its points (no run is committed yet, so the lines here are made up in
zc_read's form)."""
from __future__ import annotations

import json

import pytest
from probe_files import csv_rows, load_script

from hostlink.validation.data_tree import script_path


@pytest.fixture(scope="module")
def summary():
    return load_script(script_path("scatter_host", "scatter_host_summary.py"))


@pytest.fixture(scope="module")
def twin():
    return load_script(script_path("scatter_host", "scatter_host_twin.py"))


def _line(pattern, knob, value, bpl, time_ms, cache="default", total_B=64 << 20):
    params = {"pattern": pattern, "bytes_per_lane": bpl, "cache": cache, knob: value}
    return json.dumps({"type": "measurement", "params": params,
                       "metrics": {"time_ms": time_ms, "bytes_B": total_B}})


@pytest.fixture
def run(tmp_path):
    lines = [json.dumps({"type": "build", "nvcc": "12"})]
    lines += [_line("scatter", "region_B", 1 << 29, 4, t) for t in (30.0, 20.0, 25.0)]
    lines += [_line("scatter", "region_B", 1 << 16, 4, 9.0, cache="cv")]
    lines += [_line("strided", "chunk_B", 4096, 8, t) for t in (11.0, 10.0)]
    lines += [_line("coalesced", "offset_B", 0, 4, 1.25)]
    lines += [_line("coalesced", "offset_B", 0, 4, 10.5, total_B=512 << 20)]
    (tmp_path / "plain.jsonl").write_text("\n".join(lines) + "\n")
    return tmp_path


def test_each_point_is_the_median_of_its_repetitions(summary, run):
    rows = {(r["pattern"], r["knob_B"], r["cache"], r["total_B"] >> 20): r
            for r in summary.rows(run)}
    assert len(rows) == 5
    big = rows[("scatter", 1 << 29, "default", 64)]
    assert big["reps"] == 3 and big["time_ms"] == 25.0
    assert big["bw_GBps"] == pytest.approx((64 << 20) / 25.0e6, abs=1e-3)
    # one lane load a word: 4 B of a 32 B request
    assert big["lane_loads_per_us"] == pytest.approx((64 << 20) / 4 / 25.0e3, abs=0.05)
    strided = rows[("strided", 4096, "default", 64)]
    assert strided["time_ms"] == 10.5 and strided["knob"] == "chunk_B"
    assert strided["lane_loads_per_us"] == pytest.approx((64 << 20) / 8 / 10.5e3, abs=0.05)
    assert rows[("scatter", 1 << 16, "cv", 64)]["reps"] == 1
    # the same point over 512 MiB is a point of its own
    assert rows[("coalesced", 0, "default", 512)]["time_ms"] == 10.5


def test_the_summary_writes_its_table_and_names_a_bad_line(summary, run, capsys):
    assert summary.main(["x", str(run)]) == 0
    table = csv_rows(run / "summary_by_point.csv")
    assert [r["pattern"] for r in table] == ["coalesced", "coalesced", "scatter", "scatter",
                                                "strided"]
    with (run / "plain.jsonl").open("a") as f:
        f.write("{not json\n")
    with pytest.raises(SystemExit, match=r"plain\.jsonl:10: not JSON"):
        summary.rows(run)
    assert summary.main(["x", str(run / "nowhere")]) == 2
    assert "no plain.jsonl" in capsys.readouterr().err


def test_the_twin_takes_each_point_as_probe_sh_ran_it(twin, summary, run):
    params = [twin.params_of(r) for r in summary.rows(run)]
    by = {(p["pattern"], p.get("region_B", p.get("chunk_B"))): p for p in params}
    scatter = by[("scatter", 1 << 29)]
    assert scatter["total_B"] == 64 << 20 and scatter["unroll"] == 4
    assert scatter["bytes_per_lane"] == 4 and scatter["memory_mode"] == "zerocopy"
    assert by[("strided", 4096)]["chunk_B"] == 4096
    # the coalesced point has neither knob: zc_read's own offset (0)
    coalesced = [p for p in params if p["pattern"] == "coalesced"]
    assert all("region_B" not in p and "chunk_B" not in p for p in coalesced)
    # each point reads what it read on the GPU
    assert sorted(p["total_B"] >> 20 for p in coalesced) == [64, 512]


def test_the_twin_wants_a_run(twin, tmp_path, capsys):
    assert twin.main([str(tmp_path)]) == 2
    assert "no plain.jsonl" in capsys.readouterr().err


def test_the_twins_constants_are_the_probes_command_line(twin):
    probe = (script_path("scatter_host", "probe.sh")).read_text()
    assert f"--unroll {twin.UNROLL} " in probe
