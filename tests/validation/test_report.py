"""Report arithmetic on a hand-made table, diagnosis, and the CLI end to end."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hostlink.model.cli.main import main
from hostlink.validation import report
from hostlink.validation.calibrate import same_run_dir
from hostlink.validation.report_judge import family_table
from hostlink.validation.report_render import family_section
from hostlink.validation.results_io import make_table



@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    """Measured-looking results made by the model (ld.cv host loads: no cache model involved)."""
    from hostlink.model.config import load_system
    from hostlink.validation.manifest import micro_case_name
    from hostlink.validation.results_io import write_results
    from hostlink.validation.twins import synthesize
    truth = load_system("h100-pcie5-datasheet", {"link.rtt_ns": 1300.0, "link.cpl_buffer_B": 400 * 128})
    cases = {}
    for stride in (128, 4096, 65536):
        naming = dict(memory_mode="zerocopy", stride_B=stride, footprint_B=64 << 20,
                      order="random", cache="cv")
        cases[micro_case_name("ptr_chase", naming)] = dict(kind="micro", benchmark="ptr_chase",
                                                           **naming, steps=300)
    for w in (1, 66, 264, 1056, 4224):
        naming = dict(pattern="coalesced", offset_B=0, bytes_per_lane=4, memory_mode="zerocopy",
                      warps=w, unroll=1, cache="cv")
        cases[micro_case_name("zc_warps", naming)] = dict(kind="micro", benchmark="zc_warps",
                                                          **naming, total_B=256 << 20,
                                                          max_per_warp_B=1 << 20)
    path = tmp_path_factory.mktemp("synthetic")
    write_results(synthesize(cases, truth, fidelity="analytic", noise_pct=1.0, seed=7,
                             max_requests=8192), path)
    (path / "metadata.json").write_text(json.dumps({"cases": cases}))
    return path


def _table(rows, kind):
    return make_table([("r", "e", c, kind, m, v, u, rep) for c, m, v, u, rep in rows])


def test_error_sign_median_and_mape():
    measured = _table([("a", "bw_GBps", 10.0, "GB/s", 0), ("a", "bw_GBps", 12.0, "GB/s", 1),
                       ("a", "bw_GBps", 11.0, "GB/s", 2), ("b", "lat_ns", 100.0, "ns", 0),
                       ("c", "time_ms", 0.0, "ms", 0), ("d", "time_ms", 5.0, "ms", 0)], "measured")
    predicted = _table([("a", "bw_GBps", 13.2, "GB/s", 0), ("b", "lat_ns", 90.0, "ns", 0),
                        ("c", "time_ms", 1.0, "ms", 0)], "des")
    s = report.summarise(measured, predicted)
    assert list(s.columns) == list(report.SUMMARY_COLUMNS)
    rows = s.set_index("case")
    assert rows.loc["a", "measured"] == 11.0                       # median over reps
    assert rows.loc["a", "error_pct"] == pytest.approx(20.0)       # predicted above measured: +
    assert rows.loc["b", "error_pct"] == pytest.approx(-10.0)      # predicted below measured: -
    assert "c" not in rows.index and "d" not in rows.index         # zero measured; no prediction
    assert report.mape(s["error_pct"]) == pytest.approx(15.0)
    assert np.isnan(report.mape([]))


def test_targets_by_group():
    cal = {"micro/zc_warps"}
    assert report.target_for("micro/zc_warps", cal) == ("calibration", None)
    assert report.target_for("micro/zc_read/coalesced", cal) == ("held-out", 10.0)
    assert report.target_for("micro/uvm_touch/readmostly/seq", cal)[1] == 25.0
    assert report.target_for("micro/uvm_touch/accessedby/seq", cal)[1] == 10.0
    assert report.target_for("traversal/zerocopy", cal) == ("traversal", 15.0)
    assert report.target_for("traversal/uvm", cal) == ("traversal", 25.0)
    assert report.target_for("traversal/device", cal)[1] is None


def test_cases_no_fit_used_are_held_out():
    cal = {"micro/zc_read/random", "micro/zc_warps"}
    assert report.target_for("micro/zc_read/random (not fitted)", cal) == (
        "held-out (not fitted)", 10.0)
    assert report.target_for("micro/uvm_touch/none/seq (not fitted)", {"micro/uvm_touch/none/seq"}) \
        == ("held-out (UVM first touch, not fitted)", 25.0)
    record = {"results_dir": "runs/a", "fits": [
        {"name": "translation", "groups": ["micro/zc_read/random"],
         "residuals_pct": {"big": 1.0, "huge": -2.0}},
        {"name": "requester_limit", "groups": ["micro/zc_warps"], "residuals_pct": {}}]}
    fitted = report.fitted_cases(record, "runs/a")
    assert fitted == {"micro/zc_read/random": {"big", "huge"}}   # no residuals: all fitted
    assert report.fitted_cases(record, "runs/b") == {}           # fitted on another run
    assert report.fitted_cases(None, "runs/a") == {}
    # a record written from the repository root, read from elsewhere (a notebook's folder)
    assert same_run_dir("runs/a", Path.cwd() / "runs" / "a")
    assert same_run_dir("runs/a", "/x/results/runs/a")
    assert not same_run_dir("runs/a", "/x/runs/ab")
    ann = pd.DataFrame({"case": ["big", "huge", "small", "w1", "w2"],
                        "group": ["micro/zc_read/random"] * 3 + ["micro/zc_warps"] * 2,
                        "metric": "bw_GBps", "primary": True, "error_pct": [1.0, -2.0, 300.0, 2, 4],
                        "measured": 1.0, "predicted": 1.0, "unit": "GB/s",
                        "params": [{}] * 5})
    marked = report.mark_not_fitted(ann, fitted)
    assert list(marked["group"]) == ["micro/zc_read/random"] * 2 + [
        "micro/zc_read/random (not fitted)"] + ["micro/zc_warps"] * 2
    stats = {s.group: s for s in report.group_stats(marked, cal)}
    assert stats["micro/zc_read/random"].role == "calibration"
    assert stats["micro/zc_read/random"].mape_pct == pytest.approx(1.5)
    left = stats["micro/zc_read/random (not fitted)"]
    assert (left.role, left.n, left.passed) == ("held-out (not fitted)", 1, False)
    # the effects of the group it came from name what the model lacks
    assert "64-bit hash" in " ".join(report.diagnose(left, marked[marked["group"] == left.group]))


def test_diagnosis_names_the_parameter_the_error_follows():
    cases = {f"micro/zc_read/pattern=random,region_B={r}": {"kind": "micro", "benchmark": "zc_read",
                                                            "pattern": "random", "region_B": r}
             for r in (1 << 20, 1 << 26, 1 << 30, 1 << 34)}
    errs = [1.0, 5.0, 80.0, 400.0]
    s = pd.DataFrame({"case": list(cases), "metric": "bw_GBps", "unit": "GB/s",
                      "measured": 1.0, "predicted": [1 + e / 100 for e in errs], "error_pct": errs})
    ann = report.annotate(s, cases)
    (st,) = report.group_stats(ann, set())
    assert st.group == "micro/zc_read/random" and st.passed is False
    assert st.mape_pct == pytest.approx(np.mean(errs))
    text = " ".join(report.diagnose(st, ann))
    assert "too fast" in text and "`region_B`" in text and "translation" in text


def test_diagnosis_splits_the_error_by_cache_operator():
    # strided reads with ld.cv from many warps miss by far more than the default
    # operator's (validation/experiments/cv_pages/runs/h100): the diagnosis says so and names it
    cases = {f"micro/zc_warps/pattern=strided,warps={w},cache={c}": {
        "kind": "micro", "benchmark": "zc_warps", "pattern": "strided", "chunk_B": 4096,
        "warps": w, "cache": c} for w in (1, 16) for c in ("default", "cv")}
    errs = [3.0, 8.0, -4.0, 250.0]
    s = pd.DataFrame({"case": list(cases), "metric": "bw_GBps", "unit": "GB/s",
                      "measured": 1.0, "predicted": [1 + e / 100 for e in errs], "error_pct": errs})
    ann = report.annotate(s, cases)
    (st,) = report.group_stats(ann, set())
    text = " ".join(report.diagnose(st, ann))
    assert "Mean error by cache: default -0.5%, cv +129.0%." in text
    assert "cv_pages" in text


def _diagnosed(cases: dict, metric: str, unit: str, measured, predicted):
    """The one group of ``cases`` measured and predicted so, and its diagnosis's text."""
    s = pd.DataFrame({"case": list(cases), "metric": metric, "unit": unit,
                      "measured": measured, "predicted": predicted})
    s["error_pct"] = 100 * (s["predicted"] / s["measured"] - 1)
    ann = report.annotate(s, cases)
    (st,) = report.group_stats(ann, set())
    return st, " ".join(report.diagnose(st, ann))


