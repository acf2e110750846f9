"""A run's raw output packed (raw.tar.xz, as committed) and loose (raw/, as a fresh
run writes it) reads the same records, and packing is lossless and repeatable."""
from __future__ import annotations

import shutil
import tarfile

import pandas as pd
import pytest

from hostlink.model.errors import HostlinkError
from hostlink.validation import raw_store, runner
from hostlink.validation.data_tree import committed_runs, run_dir
from hostlink.validation.launches import measured_launches
from hostlink.validation.results_io import read_results

RUN = run_dir("traversal14_la1", "h200")


def _loose_copy(tmp_path):
    """The committed run with its pack unpacked into raw/ and the pack removed."""
    copy = tmp_path / "loose"
    copy.mkdir()
    for name in ("manifest.toml", "metadata.json"):
        shutil.copy(RUN / name, copy / name)
    with tarfile.open(RUN / raw_store.PACKED, "r:xz") as tar:
        tar.extractall(copy, filter="data")
    return copy


def test_packed_and_loose_read_the_same_records(tmp_path):
    loose = _loose_copy(tmp_path)
    assert not (loose / raw_store.PACKED).exists() and (loose / "raw").is_dir()
    names = raw_store.raw_names(RUN)
    assert names == raw_store.raw_names(loose) and len(names) == 8   # 4 kernels x 2 graphs
    for name in names:
        a, b = raw_store.read_raw_output(RUN, name), raw_store.read_raw_output(loose, name)
        assert a.measurements == b.measurements and a.done == b.done and a.device == b.device
    # a reader of raw output (per-launch times) gives the same either way
    case = "bfs/kron14/merged_aligned/uvm/8B"
    src = int(read_results(RUN / "results.parquet").query("case == @case and metric == 'source'")
              ["value"].iloc[0])
    assert (measured_launches(RUN, case, src) == measured_launches(loose, case, src)).all()
    # and a reparse from the loose files is the committed table
    runner.reparse(loose)
    keys = ["case", "metric", "rep"]
    pd.testing.assert_frame_equal(
        read_results(loose / "results.parquet").sort_values(keys).reset_index(drop=True),
        read_results(RUN / "results.parquet").sort_values(keys).reset_index(drop=True),
        check_exact=False, rtol=1e-12)


def test_packing_again_gives_the_committed_bytes(tmp_path):
    loose = _loose_copy(tmp_path)
    raw_store.pack_raw(loose)
    assert not (loose / "raw").exists()
    assert (loose / raw_store.PACKED).read_bytes() == (RUN / raw_store.PACKED).read_bytes()


def test_a_loose_file_wins_over_its_packed_copy(tmp_path):
    loose = _loose_copy(tmp_path)
    shutil.copy(RUN / raw_store.PACKED, loose / raw_store.PACKED)
    name = raw_store.raw_names(loose)[0]
    (loose / "raw" / name).write_text('{"type": "done", "program": "x"}\n')
    assert raw_store.read_raw_output(loose, name).measurements == []
    assert raw_store.read_raw_output(RUN, name).measurements


def test_a_broken_pack_is_one_line(tmp_path):
    (tmp_path / raw_store.PACKED).write_bytes(b"not xz")
    with pytest.raises(HostlinkError, match=r"raw\.tar\.xz: not a readable tar\.xz"):
        raw_store.raw_names(tmp_path)
    with pytest.raises(HostlinkError, match="no raw output"):
        raw_store.pack_raw(tmp_path / "nothing")


def test_no_committed_run_keeps_loose_raw_files_or_empty_files():
    for run in committed_runs():
        assert not (run / "raw").exists(), run
        empty = [p for p in run.rglob("*") if p.is_file() and p.stat().st_size == 0
                 and "__pycache__" not in p.parts]
        assert empty == [], empty


def test_packed_traces_read_as_the_loose_ones(tmp_path):
    """A run's traces/ packed into traces.tar unpack to the same files, and the loose
    folder wins where both exist."""
    from hostlink.validation.raw_store import pack_traces, traces_dir
    run = tmp_path / "run"
    case = run / "traces" / "bfs__g__naive__zerocopy__4B"
    case.mkdir(parents=True)
    (case / "kernelslist.g").write_text("kernel-1.traceg\n")
    (case / "kernel-1.traceg.xz").write_bytes(bytes(range(256)) * 3)
    before = {p.relative_to(run / "traces"): p.read_bytes()
              for p in (run / "traces").rglob("*") if p.is_file()}
    assert traces_dir(run) == run / "traces"
    pack_traces(run)
    assert not (run / "traces").exists() and (run / "traces.tar").is_file()
    unpacked = traces_dir(run)
    after = {p.relative_to(unpacked): p.read_bytes() for p in unpacked.rglob("*") if p.is_file()}
    assert after == before


def test_committed_traces_are_packed():
    from hostlink.validation.data_tree import committed_runs
    assert not [r for r in committed_runs() if (r / "traces").is_dir()]
