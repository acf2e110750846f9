"""``hostlink run --sweep`` checks the sweep's shape before computing any point."""
from __future__ import annotations

import pytest

from hostlink.model.cli.main import main
from hostlink.model.cli.run import check_main_shape
from hostlink.model.errors import ConfigError
from hostlink.model.mainjob import MAIN_SWEEP
from hostlink.model.sweep import load_sweep

GRAPH_SWEEP = """[sweep]
name = "one_mode"
system = "h100-pcie5"
fidelity = "analytic"
[workload]
kind = "graph"
graph = "kron"
scale = 6
kernel = "bfs"
[[axis]]
key = "workload.mode"
values = [{modes}]
"""


def test_a_sizes_sweep_is_refused_before_anything_runs(tmp_path, capsys, repo):
    out = tmp_path / "out"
    sweep = repo / "sim_configs" / "sweeps" / "rtt_by_tags.toml"   # 66 points of request sizes
    assert main(["run", "--sweep", str(sweep), "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "rtt_by_tags.toml" in err and "hostlink sweep" in err
    assert not out.exists()                   # nothing computed, nothing written


@pytest.mark.parametrize("modes, ok", [('"zerocopy"', False), ('"uvm"', False),
                                       ('"zerocopy", "uvm_readmostly"', False),
                                       ('"zerocopy", "uvm", "device"', False),
                                       ('"uvm", "zerocopy"', True)])
def test_the_report_needs_zero_copy_beside_uvm(tmp_path, modes, ok):
    path = tmp_path / "s.toml"
    path.write_text(GRAPH_SWEEP.format(modes=modes), encoding="utf-8")
    if ok:
        check_main_shape(load_sweep(path))
    else:
        with pytest.raises(ConfigError, match="zerocopy beside uvm"):
            check_main_shape(load_sweep(path))


def test_the_main_sweep_has_the_shape():
    check_main_shape(load_sweep(MAIN_SWEEP))
