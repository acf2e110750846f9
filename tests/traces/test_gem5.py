"""gem5 packet traces: written from request streams and read back.

The format is gem5's (src/proto/protoio.cc: a 4-byte magic 0x356d6567, then
varint-length-prefixed messages; src/proto/packet.proto: the field numbers
used by the minimal writer below; src/mem/packet.hh: ReadReq = 1,
WriteReq = 4). The minimal writer, which makes the foreign and the bad files,
is written for the tests from those sources alone; it shares no code with
hostlink.traces.gem5_*. test_gem5_independent decodes written files with a
minimal reader of its own.
"""
from __future__ import annotations

import gzip
import json

import numpy as np
import pytest

from hostlink.model.cli.main import main
from hostlink.model.workload import (REQUEST_DTYPES, SPACE_DEVICE, SPACE_HOST, LaunchInfo,
                                     RequestStream)
from hostlink.traces.coalescer import coalesce
from hostlink.traces.gem5_trace import read_gem5, read_packets, write_gem5
from hostlink.traces.graphs import generate, write_bel
from hostlink.traces.schema import Region
from hostlink.traces.store import open_trace

MAGIC = b"\x67\x65\x6d\x35"   # 0x356d6567 little-endian: b"gem5"
PS_PER_NS = 1000              # gem5's default tick is 1 ps (tick_freq 10^12)


# --------------------------------------------------------------------------- minimal writer

