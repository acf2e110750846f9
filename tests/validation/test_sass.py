"""Loads in flight read from SASS, on hand-written SASS and on the committed
SASS of the H200 build (validation/experiments/sass/runs/h200), checked against the
measured bandwidth of one warp (validation/experiments/unroll_probe/runs/h200, cv_overlap)."""
from __future__ import annotations

import json
import re
import statistics
from collections import defaultdict
from pathlib import Path

import pytest

from hostlink.model.cli.main import main
from hostlink.validation import sass
from hostlink.validation import raw_store
from hostlink.validation.data_tree import run_dir

ROOT = Path(__file__).resolve().parents[2]
SASS = run_dir("sass", "h200")

# read_kernel<BPL, CACHE, UNROLL, PATTERN> of gpu_kernels/micro/zc_common.cuh
PATTERNS = {"coalesced": 0, "strided": 1, "random": 2}


def read_kernel(bpl: int, unroll: int, pattern: str, cache: int = 0) -> str:
    return rf"read_kernelILi{bpl}ELi{cache}ELi{unroll}ELi{PATTERNS[pattern]}E"


def line(addr: int, text: str) -> str:
    return f"        /*{addr:04x}*/                   {text} ;   /* 0x0000 */"


def function(name: str, body: list[str]) -> str:
    return "\n".join([f"\t\tFunction : {name}", "\t.headerflags\t@\"EF_CUDA_SM90\""]
                     + [line(16 * i, t) for i, t in enumerate(body)])


def test_operands():
    ld = sass.parse_instruction(0, "LDG.E.128", "R8, desc[UR4][R32.64+0x10]")
    assert ld.dst == (8, 9, 10, 11) and ld.src == (32, 33)
    assert sass.parse_instruction(0, "LDG.E.64", "R2, desc[UR6][R4.64]").dst == (2, 3)
    st = sass.parse_instruction(0, "STG.E", "desc[UR6][R22.64], R29")
    assert st.dst == () and set(st.src) == {22, 23, 29}
    assert sass.parse_instruction(0, "IMAD.WIDE.U32", "R2, R3, 0x4, R6").dst == (2, 3)
    lop = sass.parse_instruction(0, "LOP3.LUT", "R5, R5, R6, R7, 0x96, !PT")
    assert lop.dst == (5,) and lop.src == (5, 6, 7)
    assert sass.parse_instruction(0x4c0, "BRA", "0x360").target == 0x360
    assert sass.parse_instruction(0, "ISETP.GE.U32.AND", "P0, PT, R4, UR4, PT").dst == ()


def test_groups_of_a_loop():
    text = "\n".join([
        function("pairs", ["MOV R32, RZ",
                           "LDG.E.128 R8, desc[UR4][R32.64]", "LDG.E.128 R12, desc[UR4][R32.64+0x10]",
                           "LOP3.LUT R40, R10, R8, R12, 0x96, !PT",       # waits for the first pair
                           "LDG.E.128 R16, desc[UR4][R32.64+0x20]", "LDG.E.128 R20, desc[UR4][R32.64+0x30]",
                           "LOP3.LUT R41, R18, R22, RZ, 0x96, !PT",
                           "IADD3 R32, R32, 0x40, RZ", "BRA 0x10"]),
        function("four", ["LDG.E R4, desc[UR4][R2.64]", "LDG.E R5, desc[UR4][R2.64+0x4]",
                          "LDG.E R6, desc[UR4][R2.64+0x8]", "LDG.E R7, desc[UR4][R2.64+0xc]",
                          "IADD3 R9, R4, R5, R6", "IADD3 R9, R9, R7, RZ", "BRA 0x0"]),
        # software pipelined: the load of the next iteration is in flight with this one's
        function("pipelined", ["LDG.E R4, desc[UR4][R2.64]", "IADD3 R9, R9, R5, RZ",
                               "MOV R5, R4", "LDG.E R6, desc[UR4][R2.64+0x4]", "BRA 0x0"]),
        function("no_loop", ["LDG.E R4, desc[UR4][R2.64]", "EXIT"]),
    ])
    fns = sass.parse_sass(text)
    (pairs,) = sass.loop_loads(fns["pairs"])
    assert (pairs.start, pairs.end, pairs.loads, pairs.groups, pairs.max_in_flight) == (
        0x10, 0x80, 4, (2, 2), 2)
    assert sass.loads_in_flight(fns, "^four$") == 4
    assert sass.loop_loads(fns["pipelined"])[0].max_in_flight == 2
    assert sass.loop_loads(fns["no_loop"]) == []
    with pytest.raises(sass.SassError, match="no loop issues global loads"):
        sass.loads_in_flight(fns, "no_loop")
    with pytest.raises(sass.SassError, match="matches 4 functions"):
        sass.loads_in_flight(fns, ".")
    with pytest.raises(sass.SassError, match="not cuobjdump"):
        sass.parse_sass("hello", "x.txt")


