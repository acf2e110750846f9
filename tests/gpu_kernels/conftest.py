"""Fixtures for the gpu_kernels tests: the kernel folder, nvcc, tiny graphs."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

KERNELS = Path(__file__).resolve().parents[2] / "gpu_kernels"
NVCC = shutil.which("nvcc")


@pytest.fixture(scope="session")
def kernels_dir() -> Path:
    return KERNELS


@pytest.fixture(scope="session")
def nvcc() -> str:
    if NVCC is None:
        pytest.skip("nvcc not found: CUDA sources not compiled")
    return NVCC


@pytest.fixture(scope="session")
def host_check(nvcc, tmp_path_factory) -> Path:
    """tests/gpu_kernels/host_check.cpp built with nvcc (host code only, no GPU needed)."""
    out = tmp_path_factory.mktemp("host") / "host_check"
    src = Path(__file__).with_name("host_check.cpp")
    p = subprocess.run([nvcc, "-std=c++17", "-O2", "-I", str(KERNELS), "-o", str(out), str(src)],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return out
