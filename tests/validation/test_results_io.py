"""Parsing the programs' JSON lines and reading/writing the tidy results table."""
from __future__ import annotations

import math

import pandas as pd
import pytest

from hostlink.validation.results_io import (
    RESULT_COLUMNS,
    ResultsError,
    check_table,
    make_table,
    parse_lines,
    read_results,
    rows_from_output,
    summarise,
    unit_of,
    with_loop_gap,
    write_results,
)

SAMPLE = """\
{"type":"device","device":0,"name":"NVIDIA H100 PCIe","sm_count":114}
{"type":"measurement","benchmark":"bfs","params":{"graph":"k","variant":"merged","memory_mode":"zerocopy","id_bytes":8,"source":3},"rep":0,"metrics":{"time_ms":2.5,"kernel_time_ms":2,"iterations":4,"bw_GBps":null,"check_pass":1,"source":3},"detail":{"launch_ms":[0.5,1.5]}}
{"type":"measurement","benchmark":"bfs","params":{"graph":"k","variant":"merged","memory_mode":"zerocopy","id_bytes":8,"source":3},"rep":1,"metrics":{"time_ms":3.5,"kernel_time_ms":3,"iterations":4,"bw_GBps":20,"check_pass":1,"source":3}}

{"type":"done","program":"bfs","check_failures":0}
"""


def case_of(m):
    p = m.params
    return f"{m.benchmark}/{p['graph']}/{p['variant']}/{p['memory_mode']}/{p['id_bytes']}B"


def test_parse_sample_and_make_rows():
    out = parse_lines(SAMPLE.splitlines(), "sample.jsonl")
    assert out.finished and out.device["name"] == "NVIDIA H100 PCIe" and len(out.measurements) == 2
    assert out.measurements[0].detail["launch_ms"] == [0.5, 1.5]
    df = rows_from_output(out, "r1", "exp", case_of)
    assert list(df.columns) == list(RESULT_COLUMNS)
    assert len(df) == 12 and set(df["case"]) == {"bfs/k/merged/zerocopy/8B"}
    bw = df[df["metric"] == "bw_GBps"].sort_values("rep")
    assert math.isnan(bw["value"].iloc[0]) and bw["value"].iloc[1] == 20.0 and set(bw["unit"]) == {"GB/s"}
    assert df["rep"].dtype == "int64" and df["value"].dtype == "float64"


@pytest.mark.parametrize("metric, unit", [
    ("time_ms", "ms"), ("lat_ns", "ns"), ("bw_GBps", "GB/s"), ("bytes_read_B", "B"), ("second_bw_GBps", "GB/s"),
    ("iterations", "1"), ("check_pass", "bool"), ("source", "vertex"), ("max_rel_err", "1"), ("prefetch_ms", "ms"),
])
def test_units_from_names(metric, unit):
    assert unit_of(metric) == unit


@pytest.mark.parametrize("line, msg", [
    ("not json", "sample.jsonl:2: not a JSON line"),
    ('[1, 2]', "sample.jsonl:2: expected an object"),
    ('{"type":"measurement","benchmark":"x","params":{},"rep":"0","metrics":{}}', "key 'rep'"),
    ('{"type":"measurement","benchmark":"x","params":{},"rep":0,"metrics":{"a":"fast"}}', "metric 'a'"),
    ('{"type":"result"}', "expected an object with 'type'"),
])
def test_bad_lines_name_file_and_line(line, msg):
    with pytest.raises(ResultsError, match=msg.replace("[", r"\[")):
        parse_lines(['{"type":"device"}', line], "sample.jsonl")


def test_error_lines_and_unfinished_output():
    out = parse_lines(['{"type":"error","kind":"cuda","message":"boom"}'], "x")
    assert not out.finished and out.errors[0]["message"] == "boom"


def test_write_read_round_trip(tmp_path):
    out = parse_lines(SAMPLE.splitlines(), "s")
    df = rows_from_output(out, "r1", "exp", case_of)
    csv, pq = write_results(df, tmp_path)
    a, b = read_results(csv), read_results(pq)
    pd.testing.assert_frame_equal(a, b)
    # the table written, and each traversal run's loop gap derived from it
    pd.testing.assert_frame_equal(a.reset_index(drop=True),
                                  with_loop_gap(check_table(df)).reset_index(drop=True))
    assert len(a) == len(df) + (a["metric"] == "loop_gap_us").sum()


def test_table_checks(tmp_path):
    good = make_table([("r", "e", "c", "measured", "time_ms", 1.0, "ms", 0)])
    with pytest.raises(ResultsError, match="missing column"):
        check_table(good.drop(columns=["unit"]), "t")
    with pytest.raises(ResultsError, match="unexpected column"):
        check_table(good.assign(extra=1), "t")
    with pytest.raises(ResultsError, match="model_kind 'guess'"):
        check_table(good.assign(model_kind="guess"), "t")
    with pytest.raises(ResultsError, match="duplicate row"):
        check_table(pd.concat([good, good]), "t")
    (tmp_path / "bad.csv").write_text("run_id,case\nx,y\n")
    with pytest.raises(ResultsError, match="bad.csv: missing column"):
        read_results(tmp_path / "bad.csv")
    with pytest.raises(ResultsError, match="cannot read"):
        read_results(tmp_path / "none.parquet")


def test_summarise_median_and_spread():
    rows = [("r", "e", "c", "measured", "time_ms", v, "ms", i) for i, v in enumerate([1.0, 2.0, 3.0, 4.0, 10.0])]
    rows += [("r", "e", "a", "measured", "time_ms", 5.0, "ms", 0)]
    s = summarise(make_table(rows)).set_index("case")
    assert s.loc["c", "median"] == 3.0 and s.loc["c", "n"] == 5 and s.loc["c", "max"] == 10.0
    assert s.loc["c", "iqr"] == pytest.approx(2.0)  # quartiles 2 and 4
    assert s.loc["c", "spread_pct"] == pytest.approx(200.0 / 3.0)
    assert s.loc["a", "iqr"] == 0.0


def test_uvm_touch_launch_metrics_from_the_per_launch_times():
    """An older uvm_touch build (validation/experiments/uvm_launches/runs/h200) printed a point's
    per-launch times only: the first launch and the mean of the later ones are derived
    from them as the program now prints them; a point in one launch gets neither."""
    line = ('{"type":"measurement","benchmark":"uvm_touch","params":{"launches":3},"rep":0,'
            '"metrics":{"time_ms":0.5},"detail":{"launch_ms":[0.2,0.1,0.2]}}')
    m = parse_lines([line]).measurements[0]
    assert m.metrics["first_launch_ms"] == 0.2
    assert m.metrics["later_launch_ms"] == pytest.approx(0.15)
    printed = line.replace('"time_ms":0.5', '"time_ms":0.5,"first_launch_ms":0.25')
    assert parse_lines([printed]).measurements[0].metrics["first_launch_ms"] == 0.25
    one = '{"type":"measurement","benchmark":"uvm_touch","params":{},"rep":0,"metrics":{"time_ms":1}}'
    assert "first_launch_ms" not in parse_lines([one]).measurements[0].metrics
    bad = line.replace("[0.2,0.1,0.2]", "[0.2]")
    with pytest.raises(ResultsError, match=r"<output>:1: detail 'launch_ms'"):
        parse_lines([bad])
