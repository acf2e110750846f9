"""Accel-Sim reader and writer: the three real samples and hand-made edge cases.

Counts of the real samples are derived independently of the reader, from the
raw text with regular expressions (and checked against their SOURCE.md).
"""
from __future__ import annotations

import lzma
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from hostlink.traces.accelsim import (classify_opcode, format_inst, read_accelsim,
                                      write_accelsim)
from hostlink.traces.schema import (NO_REG, OP_ATOMIC, OP_LOAD, OP_OTHER, OP_STORE,
                                    SPACE_GLOBAL, SPACE_LOCAL, SPACE_NONE, SPACE_SHARED,
                                    InstTable, Region)

DATA = Path(__file__).parent / "data"
SAMPLES = ("vectoradd", "matrixmul", "lud")


def table(trace) -> InstTable:
    return InstTable.concat(list(trace.chunks))


def assert_tables_equal(a: InstTable, b: InstTable) -> None:
    assert len(a) == len(b)
    for name in InstTable.column_names():
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)


def inst_lines(text: str, legacy: bool) -> list[list[str]]:
    """Instruction lines of a traceg, as tokens (without the legacy prefix)."""
    out = []
    for line in text.splitlines():
        if re.match(r"^(\d+ \d+ \d+ \d+ )?[0-9a-f]{4,} [0-9a-f]{8} ", line):
            tokens = line.split()
            out.append(tokens[4:] if legacy else tokens)
    return out


def opcode_of(tokens: list[str]) -> str:
    ndst = int(tokens[2])
    return tokens[3 + ndst]


# --------------------------------------------------------------------------- real samples

def test_vectoradd_counts(accelsim_data):
    folder = accelsim_data / "vectoradd"
    text = (folder / "kernel-1.traceg").read_text()
    lines = inst_lines(text, legacy=False)
    announced = sum(int(n) for n in re.findall(r"^insts = (\d+)$", text, re.M))
    assert len(lines) == announced == 344  # SOURCE.md: 344 instruction lines
    trace = read_accelsim(folder)
    t = table(trace)
    assert len(t) == 344
    names = np.array(trace.opcodes)[t.opcode]
    assert np.sum(names == "LDG.E.CG") == sum(opcode_of(x) == "LDG.E.CG" for x in lines) == 8
    assert np.sum(names == "STG.E") == sum(opcode_of(x) == "STG.E" for x in lines) == 4
    assert np.sum((t.op == OP_LOAD) & (t.space == SPACE_GLOBAL)) == 8
    assert np.sum((t.op == OP_STORE) & (t.space == SPACE_GLOBAL)) == 4
    # SOURCE.md: warps 0-3 run 23 instructions, 4-31 exit after 9; warp 3 has mask 0000000f
    per_warp = np.bincount(t.warp, minlength=32)
    assert list(per_warp[:4]) == [23] * 4 and list(per_warp[4:]) == [9] * 28
    mem3 = t.memory_rows() & (t.warp == 3)
    assert set(t.mask[mem3].tolist()) == {0xF}
    launch = trace.launches[0]
    assert launch.name == "_Z6vecAddIfEvPT_S1_S1_i"
    assert launch.grid == (1, 1, 1) and launch.block == (1024, 1, 1)
    assert launch.extra["tracer_version"] == 4 and launch.extra["kernel_id"] == 1
    assert [(m.addr, m.size_B, m.before_launch) for m in trace.memcpys] == [
        (0x7F2B2D500000, 400, 0), (0x7F2B2D500200, 400, 0), (0x7F2B2D500400, 400, 0)]
    # lane addresses of warp 0's first load: base 0x7f2b2d500000, stride 4 (mode 1)
    first = np.flatnonzero((t.op == OP_LOAD) & (t.warp == 0))[0]
    np.testing.assert_array_equal(t.addrs[first], 0x7F2B2D500000 + 4 * np.arange(32, dtype=np.uint64))


