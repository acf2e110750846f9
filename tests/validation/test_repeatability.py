"""Comparing two measured runs of the same cases (``hostlink validate repeat``)."""
from __future__ import annotations

import json

import pytest

from hostlink.model.cli.main import main
from hostlink.validation.repeatability import RepeatError, compare_runs, format_markdown
from hostlink.validation.results_io import make_table, unit_of, write_results

CHASE = "micro/ptr_chase/memory_mode=device,stride_B=128,footprint_B=4096,order=random,cache=cg"
COPY = "micro/memcpy/direction=h2d,size_B=1048576"
BFS = "bfs/kron14/merged/zerocopy/8B"
CASES = {
    CHASE: dict(kind="micro", benchmark="ptr_chase", memory_mode="device", stride_B=128,
                footprint_B=4096, order="random", cache="cg"),
    COPY: dict(kind="micro", benchmark="memcpy", direction="h2d", size_B=1 << 20),
    BFS: dict(kind="traversal", kernel="bfs", graph="kron14", variant="merged",
              memory_mode="zerocopy", id_bytes=8),
}


def write_run(path, values: dict[str, list[tuple[str, float]]]):
    rows = []
    for case, metrics in values.items():
        for rep, (metric, v) in enumerate(metrics):
            rows.append(("r", "e", case, "measured", metric, v, unit_of(metric), rep))
    write_results(make_table(rows), path)
    (path / "metadata.json").write_text(json.dumps({"cases": {c: CASES[c] for c in values}}))
    return path


@pytest.fixture
def runs(tmp_path):
    a = write_run(tmp_path / "a", {
        CHASE: [("lat_ns", 100.0), ("lat_ns", 110.0), ("lat_ns", 90.0), ("time_ms", 9.0)],
        COPY: [("bw_GBps", 50.0), ("bw_GBps", 50.0)],
        BFS: [("kernel_time_ms", 2.0), ("kernel_time_ms", 2.2)]})
    b = write_run(tmp_path / "b", {
        CHASE: [("lat_ns", 120.0), ("lat_ns", 120.0)],
        COPY: [("bw_GBps", 45.0), ("bw_GBps", 45.0)]})
    return a, b


def test_cases_compare_on_their_primary_metric(runs):
    a, b = runs
    cmp = compare_runs(a, b)
    by_case = cmp.cases.set_index("case")
    assert by_case.at[CHASE, "metric"] == "lat_ns"
    assert by_case.at[CHASE, "first"] == 100.0 and by_case.at[CHASE, "second"] == 120.0
    assert by_case.at[CHASE, "diff_pct"] == pytest.approx(20.0)
    assert by_case.at[CHASE, "first_spread_pct"] == pytest.approx(20.0)   # (110 - 90) / 100
    assert by_case.at[CHASE, "first_reps"] == 3
    assert by_case.at[COPY, "diff_pct"] == pytest.approx(-10.0)
    assert cmp.only_first == [BFS] and cmp.only_second == []
    groups = cmp.groups.set_index("group")
    assert groups.at["micro/ptr_chase/device", "cases"] == 1
    assert groups.at["micro/memcpy/h2d", "signed_median_diff_pct"] == pytest.approx(-10.0)
    md = format_markdown(cmp)
    assert "only in the first: 1" in md and "| `micro/memcpy/h2d` | bw_GBps | 1 | 10.0 |" in md


def test_runs_without_common_cases_are_an_error(tmp_path, runs):
    a, _ = runs
    c = write_run(tmp_path / "c", {BFS: [("kernel_time_ms", 2.0)]})
    with pytest.raises(RepeatError, match="no case in common"):
        compare_runs(write_run(tmp_path / "d", {COPY: [("bw_GBps", 1.0)]}), c)


def test_cli_writes_the_page_and_the_cases(tmp_path, runs, capsys):
    a, b = runs
    out = tmp_path / "out"
    assert main(["validate", "repeat", str(a), str(b), "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "2 cases in both runs" in text and "micro/ptr_chase/device" in text
    assert (out / "repeat.md").is_file() and (out / "repeat_cases.csv").read_text().count("\n") == 3
    assert main(["validate", "repeat", str(a), str(tmp_path / "nope")]) == 2
    assert "not a results directory" in capsys.readouterr().err
