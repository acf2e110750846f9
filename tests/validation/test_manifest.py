"""Experiment manifests: layout, checks with clear errors, case names, sources."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hostlink.model.errors import ConfigError
from hostlink.validation.data_tree import EXPERIMENTS
from hostlink.validation.manifest import (
    MEMORY_MODES,
    VARIANTS,
    choose_sources,
    expand_micro,
    load_manifest,
    micro_case_name,
    read_offsets,
    traversal_case_name,
)

REPO = Path(__file__).resolve().parents[2]

GOOD = """
[experiment]
name = "t1"
seed = 7

[graphs.k8]
kind = "kron"
scale = 8
degree = 4

[graphs.u8]
kind = "urand"
scale = 8
degree = 4
seed = 3

[[traversal]]
kernels = ["bfs", "cc"]
graphs = ["k8", "u8"]
variants = ["merged_aligned", "balanced"]
memory_modes = ["zerocopy"]
id_bytes = [4, 8]
sources = 2
reps = 1

[[self_trace]]
kernel = "bfs"
graph = "k8"
variant = "merged_aligned"
memory_mode = "zerocopy"
id_bytes = 8

[[micro]]
benchmark = "zc_read"
pattern = ["coalesced", "strided"]
offset_B = [0, 32]
chunk_B = ["4 KiB"]
total_B = "64 MiB"

