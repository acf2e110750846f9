"""The families experiment's summary: errors per graph and placement, and winners."""
from __future__ import annotations

import pandas as pd
import pytest
from probe_files import load_script

from hostlink.validation.data_tree import script_path


@pytest.fixture(scope="module")
def summary_module():
    return load_script(script_path("families", "winners_summary.py"))


def _summary(rows):
    return pd.DataFrame([{"case": c, "metric": "kernel_time_ms", "unit": "ms", "measured": m,
                          "predicted": p, "error_pct": 100 * (p - m) / m} for c, m, p in rows])


def test_errors_are_per_graph_and_placement(summary_module):
    s = _summary([("bfs/road/naive/zerocopy/8B", 10.0, 11.0),
                  ("bfs/road/naive/registered/8B", 10.0, 8.0),
                  ("sssp/road/naive/zerocopy/4B", 10.0, 10.0),
                  ("bfs/road/naive/uvm/8B", 10.0, 13.0),
                  ("cc/dense/merged_aligned/device/8B", 2.0, 1.0)])
    e = summary_module.errors(s).set_index(["graph", "placement"])
    assert e.loc[("road", "zerocopy"), "cases"] == 3
    assert e.loc[("road", "zerocopy"), "mape_pct"] == pytest.approx(10.0)
    assert e.loc[("road", "zerocopy"), "bias_pct"] == pytest.approx(-10 / 3)
    assert e.loc[("road", "zerocopy"), "worst_pct"] == pytest.approx(-20.0)
    assert e.loc[("road", "uvm"), "mape_pct"] == pytest.approx(30.0)
    assert e.loc[("dense", "device"), "worst_pct"] == pytest.approx(-50.0)


def test_the_predicted_winner_is_judged_by_its_measured_time(summary_module):
    s = _summary([("bfs/road/naive/zerocopy/8B", 10.0, 12.0),
                  ("bfs/road/merged_aligned/zerocopy/8B", 10.5, 9.0),
                  ("bfs/road/naive/device/8B", 20.0, 30.0),
                  ("bfs/road/naive/zerocopy/4B", 1.0, 1.0)])   # 4 B ids: not an option
    (w,) = summary_module.winners(s).to_dict("records")
    assert w["measured_winner"] == "naive/zerocopy"
    assert w["predicted_winner"] == "merged_aligned/zerocopy"
    assert w["slower_pct"] == pytest.approx(5.0)
    assert w["options"] == 3


def test_a_partial_report_replaces_its_cases_only(summary_module):
    s = _summary([("bfs/road/naive/zerocopy/8B", 10.0, 12.0),
                  ("bfs/road/balanced/zerocopy/8B", 10.0, 5.0)])
    newer = _summary([("bfs/road/balanced/zerocopy/8B", 10.0, 9.0)])
    both = summary_module.replaced(s, newer).set_index("case")
    assert len(both) == 2
    assert both.loc["bfs/road/balanced/zerocopy/8B", "predicted"] == 9.0
    assert both.loc["bfs/road/naive/zerocopy/8B", "predicted"] == 12.0