@pytest.fixture(scope="module")
def zc_read():
    return sass.read_sass(SASS / "zc_read.sass.gz")


@pytest.fixture(scope="module")
def one_warp():
    """Median bandwidth of one warp by (pattern, bytes per lane, unroll)."""
    got = defaultdict(list)
    for text in (run_dir("unroll_probe", "h200") / "warps.jsonl").read_text().splitlines():
        rec = json.loads(text)
        if rec.get("type") == "measurement" and rec["params"]["warps"] == 1:
            p = rec["params"]
            got[(p["pattern"], p["bytes_per_lane"], p["unroll"])].append(rec["metrics"]["bw_GBps"])
    return {k: statistics.median(v) for k, v in got.items()}


@pytest.mark.parametrize("bpl,expected", [(4, {1: 1, 2: 2, 4: 4, 8: 8}),
                                          (16, {1: 1, 2: 2, 4: 2, 8: 8})])
def test_coalesced_reads_keep_what_ptxas_made_of_unroll(zc_read, one_warp, bpl, expected):
    """With 16 B per lane, unroll 4 compiles to two pairs of loads: one warp reads at
    the bandwidth of unroll 2 (0.74 against 0.74 GB/s on the H200), not twice it."""
    for unroll, n in expected.items():
        assert sass.loads_in_flight(zc_read, read_kernel(bpl, unroll, "coalesced")) == n
    # a warp's bandwidth follows its loads in flight (one round trip each group)
    base = one_warp[("coalesced", bpl, 1)]
    for unroll, n in expected.items():
        assert one_warp[("coalesced", bpl, unroll)] / base == pytest.approx(n, rel=0.2)


def test_strided_reads_in_flight_are_sectors_per_round_trip(zc_read, one_warp):
    """Strided 16 B per lane: each lane's loads go to its own line, two loads per 32 B
    sector. nvcc unrolls the unroll-1 loop four times (four loads, two sectors in
    flight); unroll 2 and 4 keep two loads (one sector); one warp's bandwidth follows
    the sectors in flight."""
    in_flight = {u: sass.loads_in_flight(zc_read, read_kernel(16, u, "strided")) for u in (1, 2, 4)}
    assert in_flight == {1: 4, 2: 2, 4: 2}
    one_sector = one_warp[("strided", 16, 2)]
    for unroll, n in in_flight.items():
        sectors = n * 16 / 32
        assert one_warp[("strided", 16, unroll)] / one_sector == pytest.approx(sectors, rel=0.15)


def cv_overlap_one_warp() -> dict:
    """Median bandwidth of one warp by (pattern, cache, region or chunk, bytes per lane,
    unroll) in validation/experiments/cv_overlap/runs/h200."""
    got = defaultdict(list)
    run = run_dir("cv_overlap", "h200")
    for name in raw_store.raw_names(run, "*zc_warps.jsonl"):
        for text in raw_store.read_raw_bytes(run, name)[1].decode().splitlines():
            rec = json.loads(text)
            p = rec.get("params") or {}
            if rec.get("type") == "measurement" and p.get("warps") == 1:
                where = p.get("region_B", p.get("chunk_B", 0))
                got[(p["pattern"], p["cache"], where, p["bytes_per_lane"], p["unroll"])].append(
                    rec["metrics"]["bw_GBps"])
    return {k: statistics.median(v) for k, v in got.items()}


def test_the_random_pattern_waits_for_each_load_before_its_call(zc_read, one_warp):
    """The random pattern calls a 64-bit modulo routine before each load, and the call
    waits for the load before it (its wait mask holds the load's scoreboard): one load
    in flight at every unroll, with either cache operator; measured, one warp reads at
    one line per round trip whatever the unroll, ld.cv or not, over 64 KiB to 1 GiB."""
    for cache in (0, 2):
        for unroll in (1, 2, 4, 8):
            assert sass.loads_in_flight(zc_read, read_kernel(4, unroll, "random", cache)) == 1
    for unroll in (1, 2, 4, 8):
        assert one_warp[("random", 4, unroll)] == pytest.approx(one_warp[("random", 4, 1)], rel=0.1)
    measured = cv_overlap_one_warp()
    for cache in ("default", "cv"):
        for region in (1 << 21, 1 << 26, 1 << 30):
            base = measured[("random", cache, region, 4, 1)]
            for unroll in (2, 4, 8):
                assert measured[("random", cache, region, 4, unroll)] == pytest.approx(base, rel=0.1)


