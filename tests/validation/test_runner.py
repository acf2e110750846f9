"""The measuring harness end to end, with stand-in programs (no GPU): jobs,
case names, tidy results, metadata, failures and resuming."""
from __future__ import annotations

import json
import stat
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hostlink.model.errors import HostlinkError
from hostlink.validation import runner
from hostlink.validation.data_tree import committed_runs, manifest_path
from hostlink.validation.cli import main as validate_main
from hostlink.validation.manifest import load_manifest
from hostlink.validation.results_io import read_results

# Stands in for the gpu_kernels programs: written to a file by fake_bin().
FAKE_PROGRAM = r'''
"""Stands in for a gpu_kernels program in runner tests (no GPU needed).

Invoked as ``fake_program.py --as PROGRAM FLAGS...`` (a wrapper named like
the program, bfs, zc_read, ..., calls it so); prints
JSON lines in the programs' format (gpu_kernels/common/json.hpp) with
made-up numbers. FAKE_FAIL=<program> makes that program print an error line
and exit 1; FAKE_CHECK_FAIL=<program> makes its checks fail (exit 4).
"""
from __future__ import annotations

import itertools
import json
import os
import sys
from pathlib import Path

PROGRAM_BENCH = {"memcpy_bw": "memcpy", "zc_read": "zc_read", "zc_warps": "zc_warps", "ptr_chase": "ptr_chase",
                 "uvm_touch": "uvm_touch"}


def args_of(argv):
    out = {}
    it = iter(argv)
    for a in it:
        assert a.startswith("--"), a
        out[a[2:]] = next(it)
    return out


def as_value(s):
    try:
        return int(s)
    except ValueError:
        return s


def lst(a, k):
    return [as_value(x) for x in a[k].split(",")]


def emit(obj):
    print(json.dumps(obj), flush=True)


def main():
    assert sys.argv[1] == "--as"
    prog = sys.argv[2]
    a = args_of(sys.argv[3:])
    emit({"type": "device", "name": "Fake GPU", "sm_count": 4})
    if os.environ.get("FAKE_FAIL") == prog:
        emit({"type": "error", "kind": "cuda", "message": f"{prog}: made-up failure"})
        sys.stderr.write("error: made-up failure\n")
        return 1
    checks_fail = os.environ.get("FAKE_CHECK_FAIL") == prog
    if prog == "devinfo":
        emit({"type": "done", "program": prog})
        return 0
    if prog in PROGRAM_BENCH:
        bench = PROGRAM_BENCH[prog]
        if bench == "memcpy":
            keys = ["direction", "size-B"]
        elif bench in ("zc_read", "zc_warps"):
            keys = ["pattern", "bytes-per-lane", "memory-mode", "warps", "unroll", "cache"]
        elif bench == "ptr_chase":
            keys = ["memory-mode", "stride-B", "footprint-B", "order", "cache"]
        else:
            keys = ["size-B", "pattern", "advice"]
        for combo in itertools.product(*[lst(a, k) for k in keys]):
            params = dict(zip([k.replace("-", "_") for k in keys], combo))
            knobs = [{}]
            if bench in ("zc_read", "zc_warps"):
                knob = {"coalesced": "offset-B", "strided": "chunk-B", "random": "region-B"}[params["pattern"]]
                knobs = [{knob.replace("-", "_"): v} for v in lst(a, knob)]
            for kv in knobs:
                p = dict(params)
                if kv:  # the knob goes right after the pattern, as the program prints it
                    p = {"pattern": p.pop("pattern"), **kv, **p}
                for rep in range(int(a["reps"])):
                    emit({"type": "measurement", "benchmark": bench, "params": p, "rep": rep,
                          "metrics": {"time_ms": 1.5 + rep, "bw_GBps": 40.0 - rep, "bytes_B": 1 << 20}})
        emit({"type": "done", "program": prog})
        return 0
    # traversal
    per_source = prog in ("bfs", "sssp")
    sources = lst(a, "source") if per_source and "source" in a else [0]
    reps = int(a.get("reps", "1"))
    if "self-trace" in a:
        d = Path(a["self-trace"])
        d.mkdir(parents=True, exist_ok=True)
        (d / "kernelslist.g").write_text("kernel-1.traceg\n")
        (d / "kernel-1.traceg").write_text("-kernel name = fake\n")
        (d / "regions.json").write_text('{"regions": []}\n')
        sources, reps, kind = sources[:1], 1, "trace"
    else:
        kind = "measurement"
    failures = 0
    configs = itertools.product(lst(a, "id-bytes"), a["memory-mode"].split(","), a["variant"].split(","))
    for (idb, mode, var), (si, s), rep in itertools.product(configs, enumerate(sources), range(reps)):
        params = {"graph": a["graph-name"], "variant": var, "memory_mode": mode, "id_bytes": idb}
        metrics = {"time_ms": 2.0 + si, "kernel_time_ms": 1.5, "iterations": 5, "edges_read": 1000,
                   "bytes_read_B": 1000 * idb, "bw_GBps": 5.0, "check_pass": 0 if checks_fail else 1,
                   "mismatches": 3 if checks_fail else 0}
        if per_source:
            params["source"] = s
            metrics["source"] = s
        failures += checks_fail
        emit({"type": kind, "benchmark": prog, "params": params, "rep": si * reps + rep,
              "metrics": metrics, "detail": {"launch_ms": [0.5, 1.0]}})
    emit({"type": "done", "program": prog, "check_failures": failures})
    return 4 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
'''
PROGRAMS = ["memcpy_bw", "zc_read", "zc_warps", "ptr_chase", "uvm_touch", "bfs", "sssp", "cc", "pagerank", "devinfo"]

