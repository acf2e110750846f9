"""The binary trace store: round trips, chunking, the memory bound, bad stores, regions files."""
from __future__ import annotations

import json
import tracemalloc

import numpy as np
import pyarrow as pa
import pytest

from hostlink.model.errors import ConfigError, TraceError
from hostlink.traces.accelsim import read_accelsim, write_accelsim
from hostlink.traces.schema import InstTable, KernelLaunch, Region, WarpTrace
from hostlink.traces.store import (MANIFEST, StoreWriter, load_regions, open_trace, read_store,
                                   save_regions, write_store)

from test_accelsim import DATA, SAMPLES, assert_tables_equal, table


def synthetic(n: int, seed: int, launch: int = 0) -> InstTable:
    rng = np.random.default_rng(seed)
    addrs = (rng.integers(0, 1 << 30, (n, 32)) * 4).astype(np.uint64)
    return InstTable(launch=np.full(n, launch), cta=rng.integers(0, 100, n),
                     warp=rng.integers(0, 8, n), pc=rng.integers(0, 4096, n) * 16,
                     opcode=np.zeros(n), op=np.zeros(n), space=np.zeros(n),
                     width_B=np.full(n, 4), mask=rng.integers(0, 1 << 32, n, dtype=np.uint64),
                     addrs=addrs, imm=rng.integers(-5, 5, n), line_num=np.arange(n))


@pytest.mark.parametrize("name", SAMPLES)
def test_accelsim_store_accelsim(accelsim_data, tmp_path, name):
    src = accelsim_data / name
    trace = read_accelsim(src)
    write_store(trace, tmp_path / "store", chunk_insts=500)
    back = read_store(tmp_path / "store")
    assert_tables_equal(table(read_accelsim(src)), table(back))
    assert back.launches == trace.launches
    assert back.opcodes == trace.opcodes
    assert back.regions == trace.regions and back.memcpys == trace.memcpys
    for p in write_accelsim(back, tmp_path / "again"):
        assert p.read_bytes() == (src / p.name).read_bytes()


def test_rechunking_and_manifest(tmp_path):
    w = StoreWriter(tmp_path, chunk_insts=100)
    parts = [synthetic(n, seed) for seed, n in enumerate((30, 250, 1, 19, 100))]
    for p in parts:
        w.append(p)
    launches = [KernelLaunch("k", (100, 1, 1), (256, 1, 1), extra={"kernel_id": 3})]
    w.close(launches=launches, opcodes=["LDG.E"], regions=[Region("e", 0, 10, "host")])
    manifest = json.loads((tmp_path / MANIFEST).read_text())
    assert [c["rows"] for c in manifest["chunks"]] == [100, 100, 100, 100]
    assert manifest["rows"] == 400 and manifest["schema_version"] == 1
    trace = read_store(tmp_path)
    assert [len(c) for c in trace.chunks] == [100] * 4
    assert_tables_equal(InstTable.concat(parts), table(trace))
    assert trace.launches == launches


@pytest.mark.parametrize("compression", [None, "lz4", "zstd"])
def test_compressions(tmp_path, compression):
    t = synthetic(1000, 1)
    trace = WarpTrace([KernelLaunch("k", (100, 1, 1), (256, 1, 1))], ["X"], [], [t])
    write_store(trace, tmp_path, compression=compression)
    assert_tables_equal(t, table(read_store(tmp_path)))


def test_zeros_compress(tmp_path):
    """Non-memory rows carry 32 zero addresses; zstd keeps them from costing 256 B each."""
    n = 20000
    t = InstTable.concat([InstTable(**{k: np.zeros(n) for k in
                                       ("launch", "cta", "warp", "pc", "opcode", "op", "space",
                                        "width_B", "mask")}, addrs=np.zeros((n, 32)))])
    trace = WarpTrace([KernelLaunch("k", (1, 1, 1), (32, 1, 1))], ["X"], [], [t])
    write_store(trace, tmp_path / "z", compression="zstd")
    write_store(trace, tmp_path / "n", compression=None)
    size = lambda d: sum(p.stat().st_size for p in d.glob("chunk-*"))  # noqa: E731
    assert size(tmp_path / "z") * 50 < size(tmp_path / "n")


