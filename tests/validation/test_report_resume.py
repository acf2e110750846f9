"""A report keeps its predictions as they finish and resumes after a crash.

The measured run is made by the model itself (twins.synthesize on the h100-pcie5
preset, analytic fidelity, ld.cv host loads: no cache model) with one traversal
case whose twin cannot be built (its graph is neither committed nor named with a
generator), so that a failure is stored too. Crashes are forced by wrapping the twin builder.
"""
from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest

from hostlink.model.cli.main import main
from hostlink.validation import report, report_store, twins
from hostlink.validation.results_io import make_table, read_results, write_results

MAXREQ = 8192
REAL_BUILD_MICRO = twins.build_micro
UNBUILT = "bfs/kron8/merged/zerocopy/8B"


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    from hostlink.model.config import load_system
    from hostlink.validation.manifest import micro_case_name
    truth = load_system("h100-pcie5", {"link.rtt_ns": 1300.0})
    cases = {}
    for stride in (128, 4096):
        naming = dict(memory_mode="zerocopy", stride_B=stride, footprint_B=64 << 20,
                      order="random", cache="cv")
        cases[micro_case_name("ptr_chase", naming)] = dict(kind="micro", benchmark="ptr_chase",
                                                           **naming, steps=300)
    for w in (1, 66, 264):
        naming = dict(pattern="coalesced", offset_B=0, bytes_per_lane=4, memory_mode="zerocopy",
                      warps=w, unroll=1, cache="cv")
        cases[micro_case_name("zc_warps", naming)] = dict(kind="micro", benchmark="zc_warps",
                                                          **naming, total_B=64 << 20,
                                                          max_per_warp_B=1 << 20)
    measured = twins.synthesize(cases, truth, fidelity="analytic", noise_pct=2.0, seed=3,
                                max_requests=MAXREQ)
    cases[UNBUILT] = dict(kind="traversal", kernel="bfs", graph="kron8", variant="merged",
                          memory_mode="zerocopy", id_bytes=8, reps=1, sources=[0])
    extra = make_table([("r", "synthetic", UNBUILT, "measured", "kernel_time_ms", 0.05, "ms", 0)])
    path = tmp_path_factory.mktemp("run")
    write_results(pd.concat([measured, extra], ignore_index=True), path)
    (path / "metadata.json").write_text(json.dumps({"cases": cases}))
    return path


N_CASES = 6          # five microbenchmarks and the traversal without its graph
N_MICRO = 5


class Counting:
    """Wraps twins.build_micro: counts calls, raises or kills the process after ``limit``."""

    def __init__(self, limit: int | None = None):
        self.real = REAL_BUILD_MICRO
        self.calls = 0
        self.limit = limit

    def __call__(self, *a, **kw):
        self.calls += 1
        if self.limit is not None and self.calls > self.limit:
            raise RuntimeError("crash forced by the test")
        return self.real(*a, **kw)


def _build(run_dir, out, **kw):
    kw.setdefault("fidelity", "analytic")
    kw.setdefault("max_requests", MAXREQ)
    return report.build_report(run_dir, "h100-pcie5", out_dir=out, **kw)


def _stored(out: Path) -> dict:
    return json.loads((out / report.PREDICTIONS_JSON).read_text())


def _same_report(a: Path, b: Path) -> None:
    pd.testing.assert_frame_equal(pd.read_csv(a / "summary.csv"), pd.read_csv(b / "summary.csv"))
    md_a = (a / "report.md").read_text().replace(str(a), "OUT")
    md_b = (b / "report.md").read_text().replace(str(b), "OUT")
    assert md_a == md_b
    for name in ("predicted_vs_measured", "error_by_group", "mape_by_group"):
        assert (a / "plots" / f"{name}.png").read_bytes() == (b / "plots" / f"{name}.png").read_bytes()