def test_later_partial_reports_replace_earlier_ones(summary_module, tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    _summary([("bfs/road/naive/zerocopy/8B", 10.0, 12.0),
              ("bfs/road/balanced/zerocopy/8B", 10.0, 5.0)]).to_csv(run / "summary.csv")
    _summary([("bfs/road/balanced/zerocopy/8B", 10.0, 8.0),
              ("bfs/road/naive/zerocopy/8B", 10.0, 11.0)]).to_csv(tmp_path / "a.csv")
    _summary([("bfs/road/balanced/zerocopy/8B", 10.0, 9.0)]).to_csv(tmp_path / "b.csv")
    out = tmp_path / "out"
    out.mkdir()
    assert summary_module.main([str(run), "--replace", str(tmp_path / "a.csv"), "--replace",
                                str(tmp_path / "b.csv"), "--out", str(out)]) == 0
    (e,) = pd.read_csv(out / "errors.csv").to_dict("records")
    assert e["mape_pct"] == pytest.approx(10.0)       # naive +10% (a), balanced -10% (b)
    assert not (run / "errors.csv").exists()
    # a replacement without a folder of its own, or a stray argument: usage, status 2
    assert summary_module.main([str(run), "--replace", str(tmp_path / "a.csv")]) == 2
    assert summary_module.main([str(run), "--only", "x"]) == 2
    assert "usage" in capsys.readouterr().err


def test_the_combined_rows_go_to_a_folder_of_their_own(summary_module, tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    _summary([("bfs/road/naive/zerocopy/8B", 10.0, 12.0),
              ("bfs/road/balanced/zerocopy/8B", 10.0, 5.0)]).to_csv(run / "summary.csv")
    _summary([("bfs/road/balanced/zerocopy/8B", 10.0, 9.0)]).to_csv(tmp_path / "a.csv")
    out = tmp_path / "latest"
    argv = [str(run), "--replace", str(tmp_path / "a.csv"), "--out", str(out), "--summary", "yes"]
    assert summary_module.main(argv) == 0
    combined = pd.read_csv(out / "summary.csv").set_index("case")
    assert list(combined.columns) == ["metric", "unit", "measured", "predicted", "error_pct"]
    assert combined.loc["bfs/road/balanced/zerocopy/8B", "predicted"] == 9.0
    assert combined.loc["bfs/road/naive/zerocopy/8B", "predicted"] == 12.0
    # never over a report's own summary, and only with a folder to write to
    assert summary_module.main(argv) == 2
    assert summary_module.main([str(run), "--summary", "yes"]) == 2
    assert summary_module.main([str(run), "--out", str(tmp_path / "x"), "--summary", "no"]) == 2
    assert "exists" in capsys.readouterr().err


@pytest.fixture(scope="module")
def host_module():
    return load_script(script_path("families", "host_per_launch.py"))


def _with_launches(rows, launches):
    s = _summary(rows)
    its = pd.DataFrame([{"case": c, "metric": "iterations", "unit": "1", "measured": launches,
                         "predicted": launches, "error_pct": 0.0} for c, _, _ in rows])
    return pd.concat([s, its], ignore_index=True)


def test_host_reads_per_launch_are_zero_copy_less_device(host_module):
    s = _with_launches([("bfs/lux/chunked/zerocopy/8B", 14.0, 10.5),
                        ("bfs/lux/chunked/device/8B", 11.0, 10.0),
                        ("bfs/lux/naive/zerocopy/8B", 5.0, 5.0),    # no device case: left out
                        ("sssp/lux/chunked/device/8B", 1.0, 1.0)], 1000)
    (row,) = host_module.host_per_launch(s).to_dict("records")
    assert (row["graph"], row["variant"], row["ids"]) == ("lux", "chunked", "8B")
    assert row["device_us_measured"] == pytest.approx(11.0)
    assert row["host_adds_us_measured"] == pytest.approx(3.0)
    assert row["host_adds_us_predicted"] == pytest.approx(0.5)


def test_the_committed_table_shows_the_scan_hiding_host_reads(host_module):
    # the families run's BFS: chunked and balanced launches on the road-like graphs pay
    # 1-3 us a launch for their host reads on the GPU; the model hides them (under 1 us)
    from hostlink.validation.data_tree import run_dir
    report = run_dir("families", "h200") / "dispatch"
    t = host_module.host_per_launch(pd.read_csv(report / "summary.csv"))
    committed = pd.read_csv(report / "host_per_launch.csv")
    assert len(committed) == len(t)
    assert committed["host_adds_us_measured"].to_numpy() == pytest.approx(
        t["host_adds_us_measured"].to_numpy(), abs=1e-3)
    scans = t[t["variant"].isin(["chunked", "balanced"])
              & t["graph"].isin(["luxembourg_osm", "road_local", "road_shuffled", "grid3d"])]
    assert len(scans) == 8
    assert (scans["host_adds_us_measured"] > 0.9).all()
    assert (scans["host_adds_us_predicted"] < 0.9).all()


@pytest.fixture(scope="module")
def walks_module():
    return load_script(script_path("families", "walks_per_warp.py"))


def test_the_most_active_vertices_of_one_warp_per_level(walks_module):
    import numpy as np
    # warps of eight vertices: level 1 holds three of warp 0's and one of warp 1's,
    # level 2 two of warp 2's; -1: not reached
    level = np.full(24, -1, dtype=np.int32)
    level[0] = 0
    level[[1, 2, 5, 9]] = 1
    level[[16, 23]] = 2
    assert walks_module.most_active_per_warp(level, 4).tolist() == [1, 3, 2, 0]
    assert walks_module.most_active_per_warp(np.full(8, -1, np.int32), 2).tolist() == [0, 0]


@pytest.mark.parametrize("gpu", ["h200", "h100"])
def test_the_committed_table_shows_walks_in_turn_adding_up(walks_module, gpu):
    # luxembourg_osm's chunked launches: each more list one warp walks in turn adds to
    # what host memory costs the launch; the balanced walk, which reads a warp's lists
    # together, adds about the same whatever the count
    from hostlink.validation.data_tree import run_dir
    run = run_dir("families", gpu)
    t = walks_module.walks_per_warp(run, ["luxembourg_osm"])
    committed = pd.read_csv(run / "walks_per_warp.csv")
    committed = committed[committed["graph"] == "luxembourg_osm"]
    assert committed["host_adds_us"].to_numpy() == pytest.approx(
        t["host_adds_us"].to_numpy(), abs=1e-3)
    chunked = t[t["variant"] == "chunked"]["host_adds_us"].to_numpy()
    balanced = t[t["variant"] == "balanced"]["host_adds_us"].to_numpy()
    assert len(chunked) == 4 and (chunked[1:] - chunked[:-1] > 0.4).all()
    assert chunked[-1] - chunked[0] > 2.0 and balanced.max() - balanced.min() < 0.8


def test_the_walks_report_adds_the_host_reads_to_the_tests(host_module):
    # since the model adds the walks' host reads to the vertex tests, the chunked and
    # balanced launches on the road-like graphs gain what the GPU pays, in part
    from hostlink.validation.data_tree import run_dir
    graphs = ["luxembourg_osm", "road_local", "road_shuffled", "grid3d"]
    gaps = {}
    for report in ("dispatch", "walks"):
        folder = run_dir("families", "h200") / report
        t = host_module.host_per_launch(pd.read_csv(folder / "summary.csv"))
        committed = pd.read_csv(folder / "host_per_launch.csv")
        assert committed["host_adds_us_predicted"].to_numpy() == pytest.approx(
            t["host_adds_us_predicted"].to_numpy(), abs=1e-3)
        scans = t[t["variant"].isin(["chunked", "balanced"]) & t["graph"].isin(graphs)]
        assert len(scans) == 8
        gaps[report] = (scans["host_adds_us_predicted"]
                        - scans["host_adds_us_measured"]).abs().mean()
        if report == "walks":
            assert (scans["host_adds_us_predicted"] > 0.3).all()
    assert gaps["walks"] < 0.6 * gaps["dispatch"]


def test_a_run_without_its_raw_output_is_refused(walks_module, tmp_path, capsys):
    import shutil
    from hostlink.validation.data_tree import run_dir
    run = run_dir("families", "h100")
    for name in ("metadata.json", "results.parquet", "manifest.toml"):
        shutil.copy(run / name, tmp_path / name)
    assert walks_module.main([str(tmp_path), "--graphs", "ca_grqc"]) == 2
    assert "no raw program output" in capsys.readouterr().err
    assert walks_module.main([str(tmp_path / "nowhere")]) == 2
