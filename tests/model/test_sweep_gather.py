"""The gather workload kind in sweeps: points equal direct predictions; bad keys name
the file and key."""
from __future__ import annotations

import textwrap

import pytest

from hostlink.model.config import load_system
from hostlink.model.errors import ConfigError
from hostlink.model.predict import predict
from hostlink.model.sweep import load_results, run_sweep
from hostlink.traces.gather import GatherSpec, gather_workload


def write(tmp_path, text):
    path = tmp_path / "sweep.toml"
    path.write_text(textwrap.dedent(text))
    return path


SWEEP = """
    [sweep]
    name = "gather"
    system = "h200-pcie5"
    fidelity = "analytic"
    [workload]
    kind = "gather"
    table_B = 268435456
    rows = 20000
    [[axis]]
    key = "workload.row_B"
    values = [480, 1024]
    [[axis]]
    key = "workload.variant"
    values = ["naive", "aligned"]
    [[axis]]
    key = "workload.mode"
    values = ["zerocopy", "cpu_gather"]
"""


def test_gather_points_equal_direct_predictions(tmp_path):
    run_sweep(write(tmp_path, SWEEP), tmp_path / "out", jobs=1)
    wide = load_results(tmp_path / "out", wide=True)
    assert len(wide) == 8
    system = load_system("h200-pcie5")
    for _, row in wide.iterrows():
        spec = GatherSpec(int(row["workload.row_B"]), 268435456 // int(row["workload.row_B"]),
                          20000, row["workload.variant"], 4)
        direct = predict(gather_workload(spec, "uniform", system.gpu, exact_counts=False),
                         system, mode=row["workload.mode"], fidelity="analytic")
        assert row["bw_GBps"] == pytest.approx(direct.bw_GBps)
    # 480 B rows: the aligned variant sends fewer requests than the naive one
    zc = wide[(wide["workload.mode"] == "zerocopy") & (wide["workload.row_B"] == 480)]
    by = zc.set_index("workload.variant")["requests"]
    assert by["aligned"] < by["naive"]


def test_bad_gather_workloads_name_the_key(tmp_path):
    bad = SWEEP.replace("rows = 20000", "rows = 20000\n    lane_B = 16\n    row_B = 1000")
    bad = bad.replace('values = [480, 1024]', 'values = [1000]')
    with pytest.raises(ConfigError, match="workload.row_B"):
        run_sweep(write(tmp_path, bad), tmp_path / "out", jobs=1)
    sampled = SWEEP.replace("rows = 20000", 'rows = 20000\n    ids = "sampled"\n    fanouts = "10;25"')
    with pytest.raises(ConfigError, match="workload.fanouts"):
        run_sweep(write(tmp_path, sampled), tmp_path / "o2", jobs=1)
