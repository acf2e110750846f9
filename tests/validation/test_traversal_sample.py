"""A wide sample of committed traversal cases predicts what their reports predicted.

For both first runs (validation/experiments/first_run/runs/h200 and h100), one
case of every kernel (BFS, SSSP, CC, PageRank) on each scale-14 graph (kron14,
urand14), the variant, memory mode and id width turning from pair to pair, is
predicted again by the traversal twin (:func:`hostlink.validation.twin_traversal.predict_traversal`,
the path ``hostlink validate report`` takes) with the calibrated system of the
report's 'made with' line. Its primary metric (the median over the case's sources,
as the report gives it) must equal the report's predicted value (summary.csv)
within 0.1%: a change of the graph-to-prediction path's speed must not change its
predictions. tests/validation/test_one_door.py covers BFS through the public
predict(); this sample covers the other kernels and more variants and modes.
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hostlink.model.config import load_any_system
from hostlink.validation.data_tree import run_dir

ROOT = Path(__file__).resolve().parents[2]
TOL = 1e-3                      # the acceptance bound: 0.1%
KERNELS = ("bfs", "sssp", "cc", "pagerank")
GRAPHS = ("kron14", "urand14")
VARIANTS = ("naive", "merged", "merged_aligned", "chunked", "balanced")
MODES = ("zerocopy", "uvm", "device")


def _sample(gpu: str) -> list[str]:
    """One committed case per kernel and graph, the variant, mode and width turning."""
    from hostlink.validation.twin_common import TRAVERSAL_PRIMARY
    cases = set(pd.read_csv(run_dir("first_run", gpu) / "summary.csv")
                .query("metric == @TRAVERSAL_PRIMARY")["case"])
    out = []
    i = 0 if gpu == "h200" else 1
    for kernel in KERNELS:
        for graph in GRAPHS:
            for step in range(len(VARIANTS) * len(MODES) * 2):
                k = i + step
                case = (f"{kernel}/{graph}/{VARIANTS[k % len(VARIANTS)]}/"
                        f"{MODES[k % len(MODES)]}/{(4, 8)[k % 2]}B")
                if case in cases:
                    out.append(case)
                    break
            i += 1
    return out


def _made_with(gpu: str) -> Path:
    text = (run_dir("first_run", gpu) / "report.md").read_text()
    m = re.search(r"made with `hostlink validate report \S+ --system (\S+?)`", text)
    assert m, f"{gpu}/first_run/report.md names no --system"
    return ROOT / m.group(1)


@pytest.fixture(scope="module")
def runs():
    from hostlink.validation.twin_common import load_run
    return {gpu: load_run(run_dir("first_run", gpu)) for gpu in ("h200", "h100")}


def test_the_sample_covers_every_kernel_and_graph():
    for gpu in ("h200", "h100"):
        got = {tuple(c.split("/")[:2]) for c in _sample(gpu)}
        assert got == {(k, g) for k in KERNELS for g in GRAPHS}, gpu


@pytest.mark.slow
@pytest.mark.parametrize("gpu,case", [(g, c) for g in ("h200", "h100") for c in _sample(g)])
def test_a_committed_traversal_case_predicts_its_reported_value(gpu, case, runs):
    from hostlink.validation.twin_common import TRAVERSAL_PRIMARY
    from hostlink.validation.twin_traversal import GraphSource, predict_traversal

    run = runs[gpu]
    system = load_any_system(str(_made_with(gpu)))
    rows = predict_traversal(case, run.cases[case], system, GraphSource(run))
    values = [v for m, v, _ in rows if m == TRAVERSAL_PRIMARY]
    want = (pd.read_csv(run_dir("first_run", gpu) / "summary.csv")
            .set_index(["case", "metric"]).loc[(case, TRAVERSAL_PRIMARY), "predicted"])
    assert float(np.median(values)) == pytest.approx(float(want), rel=TOL)
