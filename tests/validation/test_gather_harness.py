"""The gather case kind in the harness: manifests, planning, the ids file, the twins."""
from __future__ import annotations

import json
import stat
import sys
from pathlib import Path

import numpy as np
import pytest

from hostlink.model.config import load_any_system
from hostlink.model.errors import ConfigError
from hostlink.model.predict import predict
from hostlink.model.workload import Gather
from hostlink.traces.gather import GatherSpec, gather_workload
from hostlink.validation import runner
from hostlink.validation.gather_ids import graph_of, sampled_ids
from hostlink.validation.manifest import GATHER_MEMORY_MODES, load_manifest
from hostlink.validation.results_io import read_results
from hostlink.validation.twin_micro import build_micro

REPO = Path(__file__).resolve().parents[2]
H200_MANIFEST = REPO / "validation" / "experiments" / "gather" / "manifest.toml"
SYSTEM = load_any_system("h200-pcie5")

SMALL = """
[experiment]
name = "gather-small"

[[micro]]
benchmark = "gather"
table_B = "64 MiB"
row_B = [480, 1000]
variant = ["naive", "aligned"]
lane_B = [4, 16]
memory_mode = ["zerocopy", "cpu_gather"]
rows = 4096
reps = 2

[[micro]]
benchmark = "gather"
ids = "sampled"
graph_scale = 10
fanouts = "5,5"
batch = 16
table_B = "8 MiB"
row_B = 1024
memory_mode = "uvm"
rows = 2048
reps = 1
"""

# Stands in for gpu_kernels/bin/gather: prints a measurement per point as the program
# does (its loops and skips), after reading the ids file where it is given.
FAKE_GATHER = r'''
import itertools, json, sys
a = dict(zip(sys.argv[1::2], sys.argv[2::2]))
lst = lambda k: a["--" + k].split(",")
print(json.dumps({"type": "device", "name": "Fake GPU", "sm_count": 4}))
if "--ids-file" in a:
    head = open(a["--ids-file"], "rb").read(16)
    assert int.from_bytes(head[8:], "little") == int(a["--rows"])
for mode, table, ids, row in itertools.product(lst("memory-mode"), lst("table-B"), lst("ids"),
                                               lst("row-B")):
    points = [{}] if mode == "cpu_gather" else [
        {"variant": v, "lane_B": int(l)} for v in lst("variant") for l in lst("lane-B")
        if int(row) % int(l) == 0]
    for p in points:
        for rep in range(int(a["--reps"])):
            params = {"ids": ids, "table_B": int(table), "row_B": int(row), **p,
                      "memory_mode": mode}
            print(json.dumps({"type": "measurement", "benchmark": "gather", "params": params,
                              "rep": rep, "metrics": {"time_ms": 1.0, "bw_GBps": 2.0,
                                                      "check_pass": 1}}))
print(json.dumps({"type": "done", "program": "gather", "check_failures": 0}))
'''


def test_the_h200_manifest_covers_the_acceptance():
    m = load_manifest(H200_MANIFEST)
    params = runner._case_params(m, {})
    cases = [p for p in params.values() if p.get("benchmark") == "gather"]
    assert len(cases) == len(m.micro_cases()) == 134
    rows = {p["row_B"] for p in cases}
    assert {128, 4096} <= rows and any(r % 128 for r in rows) and {480, 1000} <= rows
    assert {p["table_B"] for p in cases} >= {1 << 30, 16 << 30}
    assert {p["ids"] for p in cases} == {"uniform", "sampled"}
    assert {p["memory_mode"] for p in cases} == set(GATHER_MEMORY_MODES)
    assert {p.get("variant") for p in cases} >= {"naive", "aligned"}


def _write(tmp_path, text):
    path = tmp_path / "m.toml"
    path.write_text(text)
    return path


def test_bad_gather_groups_name_their_key(tmp_path):
    bad = SMALL.replace("row_B = [480, 1000]", "row_B = [482]")
    with pytest.raises(ConfigError, match=r"micro\[0\]\.row_B.*multiple of 4"):
        load_manifest(_write(tmp_path, bad))
    small_table = SMALL.replace('table_B = "8 MiB"', 'table_B = "256 KiB"')
    with pytest.raises(ConfigError, match=r"micro\[1\]\.table_B.*graph_scale"):
        load_manifest(_write(tmp_path, small_table))
    none_left = SMALL.replace("row_B = [480, 1000]", "row_B = [1000]").replace(
        "lane_B = [4, 16]", "lane_B = 16")
    with pytest.raises(ConfigError, match="no point is left"):
        load_manifest(_write(tmp_path, none_left))


def test_points_skip_misaligned_lanes_and_cpu_gather_has_no_variant(tmp_path):
    cases = load_manifest(_write(tmp_path, SMALL)).micro[0].cases()
    assert not any("row_B=1000,variant=naive,lane_B=16" in c for c in cases)
    cpu = [c for c in cases if c.endswith("memory_mode=cpu_gather")]
    assert len(cpu) == 2 and not any("variant" in c for c in cpu)
    # 480: 2 variants x 2 lanes, 1000: 2 variants x lane 4, then one cpu_gather each
    assert len(cases) == 4 + 2 + 2