def test_strong_system_loads_overlap_like_any_other(zc_read):
    """ld.cv (LDG.E.STRONG.SYS) loads are issued back to back and not waited for one by
    one: the coalesced kernels keep what the default operator's keep, and one warp's
    ld.cv reads of consecutive lines step with them as the default operator's do."""
    for bpl in (4, 8, 16):
        for unroll in (1, 2, 4, 8):
            assert (sass.loads_in_flight(zc_read, read_kernel(bpl, unroll, "coalesced", 2))
                    == sass.loads_in_flight(zc_read, read_kernel(bpl, unroll, "coalesced", 0)))
    measured = cv_overlap_one_warp()
    for bpl in (4, 16):
        base = measured[("coalesced", "cv", 0, bpl, 1)]
        for unroll in (2, 4, 8):
            n = sass.loads_in_flight(zc_read, read_kernel(bpl, unroll, "coalesced", 2))
            assert measured[("coalesced", "cv", 0, bpl, unroll)] / base == pytest.approx(n, rel=0.2)
            assert measured[("coalesced", "cv", 0, bpl, unroll)] == pytest.approx(
                measured[("coalesced", "default", 0, bpl, unroll)], rel=0.05)


def test_control_bits_name_the_waits():
    """With encodings, the scoreboards decide: a load is waited for by the first
    instruction whose wait mask holds its write barrier, however the registers go;
    DEPBAR.LE SBk, n leaves the n youngest on SBk pending."""
    def ctl(wait: int = 0, barrier: int = 7) -> int:
        return (wait << 52) | (barrier << 46)

    def enc(addr: int, text: str, control: int) -> str:
        return f"{line(addr, text)}\n                                   /* {control:#018x} */"

    text = "\n".join([
        "\t\tFunction : sb", "\t.headerflags\t@\"EF_CUDA_SM90\"",
        enc(0x00, "LDG.E R4, desc[UR4][R2.64]", ctl(barrier=2)),
        enc(0x10, "LDG.E R5, desc[UR4][R2.64+0x4]", ctl(barrier=3)),
        enc(0x20, "CALL.REL.NOINC 0x100", ctl(wait=0b000100)),       # waits for the first only
        enc(0x30, "LDG.E R6, desc[UR4][R2.64+0x8]", ctl(barrier=3)),
        enc(0x40, "IADD3 R9, R4, R5, R6", ctl(wait=0b001000)),        # waits for SB3: two loads
        enc(0x50, "BRA 0x0", ctl()),
        "\t\tFunction : depbar", "\t.headerflags\t@\"EF_CUDA_SM90\"",
        enc(0x00, "LDG.E R4, desc[UR4][R2.64]", ctl(barrier=1)),
        enc(0x10, "LDG.E R5, desc[UR4][R2.64+0x4]", ctl(barrier=1)),
        enc(0x20, "LDG.E R6, desc[UR4][R2.64+0x8]", ctl(barrier=1)),
        enc(0x30, "DEPBAR.LE SB1, 0x1", ctl()),                        # the two oldest
        enc(0x40, "LDG.E R7, desc[UR4][R2.64+0xc]", ctl(barrier=1)),
        enc(0x50, "IADD3 R9, R6, R7, RZ", ctl(wait=0b000010)),
        enc(0x60, "BRA 0x0", ctl()),
    ])
    fns = sass.parse_sass(text)
    assert fns["sb"][0].write_barrier == 2 and fns["sb"][2].wait_mask == 0b000100
    assert fns["sb"][2].write_barrier is None
    (lp,) = sass.loop_loads(fns["sb"])
    # without the encodings the CALL waits for nothing and the IADD3 for all three
    assert lp.groups == (2, 2) and lp.max_in_flight == 2
    assert sass.loop_loads(fns["depbar"])[0].groups == (3, 2)
    assert fns["depbar"][3].depbar == (1, 1)