MANIFEST = """
[experiment]
name = "fake"
seed = 1

[graphs.tiny]
kind = "file"
path = "tiny"

[[self_trace]]
kernel = "bfs"
graph = "tiny"
variant = "balanced"
memory_mode = "zerocopy"
id_bytes = 4

[[traversal]]
kernels = ["bfs", "cc"]
graphs = ["tiny"]
variants = ["naive", "balanced"]
memory_modes = ["zerocopy", "uvm"]
id_bytes = [4, 8]
sources = 2
reps = 2

[[micro]]
benchmark = "zc_read"
pattern = ["coalesced", "random"]
offset_B = [0, 64]
region_B = ["4 KiB"]
reps = 2

[[micro]]
benchmark = "memcpy"
direction = ["h2d", "d2h"]
size_B = [4096]
reps = 1
"""


def fake_bin(tmp_path: Path) -> Path:
    b = tmp_path / "bin"
    b.mkdir()
    script = tmp_path / "fake_program.py"
    script.write_text(FAKE_PROGRAM)
    for p in PROGRAMS:
        f = b / p
        f.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{script}" --as {p} "$@"\n')
        f.chmod(f.stat().st_mode | stat.S_IEXEC)
    return b


def tiny_graph(prefix: Path) -> None:
    # a 6-vertex symmetric graph; vertex 5 is isolated
    edges = {0: [1, 2], 1: [0, 3], 2: [0], 3: [1, 4], 4: [3], 5: []}
    offsets = np.concatenate([[0], np.cumsum([len(edges[v]) for v in range(6)])]).astype(np.uint64)
    dst = np.array([u for v in range(6) for u in edges[v]], dtype=np.uint64)
    for ext, arr in (("col", offsets), ("dst", dst), ("val", np.ones(len(dst), dtype=np.uint32))):
        with open(f"{prefix}.bel.{ext}", "wb") as f:
            np.array([len(arr), 0], dtype=np.uint64).tofile(f)
            arr.tofile(f)


@pytest.fixture
def setup(tmp_path):
    (tmp_path / "m.toml").write_text(MANIFEST)
    tiny_graph(tmp_path / "tiny")
    return tmp_path / "m.toml", fake_bin(tmp_path), tmp_path / "out"


