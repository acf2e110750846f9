"""Sweep files: parsing, checks that name the file and key, expansion, run ids."""
from __future__ import annotations

import textwrap

import pytest

from hostlink.model.config import load_system, system_to_dict, system_with
from hostlink.model.errors import ConfigError
from hostlink.model.sweep import load_sweep, resolve_points, run_id_for

BASE = """
[sweep]
name = "t"
system = "h100-pcie5"
fidelity = "analytic"

[workload]
kind = "sizes"
size_B = 128
"""


def write(tmp_path, text, name="sweep.toml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def spec_of(tmp_path, extra):
    return load_sweep(write(tmp_path, BASE + textwrap.dedent(extra)))


def test_cartesian_product_first_axis_slowest(tmp_path):
    spec = spec_of(tmp_path, """
        [[axis]]
        key = "link.gen"
        values = [4, 5]
        [[axis]]
        key = "link.tags"
        values = [32, 64, 128]
    """)
    points = list(spec.points())
    assert spec.num_points == 6 and len(points) == 6
    assert [(p.overrides["link.gen"], p.overrides["link.tags"]) for p in points] == [
        (4, 32), (4, 64), (4, 128), (5, 32), (5, 64), (5, 128)]
    assert points[4].case == "link.gen=5,link.tags=64"


def test_zipped_axis_moves_keys_together(tmp_path):
    spec = spec_of(tmp_path, """
        [[axis]]
        zip = {system = ["v100-pcie3", "a100-pcie4", "h100-pcie5"], "link.tags" = [256, 768, 768]}
        [[axis]]
        key = "workload.size_B"
        values = [32, 128]
    """)
    points = list(spec.points())
    assert len(points) == 6
    assert [(p.system, p.overrides["link.tags"], p.workload["size_B"]) for p in points[:3]] == [
        ("v100-pcie3", 256, 32), ("v100-pcie3", 256, 128), ("a100-pcie4", 768, 32)]
    resolved = resolve_points(spec)
    assert resolved[0].parts["link"].gen == 3 and resolved[2].parts["link"].gen == 4


def test_toml_dotted_keys_in_zip_and_set(tmp_path):
    # Unquoted dotted keys are nested tables in TOML; both spellings mean the same.
    spec = spec_of(tmp_path, """
        [set]
        link.rtt_ns = "1.5 us"
        [[axis]]
        zip = {link.gen = [4, 5], link.lanes = [8, 16]}
    """)
    resolved = resolve_points(spec)
    assert [(r.parts["link"].gen, r.parts["link"].lanes) for r in resolved] == [(4, 8), (5, 16)]
    assert all(r.parts["link"].rtt_ns == 1500.0 for r in resolved)


def test_generated_ranges(tmp_path):
    spec = spec_of(tmp_path, """
        [[axis]]
        key = "link.tags"
        range = {start = 32, stop = 128, step = 32}
        [[axis]]
        key = "link.rtt_ns"
        linspace = {start = 500, stop = 1500, num = 3}
        [[axis]]
        key = "gpu.max_outstanding_host_reads"
        geomspace = {start = 64, stop = 1024, num = 5}
    """)
    assert spec.axes[0].steps == ((32,), (64,), (96,), (128,))
    assert spec.axes[1].steps == ((500.0,), (1000.0,), (1500.0,))
    assert [s[0] for s in spec.axes[2].steps] == [64.0, 128.0, 256.0, 512.0, 1024.0]
    # whole floats are accepted for integer keys (the config loader's rule)
    assert {r.parts["gpu"].max_outstanding_host_reads for r in resolve_points(spec)} == {
        64, 128, 256, 512, 1024}


@pytest.mark.parametrize("extra, words", [
    ("[[axis]]\nkey = \"link.gen\"\nvalues = []\n", ["axis[0]", "link.gen", "no values"]),
    ("[[axis]]\nkey = \"link.bogus\"\nvalues = [1]\n", ["axis[0]", "link.bogus"]),
    ("[[axis]]\nkey = \"linkk.gen\"\nvalues = [1]\n", ["axis[0]", "linkk.gen"]),
    ("[[axis]]\nzip = {\"link.gen\" = [3, 4], \"link.tags\" = [32]}\n",
     ["axis[0]", "equal lengths", "link.gen", "link.tags"]),
    ("[[axis]]\nkey = \"link.gen\"\nvalues = [3]\nstep = 2\n", ["axis[0]", "step"]),
    ("[[axis]]\nkey = \"link.gen\"\nvalues = [3]\nrange = {start = 1, stop = 2, step = 1}\n",
     ["exactly one"]),
    ("[[axis]]\nkey = \"link.gen\"\nrange = {start = 1, stop = 4, step = -1}\n", ["range.step"]),
    ("[[axis]]\nkey = \"link.rtt_ns\"\nrange = {start = inf, stop = 4, step = 1}\n",
     ["axis[0].range.start", "finite"]),
    ("[[axis]]\nkey = \"link.gen\"\nvalues = [3]\n[[axis]]\nkey = \"link.gen\"\nvalues = [4]\n",
     ["axis[1]", "link.gen", "already varied"]),
    ("[set]\n\"link.gen\" = 4\n[[axis]]\nkey = \"link.gen\"\nvalues = [3]\n",
     ["axis[0]", "link.gen", "[set]"]),
    ("[set]\n\"link.nope\" = 4\n", ["[set]", "link.nope"]),
    ("[[axis]]\nkey = \"fidelity\"\nvalues = [\"exact\"]\n", ["fidelity", "exact"]),
    ("[[axis]]\nkey = \"workload.nope\"\nvalues = [1]\n", ["workload.nope", "sizes"]),
    ("[[axis]]\nkey = \"workload.kind\"\nvalues = [\"graph\"]\n", ["workload.kind"]),
    ("[extra]\nx = 1\n", ["extra"]),
])
def test_bad_sweep_files_name_the_file_and_key(tmp_path, extra, words):
    path = write(tmp_path, BASE + extra)
    with pytest.raises(ConfigError) as err:
        load_sweep(path)
    msg = str(err.value)
    assert str(path) in msg
    for w in words:
        assert w in msg, msg


@pytest.mark.parametrize("head, words", [
    ("[sweep]\nname = \"t\"\n", ["sweep.system"]),
    ("[sweep]\nsystem = \"h100-pcie5\"\nfidelity = \"exact\"\n", ["sweep.fidelity"]),
    ("[sweep]\nsystem = \"h100-pcie5\"\nseed = 3\n", ["sweep.seed"]),
])
def test_bad_sweep_section(tmp_path, head, words):
    path = write(tmp_path, head + "[workload]\nkind = \"sizes\"\nsize_B = 32\n")
    with pytest.raises(ConfigError) as err:
        load_sweep(path)
    assert str(path) in str(err.value)
    for w in words:
        assert w in str(err.value)


def test_missing_workload_and_unknown_workload_keys(tmp_path):
    path = write(tmp_path, "[sweep]\nsystem = \"h100-pcie5\"\n")
    with pytest.raises(ConfigError, match="workload"):
        load_sweep(path)
    path = write(tmp_path, "[sweep]\nsystem = \"h100-pcie5\"\n[workload]\nkind = \"sizes\"\n"
                 "size_B = 32\nvariant = \"naive\"\n")
    with pytest.raises(ConfigError, match="workload.variant"):
        load_sweep(path)


@pytest.mark.parametrize("extra, words", [
    # a value out of range for one point only: caught before anything runs
    ("[[axis]]\nkey = \"link.tags\"\nvalues = [256, 99999]\n", ["link.tags", "99999"]),
    # a cross-field check of the link (tags against the generation's tag width)
    ("[[axis]]\nzip = {\"link.gen\" = [4, 3], \"link.tags\" = [768, 768]}\n",
     ["link.tags", "768", "gen 3"]),
    ("[[axis]]\nkey = \"link.rtt_ns\"\nvalues = [\"1 GB\"]\n", ["link.rtt_ns"]),
    ("[[axis]]\nkey = \"system\"\nvalues = [\"h100-pcie5\", \"no-such-system\"]\n",
     ["no-such-system"]),
    ("[[axis]]\nkey = \"workload.size_B\"\nvalues = [128, 48]\n", ["workload.size_B", "48"]),
    ("[[axis]]\nkey = \"workload.offset_B\"\nvalues = [0, 32]\n", ["workload.offset_B", "128 B line"]),
])
def test_every_point_is_checked_before_running(tmp_path, extra, words):
    path = write(tmp_path, BASE + extra)
    spec = load_sweep(path)
    with pytest.raises(ConfigError) as err:
        resolve_points(spec)
    msg = str(err.value)
    assert str(path) in msg
    for w in words:
        assert w in msg, msg


def test_resolved_config_matches_the_config_loader(tmp_path):
    spec = spec_of(tmp_path, """
        [set]
        "host.burst_B" = 128
        [[axis]]
        key = "link.rtt_ns"
        values = ["1.2 us", 800]
    """)
    resolved = resolve_points(spec)
    base = load_system("h100-pcie5")
    for rp, rtt in zip(resolved, (1200.0, 800.0)):
        expected = system_with(base, {"host.burst_B": 128, "link.rtt_ns": rtt})
        got = system_to_dict(rp.system)
        want = system_to_dict(expected)
        got.pop("provenance"), want.pop("provenance")
        assert got == want
        assert rp.system.provenance["link.rtt_ns"] == "sweep axis"
        assert rp.system.provenance["host.burst_B"] == "sweep [set]"


def test_run_ids_depend_on_what_is_computed_only(tmp_path):
    a = spec_of(tmp_path, """
        [[axis]]
        key = "link.rtt_ns"
        values = [1000, 1500]
    """)
    # Another sweep reaching the same configs through other spellings and names.
    b = load_sweep(write(tmp_path, """
        [sweep]
        name = "other"
        system = "h100-pcie5"
        fidelity = "analytic"
        [set]
        "link.rtt_ns" = "1.5 us"
        [workload]
        kind = "sizes"
        sizes_B = [128]
        fractions = [1.0]
        offset_B = 0
    """, "b.toml"))
    ids_a = [rp.run_id for rp in resolve_points(a)]
    ids_b = [rp.run_id for rp in resolve_points(b)]
    assert len(set(ids_a)) == 2
    assert ids_b == [ids_a[1]]
    rp = resolve_points(a)[0]
    assert rp.run_id == run_id_for(system_to_dict(rp.system), rp.workload, "analytic")
    assert run_id_for(system_to_dict(rp.system), rp.workload, "des") != rp.run_id


def test_workload_defaults_fill_in_and_unused_keys_drop(tmp_path):
    spec = load_sweep(write(tmp_path, """
        [sweep]
        system = "v100-pcie3"
        fidelity = "des"
        [workload]
        kind = "graph"
        kernel = "cc"
        [[axis]]
        key = "workload.variant"
        values = ["naive", "merged"]
    """))
    resolved = resolve_points(spec)
    w = resolved[0].workload
    assert w["graph"] == "kron" and w["id_bytes"] == 4 and w["mode"] == "zerocopy"
    assert "source" not in w and "iterations" not in w   # CC has no source; not pagerank
    assert resolved[0].run_id != resolved[1].run_id


def test_a_sweep_without_a_fidelity_takes_the_validated_one(tmp_path):
    """The validation reports are made at DES fidelity: a sweep that names none gets it."""
    path = write(tmp_path, "[sweep]\nsystem = \"h100-pcie5\"\n[workload]\nkind = \"sizes\"\n"
                 "size_B = 32\n")
    assert load_sweep(path).fidelity == "des"
