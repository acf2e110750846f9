"""Fuzz the Accel-Sim reader (kernelslist.g, kernel-N.traceg, plain and .xz) and the
trace store's manifest: every fault is a one-line error naming the file."""
from __future__ import annotations

import lzma
import shutil

import pytest
from fuzz_inputs import REPO, check_clean, fuzz_settings, inputs
from hypothesis import given
from hypothesis import strategies as st

from hostlink.traces.accelsim import read_accelsim
from hostlink.traces.schema import InstTable

DATA = REPO / "tests/traces/data"
FOLDERS = ("edge_v4", "edge_v5_lineinfo", "edge_legacy")


def _read_all(folder):
    trace = read_accelsim(folder)
    return InstTable.concat(list(trace.chunks))


@pytest.mark.parametrize("name", FOLDERS)
@fuzz_settings(400)
@given(data=st.data())
def test_kernel_file(tmp_path, name, data):
    src = DATA / name
    dst = tmp_path / "t"
    if not dst.exists():
        shutil.copytree(src, dst)
    kernel = sorted(p.name for p in src.glob("kernel-*.traceg"))[0]
    raw = data.draw(inputs((src / kernel).read_bytes(), max_size=2000))
    (dst / kernel).write_bytes(raw)
    check_clean(_read_all, dst)


@fuzz_settings(300)
@given(data=st.data())
def test_kernelslist(tmp_path, data):
    src = DATA / "edge_v4"
    dst = tmp_path / "t"
    if not dst.exists():
        shutil.copytree(src, dst)
    raw = data.draw(inputs((src / "kernelslist.g").read_bytes()))
    (dst / "kernelslist.g").write_bytes(raw)
    check_clean(_read_all, dst)


@fuzz_settings(300)
@given(data=st.data(), damage_xz=st.booleans())
def test_xz_kernel_file(tmp_path, data, damage_xz):
    """A kernel file compressed after mutation (the parser sees it), or a valid .xz
    mutated (the decompressor sees it)."""
    src = DATA / "edge_v4"
    dst = tmp_path / "t"
    if not dst.exists():
        shutil.copytree(src, dst)
        (dst / "kernel-1.traceg").unlink()
    text = (src / "kernel-1.traceg").read_bytes()
    if damage_xz:
        raw = data.draw(inputs(lzma.compress(text, preset=0), max_size=600))
    else:
        raw = lzma.compress(data.draw(inputs(text, max_size=2000)), preset=0)
    (dst / "kernel-1.traceg.xz").write_bytes(raw)
    check_clean(_read_all, dst)


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    from hostlink.traces.store import write_store
    root = tmp_path_factory.mktemp("store") / "s"
    write_store(read_accelsim(DATA / "edge_v4"), root)
    return root


@pytest.mark.parametrize("part", ["manifest.json", "chunk-000000.arrow"])
@fuzz_settings(200)
@given(data=st.data())
def test_trace_store(tmp_path, store, part, data):
    """The binary trace store: its JSON manifest and an Arrow chunk."""
    from hostlink.traces.store import open_trace
    dst = tmp_path / "s"
    if not dst.exists():
        shutil.copytree(store, dst)
    (dst / part).write_bytes(data.draw(inputs((store / part).read_bytes(), max_size=600)))

    def read_all(path):
        return InstTable.concat(list(open_trace(path).chunks))
    check_clean(read_all, dst)
