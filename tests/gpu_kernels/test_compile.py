"""Every CUDA program and CUPTI injection library in gpu_kernels/ compiles (CI has nvcc but no GPU)."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

KERNELS = Path(__file__).resolve().parents[2] / "gpu_kernels"


def makefile_names(*variables: str) -> list[str]:
    text = (KERNELS / "Makefile").read_text()
    names = []
    for var in variables:
        m = re.search(rf"^{var}\s*:=\s*(.+)$", text, flags=re.M)
        names += m.group(1).split()
    return names


def programs() -> list[str]:
    return makefile_names("MICRO", "TRAVERSAL", "TOOLS")


def injection_libraries() -> list[str]:
    """tools/NAME.cu built into bin/libNAME.so (the Makefile's INJECT)."""
    return makefile_names("INJECT")


def test_every_source_is_a_program():
    # a program, or an injection library; never both
    sources = {p.stem for p in KERNELS.rglob("*.cu")}
    assert not set(programs()) & set(injection_libraries())
    assert sources == set(programs()) | set(injection_libraries())


@pytest.fixture(scope="module")
def build(nvcc, tmp_path_factory):
    """``build(program)``: the program made once into this module's own folder, with
    its make output (each program compiled once, however many tests run it)."""
    bin_dir = tmp_path_factory.mktemp("bin")
    made: dict[str, tuple[Path, subprocess.CompletedProcess]] = {}

    def make(program: str) -> tuple[Path, subprocess.CompletedProcess]:
        if program not in made:
            p = subprocess.run(["make", "-C", str(KERNELS), f"BIN={bin_dir}", f"{bin_dir}/{program}"],
                               capture_output=True, text=True)
            made[program] = (bin_dir / program, p)
        return made[program]
    return make


def built(build, program: str) -> Path:
    exe, p = build(program)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    return exe


@pytest.mark.parametrize("program", programs())
def test_program_compiles(program, build):
    exe, p = build(program)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    assert "warning" not in (p.stdout + p.stderr).lower()
    # the program answers --help without touching a GPU
    h = subprocess.run([str(exe), "--help"], capture_output=True, text=True, timeout=30)
    assert h.returncode == 0 and "--device" in h.stdout
    if program != "devinfo":  # every program that allocates host memory takes a NUMA node
        assert "--host-node" in h.stdout and "--start-gate" in h.stdout


def test_bad_flag_is_one_json_error_line(build):
    p = subprocess.run([str(built(build, "memcpy_bw")), "--size-B", "12 parsecs"], capture_output=True,
                       text=True)
    assert p.returncode == 2
    assert p.stdout.startswith('{"type":"error","kind":"usage"') and "size" in p.stdout
    assert p.stderr.strip().count("\n") == 0


@pytest.mark.parametrize("args,says", [
    (["--op", "red", "--unroll", "4"], "--unroll must be 1"),
    (["--op", "store", "--unroll", "1", "--bytes-per-lane", "8"], "4 B per lane"),
    (["--op", "red", "--unroll", "1", "--cache", "cv"], "writes take only default"),
    (["--op", "add"], "op"),
    (["--warps-per-block", "33"], "--warps-per-block"),
])
def test_write_ops_refuse_what_a_write_has_not(build, args, says):
    # checked before any GPU is touched: one usage line, exit code 2
    p = subprocess.run([str(built(build, "zc_warps")), *args], capture_output=True, text=True, timeout=30)
    assert p.returncode == 2, p.stdout + p.stderr
    assert p.stdout.startswith('{"type":"error","kind":"usage"') and says in p.stdout


@pytest.fixture(scope="module")
def cupti(nvcc) -> dict[str, str]:
    """Where the Makefile finds CUPTI (``make cupti``); skips where it finds none."""
    p = subprocess.run(["make", "-s", "-C", str(KERNELS), "cupti"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    found = dict(line.split("=", 1) for line in p.stdout.splitlines() if "=" in line)
    if not found.get("CUPTI_SO"):
        pytest.skip(f"CUPTI not found next to {nvcc}: injection libraries not built")
    return found


@pytest.fixture(scope="module")
def build_library(cupti, tmp_path_factory):
    """``build_library(name)``: bin/libNAME.so made once into this module's own folder,
    with its make output (each library compiled once, however many tests load it)."""
    bin_dir = tmp_path_factory.mktemp("lib")
    made: dict[str, tuple[Path, subprocess.CompletedProcess]] = {}

    def make(library: str) -> tuple[Path, subprocess.CompletedProcess]:
        if library not in made:
            so = bin_dir / f"lib{library}.so"
            p = subprocess.run(["make", "-C", str(KERNELS), f"BIN={bin_dir}", str(so)],
                               capture_output=True, text=True)
            made[library] = (so, p)
        return made[library]
    return make


@pytest.mark.parametrize("library", injection_libraries())
def test_injection_library_builds_and_exports_its_entry_point(library, build_library):
    so, p = build_library(library)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    assert "warning" not in (p.stdout + p.stderr).lower()
    if shutil.which("nm") is None or shutil.which("ldd") is None:
        pytest.skip("nm or ldd not found: the library's symbols not checked")
    # the CUDA driver looks the entry point up by this C name
    nm = subprocess.run(["nm", "-D", "--defined-only", str(so)], capture_output=True, text=True, check=True)
    assert re.search(r"^[0-9a-f]+ T InitializeInjection$", nm.stdout, flags=re.M), nm.stdout
    # every symbol resolves (libcupti through the rpath): nothing left for the host program to supply
    ldd = subprocess.run(["ldd", "-r", str(so)], capture_output=True, text=True)
    assert ldd.returncode == 0 and "undefined symbol" not in ldd.stdout + ldd.stderr, ldd.stdout + ldd.stderr
    assert "libcupti" in ldd.stdout and "not found" not in ldd.stdout, ldd.stdout


def test_uvm_counters_without_an_output_path_does_nothing(build_library):
    """Without HOSTLINK_UVM_COUNTERS_OUT the entry point says so in one line and lets the program go on."""
    so, made = build_library("uvm_counters")
    assert made.returncode == 0, made.stdout[-2000:] + made.stderr[-2000:]
    env = {k: v for k, v in os.environ.items() if k != "HOSTLINK_UVM_COUNTERS_OUT"}
    code = f"import ctypes; print(ctypes.CDLL({str(so)!r}).InitializeInjection())"
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert p.returncode == 0 and p.stdout.strip() == "1"
    assert p.stderr.strip() == "uvm_counters: HOSTLINK_UVM_COUNTERS_OUT is not set; nothing recorded"


def test_bad_host_node_stops_before_the_gpu(build):
    # checked right after the flags are read: exit 2 here, with no GPU to query
    p = subprocess.run([str(built(build, "memcpy_bw")), "--host-node", "east"], capture_output=True,
                       text=True)
    assert p.returncode == 2
    assert p.stdout.startswith('{"type":"error","kind":"usage"') and "host-node" in p.stdout
