"""A minimal gem5 packet trace reader, written for this test, decodes what hostlink writes.

The reader follows gem5's own sources alone: src/proto/protoio.cc (a 4-byte
magic 0x356d6567, "gem5" little-endian, then each message as a varint length
and its bytes; gzip where the file starts with 0x1f 0x8b), the protobuf wire
format (a tag varint of field number << 3 | wire type; 0 varint, 2
length-delimited) and src/proto/packet.proto's field numbers (PacketHeader:
obj_id 1, tick_freq 3, id_strings 4 with key 1, value 2; Packet: tick 1, cmd
2, addr 3, size 4, pkt_id 6, pc 7). ReadReq = 1 and WriteReq = 4 are from
src/mem/packet.hh. It uses none of hostlink's gem5 reading code.
"""
from __future__ import annotations

import gzip
import json

import numpy as np
import pytest

from hostlink.model.cli.main import main
from hostlink.model.workload import REQUEST_DTYPES, SPACE_DEVICE, SPACE_HOST, RequestStream
from hostlink.traces.coalescer import coalesce
from hostlink.traces.gem5_trace import write_gem5
from hostlink.traces.graphs import generate, write_bel
from hostlink.traces.schema import Region
from hostlink.traces.store import open_trace

MAGIC = b"\x67\x65\x6d\x35"   # 0x356d6567 little-endian: b"gem5"
PS_PER_NS = 1000              # gem5's default tick is 1 ps (tick_freq 10^12)
PAGE_B = 4096                 # the layout's page (x86-64 base page)


# --------------------------------------------------------------------------- minimal reader

def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7


def _fields(msg: bytes) -> dict[int, list]:
    """Field number -> values (varints as ints, length-delimited as bytes)."""
    out: dict[int, list] = {}
    pos = 0
    while pos < len(msg):
        tag, pos = _varint(msg, pos)
        number, wire = tag >> 3, tag & 7
        if wire == 0:
            value, pos = _varint(msg, pos)
        elif wire == 2:
            n, pos = _varint(msg, pos)
            value, pos = msg[pos:pos + n], pos + n
        else:
            raise AssertionError(f"wire type {wire} is not in packet.proto's messages")
        out.setdefault(number, []).append(value)
    return out


def minimal_read(path) -> tuple[dict, list[dict]]:
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    assert data[:4] == MAGIC
    pos, messages = 4, []
    while pos < len(data):
        n, pos = _varint(data, pos)
        messages.append(_fields(data[pos:pos + n]))
        pos += n
    assert pos == len(data)
    return messages[0], messages[1:]


@pytest.fixture(scope="module")
def bfs_store(tmp_path_factory):
    """A kron BFS trace (merged variant, device arrays too) as a trace store."""
    d = tmp_path_factory.mktemp("gem5i")
    write_bel(generate("kron", 10, 8, 3), d / "k10")
    rc = main(["trace", "gen", "--kernel", "bfs", "--variant", "merged", "--graph",
               str(d / "k10"), "--include-device", "--out", str(d / "bfs")])
    assert rc == 0
    return d / "bfs"


def test_a_minimal_reader_decodes_the_written_file(tmp_path, bfs_store):
    dst = tmp_path / "bfs.trc"
    assert main(["trace", "convert", str(bfs_store), str(dst), "--to", "gem5",
                 "--gap-ns", "2.5"]) == 0
    header, packets = minimal_read(dst)
    assert header[3] == [10**12]                                   # tick_freq
    assert header[1][0].decode().startswith("hostlink")            # obj_id
    entry = _fields(header[4][0])                                  # id_strings[0]
    assert entry[1] == [0]
    note = json.loads(entry[2][0].decode())
    assert note["format"] == "hostlink-request-stream"
    src = coalesce(open_trace(bfs_store), include_device=False)
    assert len(packets) == len(src)
    assert [p[2][0] for p in packets] == [1] * len(src)            # ReadReq
    assert [p[4][0] for p in packets] == src.size_B.tolist()       # size
    assert [p[1][0] for p in packets] == [int(i * 2.5 * PS_PER_NS) for i in range(len(src))]
    phys = np.array([p[3][0] for p in packets], dtype=np.uint64)
    virt = src.addr
    (edges,) = [r for r in open_trace(bfs_store).regions if r.location == "host"]
    # one host region: moved as a whole, to the first page, keeping offsets within pages
    assert np.unique(virt - phys).size == 1
    assert int(virt[0] - phys[0]) == edges.start - edges.start % PAGE_B
    assert (phys % np.uint64(PAGE_B) == virt % np.uint64(PAGE_B)).all()
    # pkt_id: the warp and instruction; pc: the launch and the useful bytes
    assert [p[6][0] >> 32 for p in packets] == src.warp.tolist()
    assert [p[7][0] >> 32 for p in packets] == src.useful_B.tolist()


def test_commands_and_physical_addresses_of_two_regions(tmp_path):
    # two host buffers, one not page aligned, and a device request the file leaves out
    regions = [Region("a", 0x7F00_0000_1040, 10_000, "host"),
               Region("b", 0x7F00_1000_0000, 4096, "host"),
               Region("d", 0x7E00_0000_0000, 4096, "device")]
    cols = dict(launch=[0, 0, 1, 1, 1], warp=[0, 1, 0, 0, 2], inst=[0, 0, 0, 1, 0],
                addr=[0x7F00_0000_1040, 0x7E00_0000_0000, 0x7F00_1000_0080, 0x7F00_0000_3000,
                      0x7F00_0000_1060],
                size_B=[64, 32, 128, 32, 96], useful_B=[60, 32, 128, 4, 96],
                space=[SPACE_HOST, SPACE_DEVICE, SPACE_HOST, SPACE_HOST, SPACE_HOST],
                is_write=[False, False, True, False, True])
    stream = RequestStream(**{k: np.asarray(v, dtype=REQUEST_DTYPES[k]) for k, v in cols.items()})
    path = tmp_path / "w.trc.gz"
    write_gem5(stream, path, regions=regions)
    _, packets = minimal_read(path)
    assert [p[2][0] for p in packets] == [1, 4, 1, 4]                 # ReadReq / WriteReq
    assert [p[4][0] for p in packets] == [64, 128, 32, 96]
    assert [p[1][0] for p in packets] == [0, 1000, 2000, 3000]        # 1 ns apart
    # a: page 0 at its offset 0x040; b: the first page after a's last byte, at 0x080
    a_end = 0x040 + 10_000
    assert [p[3][0] for p in packets] == [0x040, -(-a_end // PAGE_B) * PAGE_B + 0x080,
                                          0x040 + 0x3000 - 0x1040, 0x060]