def test_full_run_writes_tidy_results_and_metadata(setup):
    manifest, bin_dir, out = setup
    meta = runner.run(manifest, out, bin_dir=bin_dir, progress=False)
    assert [j["status"] for j in meta["jobs"]] == ["finished"] * len(meta["jobs"])
    # 1 trace + 2 micro + 2 kernels (each with both memory modes)
    assert len(meta["jobs"]) == 5 and meta["jobs"][0]["kind"] == "trace"
    assert meta["missing_cases"] == [] and meta["check_failures"] == 0
    df = read_results(out / "results.csv")
    pq = read_results(out / "results.parquet")
    # the rows the programs printed, and on reading each traversal run's loop gap
    gaps = int((pq["metric"] == "loop_gap_us").sum())
    assert len(df) == len(pq) == meta["rows"] + gaps and gaps > 0
    assert len(pd.read_parquet(out / "results.parquet")) == meta["rows"]
    assert set(df["model_kind"]) == {"measured"}
    m = load_manifest(manifest)
    expected = {c.case for c in m.traversal_cases()} | set(m.micro_cases()) | {m.self_trace[0].case}
    assert set(df["case"]) == expected
    bfs = df[(df["case"] == "bfs/tiny/balanced/uvm/8B") & (df["metric"] == "time_ms")]
    assert sorted(bfs["rep"]) == [0, 1, 2, 3]  # 2 sources x 2 reps
    src = df[(df["case"] == "bfs/tiny/balanced/uvm/8B") & (df["metric"] == "source")]
    assert set(src["value"]) == set(meta["sources"]["tiny"]) and set(src["unit"]) == {"vertex"}
    # sources have degree > 0 (vertex 5 is isolated) and are recorded per case
    assert 5 not in meta["sources"]["tiny"] and len(meta["sources"]["tiny"]) == 2
    assert meta["cases"]["bfs/tiny/naive/zerocopy/4B"]["sources"] == meta["sources"]["tiny"]
    assert "sources" not in meta["cases"]["cc/tiny/naive/zerocopy/4B"]
    unit = dict(zip(df["metric"], df["unit"]))
    assert unit["bw_GBps"] == "GB/s" and unit["time_ms"] == "ms" and unit["check_pass"] == "bool"
    assert (out / "traces" / "bfs__tiny__balanced__zerocopy__4B" / "kernelslist.g").exists()
    env = json.loads((out / "environment.json").read_text())
    assert "host" in env and "gpu" in env
    # the argv passes every naming list and setting to the program
    zc = next(j for j in meta["jobs"] if j["id"] == "micro__0__zc_read")
    assert "--offset-B" in zc["argv"] and zc["argv"][zc["argv"].index("--offset-B") + 1] == "0,64"


def test_micro_rounds_interleave_the_repetitions(setup):
    # micro_rounds = 3: every micro group runs three times, round by round, and the
    # repetitions of later rounds are numbered on from the round before
    manifest, bin_dir, out = setup
    text = manifest.read_text().replace("seed = 1\n", "seed = 1\nmicro_rounds = 3\n", 1)
    manifest.write_text(text)
    assert load_manifest(manifest).micro_rounds == 3
    meta = runner.run(manifest, out, bin_dir=bin_dir, progress=False, only="micro")
    ids = [j["id"] for j in meta["jobs"]]
    assert ids == ["micro__0__zc_read", "micro__1__memcpy",
                   "micro__0__zc_read__round1", "micro__1__memcpy__round1",
                   "micro__0__zc_read__round2", "micro__1__memcpy__round2"]
    assert meta["missing_cases"] == []
    df = read_results(out / "results.parquet")
    zc = df[df["case"].str.startswith("micro/zc_read/") & (df["metric"] == "bw_GBps")]
    for _, g in zc.groupby("case"):                       # reps = 2 per round
        assert sorted(g["rep"]) == [0, 1, 2, 3, 4, 5]
    cp = df[df["case"].str.startswith("micro/memcpy/") & (df["metric"] == "bw_GBps")]
    for _, g in cp.groupby("case"):                       # reps = 1 per round
        assert sorted(g["rep"]) == [0, 1, 2]
    # a rerun resumes: every round is done, none runs again
    stamps = {p.name: p.stat().st_mtime_ns for p in (out / "raw").glob("*.jsonl")}
    assert len(stamps) == 6
    runner.run(manifest, out, bin_dir=bin_dir, progress=False, only="micro")
    assert {p.name: p.stat().st_mtime_ns for p in (out / "raw").glob("*.jsonl")} == stamps
    assert len(read_results(out / "results.parquet")) == len(df)


@pytest.mark.parametrize("value", [0, 101, "3"])
def test_micro_rounds_out_of_range_is_refused(setup, value):
    manifest, _, _ = setup
    manifest.write_text(manifest.read_text().replace("seed = 1\n", f"seed = 1\nmicro_rounds = {value!r}\n".replace("'", '"'), 1))
    with pytest.raises(HostlinkError, match="micro_rounds"):
        load_manifest(manifest)


FAKE_SASS = """\t\tFunction : _Z4walkILi4EEvv
        /*0000*/                   LDG.E.64 R4, desc[UR4][R2.64] ;
        /*0010*/                   LDG.E.64 R6, desc[UR4][R2.64+0x100] ;
        /*0020*/                   IADD3 R8, R4, R6, RZ ;
        /*0030*/                   BRA 0x0 ;
\t\tFunction : _Z4initv
        /*0000*/                   EXIT ;
"""


