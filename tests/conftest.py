"""Shared fixtures and the ``gpu`` marker: GPU tests skip, visibly, without one."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
ACCELSIM_DATA = SHARED / "data" / "accelsim"


def _have_gpu() -> bool:
    if shutil.which("nvidia-smi") is None:
        return False
    try:
        return subprocess.run(["nvidia-smi", "-L"], capture_output=True, timeout=20).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


HAVE_GPU = _have_gpu()


# The test files that take longest, longest first: the sums of their tests' durations
# in a make test on two workers at commit a9fd359 (2026-12-05, --durations=0:
# notebooks 100 s, compile 89 s, seeds 86 s, calibrate 79 s, down to report_resume
# 26 s). They start first, so that no long file starts last and leaves one worker
# alone at the end of the run.
LONGEST_FIRST = (
    "tests/notebooks/test_notebooks.py",
    "tests/gpu_kernels/test_compile.py",
    "tests/model/test_seeds.py",
    "tests/validation/test_calibrate.py",
    "tests/validation/test_managed_translation.py",
    "tests/validation/test_traversal_sample.py",
    "tests/validation/test_twin_strided_l1.py",
    "tests/validation/test_fidelity_agreement.py",
    "tests/experiments/test_device_work.py",
    "tests/traces/test_emulator_recorded.py",
    "tests/validation/test_report_resume.py",
)


def pytest_configure(config):
    # pytest-xdist hands whole files (--dist loadfile) out in the order collected (not
    # re-sorted by test count), so LONGEST_FIRST decides which start first
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False


def pytest_collection_modifyitems(config, items):
    skip_gpu = pytest.mark.skip(reason="needs a CUDA GPU; none on this machine")
    for item in items:
        if "gpu" in item.keywords and not HAVE_GPU:
            item.add_marker(skip_gpu)
    first = {path: rank for rank, path in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: first.get(item.nodeid.split("::")[0], len(first)))


@pytest.fixture
def repo() -> Path:
    return REPO


@pytest.fixture
def accelsim_data() -> Path:
    if not ACCELSIM_DATA.is_dir():
        pytest.skip(f"shared Accel-Sim sample traces not found at {ACCELSIM_DATA}")
    return ACCELSIM_DATA


@pytest.fixture(autouse=True, scope="session")
def _graph_cache(tmp_path_factory):
    """Generated graphs the twins keep between reports go to this run's own folder,
    not the user's cache (hostlink.validation.twin_traversal.graph_cache_dir). The
    workers of one run (pytest-xdist) share it: a graph is written under a name of
    its process's own and renamed into place, so each is generated once or, where two
    workers want it at once, twice, never torn."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent      # the run's folder, above each worker's own
    folder = base / "graph_cache"
    folder.mkdir(exist_ok=True)
    old = os.environ.get("HOSTLINK_GRAPH_CACHE")
    os.environ["HOSTLINK_GRAPH_CACHE"] = str(folder)
    yield
    if old is None:
        os.environ.pop("HOSTLINK_GRAPH_CACHE", None)
    else:
        os.environ["HOSTLINK_GRAPH_CACHE"] = old