def test_remote_reads_of_managed_memory_are_not_diagnosed_as_faults():
    # AccessedBy first touch reads host memory over the link and migrates nothing: its
    # misses (the H100's first_run: random lines 10% slower than the twin's pinned path)
    # name the host's per-page cost, not the fault service's
    cases = {f"micro/uvm_touch/size_B={n},pattern=random,advice=accessedby": {
        "kind": "micro", "benchmark": "uvm_touch", "pattern": "random", "size_B": n,
        "advice": "accessedby"} for n in (1 << 26, 1 << 29)}
    st, text = _diagnosed(cases, "time_ms", "ms", [1.468, 11.66], [1.320, 10.47])
    assert st.group == "micro/uvm_touch/accessedby/random" and st.passed is False
    assert "too fast" in text and "4 KiB page" in text and "fault" not in text


def test_coalesced_reads_of_device_memory_are_diagnosed_by_the_drams_rate():
    # the H100's first_run: device memory streamed 2876 GB/s where the twin, at the
    # datasheet's 3350, gives 3287; pinned host memory 46.1 GB/s against 51.3
    # (validation/experiments/first_run/runs/h100/summary.csv)
    cases = {f"micro/zc_read/pattern=coalesced,offset_B=0,memory_mode={m}": {
        "kind": "micro", "benchmark": "zc_read", "pattern": "coalesced", "offset_B": 0,
        "memory_mode": m} for m in ("device", "zerocopy")}
    st, text = _diagnosed(cases, "bw_GBps", "GB/s", [2876.26, 46.13], [3286.97, 51.29])
    assert st.group == "micro/zc_read/coalesced" and st.passed is False
    assert "too fast" in text and "gpu.device_bw_GBps" in text and "gpu.dram_lat_ns" in text
    # and where the rate comes from: the calibrate step that fits it on such reads
    assert "device_stream" in text
    assert "sm_request_ns" not in text