def test_loads_in_flight_are_recorded_from_the_programs_sass(setup, monkeypatch, tmp_path):
    manifest, bin_dir, out = setup
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "sass.txt").write_text(FAKE_SASS)
    # cuobjdump stands in: the SASS above for bfs, no device code for memcpy_bw, an
    # error for the other programs
    dump = tools / "cuobjdump"
    dump.write_text(f'#!/bin/sh\ncase "$2" in */bfs) cat "{tools / "sass.txt"}";; '
                    '*/memcpy_bw) echo "";; '
                    '*) echo "cuobjdump fatal: not an ELF file" >&2; exit 1;; esac\n')
    dump.chmod(dump.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{tools}:{__import__('os').environ['PATH']}")
    meta = runner.run(manifest, out, bin_dir=bin_dir, progress=False)
    rec = json.loads((out / runner.LOADS_IN_FLIGHT).read_text())
    # one entry per program the manifest runs; the loop's two loads, the init has none
    assert set(rec["programs"]) == {Path(j["argv"][0]).name for j in meta["jobs"]}
    assert rec["programs"]["bfs"] == {"kernels": {"_Z4walkILi4EEvv": 2}}
    assert rec["programs"]["zc_read"] == {"error": "cuobjdump fatal: not an ELF file"}
    assert rec["programs"]["memcpy_bw"] == {"kernels": {}}
    # without cuobjdump nothing is written
    monkeypatch.setenv("PATH", "/nonexistent")
    assert runner.record_loads_in_flight(tmp_path, [bin_dir / "bfs"]) is None


def test_failed_job_is_recorded_and_resume_reruns_only_it(setup, monkeypatch):
    manifest, bin_dir, out = setup
    monkeypatch.setenv("FAKE_FAIL", "cc")
    meta = runner.run(manifest, out, bin_dir=bin_dir, progress=False)
    failed = [j for j in meta["jobs"] if j["status"] == "failed"]
    assert {j["id"] for j in failed} == {"trav__0__cc__tiny"}
    assert "made-up failure" in failed[0]["errors"][0] and failed[0]["returncode"] == 1
    assert any(c.startswith("cc/") for c in meta["missing_cases"])
    assert (out / "raw" / "trav__0__cc__tiny.jsonl.failed").exists()
    # only the job that wrote to stderr leaves a log; the others leave no empty file
    assert sorted(p.name for p in (out / "logs").glob("*.err")) == ["trav__0__cc__tiny.err"]
    assert "made-up failure" in (out / "logs" / "trav__0__cc__tiny.err").read_text()
    run_id = meta["run_id"]
    before = (out / "raw" / "trav__0__bfs__tiny.jsonl").stat().st_mtime_ns
    monkeypatch.delenv("FAKE_FAIL")
    meta = runner.run(manifest, out, bin_dir=bin_dir, progress=False)
    assert meta["run_id"] == run_id and len(meta["sessions"]) == 2
    status = {j["id"]: j["status"] for j in meta["jobs"]}
    assert status["trav__0__cc__tiny"] == "finished"
    assert status["trav__0__bfs__tiny"] == "finished"  # kept from the first session
    assert (out / "raw" / "trav__0__bfs__tiny.jsonl").stat().st_mtime_ns == before
    assert meta["missing_cases"] == []


def test_a_packed_run_resumes_and_reparses_from_its_pack(setup):
    from hostlink.validation.raw_store import pack_raw

    manifest, bin_dir, out = setup
    runner.run(manifest, out, bin_dir=bin_dir, progress=False)
    before = read_results(out / "results.parquet")
    pack_raw(out)
    assert not (out / "raw").exists() and (out / "raw.tar.xz").is_file()
    (out / "run.json").unlink()            # as committed: metadata.json holds the run id
    meta = runner.run(manifest, out, bin_dir=bin_dir, progress=False)
    assert all(j["status"] == "finished" for j in meta["jobs"])
    assert not any((out / "raw").glob("*.jsonl"))      # nothing ran again
    pd.testing.assert_frame_equal(read_results(out / "results.parquet"), before)
    assert runner.reparse(out)["missing_cases"] == []


def test_check_failures_are_kept_as_rows(setup, monkeypatch):
    manifest, bin_dir, out = setup
    monkeypatch.setenv("FAKE_CHECK_FAIL", "bfs")
    meta = runner.run(manifest, out, bin_dir=bin_dir, progress=False, only="bfs")
    assert meta["check_failures"] > 0
    df = read_results(out / "results.csv")
    assert (df[df["metric"] == "check_pass"]["value"] == 0).all()


def test_other_manifest_in_same_out_is_refused(setup, tmp_path):
    manifest, bin_dir, out = setup
    runner.run(manifest, out, bin_dir=bin_dir, progress=False, only="memcpy")
    other = tmp_path / "other.toml"
    other.write_text(MANIFEST.replace('name = "fake"', 'name = "other"'))
    with pytest.raises(runner.RunError, match="another manifest"):
        runner.run(other, out, bin_dir=bin_dir, progress=False)


def test_reparse_rebuilds_results(setup):
    manifest, bin_dir, out = setup
    first = runner.run(manifest, out, bin_dir=bin_dir, progress=False)
    (out / "results.csv").unlink()
    (out / "results.parquet").unlink()
    meta = runner.reparse(out)
    assert meta["rows"] == first["rows"] and meta["missing_cases"] == []
    assert len(pd.read_parquet(out / "results.parquet")) == first["rows"]


def test_dry_run_prints_commands(setup, capsys):
    manifest, bin_dir, out = setup
    rc = validate_main(["run", str(manifest), "--out", str(out), "--dry-run", "--no-build"])
    lines = capsys.readouterr().out.strip().splitlines()
    assert rc == 0 and len(lines) == 5
    assert any("--self-trace" in line for line in lines)


def test_cli_reports_missing_graph_in_one_line(tmp_path, capsys, monkeypatch):
    # past the GPU check (test_runner_gpu_check.py) to the manifest's own inputs
    monkeypatch.setattr(runner, "gpu_listing", lambda: "GPU 0: stand-in")
    (tmp_path / "m.toml").write_text(MANIFEST)
    rc = validate_main(["run", str(tmp_path / "m.toml"), "--out", str(tmp_path / "o"), "--no-build", "--quiet"])
    err = capsys.readouterr().err
    assert rc == 2 and "graph 'tiny'" in err and "not found" in err and "Traceback" not in err


def test_generated_graph_through_the_graph_library(tmp_path):
    pytest.importorskip("hostlink.traces.graphs")
    prefix = tmp_path / "k6"
    cmd = runner.graph_gen_command("kron", 6, 4, 5, prefix)
    import subprocess
    assert subprocess.run(cmd, capture_output=True).returncode == 0
    off = np.fromfile(f"{prefix}.bel.col", dtype=np.uint64)
    assert off[0] == 64 + 1 and all(p.exists() for p in runner.graph_files(prefix))


def test_job_plan_for_committed_manifest(tmp_path):
    m = load_manifest(manifest_path("first_run"))
    prefixes = {g: tmp_path / g for g in m.graphs_used()}
    sources = {g: [1, 2, 3] for g in m.graphs_used()}
    jobs = runner.plan_jobs(m, tmp_path / "bin", prefixes, sources, tmp_path)
    ids = [j.id for j in jobs]
    assert len(ids) == len(set(ids))
    expected = {c for j in jobs for c in j.expected_cases}
    assert expected == ({c.case for c in m.traversal_cases()} | set(m.micro_cases())
                        | {s.case for s in m.self_trace})
    bfs = next(j for j in jobs if j.id == "trav__1__bfs__kron21")
    assert bfs.argv[bfs.argv.index("--source") + 1] == "1,2,3"


COMMITTED = [p for p in committed_runs() if (p / "manifest.toml").exists() and (p / "raw.tar.xz").exists()]


@pytest.mark.parametrize("run_dir", COMMITTED, ids=lambda p: f"{p.parents[1].name}/{p.name}")
def test_committed_run_reparses_to_its_results(run_dir, tmp_path):
    import shutil

    import pandas as pd

    copy = tmp_path / run_dir.name
    copy.mkdir()
    for name in ("manifest.toml", "metadata.json"):
        shutil.copy(run_dir / name, copy / name)
    shutil.copy(run_dir / "raw.tar.xz", copy / "raw.tar.xz")
    committed = json.loads((run_dir / "metadata.json").read_text())
    meta = runner.reparse(copy)
    assert meta["missing_cases"] == committed["missing_cases"] and meta["check_failures"] == 0
    # the cases keep the parameters they ran with (a later default never replaces them)
    assert meta["cases"] == committed["cases"]
    assert meta["rows"] == committed["rows"]
    keys = ["case", "metric", "rep"]
    a = read_results(copy / "results.parquet").sort_values(keys).reset_index(drop=True)
    b = read_results(run_dir / "results.parquet").sort_values(keys).reset_index(drop=True)
    pd.testing.assert_frame_equal(a, b, check_exact=False, rtol=1e-8)
    # every traversal result passed its check on the GPU
    assert (b[b["metric"] == "check_pass"]["value"] == 1).all()
