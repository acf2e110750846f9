"""The GPU's own traces (committed under validation/experiments/*/runs/<gpu>/traces):
load for load what walk_model.py says each variant issues, on the graph and
source of the run. Needs no GPU; the traces came from one."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from kernel_helpers import read_bel_graph, traced_edge_loads
from walk_model import bfs_launches
from hostlink.validation import raw_store
from hostlink.validation.data_tree import EXPERIMENTS

#: (run folder, trace folder) of every committed self-trace; a run's traces.tar is
#: unpacked into a temporary cache (raw_store.traces_dir)
TRACES = sorted((run, p) for run in EXPERIMENTS.glob("*/runs/*")
                if (run / raw_store.TRACES).is_dir() or (run / raw_store.TRACES_PACKED).is_file()
                for p in raw_store.traces_dir(run).glob("*__*") if (p / "kernelslist.g").exists())


def _cases(kernel: str) -> list:
    return [pytest.param(run, p, id=f"{run.parents[1].name}/{run.name}/{p.name}")
            for run, p in TRACES if p.name.startswith(f"{kernel}__")]


def trace_params(run: Path, trace_dir: Path) -> dict:
    """The params of the raw 'trace' line of ``run`` whose output went to this folder."""
    for name in raw_store.raw_names(run, "trace__*.jsonl"):
        for line in raw_store.read_raw_bytes(run, name)[1].decode().splitlines():
            obj = json.loads(line)
            if obj.get("type") == "trace" and Path(obj["detail"]["dir"]).name == trace_dir.name:
                return {**obj["params"], **obj["metrics"]}
    raise AssertionError(f"no raw trace line for {trace_dir}")


def test_committed_traces_exist():
    assert any("bfs__" in p.name for _, p in TRACES), "no committed BFS self-trace"


@pytest.mark.parametrize("run,trace_dir", _cases("bfs"))
def test_bfs_self_trace_matches_the_walk_model(run, trace_dir):
    pytest.importorskip("hostlink.traces.accelsim")
    p = trace_params(run, trace_dir)
    assert p["check_pass"] == 1
    offsets, dst = read_bel_graph(trace_dir.parent / "graphs" / p["graph"])
    got = traced_edge_loads(trace_dir, p["id_bytes"])
    want = bfs_launches(p["variant"], offsets, dst, p["source"], p["id_bytes"])
    assert len(got) == len(want) == p["iterations"]
    assert got == want
    assert sum(len(lanes) for launch in got for _, lanes in launch) == p["edges_read"]


@pytest.mark.parametrize("run,trace_dir", _cases("sssp"))
def test_sssp_self_trace_loads_weights_with_the_edges(run, trace_dir):
    accelsim = pytest.importorskip("hostlink.traces.accelsim")
    from hostlink.traces.schema import InstTable

    p = trace_params(run, trace_dir)
    regions = {r["name"]: r for r in json.loads((trace_dir / "regions.json").read_text())["regions"]}
    e0, w0 = regions["edges"]["start"], regions["weights"]["start"]
    tab = InstTable.concat(list(accelsim.read_accelsim(trace_dir).chunks))
    assert len(tab) % 2 == 0 and len(tab) > 0
    # every edge load is followed by the weight load of the same lanes and indices
    for r in range(0, len(tab), 2):
        assert tab.mask[r] == tab.mask[r + 1] and tab.width_B[r] == p["id_bytes"] and tab.width_B[r + 1] == 4
        lanes = [i for i in range(32) if tab.mask[r] >> i & 1]
        idx_e = (tab.addrs[r, lanes].astype(int) - e0) // p["id_bytes"]
        idx_w = (tab.addrs[r + 1, lanes].astype(int) - w0) // 4
        assert (idx_e == idx_w).all()
    assert len(tab) // 2 >= 1 and p["check_pass"] == 1