def test_exception_midway_resumes_without_recomputing(tmp_path, monkeypatch, run_dir):
    out = tmp_path / "out"
    crash = Counting(limit=3)
    monkeypatch.setattr(twins, "build_micro", crash)
    with pytest.raises(RuntimeError, match="crash forced"):
        _build(run_dir, out)
    stored = _stored(out)
    assert len(stored["cases"]) == 3                       # the finished ones, written on the way out
    assert len(read_results(out / report.PREDICTIONS_PARQUET)["case"].unique()) == 3
    assert not (out / "report.md").exists()

    again = Counting()
    monkeypatch.setattr(twins, "build_micro", again)
    res = _build(run_dir, out)
    assert again.calls == N_MICRO - 3                      # only the cases not yet done
    assert res["resumed"] == 3 and res["predicted"] == N_CASES - 3
    stored = _stored(out)
    assert len(stored["cases"]) == N_CASES
    assert stored["cases"][UNBUILT]["failure"] and stored["cases"][UNBUILT]["rows"] == 0
    assert stored["key"]["fidelity"] == "analytic" and stored["key"]["max_requests"] == MAXREQ

    fresh = tmp_path / "fresh"
    monkeypatch.setattr(twins, "build_micro", Counting())
    _build(run_dir, fresh)
    _same_report(out, fresh)                                # resumed == made in one go

    # a third run predicts nothing; the stored failure stays in the report
    none = Counting()
    monkeypatch.setattr(twins, "build_micro", none)
    calls = []
    real_traversal = twins.predict_traversal
    monkeypatch.setattr(twins, "predict_traversal",
                        lambda *a, **kw: calls.append(a[0]) or real_traversal(*a, **kw))
    res = _build(run_dir, out)
    assert none.calls == 0 and calls == [] and res["resumed"] == N_CASES
    assert any(u.startswith(UNBUILT + ": ") and "no generator" in u for u in res["unpredicted"])


@pytest.mark.parametrize("change", ["max_requests", "fidelity", "twin_version", "system"])
def test_other_settings_start_afresh_and_keep_the_old_file(tmp_path, monkeypatch, run_dir, change):
    out = tmp_path / "out"
    _build(run_dir, out)
    before = (out / report.PREDICTIONS_PARQUET).read_bytes()
    kw: dict = {}
    system = "h100-pcie5"
    if change == "max_requests":
        kw["max_requests"] = MAXREQ // 2
    elif change == "fidelity":
        kw["fidelity"] = "des"
        kw["only"] = "ptr_chase"
    elif change == "twin_version":
        monkeypatch.setattr(report_store, "TWIN_VERSION", report.TWIN_VERSION + "-next")
    else:
        system = "h100-pcie5"
        from hostlink.model.config import load_system, write_resolved
        system = write_resolved(load_system("h100-pcie5", {"link.rtt_ns": 900.0}),
                                tmp_path / "sys.toml")
    counter = Counting()
    monkeypatch.setattr(twins, "build_micro", counter)
    kw.setdefault("fidelity", "analytic")
    kw.setdefault("max_requests", MAXREQ)
    res = report.build_report(run_dir, system, out_dir=out, **kw)
    assert res["resumed"] == 0
    assert counter.calls == (2 if change == "fidelity" else N_MICRO)
    assert (out / report.STALE_PARQUET).read_bytes() == before
    assert (out / report.STALE_JSON).is_file()
    key_name = {"twin_version": "twin_version", "system": "system_sha256"}.get(change, change)
    assert any(key_name in m for m in res["store_messages"])


def _system(tmp_path, name: str, overrides: dict) -> Path:
    """A system TOML: the h100-pcie5 preset with ``overrides``."""
    from hostlink.model.config import load_system, write_resolved
    path = tmp_path / f"{name}.toml"
    write_resolved(load_system("h100-pcie5", overrides), path)
    return path


def _build_on(run_dir, out, system: Path):
    return report.build_report(run_dir, system, out_dir=out, fidelity="analytic",
                               max_requests=MAXREQ)


def test_the_uvm_costs_a_twin_reads_decide_what_is_predicted_again(tmp_path, monkeypatch,
                                                                    run_dir):
    """The store is kept across a change of the system's UVM costs; a case is predicted
    again only when the part of the system its twin reads changed: none of this run's
    cases reads the uvm section, every one reads the link."""
    out = tmp_path / "out"
    link = {"link.rtt_at_full_link_ns": 100.0}
    _build_on(run_dir, out, _system(tmp_path, "a", link))
    counter = Counting()
    monkeypatch.setattr(twins, "build_micro", counter)
    res = _build_on(run_dir, out, _system(
        tmp_path, "b", {**link, "uvm.first_fault_us": 50.0, "uvm.prefetch_call_us": 9.0}))
    assert counter.calls == 0 and res["resumed"] == N_CASES
    assert _stored(out)["key"]["uvm"]["first_fault_us"] == 50.0
    res = _build_on(run_dir, out, _system(tmp_path, "c", {"link.rtt_at_full_link_ns": 200.0}))
    assert counter.calls == N_MICRO and res["resumed"] == 0
    assert (out / report.STALE_JSON).exists()
    fresh = tmp_path / "fresh"
    _build_on(run_dir, fresh, _system(tmp_path, "c", {"link.rtt_at_full_link_ns": 200.0}))
    pd.testing.assert_frame_equal(pd.read_csv(out / "summary.csv"),
                                  pd.read_csv(fresh / "summary.csv"))