[[micro]]
benchmark = "memcpy"
direction = "h2d"
size_B = [4096, "1 MiB"]
"""


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "m.toml"
    p.write_text(text)
    return p


def test_good_manifest_parses(tmp_path):
    m = load_manifest(write(tmp_path, GOOD))
    assert m.name == "t1" and m.seed == 7
    assert m.graphs["u8"].seed == 3 and m.graphs["k8"].seed == 27491095
    cases = [c.case for c in m.traversal_cases()]
    # 2 kernels x 2 graphs x 2 variants x 1 mode x 2 id sizes
    assert len(cases) == 16
    assert "bfs/k8/balanced/zerocopy/4B" in cases
    assert m.self_trace[0].case == "trace/bfs/k8/merged_aligned/zerocopy/8B"
    assert m.graphs_used() == ["k8", "u8"]


def test_micro_points_keep_only_the_pattern_knob(tmp_path):
    m = load_manifest(write(tmp_path, GOOD))
    zc, mc = m.micro
    assert zc.settings["total_B"] == 64 << 20
    assert zc.lists["chunk_B"] == (4096,)
    names = zc.cases()
    assert names == [
        "micro/zc_read/pattern=coalesced,offset_B=0,bytes_per_lane=4,memory_mode=zerocopy,warps=0,unroll=4,cache=default",
        "micro/zc_read/pattern=coalesced,offset_B=32,bytes_per_lane=4,memory_mode=zerocopy,warps=0,unroll=4,cache=default",
        "micro/zc_read/pattern=strided,chunk_B=4096,bytes_per_lane=4,memory_mode=zerocopy,warps=0,unroll=4,cache=default",
    ]
    assert mc.cases() == ["micro/memcpy/direction=h2d,size_B=4096", "micro/memcpy/direction=h2d,size_B=1048576"]


def test_launch_points_name_their_writers_only_where_warps_write_a_flag():
    # what launch_grid prints: writers and write for the flag work alone
    # (gpu_kernels/micro/launch_grid.cu), so the names of runs before it stand
    points = expand_micro("launch", {"ctas": (4096,), "work": ("empty", "flag"),
                                     "writers": (0, 1024), "write": ("red", "both")})
    names = [micro_case_name("launch", p) for p in points]
    assert names == ["micro/launch/ctas=4096,threads_per_cta=256,work=empty"] + [
        f"micro/launch/ctas=4096,threads_per_cta=256,work=flag,writers={n},write={w}"
        for n in (0, 1024) for w in ("red", "both")]
    printed = {"ctas": 4096, "threads_per_cta": 256, "work": "flag", "writers": 1024,
               "write": "both"}
    assert micro_case_name("launch", printed) in names


def test_case_names_from_program_params_match_expansion():
    # what zc_read prints for a strided point (gpu_kernels/micro/zc_common.cuh)
    printed = {"pattern": "strided", "chunk_B": 4096, "bytes_per_lane": 4, "memory_mode": "zerocopy",
               "warps": 0, "unroll": 4, "cache": "default"}
    points = expand_micro("zc_read", {"pattern": ("strided",)})
    assert micro_case_name("zc_read", printed) == micro_case_name("zc_read", points[0])
    assert traversal_case_name("bfs", "k", "naive", "uvm", 8) == "bfs/k/naive/uvm/8B"


def test_uvm_touch_names_keep_host_state_only_when_returned():
    points = expand_micro("uvm_touch", {"size_B": (64 << 20,), "pattern": ("seq", "sparse"),
                                        "stride_B": (4096,), "host_state": ("fresh", "returned")})
    names = [micro_case_name("uvm_touch", p) for p in points]
    # names of runs made before host_state existed stay as they were
    assert names == [
        "micro/uvm_touch/size_B=67108864,pattern=seq,advice=none",
        "micro/uvm_touch/size_B=67108864,pattern=seq,advice=none,host_state=returned",
        "micro/uvm_touch/size_B=67108864,pattern=sparse,stride_B=4096,advice=none",
        "micro/uvm_touch/size_B=67108864,pattern=sparse,stride_B=4096,advice=none,host_state=returned",
    ]
    # what uvm_touch prints (gpu_kernels/micro/uvm_touch.cu): host_state only when returned
    printed = {"size_B": 64 << 20, "pattern": "seq", "advice": "none", "host_state": "returned"}
    assert micro_case_name("uvm_touch", printed) == names[1]
    from hostlink.validation.twins import micro_group, params_from_name
    assert micro_group(params_from_name(names[1])) == "micro/uvm_touch/none/seq/returned"
    assert micro_group(params_from_name(names[0])) == "micro/uvm_touch/none/seq"


def test_defaults_cover_all_variants_and_modes(tmp_path):
    text = GOOD.replace('variants = ["merged_aligned", "balanced"]\n', "").replace('memory_modes = ["zerocopy"]\n', "")
    m = load_manifest(write(tmp_path, text))
    assert m.traversal[0].variants == VARIANTS and m.traversal[0].memory_modes == MEMORY_MODES


@pytest.mark.parametrize("change, key", [
    (("[experiment]", "[experiment]\ncolour = 1"), "experiment.colour"),
    (('name = "t1"', 'name = "t 1"'), "experiment.name"),
    (("scale = 8\ndegree = 4\n\n[graphs.u8]", "scale = 40\ndegree = 4\n\n[graphs.u8]"), "graphs.k8.scale"),
    (('kind = "kron"', 'kind = "ring"'), "graphs.k8.kind"),
    (('kernels = ["bfs", "cc"]', 'kernels = ["bfs", "tc"]'), "traversal[0].kernels"),
    (('graphs = ["k8", "u8"]', 'graphs = ["k8", "nope"]'), "traversal[0].graphs"),
    (("id_bytes = [4, 8]", "id_bytes = [4, 6]"), "traversal[0].id_bytes"),
    (("reps = 1", "reps = 0"), "traversal[0].reps"),
    (("reps = 1", "reps = 1\nrepz = 2"), "traversal[0].repz"),
    (("reps = 1", "reps = 1\nload_ahead = 3"), "traversal[0].load_ahead"),
    (('graphs = ["k8", "u8"]', 'graphs = ["k8", "u8"]\n[[traversal]]\nkernels = ["cc"]\ngraphs = ["k8"]'),
     "traversal[1]"),
    (('benchmark = "memcpy"\ndirection = "h2d"\nsize_B = [4096, "1 MiB"]', 'benchmark = "zc_read"\noffset_B = 32'),
     "micro[1]"),
    (('variant = "merged_aligned"', 'variant = "fast"'), "self_trace[0].variant"),
    (('offset_B = [0, 32]', 'offset_B = [0, "32 ms"]'), "micro[0].offset_B"),
    (('total_B = "64 MiB"', 'total_B = ["64 MiB"]'), "micro[0].total_B"),
    (('benchmark = "memcpy"', 'benchmark = "memcopy"'), "micro[1].benchmark"),
    (('direction = "h2d"', 'direction = "up"'), "micro[1].direction"),
    (('direction = "h2d"', 'direction = "h2d"\npattern = "x"'), "micro[1].pattern"),
])
def test_bad_values_name_file_and_key(tmp_path, change, key):
    old, new = change
    assert old in GOOD
    p = write(tmp_path, GOOD.replace(old, new, 1))
    with pytest.raises(ConfigError) as exc:
        load_manifest(p)
    msg = str(exc.value)
    assert str(p) in msg and f"'{key}'" in msg


def test_unreadable_and_malformed(tmp_path):
    with pytest.raises(ConfigError, match="cannot read manifest"):
        load_manifest(tmp_path / "missing.toml")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_manifest(write(tmp_path, "[experiment\nname = 1"))
    with pytest.raises(ConfigError, match="'experiment'"):
        load_manifest(write(tmp_path, "[graphs]\n"))


def test_choose_sources_is_deterministic_and_skips_isolated():
    rng = np.random.default_rng(0)
    deg = rng.integers(0, 3, size=500)
    offsets = np.concatenate([[0], np.cumsum(deg)]).astype(np.uint64)
    a = choose_sources(offsets, 10, 5, "g")
    assert a == choose_sources(offsets, 10, 5, "g")
    assert a != choose_sources(offsets, 10, 5, "h") and a != choose_sources(offsets, 10, 6, "g")
    assert len(set(a)) == 10 and all(deg[v] > 0 for v in a)
    # asking for more than there are gives each once
    assert sorted(choose_sources(offsets, 10_000, 5, "g")) == sorted(np.flatnonzero(deg > 0).tolist())
    with pytest.raises(ConfigError):
        choose_sources(np.zeros(5, dtype=np.uint64), 1, 0, "empty")


def test_read_offsets_checks_the_header(tmp_path):
    p = tmp_path / "g"
    np.array([3, 0, 0, 2, 5], dtype=np.uint64).tofile(str(p) + ".bel.col")
    assert read_offsets(p).tolist() == [0, 2, 5]
    np.array([4, 0, 0, 2, 5], dtype=np.uint64).tofile(str(p) + ".bel.col")
    with pytest.raises(ConfigError, match="header count"):
        read_offsets(p)


@pytest.mark.parametrize("name", sorted(p.parent.name for p in EXPERIMENTS.glob("*/manifest.toml")))
def test_committed_manifests_load(name):
    m = load_manifest(EXPERIMENTS / name / "manifest.toml")
    assert m.traversal_cases() or m.micro or m.self_trace     # something to run
    for g in m.micro:
        assert g.cases()
