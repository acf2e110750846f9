"""Fuzz the SASS reader, program output files and results Parquet files (validation
results, a sweep's results and points parts): one-line errors, never tracebacks."""
from __future__ import annotations

import gzip
import shutil

import pytest
from fuzz_inputs import REPO, check_clean, fuzz_settings, inputs
from hypothesis import given
from hypothesis import strategies as st

from hostlink.model.sweep import load_results, run_sweep
from hostlink.validation.results_io import make_table, read_output, read_results, write_results
from hostlink.validation.sass import format_table, kernels_in_flight, read_sass


def _sass_seed() -> bytes:
    """The first function of a real cuobjdump -sass listing, up to its 120th line."""
    text = gzip.decompress((REPO / "validation/experiments/sass/runs/h200/zc_read.sass.gz")
                           .read_bytes()).decode()
    start = text.index("\t\tFunction :")
    return "\n".join(text[start:].splitlines()[:120]).encode()


SASS = _sass_seed()
OUTPUT = (b'{"type": "device", "name": "H100", "sm_count": 132}\n'
          b'{"type": "measurement", "benchmark": "zc_read", "case": "a", "rep": 0,'
          b' "metrics": {"time_ms": 1.5, "bw_GBps": 20.1}}\n'
          b'{"type": "done", "ok": true}\n')


def _sass_all(path):
    functions = read_sass(path)
    kernels_in_flight(functions)
    return format_table(functions)


@fuzz_settings(600)
@given(data=st.data(), compressed=st.booleans())
def test_sass(tmp_path, data, compressed):
    raw = data.draw(inputs(SASS, max_size=600))
    path = tmp_path / "k.sass"
    path.write_bytes(gzip.compress(raw, compresslevel=1) if compressed else raw)
    check_clean(_sass_all, path)


@fuzz_settings(300)
@given(data=st.data())
def test_sass_gzip_bytes(tmp_path, data):
    path = tmp_path / "k.sass.gz"
    path.write_bytes(data.draw(inputs(gzip.compress(SASS[:1500], compresslevel=1))))
    check_clean(_sass_all, path)


@fuzz_settings(400)
@given(data=st.data())
def test_program_output(tmp_path, data):
    path = tmp_path / "out.jsonl"
    path.write_bytes(data.draw(inputs(OUTPUT)))
    check_clean(read_output, path)


@pytest.fixture(scope="module")
def results_parquet(tmp_path_factory) -> bytes:
    folder = tmp_path_factory.mktemp("results")
    df = make_table([("r1", "exp", "case-a", "measured", "bw_GBps", 12.5, "GB/s", 0),
                     ("r1", "exp", "case-a", "analytic", "bw_GBps", 13.0, "GB/s", 0)])
    _, parquet = write_results(df, folder)
    return parquet.read_bytes()


@fuzz_settings(400)
@given(data=st.data())
def test_validation_results_parquet(tmp_path, results_parquet, data):
    path = tmp_path / "results.parquet"
    path.write_bytes(data.draw(inputs(results_parquet, max_size=200)))
    check_clean(read_results, path)


SWEEP = """
[sweep]
name = "fuzz"
system = "h100-pcie5"

[workload]
kind = "sizes"
sizes_B = [128]
fractions = [1.0]

[[axis]]
key = "link.tags"
values = [64, 256]
"""


@pytest.fixture(scope="module")
def sweep_folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("sweep")
    (root / "s.toml").write_text(SWEEP)
    run_sweep(root / "s.toml", root / "out", jobs=1)
    return root / "out"


@pytest.mark.parametrize("part", ["results", "points"])
@fuzz_settings(150)
@given(data=st.data())
def test_sweep_store_parts(tmp_path, sweep_folder, part, data):
    out = tmp_path / "out"
    if not out.exists():
        shutil.copytree(sweep_folder, out)
    target = sorted((out / part).glob("part-*.parquet"))[0]
    seed = (sweep_folder / part / target.name).read_bytes()
    target.write_bytes(data.draw(inputs(seed, max_size=200)))
    check_clean(load_results, out, wide=True)