def test_matrixmul_counts(accelsim_data):
    folder = accelsim_data / "matrixmul"
    text = (folder / "kernel-1.traceg").read_text()
    lines = inst_lines(text, legacy=False)
    announced = sum(int(n) for n in re.findall(r"^insts = (\d+)$", text, re.M))
    assert len(lines) == announced
    expected = {}
    for x in lines:
        expected[opcode_of(x)] = expected.get(opcode_of(x), 0) + 1
    trace = read_accelsim(folder)
    t = table(trace)
    assert len(t) == announced
    names = np.array(trace.opcodes)[t.opcode]
    got = dict(zip(*np.unique(names, return_counts=True)))
    assert {k: int(v) for k, v in got.items()} == expected
    shared = sum(n for op, n in expected.items() if op.startswith(("LDS", "STS")))
    glob = sum(n for op, n in expected.items() if op.startswith(("LDG", "STG")))
    assert np.sum(t.space == SPACE_SHARED) == shared
    assert np.sum(t.space == SPACE_GLOBAL) == glob
    assert trace.launches[0].block == (32, 32, 1)
    assert [m.size_B for m in trace.memcpys] == [4096, 4096]


def test_lud_legacy_counts(accelsim_data):
    folder = accelsim_data / "lud"
    text = (folder / "kernel-8.traceg").read_text()
    lines = inst_lines(text, legacy=True)
    assert len(lines) == 1027  # SOURCE.md: 1027 lines, insts = 1027
    assert re.search(r"^insts = 1027$", text, re.M)
    trace = read_accelsim(folder)
    launch = trace.launches[0]
    assert launch.extra["tracer_version"] == 0  # no version line: legacy
    assert launch.name == "_Z13lud_perimeterPfii" and launch.shmem_B == 3072
    assert launch.nregs == 166 and launch.extra["kernel_id"] == 8
    t = table(trace)
    assert len(t) == 1027
    mem_lines = [x for x in lines if int(x[5 + int(x[2]) + int(x[4 + int(x[2])])]) > 0]
    assert int(t.memory_rows().sum()) == len(mem_lines)
    assert trace.regions == [] and trace.memcpys == []


@pytest.mark.parametrize("name", SAMPLES)
def test_samples_round_trip_bytes(accelsim_data, tmp_path, name):
    """read -> write gives the very same files (the samples use the tracer's own choices)."""
    src = accelsim_data / name
    trace = read_accelsim(src)
    written = write_accelsim(trace, tmp_path)
    assert sorted(p.name for p in written) == sorted(p.name for p in src.iterdir()
                                                     if p.name != "SOURCE.md")
    for p in written:
        assert p.read_bytes() == (src / p.name).read_bytes(), p.name


@pytest.mark.parametrize("name", SAMPLES)
def test_samples_round_trip_mode0_and_xz(accelsim_data, tmp_path, name):
    """Written uncompressed (mode 0) and as .xz, the trace reads back instruction for instruction."""
    trace = read_accelsim(accelsim_data / name)
    original = table(trace)
    write_accelsim(trace, tmp_path / "plain", compress=False)
    write_accelsim(trace, tmp_path / "xz", xz=True)
    text = next((tmp_path / "plain").glob("*.traceg")).read_text()
    assert " 1 0x" not in text.replace(" 1 0x0 0 ", "")  # no mode-1 lines left except mask 0
    assert next((tmp_path / "xz").glob("*.traceg.xz"))
    for sub in ("plain", "xz"):
        back = read_accelsim(tmp_path / sub)
        assert_tables_equal(original, table(back))
        assert back.opcodes == trace.opcodes


def test_write_trace_without_accelsim_extras(tmp_path):
    """A trace from another source (no header values kept): version 4 defaults,
    rows grouped by CTA and warp in program order, and it reads back the same."""
    from hostlink.traces.schema import KernelLaunch, WarpTrace
    launch = KernelLaunch("bfs_merged", (2, 1, 1), (64, 1, 1))
    rows = [(1, 1, 0x100), (0, 0, 0x200), (1, 1, 0x300), (0, 1, 0x400)]  # cta, warp, address
    n = len(rows)
    addrs = np.zeros((n, 32), dtype=np.uint64)
    for i, (_, _, a) in enumerate(rows):
        addrs[i] = a + 4 * np.arange(32, dtype=np.uint64)
    t = InstTable(launch=np.zeros(n), cta=[r[0] for r in rows], warp=[r[1] for r in rows],
                  pc=np.arange(n) * 16, opcode=np.zeros(n), op=np.full(n, OP_LOAD),
                  space=np.zeros(n), width_B=np.full(n, 4), mask=np.full(n, 0xFFFFFFFF),
                  addrs=addrs)
    write_accelsim(WarpTrace([launch], ["LDG.E"], [], [t]), tmp_path, binary_version=90)
    text = (tmp_path / "kernel-1.traceg").read_text()
    assert "-binary version = 90\n" in text and "-accelsim tracer version = 4\n" in text
    assert text.count("#BEGIN_TB") == 2
    back = table(read_accelsim(tmp_path))
    order = [1, 3, 0, 2]  # CTA 0 warp 0, CTA 0 warp 1, then CTA 1 warp 1 in program order
    assert_tables_equal(t.select(np.array(order)), back)