@pytest.mark.parametrize("program", ["bfs", "cc", "sssp"])
def test_traversals_keep_their_load_ahead(program):
    """The naive, merged, merged_aligned and chunked walks (variants 0-3, no tracing)
    issue load_ahead edge loads (and as many weight loads for SSSP) before the first
    wait, as the twins assume (requests_ahead)."""
    fns = sass.read_sass(SASS / f"{program}.sass.gz")
    per_edge = 2 if program == "sssp" else 1
    for ids in ("j", "m"):                   # uint32_t, uint64_t ids
        for variant in range(4):
            for ahead in (1, 4):
                name = rf"walkI{ids}Li{variant}ELi0ELi{ahead}E"
                assert sass.loads_in_flight(fns, name) == ahead * per_edge, name


@pytest.mark.parametrize("program", ["bfs", "cc", "sssp", "pagerank"])
def test_the_balanced_walk_keeps_what_the_twins_take(program):
    """The balanced walk (variant 4) keeps one window's loads fewer in flight than its
    load-ahead of 4; the twins' requests_ahead takes what the SASS shows."""
    from hostlink.validation.twin_traversal import requests_ahead
    fns = sass.read_sass(SASS / f"{program}.sass.gz")
    per_edge = 2 if program == "sssp" else 1
    for ids, id_bytes in (("j", 4), ("m", 8)):
        for ahead in (1, 4):
            got = sass.loads_in_flight(fns, rf"walkI{ids}Li4ELi0ELi{ahead}E")
            assert got == requests_ahead("balanced", ahead, id_bytes, weighted=program == "sssp")
            assert got == (ahead if ahead == 1 else ahead - 1) * per_edge


def test_cli_prints_the_loops(capsys):
    assert main(["validate", "sass", str(SASS / "zc_read.sass.gz"),
                 "--match", read_kernel(16, 4, "coalesced")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 2 and out[1].split()[-2:] == ["2", "2,2"]
    assert main(["validate", "sass", str(SASS / "missing.sass")]) == 2


def test_a_runs_record_agrees_with_the_sass_of_the_same_source():
    """validate run's loads_in_flight.json (validation/experiments/ci_small/runs/h200, recorded
    by the runner from its own build) holds, kernel for kernel, what validate sass reads
    from the SASS dumped from another build of the same sources (../sass), but where
    its older wait model (register dependences, ld.cv loads one by one) read the random
    pattern's and the ld.cv kernels otherwise; the twins set such records aside for
    the reference read with the current model."""
    rec = json.loads((run_dir("ci_small", "h200") / "loads_in_flight.json").read_text())
    assert rec.get("wait_model") != sass.WAIT_MODEL
    compared = 0
    for program in ("bfs", "sssp", "cc", "pagerank", "zc_read"):
        dumped = sass.kernels_in_flight(sass.read_sass(SASS / f"{program}.sass.gz"))
        kernels = rec["programs"][program]["kernels"]
        assert kernels.keys() == dumped.keys(), program
        differ = {k for k in dumped if kernels[k] != dumped[k]}
        if program == "zc_read":
            knobs = [re.search(r"read_kernelILi(\d+)ELi(\d)ELi(\d)ELi(\d)E", k).groups()
                     for k in differ]
            assert knobs and all(cache == "2" or pattern == "2" for _, cache, _, pattern in knobs)
        else:
            assert not differ, program
        compared += len(dumped)
    assert compared > 200
    assert rec["programs"]["memcpy_bw"] == {"kernels": {}}    # copies only: no device code
    reference = json.loads((SASS / "loads_in_flight.json").read_text())
    assert reference["wait_model"] == sass.WAIT_MODEL
    assert reference["programs"]["zc_read"]["kernels"] == sass.kernels_in_flight(
        sass.read_sass(SASS / "zc_read.sass.gz"))


# --------------------------------------------------------------------------- bad bytes

@pytest.mark.parametrize("raw, message", [
    (b"\x7fELF\x02\x01\x01\x00" + bytes(64), r"bad.sass:1: binary data"),
    (b"\x1f\x8b\x08\x00garbage", r"bad.sass: gzip stream is corrupt"),
    (b"Function : f\n/*0000*/ LDG.E R2, [R4] ; // \xb5\n", r"bad.sass:2: byte 0xb5 at column 30"),
])
def test_bad_bytes_are_one_line_exit_2(tmp_path, capsys, raw, message):
    f = tmp_path / "bad.sass"
    f.write_bytes(raw)
    assert main(["validate", "sass", str(f)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and re.search(message, err)


def test_bad_match_pattern_is_one_line(tmp_path, capsys):
    f = tmp_path / "k.sass"
    f.write_text("Function : f\n")
    assert main(["validate", "sass", str(f), "--match", "("]) == 2
    assert "not a regular expression" in capsys.readouterr().err
