"""Sweep graph workloads of every family (hostlink.traces.graphs.families): checked and
canonical, built as the families build them, and run like kron."""
from __future__ import annotations

import textwrap

import numpy as np
import pytest

from hostlink.model.errors import ConfigError
from hostlink.model.predict import predict
from hostlink.model.sweep import load_results, load_sweep, resolve_points, run_sweep
from hostlink.model.sweep import evaluate as sweep_evaluate
from hostlink.model.sweep.workloads import normalise_workload
from hostlink.traces.graphs.families import build_graph
from hostlink.traces.traversal import traversal_workload

SEED = 27491095  # GAP's default generator seed, the sweeps' default

CASES = [
    ({"graph": "rmat", "scale": 9, "degree": 4}, {"scale": 9, "degree": 4, "seed": SEED}),
    ({"graph": "urand", "scale": 7, "degree": 128}, {"scale": 7, "degree": 128, "seed": SEED}),
    ({"graph": "grid", "dims": "20x10", "ids": "local", "scale": 20},
     {"dims": "20x10", "ids": "local", "seed": SEED}),
    ({"graph": "road", "dims": "30x20"},
     {"dims": "30x20", "ids": "shuffled", "mean_degree": 2.5, "seed": SEED}),
    ({"graph": "dataset", "name": "ca-GrQc", "degree": 8}, {"name": "ca-GrQc", "seed": SEED}),
]


@pytest.mark.parametrize("given,params", CASES)
def test_each_family_normalises_to_its_own_keys(given, params):
    w = normalise_workload({"kind": "graph", **given}, "s.toml")
    family_keys = {"scale", "degree", "seed", "dims", "ids", "mean_degree", "name", "path"}
    assert {k: v for k, v in w.items() if k in family_keys} == params
    csr = sweep_evaluate.load_graph(w)
    want = build_graph(given["graph"], weighted=False, **params)
    assert np.array_equal(csr.offsets, want.offsets) and np.array_equal(csr.dst, want.dst)


def test_two_spellings_of_a_grid_are_one_workload():
    a = normalise_workload({"kind": "graph", "graph": "grid", "dims": "20X10"}, "s.toml")
    b = normalise_workload({"kind": "graph", "graph": "grid", "dims": "20x10",
                            "ids": "shuffled"}, "s.toml")
    assert a == b


@pytest.mark.parametrize("given,key", [
    ({"graph": "grid", "dims": "20by10"}, "dims"),
    ({"graph": "road", "dims": "30x20", "mean_degree": 3.95}, "mean_degree"),
    ({"graph": "road"}, "dims"),
    ({"graph": "dataset", "name": "nope"}, "name"),
    ({"graph": "grid", "dims": "4x4", "ids": "near"}, "ids"),
])
def test_bad_family_keys_name_the_key(given, key):
    with pytest.raises(ConfigError) as err:
        normalise_workload({"kind": "graph", **given}, "s.toml")
    assert f"s.toml: 'workload.{key}'" in str(err.value)


def test_road_sweep_points_equal_direct_predictions(tmp_path):
    path = tmp_path / "sweep.toml"
    path.write_text(textwrap.dedent("""
        [sweep]
        name = "road"
        system = "v100-pcie3"
        fidelity = "analytic"
        [workload]
        kind = "graph"
        graph = "road"
        dims = "40x30"
        kernel = "bfs"
        [[axis]]
        key = "workload.ids"
        values = ["shuffled", "local"]
    """))
    run_sweep(path, tmp_path / "out", jobs=1)
    wide = load_results(tmp_path / "out", wide=True)
    assert len(wide) == 2 and wide["run_id"].nunique() == 2
    for rp in resolve_points(load_sweep(path)):
        csr = build_graph("road", dims="40x30", ids=rp.workload["ids"], weighted=False)
        source = sweep_evaluate.pick_source(csr)
        work = traversal_workload(csr, "bfs", "merged_aligned", rp.system.gpu, source=source,
                                  id_bytes=4, max_device_edges=-1)
        want = predict(work, rp.system, mode="zerocopy", fidelity="analytic")
        row = wide[wide["run_id"] == rp.run_id].iloc[0]
        assert row["bw_GBps"] == pytest.approx(want.bw_GBps, rel=1e-12)
        assert row["requests"] == want.requests
