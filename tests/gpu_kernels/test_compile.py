"""Every CUDA program in gpu_kernels/ compiles (CI has nvcc but no GPU)."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

KERNELS = Path(__file__).resolve().parents[2] / "gpu_kernels"


def programs() -> list[str]:
    text = (KERNELS / "Makefile").read_text()
    names = []
    for var in ("MICRO", "TRAVERSAL", "TOOLS"):
        m = re.search(rf"^{var}\s*:=\s*(.+)$", text, flags=re.M)
        names += m.group(1).split()
    return names


def test_every_source_is_a_program():
    sources = {p.stem for p in KERNELS.rglob("*.cu")}
    assert sources == set(programs())


@pytest.mark.parametrize("program", programs())
def test_program_compiles(program, nvcc, tmp_path):
    p = subprocess.run(["make", "-C", str(KERNELS), f"BIN={tmp_path}", f"{tmp_path}/{program}"],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    assert "warning" not in (p.stdout + p.stderr).lower()
    # the program answers --help without touching a GPU
    h = subprocess.run([str(tmp_path / program), "--help"], capture_output=True, text=True, timeout=30)
    assert h.returncode == 0 and "--device" in h.stdout


def test_bad_flag_is_one_json_error_line(nvcc, tmp_path):
    subprocess.run(["make", "-C", str(KERNELS), f"BIN={tmp_path}", f"{tmp_path}/memcpy_bw"], check=True,
                   capture_output=True)
    p = subprocess.run([str(tmp_path / "memcpy_bw"), "--size-B", "12 parsecs"], capture_output=True, text=True)
    assert p.returncode == 2
    assert p.stdout.startswith('{"type":"error","kind":"usage"') and "size" in p.stdout
    assert p.stderr.strip().count("\n") == 0