def _enc_varint(v: int) -> bytes:
    out = bytearray()
    while v > 0x7F:
        out.append(v & 0x7F | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def _enc(fields: list[tuple[int, int | bytes]]) -> bytes:
    out = b""
    for number, value in fields:
        if isinstance(value, bytes):
            out += _enc_varint(number << 3 | 2) + _enc_varint(len(value)) + value
        else:
            out += _enc_varint(number << 3) + _enc_varint(value)
    return out


def minimal_write(path, packets: list[list[tuple[int, int]]], *, header=None, magic=MAGIC) -> None:
    header = header if header is not None else [(1, b"commmonitor"), (3, 10**12)]
    body = magic
    for msg in [_enc(header)] + [_enc(p) for p in packets]:
        body += _enc_varint(len(msg)) + msg
    path.write_bytes(gzip.compress(body) if str(path).endswith(".gz") else body)


# --------------------------------------------------------------------------- fixtures

def _run(capsys, *argv):
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.fixture(scope="module")
def bfs_store(tmp_path_factory):
    """A kron BFS trace (merged variant, device arrays too) as a trace store."""
    d = tmp_path_factory.mktemp("gem5")
    write_bel(generate("kron", 10, 8, 3), d / "k10")
    rc = main(["trace", "gen", "--kernel", "bfs", "--variant", "merged", "--graph",
               str(d / "k10"), "--include-device", "--out", str(d / "bfs")])
    assert rc == 0
    return d / "bfs"


def _stream(launches, **cols) -> RequestStream:
    return RequestStream(**{k: np.asarray(v, dtype=REQUEST_DTYPES[k]) for k, v in cols.items()},
                         launches=launches)


def _host_stream(store):
    return coalesce(open_trace(store), include_device=False)


# --------------------------------------------------------------------------- round trips

@pytest.mark.parametrize("name", ["bfs.trc", "bfs.trc.gz"])
def test_kron_bfs_round_trip_keeps_requests_in_order(tmp_path, capsys, bfs_store, name):
    dst = tmp_path / name
    rc, out, _ = _run(capsys, "trace", "convert", bfs_store, dst, "--to", "gem5")
    assert rc == 0 and "wrote gem5 packet trace" in out
    assert (dst.read_bytes()[:2] == b"\x1f\x8b") == name.endswith(".gz")
    src = _host_stream(bfs_store)
    back = read_gem5(dst)
    assert len(src) > 1000 and back.size_histogram() == src.size_histogram()
    for col in ("launch", "warp", "inst", "addr", "size_B", "useful_B", "is_write", "space"):
        assert np.array_equal(getattr(back, col), getattr(src, col)), col
    assert back.launches == src.launches


def test_trace_stats_of_the_gem5_file_equal_the_source(tmp_path, capsys, bfs_store):
    dst = tmp_path / "bfs.trc.gz"
    assert _run(capsys, "trace", "convert", bfs_store, dst, "--to", "gem5")[0] == 0
    rc, out, _ = _run(capsys, "trace", "stats", bfs_store, "--json")
    assert rc == 0
    want = json.loads(out)
    rc, out, _ = _run(capsys, "trace", "stats", dst, "--json")
    assert rc == 0
    got = json.loads(out)
    assert got["format"] == "gem5"
    assert want["sectors"]["device"] > 0          # the source has device traffic the file leaves out
    keys = set(got) - {"source", "format", "bytes"}
    assert keys >= {"launches", "requests_by_size_B", "host_read_requests", "requested_B",
                    "useful_B", "host_writes_by_size_B", "efficiency"}
    assert {k: got[k] for k in keys} == {k: want[k] for k in keys}
    assert got["bytes"] == {k: want["bytes"][k] for k in ("host_read", "host_write")}
    rc, out, _ = _run(capsys, "trace", "stats", dst)   # the table prints too
    assert rc == 0 and "(gem5," in out and "Host-memory read requests" in out


def test_writes_and_two_regions_round_trip(tmp_path):
    # two host buffers, one not page aligned, and a device request the file leaves out
    # (test_gem5_independent decodes the same file's commands and addresses)
    stream, regions = two_region_stream()
    path = tmp_path / "w.trc"
    summary = write_gem5(stream, path, regions=regions)
    assert (summary["packets"], summary["reads"], summary["writes"]) == (4, 2, 2)
    back = read_gem5(path)
    host = stream.select(stream.space == SPACE_HOST)
    for col in ("launch", "warp", "inst", "addr", "size_B", "useful_B", "is_write"):
        assert np.array_equal(getattr(back, col), getattr(host, col)), col
    assert back.launches == stream.launches


def two_region_stream():
    regions = [Region("a", 0x7F00_0000_1040, 10_000, "host"),
               Region("b", 0x7F00_1000_0000, 4096, "host"),
               Region("d", 0x7E00_0000_0000, 4096, "device")]
    stream = _stream(
        (LaunchInfo("k0", 1, 2, 64), LaunchInfo("k1", 1, 3, 96)),
        launch=[0, 0, 1, 1, 1], warp=[0, 1, 0, 0, 2], inst=[0, 0, 0, 1, 0],
        addr=[0x7F00_0000_1040, 0x7E00_0000_0000, 0x7F00_1000_0080, 0x7F00_0000_3000,
              0x7F00_0000_1060],
        size_B=[64, 32, 128, 32, 96], useful_B=[60, 32, 128, 4, 96],
        space=[SPACE_HOST, SPACE_DEVICE, SPACE_HOST, SPACE_HOST, SPACE_HOST],
        is_write=[False, False, True, False, True])
    return stream, regions


# --------------------------------------------------------------------------- timing

def test_des_ticks_of_a_lone_read_are_its_flight_to_the_root_complex(tmp_path):
    from hostlink.model.predict import resolve_system
    from hostlink.traces.gem5_timing import des_ticks_ps
    one = _stream((LaunchInfo("k", 1, 1, 32),), launch=[0], warp=[0], inst=[0], addr=[0x1000],
                  size_B=[128], useful_B=[128], space=[SPACE_HOST], is_write=[False])
    system = resolve_system("h100-pcie5", ["translation.enabled=false"])
    tick_ns = des_ticks_ps(one, system)[0] / PS_PER_NS
    lower = system.launch_overhead_us * 1e3 + system.link.rtt_ns / 2
    # plus the MRd's own upstream serialisation: a few header bytes, well under 10 ns
    assert lower < tick_ns < lower + 10
    # with the GPU's translation on, its first page misses the TLB: one walk first
    system = resolve_system("h100-pcie5")
    walked_ns = des_ticks_ps(one, system)[0] / PS_PER_NS
    assert walked_ns - tick_ns == pytest.approx(system.translation.miss_lat_ns, abs=1e-6)


def test_des_timed_file_is_in_tick_order_within_the_run(tmp_path, capsys, bfs_store):
    from hostlink.model.predict import predict
    dst = tmp_path / "des.trc.gz"
    rc, _, _ = _run(capsys, "trace", "convert", bfs_store, dst, "--to", "gem5",
                    "--system", "h100-pcie5")
    assert rc == 0
    pk = read_packets(dst)
    assert "discrete-event" in pk.meta["timing"]
    ticks = pk.tick.astype(np.int64)
    assert (np.diff(ticks) >= 0).all() and ticks[0] > 0
    pred = predict(bfs_store, "h100-pcie5", fidelity="des")
    assert ticks[-1] < pred.time_s * 1e12
    back = read_gem5(dst)
    assert back.size_histogram() == pred.requests_by_size_B   # the stream predict timed
    # the file predicts as its source's host requests do (device requests aside)
    again = predict(dst, "h100-pcie5", fidelity="analytic")
    assert again.requests == pred.requests


def test_a_gem5_trace_is_timed_again_on_another_system(tmp_path, capsys, bfs_store):
    first, again = tmp_path / "a.trc", tmp_path / "b.trc.gz"
    assert _run(capsys, "trace", "convert", bfs_store, first, "--to", "gem5")[0] == 0
    rc, _, _ = _run(capsys, "trace", "convert", first, again, "--to", "gem5",
                    "--system", "h100-pcie5", "--set", "link.gen=4")
    assert rc == 0
    a, b = read_packets(first), read_packets(again)
    assert b.meta["layout"] == a.meta["layout"]           # the same physical layout
    assert sorted(zip(b.addr.tolist(), b.size.tolist())) == sorted(zip(a.addr.tolist(),
                                                                       a.size.tolist()))
    assert b.tick[-1] > a.tick[-1]                        # DES times, not 1 ns apart
    src = read_gem5(first)
    assert read_gem5(again).size_histogram() == src.size_histogram()


# --------------------------------------------------------------------------- other traces

def test_a_foreign_trace_predicts_on_any_generation(tmp_path, capsys):
    from hostlink.model.predict import predict
    path = tmp_path / "monitor.trc.gz"
    n = 4000
    packets = [[(1, 1000 * i), (2, 1), (3, 0x8000_0000 + 128 * i), (4, 128)] for i in range(n)]
    packets.append([(1, 1000 * n), (2, 4), (3, 0x9000_0000), (4, 64), (5, 0)])
    minimal_write(path, packets)
    s = read_gem5(path)
    assert len(s) == n + 1 and s.size_histogram() == {128: n}
    assert s.size_histogram(writes=True) == {64: 1}
    assert np.array_equal(s.warp, np.arange(n + 1))     # each packet a warp of its own
    assert np.array_equal(s.useful_B, s.size_B)
    assert int(s.addr[1]) == 0x8000_0080
    # tags per generation as the main sweep gives them (sim_configs/sweeps/main.toml)
    bw = {gen: predict(path, "h100-pcie5", overrides={"link.gen": gen, "link.tags": tags}).bw_GBps
          for gen, tags in ((3, 256), (5, 768))}
    assert bw[3] < bw[5]
    rc, out, _ = _run(capsys, "predict", "--system", "h100-pcie5", "--trace", path)
    assert rc == 0 and f"host read requests: {n} (128 B: {n})" in out


# --------------------------------------------------------------------------- bad files

def _good(i):
    return [(1, i), (2, 1), (3, 64 * i), (4, 64)]


@pytest.mark.parametrize("case, where", [
    ("magic", "not a gem5 packet trace"),
    ("no_header", "header: missing"),
    ("cut_message", "packet 3: truncated"),
    ("cut_length", "packet 3: length cut short"),
    ("command", "packet 2: command 7 is neither ReadReq"),
    ("required", "packet 2: not a valid Packet"),
    ("gzip", "gzip stream is damaged"),
])
def test_bad_files_get_one_line_naming_file_and_record(tmp_path, capsys, case, where):
    path = tmp_path / ("bad.trc.gz" if case == "gzip" else "bad.trc")
    packets = [_good(1), _good(2), _good(3)]
    if case == "magic":
        minimal_write(path, packets, magic=b"gem4")
    elif case == "no_header":
        path.write_bytes(MAGIC)
    elif case == "cut_message":                       # the last packet loses 2 bytes
        minimal_write(path, packets)
        path.write_bytes(path.read_bytes()[:-2])
    elif case == "cut_length":                        # the last packet: a varint cut short
        minimal_write(path, packets[:2])
        path.write_bytes(path.read_bytes() + b"\x80")
    elif case == "command":
        minimal_write(path, [_good(1), [(1, 2), (2, 7), (3, 128), (4, 64)]])
    elif case == "required":
        minimal_write(path, [_good(1), [(1, 2), (2, 1), (4, 64)]])      # no addr
    elif case == "gzip":
        minimal_write(path, packets)
        path.write_bytes(path.read_bytes()[:-6])
    for argv in (("trace", "stats", path), ("predict", "--system", "h100-pcie5", "--trace", path)):
        rc, out, err = _run(capsys, *argv)
        assert rc == 2 and out == ""
        assert err.count("\n") == 1 and str(path) in err and where in err, err


def test_convert_refuses_to_overwrite_and_needs_system_for_set(tmp_path, capsys, bfs_store):
    dst = tmp_path / "x.trc"
    dst.write_bytes(b"")
    rc, _, err = _run(capsys, "trace", "convert", bfs_store, dst, "--to", "gem5")
    assert rc == 2 and "--overwrite" in err
    rc, _, err = _run(capsys, "trace", "convert", bfs_store, dst, "--to", "gem5", "--overwrite",
                      "--set", "link.gen=4")
    assert rc == 2 and "--set needs --system" in err
    rc, _, err = _run(capsys, "trace", "convert", bfs_store, dst, "--to", "gem5", "--overwrite",
                      "--gap-ns", "0")
    assert rc == 2 and "gap_ns must be > 0" in err