def test_strided_reads_too_fast_name_the_hosts_rate_and_the_measured_l1_table():
    cases = {f"micro/zc_read/pattern=strided,chunk_B={c}": {
        "kind": "micro", "benchmark": "zc_read", "pattern": "strided", "chunk_B": c}
        for c in (128, 512, 4096)}
    errs = [14.0, 12.0, 16.0]
    _, text = _diagnosed(cases, "bw_GBps", "GB/s", 1.0, [1 + e / 100 for e in errs])
    assert "too fast" in text and "32 B reads" in text and "model/l1_losses.py" in text
    _, text = _diagnosed(cases, "bw_GBps", "GB/s", 1.0, [1 - e / 100 for e in errs])
    assert "too slow" in text and "tag window" in text and "keeps more" in text


def test_groups_without_a_target_far_off_are_diagnosed():
    # device-memory traversals have no target; far off, the report still says what the
    # model lacks for them (the GPU's own work: validation/experiments/device_work/runs/h100)
    cases = {f"bfs/kron21/{v}/device/8B": {"kind": "traversal", "kernel": "bfs",
                                          "graph": "kron21", "variant": v,
                                          "memory_mode": "device", "id_bytes": 8}
             for v in ("merged", "chunked")}
    s = pd.DataFrame({"case": list(cases), "metric": "kernel_time_ms", "unit": "ms",
                      "measured": 4.0, "predicted": 1.5, "error_pct": -62.5})
    ann = report.annotate(s, cases)
    (st,) = report.group_stats(ann, set())
    assert st.group == "traversal/device" and st.target_pct is None and st.passed is None
    kw = dict(title="t", system_name="s", fidelity="des", calibration=None,
              results_dir="r", unpredicted=[])
    text = report.markdown(ann, [st], **kw)
    assert "What the model lacks here" in text and "issue stage" in text
    close = ann.assign(error_pct=-10.0)
    assert "What the model lacks here" not in report.markdown(
        close, report.group_stats(close, set()), **kw)


