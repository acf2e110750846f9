"""Per-launch comparison of a traversal case (hostlink.validation.launches)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hostlink.model.cli.main import main
from hostlink.model.config import load_any_system
from hostlink.model.errors import HostlinkError
from hostlink.validation import launches
from hostlink.validation.data_tree import run_dir

RUN = run_dir("traversal14_la1", "h200")
CAL = run_dir("uvm_launches", "h200") / "calibrated.toml"
CASE = "bfs/kron14/merged_aligned/uvm/8B"


def _line(source, rep, launch_ms, variant="merged_aligned", mode="uvm"):
    return json.dumps({"type": "measurement", "benchmark": "bfs",
                       "params": {"graph": "g", "variant": variant, "memory_mode": mode,
                                  "id_bytes": 8, "source": source},
                       "rep": rep, "metrics": {"time_ms": sum(launch_ms)},
                       "detail": {"launch_ms": launch_ms}})


def test_measured_launches_are_one_row_per_repetition_of_the_source(tmp_path):
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "a.jsonl").write_text("\n".join([
        _line(7, 0, [1.0, 5.0, 2.0]), _line(7, 1, [1.5, 4.0, 2.5]),
        _line(9, 0, [9.0, 9.0]), _line(7, 0, [3.0], mode="zerocopy")]) + "\n")
    got = launches.measured_launches(tmp_path, "bfs/g/merged_aligned/uvm/8B", 7)
    np.testing.assert_array_equal(got, [[1.0, 5.0, 2.0], [1.5, 4.0, 2.5]])
    with pytest.raises(HostlinkError, match="no measurement of case .* from source 8"):
        launches.measured_launches(tmp_path, "bfs/g/merged_aligned/uvm/8B", 8)
    (raw / "b.jsonl").write_text(_line(7, 2, [1.0, 2.0]) + "\n")
    with pytest.raises(HostlinkError, match=r"repetitions launch \[2, 3\] kernels"):
        launches.measured_launches(tmp_path, "bfs/g/merged_aligned/uvm/8B", 7)
    with pytest.raises(HostlinkError, match="no raw program output"):
        launches.measured_launches(tmp_path / "nowhere", "x", 7)


def test_a_committed_runs_launches_against_its_twin():
    """The table holds every launch of the first source: the measured median and
    range over its repetitions, the twin's per-launch kernel time (whose sum is the
    report's kernel time for that source) and the error."""
    from hostlink.validation.twin_common import load_run
    from hostlink.validation.twin_traversal import GraphSource, predict_traversal
    system = load_any_system(str(CAL))
    table = launches.compare_launches(RUN, CASE, system)
    run = load_run(RUN)
    source = int(run.cases[CASE]["sources"][0])
    measured = launches.measured_launches(RUN, CASE, source)
    assert table.attrs["source"] == source and len(table) == measured.shape[1] > 2
    np.testing.assert_allclose(table["measured_ms"], np.median(measured, axis=0))
    assert (table["measured_min_ms"] <= table["measured_ms"]).all()
    assert (table["measured_ms"] <= table["measured_max_ms"]).all()
    np.testing.assert_allclose(table["error_pct"],
                               100 * (table["predicted_ms"] / table["measured_ms"] - 1))
    rows = predict_traversal(CASE, run.cases[CASE], system, GraphSource(run),
                             max_sources=1)
    kernel_ms = next(v for m, v, _ in rows if m == "kernel_time_ms")
    assert table["predicted_ms"].sum() == pytest.approx(kernel_ms, rel=1e-9)
    # a UVM case carries the model's migration per launch: the edge list, at most
    # once in all (no eviction on the GPU's memory)
    edges = run.cases[CASE]
    assert (table["predicted_h2d_MB"] >= 0).all() and table["predicted_h2d_MB"].max() > 0
    csr_B = GraphSource(run).get(edges["graph"]).num_edges * 8
    assert table["predicted_h2d_MB"].sum() * 1e6 <= csr_B + 2 * 2**21


def test_the_cli_prints_writes_and_draws(tmp_path, capsys):
    csv, png = tmp_path / "l.csv", tmp_path / "l.png"
    assert main(["validate", "launches", str(RUN), CASE, "--system", str(CAL),
                 "--csv", str(csv), "--plot", str(png)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{CASE}, source ") and "sum of launches: measured" in out
    assert list(pd.read_csv(csv).columns) == ["launch", "measured_ms", "measured_min_ms",
                                             "measured_max_ms", "predicted_ms", "error_pct",
                                             "predicted_h2d_MB"]
    assert png.stat().st_size > 1000
    with pytest.raises(HostlinkError, match="source index 5 is out of range"):
        launches.compare_launches(RUN, CASE, load_any_system(str(CAL)), source_index=5)
    with pytest.raises(HostlinkError, match="no case 'bfs/none'"):
        launches.compare_launches(RUN, "bfs/none", load_any_system(str(CAL)))


def test_a_kernel_without_sources_compares_its_launches():
    # CC starts from every vertex: its repetitions are matched whatever the source
    table = launches.compare_launches(RUN, "cc/kron14/merged/uvm/8B", load_any_system(str(CAL)))
    assert table.attrs["source"] is None and len(table) >= 2
    assert np.isfinite(table["predicted_ms"]).all()