def test_case_options_keep_the_uvm_section_for_the_uvm_twins_only():
    uvm = {"first_fault_us": 1.0, "prefetch_call_us": 2.0}
    for mode in ("uvm", "uvm_readmostly"):
        assert report.case_options({"kind": "traversal", "memory_mode": mode}, uvm) == {"uvm": uvm}
    for mode in ("zerocopy", "registered", "uvm_accessedby", "device"):
        assert report.case_options({"kind": "traversal", "memory_mode": mode}, uvm) == {}
    assert report.case_options({"kind": "micro", "benchmark": "uvm_touch"}, uvm) == {"uvm": uvm}
    assert report.case_options({"kind": "micro", "benchmark": "zc_read"}, uvm) == {}
    assert report.case_options_hash({"kind": "micro", "benchmark": "zc_read"}, uvm) \
        == report.case_options_hash({"kind": "micro", "benchmark": "zc_read"}, None)
    assert report.case_options_hash({"kind": "micro", "benchmark": "uvm_touch"}, uvm) \
        != report.case_options_hash({"kind": "micro", "benchmark": "uvm_touch"}, None)


@pytest.mark.parametrize("kind", ["micro", "traversal"])
def test_a_code_change_predicts_its_own_kind_again(tmp_path, monkeypatch, run_dir, kind):
    out = tmp_path / "out"
    _build(run_dir, out)
    stored = _stored(out)
    assert set(stored["code"]) == {"micro", "traversal"}
    assert stored["cases"][UNBUILT]["code"] == report.kind_code_hash("traversal")
    real = report.kind_code_hash
    monkeypatch.setattr(report_store, "kind_code_hash",
                        lambda k: real(k)[::-1] if k == kind else real(k))
    micro, traversal = Counting(), []
    real_traversal = twins.predict_traversal
    monkeypatch.setattr(twins, "build_micro", micro)
    monkeypatch.setattr(twins, "predict_traversal",
                        lambda *a, **kw: traversal.append(a[0]) or real_traversal(*a, **kw))
    res = _build(run_dir, out)
    assert not (out / report.STALE_JSON).exists()          # the rest of the store is kept
    if kind == "micro":
        assert micro.calls == N_MICRO and traversal == [] and res["resumed"] == 1
    else:
        assert micro.calls == 0 and traversal == [UNBUILT] and res["resumed"] == N_MICRO
    assert any(f"{kind} case(s) made with other code" in m for m in res["store_messages"])
    assert {e["code"] for c, e in _stored(out)["cases"].items()
            if (c == UNBUILT) == (kind == "traversal")} == {real(kind)[::-1]}


def test_a_format_1_store_is_kept_aside(tmp_path, run_dir):
    out = tmp_path / "out"
    _build(run_dir, out)
    meta = _stored(out)
    meta["format"] = 1
    (out / report.PREDICTIONS_JSON).write_text(json.dumps(meta))
    res = _build(run_dir, out)
    assert res["resumed"] == 0 and (out / report.STALE_JSON).is_file()
    assert any("format-2" in m for m in res["store_messages"])


def test_system_hash_ignores_labels_but_not_values():
    from hostlink.model.config import load_system, system_with
    base = load_system("h100-pcie5")
    renamed = system_with(base, {"name": "another-name"})
    assert report.system_hash(renamed) == report.system_hash(base)
    assert report.system_hash(system_with(base, {"link.rtt_ns": 999.0})) != report.system_hash(base)


def test_code_hash_follows_every_source_file(tmp_path, monkeypatch):
    pkg = tmp_path / "fakepkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "engine.py").write_text("RATE = 1.0\n")
    (pkg / "notes.txt").write_text("not code")
    monkeypatch.syspath_prepend(str(tmp_path))
    first = report.code_hash(("fakepkg",))
    (pkg / "notes.txt").write_text("still not code")
    assert report.code_hash(("fakepkg",)) == first
    (pkg / "sub" / "engine.py").write_text("RATE = 2.0\n")
    assert report.code_hash(("fakepkg",)) != first
    assert report.code_hash() == report.code_hash()
    assert report.code_hash() != report.code_hash(("hostlink.model",))
    # per kind: the shared code and the kind's own twins, not the other kind's
    micro, traversal = (report.kind_code_hash(k) for k in ("micro", "traversal"))
    assert micro != traversal != report.code_hash()
    assert micro == report.code_hash(report.PREDICTION_CODE["micro"], report.PREDICTION_DATA["micro"])
    assert "hostlink.validation.twin_traversal" not in report.PREDICTION_CODE["micro"]
    assert "hostlink.validation.twin_micro" not in report.PREDICTION_CODE["traversal"]