def test_runner_writes_the_ids_and_collects_every_case(tmp_path):
    manifest = _write(tmp_path, SMALL)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = tmp_path / "fake_gather.py"
    script.write_text(FAKE_GATHER)
    for name in ("gather", "devinfo"):
        f = bin_dir / name
        body = (f'exec "{sys.executable}" "{script}" "$@"' if name == "gather" else
                'echo \'{"type": "done", "program": "devinfo"}\'')
        f.write_text(f"#!/bin/sh\n{body}\n")
        f.chmod(f.stat().st_mode | stat.S_IEXEC)
    out = tmp_path / "out"
    meta = runner.run(manifest, out, bin_dir=bin_dir, progress=False)
    assert meta["missing_cases"] == [] and meta["check_failures"] == 0
    ids_file = out / "ids" / "gather_1.u64"
    raw = np.fromfile(ids_file, dtype=np.uint64)
    assert raw[0] == 1 << 10 and raw[1] == 2048
    assert np.array_equal(raw[2:], sampled_ids(10, "5,5", 16, 1, 2048))
    sampled_job = next(j for j in meta["jobs"] if j["id"] == "micro__1__gather")
    assert str(ids_file) in sampled_job["argv"]
    df = read_results(out / "results.csv")
    assert set(df["case"]) == set(load_manifest(manifest).micro_cases())


def test_twins_build_the_workload_and_call_predict(tmp_path):
    m = load_manifest(_write(tmp_path, SMALL))
    params = runner._case_params(m, {})
    for case in (m.micro[0].cases()[0], m.micro[0].cases()[-1], m.micro[1].cases()[0]):
        twin = build_micro(case, params[case], SYSTEM)
        assert isinstance(twin.workload, Gather)
        got = twin.predict(twin.system_for(SYSTEM), fidelity="analytic")
        p = params[case]
        spec = GatherSpec(p["row_B"], p["table_B"] // p["row_B"], p["rows"],
                          p.get("variant", "aligned"), p.get("lane_B", 4))
        kw = {"csr": graph_of(10), "fanouts": (5, 5), "batch": 16} if p["ids"] == "sampled" else {}
        # the program flushes the L2 before every timed kernel: the twin's run starts so
        assert twin.workload.l2_flushed
        work = gather_workload(spec, p["ids"], SYSTEM.gpu, exact_counts=False, l2_flushed=True,
                               **kw)
        mode = {"zerocopy": "zerocopy"}.get(p["memory_mode"], p["memory_mode"])
        direct = predict(work, SYSTEM, mode=mode, fidelity="analytic")
        assert got["bw_GBps"] == pytest.approx(direct.bw_GBps)
        assert got["time_ms"] == pytest.approx(direct.time_s * 1e3)
        assert twin.bound == direct.extra["bound_class"] != ""


def test_the_report_names_each_gather_cases_bound():
    import pandas as pd
    from hostlink.validation.report_render import bound_table, markdown
    annotated = pd.DataFrame({
        "case": ["micro/gather/a", "micro/gather/b", "micro/zc_read/c"],
        "group": ["micro/gather/zerocopy", "micro/gather/zerocopy", "micro/zc_read"],
        "primary": [True, True, True], "metric": ["bw_GBps"] * 3, "measured": [50.0, 14.0, 4.9],
        "predicted": [51.0, 19.0, 5.2], "error_pct": [2.0, 35.7, 6.1], "unit": ["GB/s"] * 3})
    timings = {"micro/gather/a": {"bound": "link"}, "micro/gather/b": {"bound": "translation"},
               "trav/x": {"sources": 1, "model_s": 2.0}}
    t = bound_table(timings, annotated)
    assert t.set_index("case")["bound"].to_dict() == {"micro/gather/a": "link",
                                                      "micro/gather/b": "translation"}
    text = markdown(annotated, [], title="t", system_name="s", fidelity="des", calibration=None,
                    results_dir="r", unpredicted=[], timings=timings)
    assert "### `micro/gather/zerocopy`: link 1, translation 1" in text
    assert "| `micro/gather/b` | 14 GB/s | 19 GB/s | +35.7 | translation |" in text
    assert bound_table({}, annotated).empty


def test_gather_groups_carry_the_acceptance_targets():
    from hostlink.validation.report_judge import target_for
    from hostlink.validation.twin_common import micro_group
    expect = {"zerocopy": 10.0, "registered": 10.0, "uvm_accessedby": 10.0, "cpu_gather": 15.0,
              "uvm": 25.0}
    for mode, pct in expect.items():
        group = micro_group({"benchmark": "gather", "memory_mode": mode})
        assert target_for(group, set())[1] == pct, mode
    assert micro_group({"benchmark": "gather", "memory_mode": "uvm_warm"}) == "micro/gather/device"


@pytest.mark.parametrize("memory_mode, mode", [("zerocopy", "zerocopy"), ("registered", "zerocopy"),
                                               ("uvm_accessedby", "uvm_accessedby"),
                                               ("uvm", "uvm"), ("cpu_gather", "cpu_gather")])
def test_each_memory_mode_is_predicts_own_mode(memory_mode, mode):
    """A managed table left on the host is predicted as predict's uvm_accessedby (its
    own walkers in flight), not as pinned memory."""
    from hostlink.model.config import load_system
    from hostlink.validation.twin_gather import gather_twin
    params = {"ids": "uniform", "table_B": 1 << 30, "row_B": 512, "variant": "aligned",
              "lane_B": 4, "memory_mode": memory_mode, "rows": 1024}
    assert gather_twin("micro/gather/x", params, load_system("h200-pcie5"))[0] == mode