def test_chunks_are_bounded(accelsim_data):
    folder = accelsim_data / "matrixmul"
    whole = table(read_accelsim(folder))
    chunks = list(read_accelsim(folder, chunk_insts=100).chunks)
    assert max(len(c) for c in chunks) == 100
    assert len(chunks) == -(-len(whole) // 100)
    assert_tables_equal(whole, InstTable.concat(chunks))


# --------------------------------------------------------------------------- hand-made edge cases

def test_edge_v4_rows():
    trace = read_accelsim(DATA / "edge_v4")
    t = table(trace)
    names = [trace.opcodes[i] for i in t.opcode]
    assert names == ["MOV", "LDG.E", "LDG.E.64", "LDG.E", "STG.E", "EXIT",
                     "MOV", "LD.E", "ST.E", "ATOM.E.ADD", "MOV", "RED.E.ADD",
                     "LDG.E.128", "EXIT"]
    assert t.launch.tolist() == [0] * 12 + [1, 1]
    assert t.cta.tolist() == [0] * 10 + [1, 1] + [0, 0]
    assert t.warp.tolist() == [0] * 6 + [1] * 4 + [0, 0, 0, 0]
    assert t.op.tolist() == [OP_OTHER, OP_LOAD, OP_LOAD, OP_LOAD, OP_STORE, OP_OTHER,
                             OP_OTHER, OP_LOAD, OP_STORE, OP_ATOMIC, OP_OTHER, OP_ATOMIC,
                             OP_LOAD, OP_OTHER]
    # generic LD.E in the shmem window is shared, ST.E in the local window is
    # local, ATOM.E.ADD elsewhere is global
    assert t.space.tolist() == [SPACE_NONE, SPACE_GLOBAL, SPACE_GLOBAL, SPACE_GLOBAL,
                                SPACE_GLOBAL, SPACE_NONE, SPACE_NONE, SPACE_SHARED, SPACE_LOCAL,
                                SPACE_GLOBAL, SPACE_NONE, SPACE_GLOBAL, SPACE_GLOBAL, SPACE_NONE]
    assert t.width_B.tolist() == [0, 4, 8, 4, 4, 0, 0, 4, 4, 4, 0, 4, 16, 0]
    assert t.pc.tolist() == [0, 0x10, 0x20, 0x30, 0x40, 0x50, 0, 0x10, 0x20, 0x30, 0, 0x10,
                             0, 0x10]
    assert t.dst_reg.tolist() == [1, 2, 3, 5, NO_REG, NO_REG, 1, 2, NO_REG, 7, 1, NO_REG,
                                  2, NO_REG]
    assert t.src_regs[4].tolist() == [2, 3, NO_REG, NO_REG, NO_REG]
    a = t.addrs
    np.testing.assert_array_equal(a[1], 0x10000000 + 4 * np.arange(32, dtype=np.uint64))
    assert a[2, :4].tolist() == [0x10000200, 0x10000300, 0x10000208, 0x10000400]  # mode 0
    assert not a[2, 4:].any()
    assert a[3, 0] == 0x10000010 and a[3, 31] == 0x10000000 and not a[3, 1:31].any()  # mode 2
    assert t.mask[4] == 0 and not a[4].any()  # mask-0 quirk "1 0x0 0"
    assert a[7, :2].tolist() == [0x7F0000000010, 0x7F0000000014]
    # mode 2, one lane, no deltas: 0x7f0001000020 is offset 0x20 of the local window,
    # word 8 of thread slot 32 (CTA 0, warp 1, lane 0) of N = 64 threads x 2 CTAs
    # slots, at BASE + 4 * (8 * 128 + 32) (traces/local_memory.py)
    assert a[8, 0] == (1 << 61) + 4 * (8 * 128 + 32)
    raw = table(read_accelsim(DATA / "edge_v4", translate_local=False))
    assert raw.addrs[8, 0] == 0x7F0001000020
    assert a[11, :16].tolist() == [0x10000100] * 16 and not a[11, 16:].any()  # stride 0
    np.testing.assert_array_equal(a[12], 0x10001000 + 16 * np.arange(32, dtype=np.uint64))
    assert trace.launches[0].extra["immediate"] is False
    assert [(r.name, r.start, r.size_B, r.location) for r in trace.regions] == [
        ("memcpy0", 0x10000000, 4096, "device"), ("memcpy1", 0x10001000, 256, "device")]
    assert [m.before_launch for m in trace.memcpys] == [0, 1]


def test_edge_v4_round_trip(tmp_path):
    trace = read_accelsim(DATA / "edge_v4")
    write_accelsim(trace, tmp_path)
    back = read_accelsim(tmp_path)
    assert_tables_equal(table(trace), table(back))
    assert (tmp_path / "kernelslist.g").read_text() == (DATA / "edge_v4/kernelslist.g").read_text()
    text = (tmp_path / "kernel-1.traceg").read_text()
    # the writer compresses as the tracer does: the four-lane mode-0 line becomes mode 2
    assert "LDG.E.64 1 R4 8 2 0x10000200 256 -248 504 \n" in text
    assert "warp = 1\ninsts = 0\n" in text  # empty warp of thread block 1 kept
    assert "ST.E 2 R4 R2 4 2 0x7f0001000020 \n" in text  # the tracer's local address back


def test_edge_v5_lineinfo_immediate(tmp_path):
    src = DATA / "edge_v5_lineinfo"
    trace = read_accelsim(src)
    t = table(trace)
    assert t.line_num.tolist() == [12, 13, 14, 15, 16]
    assert t.imm.tolist() == [0, 7, -3, 5, 0]
    assert t.addrs[2, 0] == 0x10000040 and t.addrs[2, 2] == 0x10000000
    assert t.mask.tolist() == [0xFFFFFFFF, 0xFFFFFFFF, 5, 0, 0xFFFFFFFF]
    ex = trace.launches[0].extra
    assert ex["tracer_version"] == 5 and ex["lineinfo"] and ex["immediate"]
    for p in write_accelsim(trace, tmp_path):
        assert p.read_bytes() == (src / p.name).read_bytes()


def test_edge_legacy(tmp_path):
    trace = read_accelsim(DATA / "edge_legacy")
    t = table(trace)
    assert t.cta.tolist() == [1, 1, 1]  # thread block (0,1,0) in grid (1,2,1)
    assert t.addrs[1, :2].tolist() == [0x20000000, 0x20000084]
    write_accelsim(trace, tmp_path)
    text = (tmp_path / "kernel-3.traceg").read_text()
    assert "0 1 0 0 0010 00000003 1 R2 LDG.E.SYS 1 R4 4 1 0x0000000020000000 132 \n" in text
    assert_tables_equal(t, table(read_accelsim(tmp_path)))


def test_xz_kernel_files(tmp_path):
    src = DATA / "edge_v4"
    for p in src.glob("kernel-*.traceg"):
        with lzma.open(tmp_path / (p.name + ".xz"), "wb") as fh:
            fh.write(p.read_bytes())
    (tmp_path / "kernelslist.g").write_text(
        (src / "kernelslist.g").read_text().replace(".traceg", ".traceg.xz"))
    assert_tables_equal(table(read_accelsim(src)), table(read_accelsim(tmp_path)))


def test_regions_from_memcpy_and_file():
    host = read_accelsim(DATA / "edge_v4", memcpy_location="host")
    assert {r.location for r in host.regions} == {"host"}
    explicit = [Region("edges", 0x10000000, 1024, "host")]
    merged = read_accelsim(DATA / "edge_v4", regions=explicit)
    # the explicit region wins over memcpy0, which it overlaps
    assert [(r.name, r.location) for r in merged.regions] == [("edges", "host"),
                                                              ("memcpy1", "device")]


def test_classify_opcode():
    assert classify_opcode("LDG.E.128.SYS") == (OP_LOAD, SPACE_GLOBAL)
    assert classify_opcode("STG.E") == (OP_STORE, SPACE_GLOBAL)
    assert classify_opcode("LDS.U.32") == (OP_LOAD, SPACE_SHARED)
    assert classify_opcode("LDSM.16.M88.4") == (OP_LOAD, SPACE_SHARED)
    assert classify_opcode("STS.128") == (OP_STORE, SPACE_SHARED)
    assert classify_opcode("LDL.64") == (OP_LOAD, SPACE_LOCAL)
    assert classify_opcode("STL") == (OP_STORE, SPACE_LOCAL)
    assert classify_opcode("ATOMG.E.ADD") == (OP_ATOMIC, SPACE_GLOBAL)
    assert classify_opcode("ATOMS.ADD") == (OP_ATOMIC, SPACE_SHARED)
    assert classify_opcode("LDGSTS.E.128") == (OP_LOAD, SPACE_GLOBAL)
    assert classify_opcode("IMAD.WIDE") == (OP_OTHER, SPACE_NONE)
    assert classify_opcode("LD.E")[1] == 255 and classify_opcode("ATOM.E.ADD")[1] == 255


def _row(mask, addrs, width=4):
    full = [0] * 32
    lanes = [i for i in range(32) if mask >> i & 1]
    for lane, a in zip(lanes, addrs):
        full[lane] = a
    return {"pc": 0x10, "mask": mask, "dst_reg": 2, "src_regs": [4, -1, -1, -1, -1],
            "width_B": width, "addrs": full, "line_num": 0, "imm": 0}


@pytest.mark.parametrize("mask,addrs,expected", [
    (0xFFFFFFFF, [0x1000 + 4 * i for i in range(32)], "4 1 0x1000 4 "),   # one stride run
    (0x0000FF00, [0x1000 - 8 * i for i in range(8)], "4 1 0x1000 -8 "),   # negative stride
    (0x0, [], "4 1 0x0 0 "),                                               # mask-0 quirk
    (0x1, [0x1000], "4 2 0x1000 "),                                        # one lane: mode 2
    (0x5, [0x1000, 0x1004], "4 2 0x1000 4 "),                              # gap in the mask
    (0x7, [0x1000, 0x1004, 0x1010], "4 2 0x1000 4 12 "),                   # uneven stride
    (0x3, [0x1000, 0x1000 + (1 << 33)], "4 2 0x1000 8589934592 "),        # stride > int32
])
def test_writer_address_modes(mask, addrs, expected):
    line = format_inst(_row(mask, addrs), "LDG.E", legacy_prefix=None, lineinfo=False,
                       immediate=False)
    assert line == "0010 %08x 1 R2 LDG.E 1 R4 " % mask + expected


# --------------------------------------------------------------------------- malformed files

def _broken(tmp_path, edit, kernel="kernel-1.traceg"):
    dst = tmp_path / "t"
    shutil.copytree(DATA / "edge_v4", dst)
    path = dst / kernel
    path.write_text(edit(path.read_text()))
    return dst


def _read_all(folder):
    return table(read_accelsim(folder))


MALFORMED = {
    "truncated_in_block": (lambda s: s[:s.index("#END_TB")], "kernel-1.traceg:38:",
                           "ends inside a thread block"),
    "truncated_line": (lambda s: s[:s.index("0x10000000 4")] + "0x1000\n", "kernel-1.traceg:26:",
                       "ends early"),
    "insts_too_many": (lambda s: s.replace("insts = 6", "insts = 7"), "kernel-1.traceg:24:",
                       "insts"),
    "insts_too_few": (lambda s: s.replace("insts = 6", "insts = 5"), "kernel-1.traceg:30:",
                      "more instruction lines"),
    "bad_hex": (lambda s: s.replace("0x10000010 -16", "0x1000zz10 -16"), "kernel-1.traceg:28:",
                "bad hex"),
    "bad_mask": (lambda s: s.replace("0000000f 1 R3", "0000000g 1 R3"), "kernel-1.traceg:27:",
                 "bad hex mask"),
    "unknown_mode": (lambda s: s.replace("4 1 0x10000000 4", "4 3 0x10000000 4"),
                     "kernel-1.traceg:26:", "unknown address mode 3"),
    "gapped_mode1": (lambda s: s.replace("80000001 1 R5 LDG.E 1 R6 4 2 0x10000010 -16",
                                         "80000001 1 R5 LDG.E 1 R6 4 1 0x10000010 4"),
                     "kernel-1.traceg:28:", "contiguous"),
    "extra_tokens": (lambda s: s.replace("0x10000000 4 \n", "0x10000000 4 1 2\n"),
                     "kernel-1.traceg:26:", "unexpected tokens"),
    "bad_register": (lambda s: s.replace("1 R1 MOV", "1 P1 MOV", 1), "kernel-1.traceg:25:",
                     "register"),
    "bad_grid": (lambda s: s.replace("(2,1,1)", "(2,1)"), "kernel-1.traceg:3:", "dimension"),
    "no_block_dim": (lambda s: s.replace("-block dim = (64,1,1)\n", ""), "kernel-1.traceg",
                     "block dim"),
    "header_without_equals": (lambda s: s.replace("-nregs = 16", "-nregs 16"),
                              "kernel-1.traceg:6:", "-key = value"),
    "newer_version": (lambda s: s.replace("tracer version = 4", "tracer version = 9"),
                      "kernel-1.traceg:12:", "newer"),
    "warp_outside_block": (lambda s: s.replace("warp = 1\ninsts = 4", "warp = 2\ninsts = 4"),
                           "kernel-1.traceg:32:", "warp 2 outside"),
    "block_outside_grid": (lambda s: s.replace("thread block = 1,0,0", "thread block = 2,0,0"),
                           "kernel-1.traceg:43:", "outside grid"),
    "nested_begin": (lambda s: s.replace("#END_TB\n\n#BEGIN_TB", "#BEGIN_TB", 1),
                     "kernel-1.traceg:39:", "#BEGIN_TB before"),
    "block_twice": (lambda s: s.replace("thread block = 1,0,0", "thread block = 0,0,0"),
                    "kernel-1.traceg:43:", "appears twice"),
    "tma": (lambda s: s.replace("LDG.E 1 R6", "UTMALDG 1 R6"), "kernel-1.traceg:28:", "TMA"),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_kernel_file(tmp_path, case):
    from hostlink.model.errors import TraceError
    edit, where, what = MALFORMED[case]
    folder = _broken(tmp_path, edit)
    with pytest.raises(TraceError) as info:
        _read_all(folder)
    msg = str(info.value)
    assert where in msg and what in msg, msg
    assert "\n" not in msg


def test_malformed_legacy_prefix(tmp_path):
    from hostlink.model.errors import TraceError
    dst = tmp_path / "t"
    shutil.copytree(DATA / "edge_legacy", dst)
    p = dst / "kernel-3.traceg"
    p.write_text(p.read_text().replace("0 1 0 0 0010", "0 0 0 0 0010"))
    with pytest.raises(TraceError, match=r"kernel-3.traceg:20: line prefix 0 0 0 0"):
        _read_all(dst)


def test_truncated_xz(tmp_path):
    from hostlink.model.errors import TraceError
    dst = tmp_path / "t"
    shutil.copytree(DATA / "edge_v4", dst)
    data = lzma.compress((dst / "kernel-1.traceg").read_bytes())
    (dst / "kernel-1.traceg.xz").write_bytes(data[: len(data) // 2])
    (dst / "kernelslist.g").write_text((dst / "kernelslist.g").read_text().replace(
        "kernel-1.traceg", "kernel-1.traceg.xz"))
    with pytest.raises(TraceError, match=r"kernel-1.traceg.xz: compressed stream is corrupt"):
        _read_all(dst)


@pytest.mark.parametrize("listing,what", [
    ("MemcpyHtoD,0xzz,10\nkernel-1.traceg\n", "kernelslist.g:1: bad address"),
    ("MemcpyHtoD,0x10\n", "kernelslist.g:1: expected 'MemcpyHtoD"),
    ("kernel-1.traceg\nkernel-9.traceg\n", "kernelslist.g:2: kernel trace 'kernel-9.traceg' not found"),
    ("kernel-1.traceg\nbogus\n", "kernelslist.g:2: unknown command"),
])
def test_malformed_kernelslist(tmp_path, listing, what):
    from hostlink.model.errors import TraceError
    dst = tmp_path / "t"
    shutil.copytree(DATA / "edge_v4", dst)
    (dst / "kernelslist.g").write_text(listing)
    with pytest.raises(TraceError, match=re.escape(what)):
        _read_all(dst)


@pytest.mark.parametrize("listing", ["", "\n\n", "MemcpyHtoD,0x10,4\n"])
def test_kernelslist_without_kernels(tmp_path, capsys, listing):
    from hostlink.model.cli.main import main
    dst = tmp_path / "t"
    shutil.copytree(DATA / "edge_v4", dst)
    (dst / "kernelslist.g").write_text(listing)
    assert main(["trace", "stats", str(dst)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "kernelslist.g: names no kernel trace" in err


def test_listed_plain_found_as_xz_and_back(tmp_path):
    """The README: kernel files plain or .xz, whichever the listing says."""
    original = table(read_accelsim(DATA / "edge_v4"))
    dst = tmp_path / "t"
    shutil.copytree(DATA / "edge_v4", dst)
    p = dst / "kernel-1.traceg"
    (dst / "kernel-1.traceg.xz").write_bytes(lzma.compress(p.read_bytes()))
    p.unlink()
    assert_tables_equal(original, table(read_accelsim(dst)))  # listed plain, only .xz there
    listing = dst / "kernelslist.g"
    listing.write_text(listing.read_text().replace("kernel-2.traceg", "kernel-2.traceg.xz"))
    assert_tables_equal(original, table(read_accelsim(dst)))  # listed .xz, only plain there


def test_latin1_byte_names_its_line(tmp_path):
    from hostlink.model.errors import TraceError
    dst = tmp_path / "t"
    shutil.copytree(DATA / "edge_v4", dst)
    p = dst / "kernel-1.traceg"
    raw = p.read_bytes().replace(b"-kernel name = _Z4edgePi", b"-kernel name = \xb5edge")
    p.write_bytes(raw)
    with pytest.raises(TraceError, match=r"kernel-1.traceg:1: byte 0xb5 at column 16"):
        _read_all(dst)
    p.write_bytes(raw.replace(b"\xb5edge", b"edge").replace(b"0030 80000001", b"0030 8\xff000001"))
    with pytest.raises(TraceError, match=r"kernel-1.traceg:28: byte 0xff at column 7"):
        _read_all(dst)


def test_not_a_trace_folder(tmp_path):
    from hostlink.model.errors import TraceError
    with pytest.raises(TraceError, match="no kernelslist.g"):
        read_accelsim(tmp_path)


# --------------------------------------------------------------------------- local memory

def _accelsim_local_sectors(offsets: list[int], mask: int, width_B: int) -> int:
    """32 B sectors of one warp's local access as Accel-Sim coalesces it: each lane's
    access split into 4 B words (w / 4 of them, one below 4 B), word D of lane t at
    4 * (D * N + slot + t) with a warp's 32 slots contiguous and 128 B aligned
    (gpgpu-sim shader.cc translate_local_memaddr): a sector is (word, t // 8)."""
    words = max(width_B // 4, 1)
    return len({(offsets[t] // 4 + i, t // 8)
                for t in range(32) if mask >> t & 1 for i in range(words)})


def _sectors(addrs: list[int], mask: int, width_B: int) -> int:
    """32 B sectors of [addr, addr + w) over the active lanes (the coalescer's rule)."""
    return len({s for t in range(32) if mask >> t & 1
                for s in range(addrs[t] // 32, (addrs[t] + width_B - 1) // 32 + 1)})


def test_btree_local_memory_sectors(accelsim_data, tmp_path):
    """b+tree's STL.64 and LDL, most with all lanes at one offset: as many sectors as
    Accel-Sim's mapping gives (8 per full-warp STL.64), not about one per instruction
    as raw offsets give; written back, the kernel files are the tracer's byte for byte."""
    src = accelsim_data / "btree_128_1000"
    files = sorted(src.glob("kernel-*.traceg"))
    n_text = sum(len([tk for tk in inst_lines(f.read_text(), legacy=False)
                      if opcode_of(tk).split(".")[0] in ("LDL", "STL")]) for f in files)
    assert n_text == 12_304  # grep -c 'LDL\|STL': 6,152 lines in each kernel file
    trace = read_accelsim(src)
    t = table(trace)
    local = t.select(t.space == SPACE_LOCAL)
    raw_t = table(read_accelsim(src, translate_local=False))
    raw = raw_t.select(raw_t.space == SPACE_LOCAL)
    assert len(local) == len(raw) == n_text
    rows = list(zip(raw.addrs.tolist(), local.addrs.tolist(), raw.mask.tolist(),
                    raw.width_B.tolist()))
    expected = sum(_accelsim_local_sectors(r, m, w) for r, _, m, w in rows)
    got = sum(_sectors(a, m, w) for _, a, m, w in rows)
    untranslated = sum(_sectors(r, m, w) for r, _, m, w in rows)
    assert got == expected
    assert untranslated < expected / 6  # 32 lanes at one offset share a sector
    written = write_accelsim(trace, tmp_path)
    for new, old in zip(sorted(p for p in written if p.name != "kernelslist.g"), files):
        assert new.read_bytes() == old.read_bytes(), old.name


LOCAL_KERNEL = """-kernel name = local
-kernel id = 1
-grid dim = (2,1,1)
-block dim = (64,1,1)
-shmem = 0
-nregs = 16
-accelsim tracer version = 4
-enable lineinfo = 0

#traces format = [line_num] PC mask dest_num [reg_dests] opcode src_num [reg_srcs] mem_width [adrrescompress?] [mem_addresses]

#BEGIN_TB

thread block = {cta},0,0

warp = 0
insts = 5
0000 ffffffff 0 STL.64 2 R1 R2 8 1 0xfffbd0 0 
0010 0000000f 1 R3 LDL 1 R1 4 1 0xfffbc8 0 
0020 01010101 1 R3 LDL.U8 1 R1 1 0 0xfffbc3 0xfffbc3 0xfffbc3 0xfffbc3 
0030 ffffffff 1 R3 LDL 1 R1 4 1 0x0 4 
0040 0000000f 0 STL.64 2 R1 R2 8 1 0xfffbd0 0 

#END_TB
"""


def test_synthetic_local_memory_sectors(tmp_path):
    """Sectors of local accesses, derived by hand from Accel-Sim's mapping (word D of a
    lane at 4 * (D * N + slot), a warp's 32 slots contiguous):
    - STL.64, 32 lanes at one offset: 2 words x 128 B = 8 sectors (raw: 1);
    - LDL, lanes 0-3 at one offset: 16 B of one line = 1 sector (raw: 1);
    - LDL.U8, lanes 0, 8, 16, 24: one byte in each 32 B quarter = 4 sectors (raw: 1);
    - LDL, lane t at 4 t: 32 distinct words, each lane in its own 128 B line: 32
      sectors (raw: 128 contiguous bytes, 4);
    - STL.64, lanes 0-3: Accel-Sim 2 (two words, one sector each); here 1 (the
      module's stated shortfall for partial warps of 8 B accesses).
    Both CTAs: 2 x (8 + 1 + 4 + 32 + 1) = 92 sectors, against 2 x 8 = 16 raw."""
    from hostlink.traces.coalescer import coalesce
    folder = tmp_path / "t"
    folder.mkdir()
    (folder / "kernelslist.g").write_text("kernel-1.traceg\nkernel-2.traceg\n")
    for cta, name in ((0, "kernel-1.traceg"), (1, "kernel-2.traceg")):
        (folder / name).write_text(LOCAL_KERNEL.format(cta=cta))
    per_row = [8, 1, 4, 32, 1]
    for translate, expected in ((True, per_row), (False, [1, 1, 1, 4, 1])):
        trace = read_accelsim(folder, translate_local=translate)
        rs = coalesce(trace, include_device=True)
        got = [int(np.sum((rs.launch == k) & (rs.inst == i)))
               for k in (0, 1) for i in range(5)]
        assert got == expected * 2
        assert int(rs.size_B.sum()) == 32 * sum(expected) * 2
    # the two CTAs' threads use different slots: no address is shared
    t = table(read_accelsim(folder))
    first, second = (set(t.addrs[t.launch == k].ravel().tolist()) - {0} for k in (0, 1))
    assert not first & second


def test_local_translation_bounds_and_inverse():
    """Huge grids and blocks stay below the coalescer's 2**62; the writer's inverse
    gives the tracer's offset back."""
    from hostlink.traces import local_memory as lm
    from hostlink.traces.schema import KernelLaunch
    for grid, block in (((2, 1, 1), (64, 1, 1)), ((2**31 - 1, 65535, 65535), (1024, 1, 1)),
                        ((7, 1, 1), (2**20, 2**10, 64))):
        launch = KernelLaunch(name="k", grid=grid, block=block)
        offsets = [0xFFFFFC + (lane % 4) for lane in range(32)]  # the window's last word
        for width in (1, 4, 8, 16, 255):
            for cta, warp in ((0, 0), (launch.ctas - 1, launch.warps_per_cta - 1)):
                out = lm.translate(offsets, 0xFFFFFFFF, width, cta, warp, launch)
                assert max(out) < 1 << 62
                back = [lm.original_offset(a, lane, width, cta, warp, launch)
                        for lane, a in enumerate(out)]
                assert back == offsets