def test_the_code_hash_covers_what_the_twins_import_and_the_l1_table(tmp_path, monkeypatch):
    # an edit of a module a twin imports, or of the measured table it reads, makes
    # stored predictions stale (twin_micro reads hostlink.model.l1_losses and its CSV)
    import re

    from hostlink.model import l1_losses
    src = Path(report.__file__).parent
    own = {"micro": ("twin_micro", "twin_common", "twins"),
           "traversal": ("twin_traversal", "twin_common")}
    for kind, files in own.items():
        for f in files:
            text = (src / f"{f}.py").read_text()
            names = set(re.findall(r"from hostlink\.validation\.(\w+) import", text))
            names |= set(re.findall(r"from hostlink\.validation import (\w+)", text))
            other = "twin_traversal" if kind == "micro" else "twin_micro"
            for name in names - {"report", other}:
                assert f"hostlink.validation.{name}" in report.PREDICTION_CODE[kind], (kind, f, name)
    micro, traversal = (report.kind_code_hash(k) for k in ("micro", "traversal"))
    table = tmp_path / "refetch.csv"
    table.write_bytes(Path(l1_losses.TABLE_CSV).read_bytes())
    monkeypatch.setattr(l1_losses, "TABLE_CSV", table)
    assert report.kind_code_hash("micro") == micro
    table.write_text(table.read_text().replace("128,1,4,8,1.0000", "128,1,4,8,1.0001", 1))
    assert report.kind_code_hash("micro") != micro
    assert report.kind_code_hash("traversal") == traversal


def test_changed_case_inputs_are_predicted_again(tmp_path, monkeypatch, run_dir):
    # the same OUT serves a run whose one case has other parameters
    other = tmp_path / "run2"
    other.mkdir()
    for name in ("results.csv", "results.parquet"):
        (other / name).write_bytes((run_dir / name).read_bytes())
    meta = json.loads((run_dir / "metadata.json").read_text())
    case = next(c for c in meta["cases"] if "ptr_chase" in c)
    meta["cases"][case]["steps"] = 200
    (other / "metadata.json").write_text(json.dumps(meta))
    out = tmp_path / "out"
    _build(run_dir, out)
    counter = Counting()
    monkeypatch.setattr(twins, "build_micro", counter)
    res = report.build_report(other, "h100-pcie5", fidelity="analytic", max_requests=MAXREQ,
                              out_dir=out)
    assert counter.calls == 1 and res["resumed"] == N_CASES - 1
    assert not (out / report.STALE_PARQUET).exists()


def test_cases_listed_without_their_rows_are_predicted_again(tmp_path, monkeypatch, run_dir):
    out = tmp_path / "out"
    _build(run_dir, out)
    (out / report.PREDICTIONS_PARQUET).unlink()            # the JSON lists rows no longer there
    counter = Counting()
    monkeypatch.setattr(twins, "build_micro", counter)
    res = _build(run_dir, out)
    assert counter.calls == N_MICRO and res["resumed"] == 1          # the failure needs no rows

    (out / report.PREDICTIONS_JSON).write_text("{not json")
    res = _build(run_dir, out)
    assert res["resumed"] == 0 and (out / report.STALE_JSON).read_text() == "{not json"


def test_flushes_while_running(tmp_path, monkeypatch, run_dir):
    out = tmp_path / "out"
    monkeypatch.setattr(report_store, "FLUSH_EVERY_CASES", 2)
    monkeypatch.setattr(report_store, "FLUSH_EVERY_S", 3600.0)    # by count only, however slow
    seen = []
    real = REAL_BUILD_MICRO

    def watch(*a, **kw):
        p = out / report.PREDICTIONS_JSON
        seen.append(len(json.loads(p.read_text())["cases"]) if p.exists() else 0)
        return real(*a, **kw)
    monkeypatch.setattr(twins, "build_micro", watch)
    _build(run_dir, out)
    assert seen == [0, 0, 2, 2, 4]                          # written every second case
    assert not list(out.glob(".*.tmp"))


