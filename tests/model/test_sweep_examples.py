"""The example sweeps of sim_configs/sweeps/ run end to end and say what they should."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from hostlink.model.cli.main import main
from hostlink.model.sweep import load_results, load_sweep, resolve_points, run_sweep

SWEEPS = Path(__file__).resolve().parents[2] / "sim_configs" / "sweeps"


def test_every_example_sweep_checks(capsys):
    files = sorted(SWEEPS.glob("*.toml"))
    assert {f.stem for f in files} >= {"rtt_by_tags", "size_by_gen", "pcie_gen_by_variant"}
    for f in files:
        spec = load_sweep(f)
        resolved = resolve_points(spec)
        assert len({rp.run_id for rp in resolved}) == spec.num_points, f.name
        assert spec.description, f.name


def test_rtt_by_tags(tmp_path, capsys):
    assert main(["sweep", str(SWEEPS / "rtt_by_tags.toml"), "--out", str(tmp_path), "--jobs",
                 "2"]) == 0
    wide = load_results(tmp_path, wide=True)
    assert len(wide) == 6 * 11
    # Little's law where the tags bind (emogi_vldb2020 §3.3: bandwidth = tags x size / RTT)
    tags_bound = wide[wide["bw_GBps"] < wide["bw_link_GBps"]]
    assert len(tags_bound) > 30
    np.testing.assert_allclose(tags_bound["bw_GBps"],
                               tags_bound["link.tags"] * 128 / tags_bound["link.rtt_ns"])
    # more tags never hurt; a longer round trip never helps
    table = wide.pivot_table(index="link.tags", columns="link.rtt_ns", values="bw_GBps")
    assert (np.diff(table.to_numpy(), axis=0) >= -1e-9).all()
    assert (np.diff(table.to_numpy(), axis=1) <= 1e-9).all()


def test_size_by_gen(tmp_path, capsys):
    assert main(["sweep", str(SWEEPS / "size_by_gen.toml"), "--out", str(tmp_path),
                 "--jobs", "1"]) == 0
    wide = load_results(tmp_path, wide=True)
    assert len(wide) == 16
    table = wide.pivot_table(index="link.gen", columns="workload.size_B", values="bw_GBps")
    assert list(table.index) == [3, 4, 5, 6]
    bw = table.to_numpy()
    assert (np.diff(bw, axis=0) >= -1e-9).all()             # never slower on a faster link
    assert (np.diff(bw[:3], axis=0) > 0).all()               # Gen3 -> 4 -> 5: the link binds
    # no point exceeds its generation's raw x16 rate (PCIe Base Spec rates and
    # encodings, hostlink.model.pcie.spec.GENERATIONS)
    assert (wide["bw_GBps"] <= wide["raw_GBps"]).all()
    # the preset's host serves whole 64 B lines at host.serve_GBps (measured on the H100:
    # validation/experiments/first_run/runs/h100; the lines: validation/experiments/cpl_offsets/runs/h200),
    # so a read of n lines moves its bytes at serve_GBps x size / (64 n), whatever the link
    from hostlink.model.config import load_system
    serve = load_system("h100-pcie5").host.serve_GBps
    for size, lines in ((32, 1), (64, 1), (96, 2), (128, 2)):
        assert (table[size] <= serve * size / (64 * lines) * (1 + 1e-9)).all(), size
    assert table.loc[6, 32] == pytest.approx(serve / 2, rel=1e-6)   # the host, not the link
    assert table.loc[3, 128] > table.loc[3, 32]     # PCIe 3.0: larger requests, less overhead


def test_pcie_gen_by_variant_plan():
    spec = load_sweep(SWEEPS / "pcie_gen_by_variant.toml")
    resolved = resolve_points(spec)
    assert spec.fidelity == "des" and len(resolved) == 32
    gens = {(rp.parts["link"].gen, rp.parts["link"].tags, rp.parts["link"].lanes)
            for rp in resolved}
    assert gens == {(3, 256, 16), (4, 768, 16), (5, 768, 16), (6, 16384, 16)}
    assert {rp.workload["variant"] for rp in resolved} == {"naive", "merged", "merged_aligned",
                                                           "chunked"}
    assert {rp.workload["mode"] for rp in resolved} == {"zerocopy", "uvm"}


def small(spec, **workload):
    """The same sweep on a tiny graph (CI has 2 cores and little time)."""
    return dataclasses.replace(spec, workload={**spec.workload, **workload})


def test_pcie_gen_by_variant_on_a_tiny_graph(tmp_path):
    spec = small(load_sweep(SWEEPS / "pcie_gen_by_variant.toml"), scale=9, degree=8)
    report = run_sweep(spec, tmp_path, jobs=2)
    assert report.computed == 32
    wide = load_results(tmp_path, wide=True)
    assert len(wide) == 32 and set(wide["model_kind"]) == {"des"}
    zc = wide[wide["mode"] == "zerocopy"]
    for variant, g in zc.groupby("workload.variant"):
        bw = g.sort_values("link.gen")["bw_GBps"].to_numpy()
        assert (np.diff(bw) >= -1e-9 * bw[:-1]).all(), variant   # a faster link never slows
