"""The common figures: drawn from real sweep results (and a validation summary),
checked by the data they plot."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from hostlink.model import plots
from hostlink.model.cli.main import main
from hostlink.model.sweep import load_results, run_sweep

SWEEPS = __import__("pathlib").Path(__file__).resolve().parents[2] / "sim_configs" / "sweeps"


@pytest.fixture(scope="module")
def rtt_results(tmp_path_factory):
    out = tmp_path_factory.mktemp("rtt")
    run_sweep(SWEEPS / "rtt_by_tags.toml", out, jobs=1)
    return out


@pytest.fixture(scope="module")
def size_results(tmp_path_factory):
    out = tmp_path_factory.mktemp("size")
    run_sweep(SWEEPS / "size_by_gen.toml", out, jobs=1)
    return out


def _lines(fig):
    (ax,) = fig.axes
    return {line.get_label(): (line.get_xdata(), line.get_ydata()) for line in ax.lines}


def test_bw_vs_rtt_draws_one_line_per_tag_count(rtt_results):
    fig = plots.plot_kind(rtt_results, "bw-vs-rtt")
    lines = _lines(fig)
    assert len(lines) == 6 and "256" in lines
    assert fig.axes[0].get_legend().get_title().get_text() == "outstanding read tags (count)"
    wide = load_results(rtt_results, wide=True)
    sub = wide[wide["link.tags"] == 256].sort_values("link.rtt_ns")
    x, y = lines["256"]
    assert np.array_equal(np.asarray(x, float), sub["link.rtt_ns"].to_numpy(float))
    assert np.array_equal(np.asarray(y, float), sub["bw_GBps"].to_numpy(float))
    assert fig.axes[0].get_xlabel() == "read round trip (ns)"


def test_bw_vs_tags_uses_a_log2_axis(rtt_results):
    fig = plots.plot_kind(rtt_results, "bw-vs-tags")
    assert len(_lines(fig)) == 11          # one per RTT
    assert fig.axes[0].get_xscale() == "log"


def test_bw_vs_size_and_gen(size_results):
    by_size = _lines(plots.plot_kind(size_results, "bw-vs-size"))
    # the tags zipped with the generation do not add lines of their own
    assert sorted(by_size) == ["3", "4", "5", "6"]
    assert list(by_size["4"][0]) == [32, 64, 96, 128]
    fig = plots.plot_kind(size_results, "bw-vs-gen")
    by_gen = _lines(fig)
    # the mean size of the mix stands for the JSON list of sizes
    assert list(by_gen) == ["32", "64", "96", "128"]
    assert fig.axes[0].get_legend().get_title().get_text() == "request size (B)"


def test_a_parameter_that_was_not_swept_is_a_clear_error(rtt_results):
    with pytest.raises(plots.PlotError, match="link.gen"):
        plots.plot_kind(rtt_results, "bw-vs-gen")
    with pytest.raises(plots.PlotError, match="zerocopy"):
        plots.plot_kind(rtt_results, "zerocopy-vs-uvm")


def test_zerocopy_vs_uvm_bars():
    # a hand-made wide table: the figure must show exactly these values
    rows = []
    for gen, zc, uvm in ((3, 11.0, 8.0), (4, 20.0, 12.0)):
        for mode, bw in (("zerocopy", zc), ("uvm", uvm)):
            rows.append({"run_id": f"{gen}{mode}", "experiment": "e", "case": f"{gen}-{mode}",
                         "model_kind": "des", "rep": 0, "bw_GBps": bw, "link.gen": gen,
                         "mode": mode, "workload.mode": mode})
    df = pd.DataFrame(rows)
    df.attrs["metrics"] = ["bw_GBps"]
    fig = plots.plot_zerocopy_vs_uvm(df)
    (ax,) = fig.axes
    heights = [p.get_height() for p in ax.patches]
    assert heights == [11.0, 20.0, 8.0, 12.0]          # zerocopy bars, then uvm bars
    assert [t.get_text() for t in ax.get_xticklabels()] == ["3", "4"]


def test_predicted_vs_measured_from_a_summary(tmp_path):
    summary = tmp_path / "summary.csv"
    pd.DataFrame({
        "case": ["micro/zerocopy/128B", "micro/zerocopy/32B", "bfs/kron20/merged/zerocopy/4B",
                 "bfs/kron20/naive/uvm/4B", "bfs/kron20/naive/uvm/4B"],
        "metric": ["bw_GBps"] * 4 + ["time_ms"], "unit": ["GB/s"] * 4 + ["ms"],
        "measured": [50.0, 20.0, 10.0, 4.0, 3.0], "predicted": [55.0, 18.0, 10.0, 5.0, 3.3],
        "error_pct": [10.0, -10.0, 0.0, 25.0, 10.0]}).to_csv(summary, index=False)
    (tmp_path / "metadata.json").write_text(json.dumps(
        {"experiment": "tiny", "device": {"name": "NVIDIA H100 80GB HBM3"}}))
    fig = plots.plot_predicted_vs_measured(summary)
    bw, ms = fig.axes                   # a panel per unit: GB/s and ms never share axes
    assert bw.get_xlabel() == "measured (GB/s)" and ms.get_ylabel() == "predicted (ms)"
    points = {ln.get_label(): list(zip(ln.get_xdata(), ln.get_ydata())) for ln in bw.lines
              if ln.get_linestyle() == "None"}
    assert points == {"micro/zerocopy": [(50.0, 55.0), (20.0, 18.0)],
                      "bfs zerocopy": [(10.0, 10.0)], "bfs uvm": [(4.0, 5.0)]}
    assert "MAPE 11.2 %" in bw.get_title()      # (10 + 10 + 0 + 25) / 4
    assert "MAPE 10.0 %" in ms.get_title()
    # the run's GPU and experiment come from the metadata.json beside the summary
    assert "NVIDIA H100 80GB HBM3" in fig.get_suptitle() and "tiny" in fig.get_suptitle()


def test_predicted_vs_measured_rejects_other_tables(tmp_path):
    bad = tmp_path / "summary.csv"
    bad.write_text("a,b\n1,2\n")
    with pytest.raises(plots.PlotError, match="not a validation summary"):
        plots.plot_predicted_vs_measured(bad)


def test_cli_sweep_then_plot(tmp_path, capsys):
    sweep = tmp_path / "s.toml"
    sweep.write_text((SWEEPS / "rtt_by_tags.toml").read_text())
    out = tmp_path / "out"
    assert main(["sweep", str(sweep), "--out", str(out), "--jobs", "1"]) == 0
    printed = capsys.readouterr().out
    assert "66 points" in printed and "66 computed" in printed
    assert main(["sweep", str(sweep), "--out", str(out), "--dry-run"]) == 0
    assert "66 points" in capsys.readouterr().out
    png = tmp_path / "fig.png"
    assert main(["plot", str(out), "--kind", "bw-vs-rtt", "--out", str(png)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert main(["plot", str(out), "--kind", "bw-vs-tags"]) == 0
    assert (out / "plots" / "bw-vs-tags.png").is_file()
    # a figure the data cannot make: one line on stderr, exit 2
    assert main(["plot", str(out), "--kind", "bw-vs-gen"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "link.gen" in err


def test_cli_plot_predicted_vs_measured_folder(tmp_path, capsys):
    pd.DataFrame({"case": ["micro/a/1", "micro/a/2"], "metric": ["bw_GBps"] * 2,
                  "unit": ["GB/s"] * 2, "measured": [1.0, 2.0], "predicted": [1.1, 2.2],
                  "error_pct": [10.0, 10.0]}).to_csv(tmp_path / "summary.csv", index=False)
    assert main(["plot", str(tmp_path), "--kind", "predicted-vs-measured"]) == 0
    assert (tmp_path / "plots" / "predicted-vs-measured.png").is_file()


def test_mean_request_size():
    assert plots.mean_request_size(json.dumps([32, 128]), json.dumps([0.5, 0.5])) == 80.0
    assert np.isnan(plots.mean_request_size(None, None))


def test_two_experiments_in_one_folder_get_their_own_lines(tmp_path):
    out = tmp_path / "out"
    run_sweep(SWEEPS / "rtt_by_tags.toml", out, jobs=1)
    other = tmp_path / "other.toml"
    other.write_text((SWEEPS / "rtt_by_tags.toml").read_text()
                     .replace('name = "rtt_by_tags"', 'name = "other"')
                     .replace("[32, 64, 128, 256, 512, 768]", "[48, 96]"))
    run_sweep(other, out, jobs=1)
    both = _lines(plots.plot_kind(out, "bw-vs-rtt"))
    assert len(both) == 8 and "other, 48" in both
    one = _lines(plots.plot_kind(out, "bw-vs-rtt", experiment="other"))
    assert sorted(one) == ["48", "96"]
