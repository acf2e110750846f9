"""One door: the public predict() with a committed calibrated system gives what the reports give.

For committed cases of both first runs (validation/experiments/first_run/runs/h200 and
h100/first_run: every microbenchmark group they hold, and zero-copy, UVM and
device BFS traversals of kron14), the case's workload is built by the validation
builders and handed to :func:`hostlink.model.predict.predict` with the path of the
calibrated TOML the report was made with (the 'made with' line of each report.md)
and nothing else; each primary metric is read off the Prediction here, and must
equal the report's predicted value (summary.csv) within 0.1%. A timing effect left
in validation/ would make predict() miss it.

Also: no library module reads committed results at run time (the tables the model
and the twins need are package data).
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hostlink.model.config import load_any_system
from hostlink.model.predict import predict
from hostlink.validation.data_tree import run_dir

ROOT = Path(__file__).resolve().parents[2]
TOL = 1e-3          # the acceptance bound: 0.1%

# small cases of every microbenchmark group (memcpy h2d/d2h, zc_read coalesced/strided/
# random, zc_warps, ptr_chase host/device, the uvm_touch advice and patterns)
MICRO = {
    "h200": [
        "micro/memcpy/direction=h2d,size_B=65536",
        "micro/memcpy/direction=d2h,size_B=1048576",
        "micro/zc_warps/pattern=coalesced,offset_B=0,bytes_per_lane=4,memory_mode=zerocopy,"
        "warps=16,unroll=4,cache=default",
        "micro/zc_read/pattern=coalesced,offset_B=32,bytes_per_lane=8,memory_mode=zerocopy,"
        "warps=0,unroll=4,cache=default",
        "micro/zc_read/pattern=strided,chunk_B=512,bytes_per_lane=4,memory_mode=zerocopy,"
        "warps=0,unroll=4,cache=default",
        "micro/zc_read/pattern=random,region_B=65536,bytes_per_lane=4,memory_mode=zerocopy,"
        "warps=0,unroll=4,cache=default",
        "micro/zc_read/pattern=random,region_B=4096,bytes_per_lane=4,memory_mode=zerocopy,"
        "warps=0,unroll=4,cache=cv",
        "micro/ptr_chase/memory_mode=zerocopy,stride_B=128,footprint_B=4096,order=random,"
        "cache=default",
        "micro/ptr_chase/memory_mode=zerocopy,stride_B=4096,footprint_B=1073741824,order=random,"
        "cache=default",
        "micro/ptr_chase/memory_mode=device,stride_B=128,footprint_B=1048576,order=random,"
        "cache=cv",
        "micro/uvm_touch/size_B=67108864,pattern=seq,advice=none",
        "micro/uvm_touch/size_B=67108864,pattern=random,advice=readmostly",
        "micro/uvm_touch/size_B=67108864,pattern=seq,advice=prefetch",
        "micro/uvm_touch/size_B=67108864,pattern=seq,advice=accessedby",
    ],
    "h100": [
        "micro/memcpy/direction=h2d,size_B=16777216",
        "micro/memcpy/direction=d2h,size_B=4096",
        "micro/zc_warps/pattern=coalesced,offset_B=0,bytes_per_lane=4,memory_mode=zerocopy,"
        "warps=4,unroll=1,cache=default",
        "micro/zc_read/pattern=strided,chunk_B=4096,bytes_per_lane=8,memory_mode=zerocopy,"
        "warps=0,unroll=4,cache=default",
        "micro/ptr_chase/memory_mode=zerocopy,stride_B=128,footprint_B=65536,order=random,"
        "cache=cv",
        "micro/ptr_chase/memory_mode=device,stride_B=128,footprint_B=4096,order=random,"
        "cache=default",
        "micro/ptr_chase/memory_mode=zerocopy,stride_B=2097152,footprint_B=1073741824,"
        "order=random,cache=default",
        "micro/ptr_chase/memory_mode=device,stride_B=4096,footprint_B=1073741824,order=random,"
        "cache=default",
        "micro/ptr_chase/memory_mode=device,stride_B=128,footprint_B=16777216,order=random,"
        "cache=cv",
        "micro/uvm_touch/size_B=67108864,pattern=random,advice=none",
        "micro/uvm_touch/size_B=67108864,pattern=random,advice=prefetch",
        "micro/uvm_touch/size_B=67108864,pattern=seq,advice=readmostly",
        "micro/uvm_touch/size_B=67108864,pattern=random,advice=accessedby",
    ],
}
# BFS on kron14 in device memory, zero-copy and UVM (the quick traversals)
TRAVERSAL = {
    "h200": ["bfs/kron14/merged_aligned/zerocopy/8B", "bfs/kron14/merged/uvm/4B",
             "bfs/kron14/naive/device/4B"],
    "h100": ["bfs/kron14/merged/zerocopy/4B", "bfs/kron14/merged_aligned/uvm/8B",
             "bfs/kron14/merged_aligned/device/8B"],
}


def made_with(gpu: str) -> Path:
    """The --system of the committed first-run report (its 'made with' line)."""
    text = (run_dir("first_run", gpu) / "report.md").read_text()
    m = re.search(r"made with `hostlink validate report \S+ --system (\S+?)`", text)
    assert m, f"{gpu}/first_run/report.md names no --system"
    return ROOT / m.group(1)


def reported(gpu: str) -> pd.DataFrame:
    return pd.read_csv(run_dir("first_run", gpu) / "summary.csv")


def primary_value(metric: str, pred) -> float:
    """A primary metric read off a Prediction: units only."""
    if metric == "bw_GBps":
        return pred.bw_GBps
    if metric == "lat_ns":
        return pred.extra["step_ns"]
    if metric == "time_ms":
        return pred.time_s * 1e3
    if metric == "kernel_time_ms":
        return pred.kernel_time_s * 1e3
    raise AssertionError(f"no reading of {metric}")


@pytest.fixture(scope="module")
def runs():
    from hostlink.validation.twin_common import load_run
    return {gpu: load_run(run_dir("first_run", gpu)) for gpu in MICRO}


def test_the_cases_cover_every_group_of_both_first_runs(runs):
    from hostlink.validation.twin_common import case_group
    for gpu in MICRO:
        assert all(c in runs[gpu].cases for c in MICRO[gpu] + TRAVERSAL[gpu])
    picked = {case_group(c, runs[gpu].cases[c]) for gpu in MICRO for c in MICRO[gpu]}
    groups = {case_group(c, p) for gpu in MICRO for c, p in runs[gpu].cases.items()
              if p.get("kind") == "micro"}
    # the uvm_touch groups differ by advice and pattern: each advice and each pattern
    # is taken, not every pair
    plain = {g for g in groups if not g.startswith("micro/uvm_touch/")}
    assert plain <= picked
    advice = {g.split("/")[2] for g in picked if g.startswith("micro/uvm_touch/")}
    pattern = {g.split("/")[3] for g in picked if g.startswith("micro/uvm_touch/")}
    assert advice == {"none", "readmostly", "prefetch", "accessedby"}
    assert pattern == {"seq", "random"}
    modes = {runs[gpu].cases[c]["memory_mode"] for gpu in TRAVERSAL for c in TRAVERSAL[gpu]}
    assert modes == {"zerocopy", "uvm", "device"}
    assert sum(len(v) for v in MICRO.values()) + sum(len(v) for v in TRAVERSAL.values()) >= 30


@pytest.mark.parametrize("gpu,case", [(g, c) for g in MICRO for c in MICRO[g]])
def test_a_microbenchmark_through_the_public_predict(gpu, case, runs):
    from hostlink.validation.twin_common import primary_metric
    from hostlink.validation.twin_micro import build_micro, run_loads_in_flight

    run = runs[gpu]
    toml = made_with(gpu)
    params = run.cases[case]
    twin = build_micro(case, params, load_any_system(str(toml)),
                       hints=lambda m: run.hint(case, m),
                       loads_in_flight=run_loads_in_flight(run.path))
    pred = predict(twin.workload, str(toml), mode=twin.predict_mode, fidelity="des")
    metric = primary_metric(params)
    want = reported(gpu).set_index(["case", "metric"]).loc[(case, metric), "predicted"]
    assert primary_value(metric, pred) == pytest.approx(float(want), rel=TOL)


@pytest.mark.parametrize("gpu,case", [(g, c) for g in TRAVERSAL for c in TRAVERSAL[g]])
def test_a_traversal_through_the_public_predict(gpu, case, runs):
    from hostlink.traces.traversal import traversal_workload
    from hostlink.validation.twin_common import TRAVERSAL_PRIMARY
    from hostlink.validation.twin_traversal import GraphSource

    run = runs[gpu]
    toml = made_with(gpu)
    params = run.cases[case]
    csr = GraphSource(run).get(params["graph"])
    gpu_config = load_any_system(str(toml)).gpu
    # the harness's pinned and registered memory are the model's zero-copy
    mode = {"registered": "zerocopy"}.get(params["memory_mode"], params["memory_mode"])
    values = []
    for source in params["sources"]:
        work = traversal_workload(csr, params["kernel"], params["variant"], gpu_config,
                                  source=int(source), id_bytes=int(params["id_bytes"]),
                                  load_ahead=int(params.get("load_ahead", 1) or 1))
        pred = predict(work, str(toml), mode=mode, fidelity="des")
        values.append(primary_value(TRAVERSAL_PRIMARY, pred))
    want = reported(gpu).set_index(["case", "metric"]).loc[(case, TRAVERSAL_PRIMARY),
                                                             "predicted"]
    assert float(np.median(values)) == pytest.approx(float(want), rel=TOL)


def _code_strings(path: Path) -> list[str]:
    """String constants of a module outside its docstrings."""
    tree = ast.parse(path.read_text())
    docs = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = getattr(node, "body", [])
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                docs.add(id(body[0].value))
    return [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)
            and isinstance(n.value, str) and id(n) not in docs]


#: the modules whose one job is the data tree itself: where it lies, the runs'
#: records and the generated index (they read every run, none of its numbers)
INDEXERS = {Path("validation/data_tree.py"), Path("validation/records.py"),
            Path("validation/data_index.py")}


def test_no_library_module_reads_committed_results():
    # a path into validation/experiments is built from its parts ("experiments",
    # "runs") or written whole; the scripts kept with the experiments may read them,
    # and data_tree alone names the tree's root
    offenders = []
    for folder in ("model", "traces", "validation"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            rel = path.relative_to(ROOT)
            if rel.parts[:2] == ("validation", "experiments") or rel in INDEXERS:
                continue
            strings = _code_strings(path)
            # (prose that cites a committed folder, in a message, reads nothing)
            if any("validation/experiments" in s and not re.search(r"\s", s) for s in strings) or (
                    {"experiments", "runs"} <= set(strings)):
                offenders.append(str(rel))
    assert offenders == []