def _peak_write_read(path, chunks: int, chunk_insts: int) -> tuple[int, int]:
    tracemalloc.start()
    w = StoreWriter(path, chunk_insts=chunk_insts)
    for i in range(chunks * 4):
        w.append(synthetic(chunk_insts // 4, i))
    w.close(launches=[KernelLaunch("k", (100, 1, 1), (256, 1, 1))], opcodes=["X"], regions=[])
    _, write_peak = tracemalloc.get_traced_memory()
    tracemalloc.reset_peak()
    rows = 0
    for chunk in read_store(path).chunks:
        rows += len(chunk)
        del chunk
    _, read_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert rows == chunks * chunk_insts
    return write_peak, read_peak


def test_memory_bound_independent_of_size(tmp_path):
    """The docstring's bound: about chunk_insts x 330 B, twice while converting.
    Writing 4 and 32 chunks costs the same peak; it stays under 3 chunks' worth."""
    chunk_insts = 4096
    row_B = 32 * 8 + 8 + 8 + 4 + 8 + 2 + 2 + 1 + 1 + 1 + 4 + 4 + 2 + 5 * 2  # InstTable row
    bound = 3 * chunk_insts * row_B
    _peak_write_read(tmp_path / "warm-up", 1, 64)  # first use imports modules (pyarrow, pandas)
    small = _peak_write_read(tmp_path / "small", 4, chunk_insts)
    large = _peak_write_read(tmp_path / "large", 32, chunk_insts)
    for s, l in zip(small, large):
        assert l < bound and s < bound
        assert l < 1.25 * s + 64 * 1024
    # Arrow's own pool is released chunk by chunk as well
    assert pa.total_allocated_bytes() < chunk_insts * row_B


def test_existing_store_needs_overwrite(tmp_path):
    trace = WarpTrace([], [], [], [])
    write_store(trace, tmp_path)
    with pytest.raises(TraceError, match="already holds a trace store"):
        write_store(trace, tmp_path)
    write_store(trace, tmp_path, overwrite=True)
    assert len(read_store(tmp_path).chunks) == 0


def _store(tmp_path):
    t = synthetic(300, 2)
    write_store(WarpTrace([KernelLaunch("k", (100, 1, 1), (256, 1, 1))], ["X"], [], [t]),
                tmp_path, chunk_insts=100)
    return tmp_path


@pytest.mark.parametrize("edit,what", [
    (lambda d: (d / MANIFEST).unlink(), "no manifest.json"),
    (lambda d: (d / MANIFEST).write_text("{nope"), "manifest.json: not valid JSON"),
    (lambda d: (d / MANIFEST).write_text(json.dumps({"format": "x"})), "'format' is not"),
    (lambda d: (d / MANIFEST).write_text((d / MANIFEST).read_text().replace(
        '"schema_version": 1', '"schema_version": 99')), "schema_version 99"),
    (lambda d: (d / MANIFEST).write_text((d / MANIFEST).read_text().replace(
        '"opcodes"', '"opcodez"')), "malformed manifest"),
    (lambda d: (d / "chunk-000001.arrow").unlink(), "chunk-000001.arrow: chunk file missing"),
    (lambda d: (d / "chunk-000002.arrow").write_bytes(b"garbage"), "chunk-000002.arrow: not a readable"),
    (lambda d: (d / MANIFEST).write_text((d / MANIFEST).read_text().replace(
        '"rows": 100', '"rows": 99', 1)), "holds 100 rows, the manifest says 99"),
])
def test_bad_store(tmp_path, edit, what):
    d = _store(tmp_path)
    edit(d)
    with pytest.raises(TraceError, match=what):
        table(read_store(d))


def test_open_trace_detects_the_format(tmp_path, accelsim_data):
    src = accelsim_data / "vectoradd"
    assert len(table(open_trace(src))) == 344
    assert len(table(open_trace(src / "kernelslist.g"))) == 344
    write_store(read_accelsim(src), tmp_path / "s")
    assert len(table(open_trace(tmp_path / "s"))) == 344
    with pytest.raises(TraceError, match="neither a trace store"):
        open_trace(tmp_path)
    with pytest.raises(TraceError, match="no such file"):
        open_trace(tmp_path / "missing")


# --------------------------------------------------------------------------- regions files

def test_regions_file_round_trip(tmp_path):
    p = tmp_path / "r.toml"
    p.write_text('[[region]]\nname = "edges"\nstart = 0x10000000\nsize_B = "4 KiB"\n'
                 'location = "host"\n\n[[region]]\nname = "offsets"\nstart = "0x7f0000000000"\n'
                 'size_B = 800\nlocation = "device"\n')
    regions = load_regions(p)
    assert regions == [Region("edges", 0x10000000, 4096, "host"),
                       Region("offsets", 0x7F0000000000, 800, "device")]
    assert load_regions(save_regions(regions, tmp_path / "s.toml")) == regions


@pytest.mark.parametrize("text,what", [
    ('[[region]]\nname = "a"\nstart = 0\nsize_B = 4\nlocation = "host"\ncolour = 1\n',
     "unknown key 'region\\[0\\].colour'"),
    ('[[region]]\nname = "a"\nstart = 0\nlocation = "host"\n', "'region\\[0\\].size_B' is required"),
    ('[[region]]\nname = "a"\nstart = 0\nsize_B = 4\nlocation = "gpu"\n',
     "'region\\[0\\].location' = 'gpu' is not one of"),
    ('[[region]]\nname = "a"\nstart = 0\nsize_B = "4 GB/s"\nlocation = "host"\n',
     "'region\\[0\\].size_B': unit 'GB/s' does not fit"),
    ('[[region]]\nname = "a"\nstart = "zz"\nsize_B = 4\nlocation = "host"\n',
     "'region\\[0\\].start' = 'zz' is not an integer"),
    ('regions = 1\n', "unknown key 'regions'"),
    ('[[region]\n', "not valid TOML"),
])
def test_bad_regions_file(tmp_path, text, what):
    p = tmp_path / "r.toml"
    p.write_text(text)
    with pytest.raises(ConfigError, match=what):
        load_regions(p)


def test_store_regions_and_explicit_ones(tmp_path):
    trace = read_accelsim(DATA / "edge_v4", memcpy_location="host")
    write_store(trace, tmp_path)
    back = read_store(tmp_path, regions=[Region("big", 0x10000000, 8192, "device")])
    assert [r.name for r in back.regions] == ["big"]  # overlaps, so replaces, both memcpy regions