def test_each_graph_is_judged_against_its_family_target_and_named_its_effect():
    # per graph and placement: zero-copy 10%, UVM and device memory 20%; a graph that
    # misses is named with its group's effect for the sign of its own error
    rows = [("bfs/dense/merged/device/8B", 0.2, 0.36),      # +80%: too slow
            ("bfs/dense/naive/device/8B", 1.0, 1.1),        # +10%
            ("bfs/road/naive/device/8B", 10.0, 7.0),        # -30%: too fast
            ("bfs/road/naive/zerocopy/8B", 10.0, 10.5),     # +5%
            ("bfs/road/naive/registered/8B", 10.0, 9.0),    # -10%: zero-copy too
            ("bfs/road/naive/uvm/8B", 10.0, 12.5)]          # +25%
    s = pd.DataFrame([{"case": c, "metric": "kernel_time_ms", "unit": "ms", "measured": m,
                       "predicted": p, "error_pct": 100 * (p - m) / m} for c, m, p in rows])
    # the road graph's zero-copy cases ran 1000 launches (10 us each); the others no count
    s = pd.concat([s, pd.DataFrame([{"case": c, "metric": "iterations", "unit": "1",
                                     "measured": 1000.0, "predicted": 1000.0, "error_pct": 0.0}
                                    for c, _, _ in rows[3:5]])], ignore_index=True)
    ann = report.annotate(s, {})
    t = family_table(ann).set_index(["graph", "placement"])
    assert t.loc[("dense", "device"), "mape_pct"] == pytest.approx(45.0)
    assert t.loc[("dense", "device"), "worst_pct"] == pytest.approx(80.0)
    assert t.loc[("road", "zerocopy"), "cases"] == 2
    assert t.loc[("road", "zerocopy"), "mape_pct"] == pytest.approx(7.5)
    assert t.loc[("road", "uvm"), "target_pct"] == 20.0
    assert t.loc[("road", "zerocopy"), "launch_us"] == pytest.approx(10.0)
    # the band of 10 us launches of the naive walk; device memory its own, and a case
    # without launches takes its mode's pooled band, or its variant's where wider
    from hostlink.model.bands import half_width_pct, spread_pct
    short = half_width_pct(spread_pct(), "zerocopy", 10.0, "naive")
    assert t.loc[("road", "zerocopy"), "band_pct"] == pytest.approx(short)
    dev = spread_pct()["device"]
    assert t.loc[("dense", "device"), "band_pct"] == pytest.approx(np.mean([
        dev["half_width_pct"], max(dev["half_width_pct"],
                                   dev["by_variant"]["naive"]["half_width_pct"])]))
    uvm = spread_pct()["uvm"]
    assert t.loc[("road", "uvm"), "band_pct"] == max(
        uvm["half_width_pct"], uvm["by_variant"]["naive"]["half_width_pct"])
    lines = family_section(ann)
    band = t.loc[("dense", "device"), "band_pct"]
    assert (f"| dense | device | 2 | 45 | +45.0 | +80.0 | 20 | n/a | ±{band:.1f} | **misses** |"
            in lines)
    assert f"| road | zerocopy | 2 | 7.5 | -2.5 | -10.0 | 10 | 10 | ±{short:.1f} | meets |" in lines
    named = [line for line in lines if line.startswith("- Too ")]
    assert len(named) == 3
    slow, fast = (next(line for line in named
                       if line.startswith(f"- Too {w} in `traversal/device`"))
                  for w in ("slow", "fast"))
    assert "(dense 45.0%)" in slow and "L2" in slow
    assert "(road 30.0%)" in fast and "issue stage" in fast
    assert any(line.startswith("- Too slow in `traversal/uvm` (road 25.0%)") for line in named)
    kw = dict(title="t", system_name="s", fidelity="des", calibration=None,
              results_dir="r", unpredicted=[])
    assert "## MAPE per graph" in report.markdown(ann, report.group_stats(ann, set()), **kw)
    # every graph within its targets: the table alone
    close = ann.assign(error_pct=ann["error_pct"].clip(-5, 5))
    assert not any(line.startswith("- Too ") for line in family_section(close))
    # no traversal cases: no section
    micro = {"micro/zc_read/pattern=coalesced,chunk_B=128": {
        "kind": "micro", "benchmark": "zc_read", "pattern": "coalesced", "chunk_B": 128}}
    m = pd.DataFrame({"case": list(micro), "metric": "bw_GBps", "unit": "GB/s",
                      "measured": 40.0, "predicted": 44.0, "error_pct": 10.0})
    assert family_section(report.annotate(m, micro)) == []