def test_progress_counts_resumed_cases_as_done(tmp_path, monkeypatch, capsys, run_dir):
    out = tmp_path / "out"
    monkeypatch.setattr(twins, "build_micro", Counting(limit=2))
    with pytest.raises(RuntimeError):
        _build(run_dir, out)
    monkeypatch.setattr(twins, "build_micro", Counting())
    capsys.readouterr()
    _build(run_dir, out, progress=True)
    err = capsys.readouterr().err.splitlines()
    assert err[0] == f"2/{N_CASES} cases already predicted (resumed)"
    steps = [line for line in err if line.startswith("[")]
    assert [s.split("]")[0] for s in steps] == [f"[{k}/{N_CASES}" for k in range(3, N_CASES + 1)]
    assert all(" left " in s for s in steps)
    assert steps[-1].startswith(f"[{N_CASES}/{N_CASES}] 100%  0:00:00 left  ")
    assert "+ left" in steps[-2]           # the traversal, never timed, is still to come
    assert steps[-1].endswith("(failed)")                  # the traversal's twin


def test_progress_time_left_by_class():
    import io
    classes = {"m1": "micro", "m2": "micro", "m3": "micro", "t1": "traversal", "t2": "traversal",
               "t3": "traversal"}
    bar = report.CaseProgress(10, 4, enabled=True, stream=io.StringIO(), classes=classes)
    assert bar.time_left() is None                         # nothing timed yet
    bar._last -= 2.0                                       # m1 took 2 s
    bar.step("m1")
    left, whole = bar.time_left()
    assert left == pytest.approx(2 * 2.0, rel=0.01) and not whole   # traversals not timed yet
    assert bar.line("x").startswith("[5/10]  50%  0:00:04+ left  x")
    bar._last -= 1.0                                       # a failure is not timed
    bar.step("t1", failure="no twin")
    bar._last -= 60.0                                      # t2 took 60 s
    bar.step("t2")
    left, whole = bar.time_left()
    assert whole and left == pytest.approx(2 * 2.0 + 1 * 60.0, rel=0.01)
    assert bar.line("x").startswith("[7/10]  70%  0:01:04 left  x")


def test_cli_note_reproduces_the_report_and_fresh_recomputes(tmp_path, capsys, monkeypatch,
                                                             run_dir):
    out = tmp_path / "a"
    argv = ["validate", "report", str(run_dir), "--system", "h100-pcie5", "--fidelity",
            "analytic", "--only", "ptr_chase,zc_warps", "--max-requests", str(MAXREQ),
            "--max-sources", "1", "--out", str(out), "--quiet"]
    assert main(argv) == 0
    md = (out / "report.md").read_text()
    made = [line for line in md.splitlines() if line.startswith("- made with `hostlink validate")]
    assert len(made) == 1
    cmd = made[0].split("`")[1]
    assert shlex.split(cmd) == ["hostlink"] + argv[:-1]     # the command, less --quiet

    again = shlex.split(cmd)[1:]
    again[again.index("--out") + 1] = str(tmp_path / "b")
    assert main(again + ["--quiet"]) == 0
    _same_report(out, tmp_path / "b")

    counter = Counting()
    monkeypatch.setattr(twins, "build_micro", counter)
    assert main(argv) == 0
    assert counter.calls == 0 and f"{N_MICRO} cases taken from" in capsys.readouterr().out
    assert main(argv + ["--fresh"]) == 0
    assert counter.calls == N_MICRO and (out / report.STALE_PARQUET).is_file()
    assert main(argv[:-3] + ["--max-sources", "0", "--quiet"]) == 2
    assert "--max-sources must be at least 1" in capsys.readouterr().err


KILLER = textwrap.dedent("""
    import os, signal, sys
    from hostlink.validation import report_store, twins
    report_store.FLUSH_EVERY_CASES = 1
    real, calls = twins.build_micro, [0]
    def build(*a, **kw):
        calls[0] += 1
        if calls[0] > int(sys.argv[1]):
            os.kill(os.getpid(), signal.SIGKILL)
        return real(*a, **kw)
    twins.build_micro = build
    from hostlink.model.cli.main import main
    main(sys.argv[2:])
""")


def test_sigkill_midway_resumes(tmp_path, monkeypatch, run_dir):
    out = tmp_path / "out"
    argv = ["validate", "report", str(run_dir), "--system", "h100-pcie5", "--fidelity",
            "analytic", "--max-requests", str(MAXREQ), "--out", str(out), "--quiet"]
    env = dict(os.environ, MPLBACKEND="Agg")
    proc = subprocess.run([sys.executable, "-c", KILLER, "3", *argv], env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert len(_stored(out)["cases"]) == 3
    counter = Counting()
    monkeypatch.setattr(twins, "build_micro", counter)
    assert main(argv) == 0
    assert counter.calls == N_MICRO - 3
    assert len(_stored(out)["cases"]) == N_CASES