def test_report_cli_end_to_end(tmp_path, capsys, data):
    cal = tmp_path / "cal" / "calibrated.toml"
    assert main(["validate", "calibrate", str(data), "--system", "h100-pcie5-datasheet", "--fidelity",
                 "analytic", "--steps", "host_round_trip,requester_limit", "--max-requests", "8192",
                 "--out", str(cal), "--quiet"]) == 0
    out = tmp_path / "rep"
    assert main(["validate", "report", str(data), "--system", str(cal), "--fidelity", "analytic",
                 "--only", "zc_warps", "--max-requests", "8192", "--out", str(out), "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert "micro/zc_warps" in printed and "fit" in printed
    summary = report.read_summary(out / "summary.csv")
    assert set(summary["case"].str.split("/").str[1]) == {"zc_warps"}
    warps = summary[summary["case"].str.startswith("micro/zc_warps") & (summary["metric"] == "bw_GBps")]
    assert report.mape(warps["error_pct"]) < 3.0                   # the calibrated group fits
    md = (out / "report.md").read_text()
    assert "| `micro/zc_warps` | calibration |" in md
    assert "calibrated from microbenchmark groups: `micro/ptr_chase/host`, `micro/zc_warps`" in md
    assert "(not fitted)`" not in md.split("## MAPE per group")[1]   # every case was fitted
    for name in ("predicted_vs_measured", "error_by_group", "mape_by_group"):
        assert (out / "plots" / f"{name}.png").stat().st_size > 5000
    # a case the fit left out is judged as held out (the report re-rendered from its
    # stored predictions)
    record_path = cal.with_name("calibration.json")
    record = json.loads(record_path.read_text())
    (fit,) = [f for f in record["fits"] if f["name"] == "requester_limit"]
    left_out = sorted(fit["residuals_pct"])[0]
    del fit["residuals_pct"][left_out]
    record_path.write_text(json.dumps(record))
    assert main(["validate", "report", str(data), "--system", str(cal), "--fidelity", "analytic",
                 "--only", "zc_warps", "--max-requests", "8192", "--out", str(out), "--quiet"]) == 0
    md = (out / "report.md").read_text()
    assert "| `micro/zc_warps (not fitted)` | held-out (not fitted) | bw_GBps | 1 |" in md
    assert f"| `{left_out}` |" in md.split("### `micro/zc_warps (not fitted)`")[1]
    # rendered again from summary.csv alone: same numbers, nothing predicted
    summary_before = (out / "summary.csv").read_bytes()
    record["fits"] = [f for f in record["fits"] if f["name"] != "requester_limit"]
    record_path.write_text(json.dumps(record))
    code = json.loads((out / "predictions.json").read_text())["code"]["micro"]
    for p in out.glob("predictions.parquet"):
        p.unlink()                                  # the rows are not needed
    capsys.readouterr()
    assert main(["validate", "report", str(data), "--system", str(cal), "--fidelity", "analytic",
                 "--only", "zc_warps", "--max-requests", "8192", "--out", str(out), "--quiet",
                 "--from-summary"]) == 0
    assert "nothing predicted" in capsys.readouterr().out
    assert (out / "summary.csv").read_bytes() == summary_before
    md = (out / "report.md").read_text()
    assert "(not fitted)`" not in md.split("## MAPE per group")[1]   # no fit record: all fitted
    assert f"--from-summary`; predicted with code sha256 micro {code[:12]}" in md
    (out / "predictions.json").unlink()
    assert main(["validate", "report", str(data), "--system", str(cal), "--fidelity", "analytic",
                 "--only", "zc_warps", "--max-requests", "8192", "--out", str(out), "--quiet",
                 "--from-summary"]) == 0
    assert "no prediction record names every case" in (out / "report.md").read_text()
    assert main(["validate", "report", str(data), "--system", str(cal), "--out",
                 str(tmp_path / "empty"), "--quiet", "--from-summary"]) == 2
    assert "no summary to render again" in capsys.readouterr().err
    assert main(["validate", "report", str(data), "--system", str(cal), "--out", str(out),
                 "--quiet", "--from-summary", "--fresh"]) == 2


def test_report_without_calibration_record_and_bad_inputs(tmp_path, capsys, data):
    rc = main(["validate", "report", str(data), "--system", "h100-pcie5-datasheet", "--fidelity", "analytic",
               "--only", "ptr_chase", "--out", str(tmp_path), "--quiet"])
    assert rc == 0
    assert "every microbenchmark group counts as held out" in (tmp_path / "report.md").read_text()
    assert main(["validate", "report", str(data), "--system", "h100-pcie5-datasheet",
                 "--calibration", str(tmp_path / "missing.json"), "--quiet"]) == 2
    assert "no such calibration record" in capsys.readouterr().err
    assert main(["validate", "report", str(data), "--system", "h100-pcie5-datasheet", "--only", "nothing-matches",
                 "--quiet"]) == 2


def _uvm_run(tmp_path, system):
    from hostlink.validation.results_io import write_results
    from hostlink.validation.twins import synthesize
    cases = {f"micro/uvm_touch/size_B={8 << 20},pattern={p},advice=none":
             dict(kind="micro", benchmark="uvm_touch", size_B=8 << 20, pattern=p, advice="none",
                  warps=1024) for p in ("seq", "random")}
    write_results(synthesize(cases, system, fidelity="analytic", reps=1), tmp_path)
    (tmp_path / "metadata.json").write_text(json.dumps({"cases": cases}))


def test_report_uses_the_systems_uvm_costs(tmp_path):
    # measurements made with per-block and per-page costs: predicted with a system that
    # carries them they agree, without them the model is too fast
    from hostlink.model.config import load_system, write_resolved
    costly = load_system("h100-pcie5-datasheet", {"uvm.block_us": 30.0, "uvm.move_page_us": 0.5})
    _uvm_run(tmp_path, costly)
    toml = tmp_path / "costly.toml"
    write_resolved(costly, toml)
    res = report.build_report(tmp_path, toml, fidelity="analytic", out_dir=tmp_path / "a")
    s = res["summary"]
    assert report.mape(s[s["metric"] == "time_ms"]["error_pct"]) < 1e-6
    res = report.build_report(tmp_path, "h100-pcie5-datasheet", fidelity="analytic", out_dir=tmp_path / "b")
    s = res["summary"]
    assert (s[s["metric"] == "time_ms"]["error_pct"] < -10).all()


def test_traversal_cases_report_the_models_run_time(tmp_path):
    from hostlink.traces.graphs.generators import generate
    from hostlink.validation.results_io import write_results
    csr = generate("kron", 8, 16, 27491095, weighted=True, id_bytes=8, name="kron8")
    source = int(np.argmax(np.diff(csr.offsets)))              # the hub: it reaches the rest
    case = "bfs/kron8/merged_aligned/zerocopy/8B"
    cases = {case: dict(kind="traversal", kernel="bfs", graph="kron8", variant="merged_aligned",
                        memory_mode="zerocopy", id_bytes=8, reps=1, sources=[source])}
    rows = [("r", "e", case, "measured", "kernel_time_ms", 0.05, "ms", 0)]
    write_results(make_table(rows), tmp_path)
    meta = {"cases": cases, "graphs": {"kron8": {"kind": "kron", "scale": 8, "degree": 16,
                                                 "seed": 27491095}}}
    (tmp_path / "metadata.json").write_text(json.dumps(meta))
    res = report.build_report(tmp_path, "h200-pcie5-datasheet", fidelity="des", out_dir=tmp_path / "o",
                              notes=["made by a test"])
    t = res["timings"]
    assert list(t["case"]) == [case]
    assert t["model_s"].iloc[0] > 0 and t["requests"].iloc[0] > 0
    assert t["model_over_kernel"].iloc[0] == pytest.approx(t["model_s"].iloc[0] / 0.05e-3)
    md = (tmp_path / "o" / "report.md").read_text()
    assert "## Model run time" in md and f"`{case}`" in md and "- made by a test" in md


def test_sampled_sources_compare_with_their_own_measurements(tmp_path):
    from hostlink.traces.graphs.generators import generate
    from hostlink.validation.results_io import write_results
    csr = generate("kron", 8, 16, 27491095, weighted=True, id_bytes=8, name="kron8")
    hubs = [int(v) for v in np.argsort(np.diff(csr.offsets))[-2:]]
    case = "bfs/kron8/merged_aligned/zerocopy/8B"
    cases = {case: dict(kind="traversal", kernel="bfs", graph="kron8", variant="merged_aligned",
                        memory_mode="zerocopy", id_bytes=8, reps=2, sources=hubs)}
    # rep = source_index * reps + repetition: source 0 -> reps 0, 1; source 1 -> 2, 3
    rows = [("r", "e", case, "measured", "kernel_time_ms", v, "ms", rep)
            for rep, v in enumerate((0.05, 0.07, 0.5, 0.7))]
    write_results(make_table(rows), tmp_path)
    (tmp_path / "metadata.json").write_text(json.dumps({"cases": cases, "graphs": {
        "kron8": {"kind": "kron", "scale": 8, "degree": 16, "seed": 27491095}}}))
    res = report.build_report(tmp_path, "h200-pcie5-datasheet", fidelity="analytic", out_dir=tmp_path / "o",
                              max_sources=1)
    s = res["summary"].set_index("metric")
    assert s.loc["kernel_time_ms", "measured"] == pytest.approx(0.06)
    assert "first 1 source(s)" in (tmp_path / "o" / "report.md").read_text()
    full = report.build_report(tmp_path, "h200-pcie5-datasheet", fidelity="analytic", out_dir=tmp_path / "f")
    assert full["summary"].set_index("metric").loc["kernel_time_ms", "measured"] == \
        pytest.approx(0.285)


def test_a_graphs_band_is_the_mean_of_its_cases_own():
    # long launches: merged_aligned takes the long class's band, the naive walk its own
    rows = [("bfs/g/naive/zerocopy/8B", 10.0, 11.0),
            ("bfs/g/merged_aligned/zerocopy/8B", 2.0, 2.1)]
    s = pd.DataFrame([{"case": c, "metric": "kernel_time_ms", "unit": "ms", "measured": m,
                       "predicted": p, "error_pct": 100 * (p - m) / m} for c, m, p in rows])
    s = pd.concat([s, pd.DataFrame([{"case": c, "metric": "iterations", "unit": "1",
                                     "measured": 2.0, "predicted": 2.0, "error_pct": 0.0}
                                    for c, _, _ in rows])], ignore_index=True)
    t = family_table(report.annotate(s, {})).set_index(["graph", "placement"])
    from hostlink.model.bands import spread_pct
    zc = spread_pct()["zerocopy"]
    want = (zc["by_variant"]["naive"]["half_width_pct"]
            + zc["by_launch"][-1]["half_width_pct"]) / 2
    assert t.loc[("g", "zerocopy"), "band_pct"] == pytest.approx(want)
