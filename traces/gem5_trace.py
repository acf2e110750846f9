"""Request streams as gem5 packet traces, and gem5 packet traces as request streams.

:func:`write_gem5` writes the host-memory requests of a
:class:`~hostlink.model.workload.RequestStream` as the root complex sees them:
one gem5 ``Packet`` per request, a read as ``ReadReq`` and a posted write as
``WriteReq``, with its size after coalescing, its address in the host's
physical layout (:class:`~hostlink.traces.gem5_layout.HostLayout` of the
trace's regions) and its tick: given per request (the discrete-event model's
times, :mod:`hostlink.traces.gem5_timing`) or else one request every
``gap_ns`` in stream order. Packets are written in tick order (ties in stream
order); ticks are picoseconds (``tick_freq`` 10^12 per second, gem5's
default, which its ``TrafficGen`` requires of a trace). Device requests are
left out: they never reach the root complex.

:func:`read_gem5` reads any gem5 packet trace (plain or gzipped) back as a
request stream that ``predict`` and ``trace stats`` take, in file order:

- a file this module wrote carries, in its header's ``id_strings`` (key 0), a
  JSON note with the stream's launches and the host layout; each packet's
  ``pkt_id`` holds its issuing instruction (``warp << 32 | instruction``, the
  packet's "owner" as packet.proto's comment puts it) and ``pc`` its launch and
  useful bytes (``launch | useful_B << 32``). The stream read back has the same
  requests, sizes, useful bytes, virtual addresses and warps as the one written.
- any other trace (a ``CommMonitor`` recording, say) becomes one launch in
  which every packet is a warp of its own with one instruction, all its bytes
  useful, at the address it holds: requests independent of each other, as
  many in flight as the link's tags and credits allow. Ticks only order them.

Commands: gem5's src/mem/packet.hh numbers ``MemCmd::Command`` in the order
InvalidCmd, ReadReq, ReadResp, ReadRespWithInvalidate, WriteReq, ...; so
ReadReq = 1 and WriteReq = 4 (the same in every release that writes protobuf
traces; later commands moved between releases). Other commands are refused
with the packet named.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hostlink.model.errors import HostlinkError, TraceError
from hostlink.model.workload import SPACE_HOST, LaunchInfo, RequestStream
from hostlink.traces.gem5_layout import HostLayout
from hostlink.traces.gem5_proto import MessageWriter, Packet, PacketHeader, has_magic, read_messages
from hostlink.traces.schema import Region

CMD_READ_REQ = 1                # gem5 src/mem/packet.hh MemCmd::ReadReq
CMD_WRITE_REQ = 4               # gem5 src/mem/packet.hh MemCmd::WriteReq
CMD_NAMES = {CMD_READ_REQ: "ReadReq", CMD_WRITE_REQ: "WriteReq"}
TICK_FREQ_PER_S = 10**12        # gem5's default tick: 1 ps (src/python/m5/ticks.py)
META_KEY = 0                    # the id_strings key of hostlink's note
META_FORMAT = "hostlink-request-stream"
META_VERSION = 1
DEFAULT_GAP_NS = 1.0            # a stated pace where no timing is asked for (not a measurement)
_U32 = (1 << 32) - 1
_SIZE_MAX_B = np.iinfo(np.uint16).max  # RequestStream.size_B is uint16


def is_gem5(path) -> bool:
    """Whether ``path`` is a gem5 packet trace (by its magic, plain or gzipped)."""
    return has_magic(path)


def reads_as_gem5(path) -> bool:
    """Whether ``path`` is to be read as a gem5 packet trace: a gem5 trace, or any
    other file but an Accel-Sim ``kernelslist.g`` (whose gem5 reading then says
    what is wrong with it). Folders are trace stores or Accel-Sim folders."""
    path = Path(path)
    return is_gem5(path) or (path.is_file() and path.name != "kernelslist.g")


def write_gem5(stream: RequestStream, path, *, ticks_ps: np.ndarray | None = None,
               gap_ns: float = DEFAULT_GAP_NS, regions: list[Region] | None = None,
               obj_id: str = "hostlink", timing: str | None = None) -> dict:
    """Write the host requests of ``stream`` to ``path`` (gzipped if it ends in .gz).

    ``ticks_ps``: one tick per stream row (picoseconds; device rows ignored);
    None: host request i (in stream order) at ``i * gap_ns``. ``regions``: the
    trace's regions, whose host ones give the physical layout (None: addresses
    as they are). ``timing`` describes the ticks in the header's note.
    Returns a summary: packets, reads, writes, bytes and the last tick."""
    host = np.flatnonzero(stream.space == SPACE_HOST)
    if ticks_ps is None:
        if not gap_ns > 0:
            raise HostlinkError(f"gap_ns must be > 0, not {gap_ns}")
        ticks = np.rint(np.arange(len(host)) * gap_ns * 1e3).astype(np.uint64)
        timing = timing or f"one request every {gap_ns:g} ns in stream order"
    else:
        ticks_ps = np.asarray(ticks_ps)
        if len(ticks_ps) != len(stream):
            raise HostlinkError(f"ticks_ps has {len(ticks_ps)} values for {len(stream)} requests")
        t = ticks_ps[host].astype(np.float64)
        if len(t) and (not np.isfinite(t).all() or t.min() < 0):
            raise HostlinkError("ticks_ps must be finite and >= 0 for every host request")
        ticks = np.rint(t).astype(np.uint64)
        timing = timing or "given per request"
    order = np.argsort(ticks, kind="stable")
    rows = host[order]
    ticks = ticks[order]
    size = stream.size_B[rows]
    layout = HostLayout.of(regions or [])
    addr = layout.to_physical(stream.addr[rows], size)
    cmd = np.where(stream.is_write[rows], CMD_WRITE_REQ, CMD_READ_REQ)
    pkt_id = (stream.warp[rows].astype(np.uint64) << np.uint64(32)) | stream.inst[rows]
    pc = (stream.useful_B[rows].astype(np.uint64) << np.uint64(32)) | stream.launch[rows]
    meta = {"format": META_FORMAT, "version": META_VERSION,
            "launches": [[li.name, li.ctas, li.warps_per_cta, li.threads_per_cta]
                         for li in stream.launches],
            "layout": layout.to_json(), "timing": timing}
    header = PacketHeader(obj_id=obj_id, ver=0, tick_freq=TICK_FREQ_PER_S)
    header.id_strings.add(key=META_KEY, value=json.dumps(meta, separators=(",", ":")))
    path = Path(path)
    with MessageWriter(path) as out:
        out.write(header)
        pkt = Packet()
        for t, c, a, s, i, p in zip(ticks.tolist(), cmd.tolist(), addr.tolist(), size.tolist(),
                                    pkt_id.tolist(), pc.tolist()):
            pkt.tick, pkt.cmd, pkt.addr, pkt.size, pkt.pkt_id, pkt.pc = t, c, a, s, i, p
            out.write(pkt)
    writes = int(np.count_nonzero(cmd == CMD_WRITE_REQ))
    return {"path": str(path), "packets": len(rows), "reads": len(rows) - writes,
            "writes": writes, "bytes": int(size.sum(dtype=np.int64)),
            "last_tick": int(ticks[-1]) if len(ticks) else 0, "timing": timing}


@dataclass(frozen=True)
class Gem5Packets:
    """A packet trace's header values and its packets' fields, in file order
    (``pkt_id`` and ``pc`` None where some packet lacks them)."""
    obj_id: str
    tick_freq: int
    meta: dict | None
    tick: np.ndarray
    cmd: np.ndarray
    addr: np.ndarray
    size: np.ndarray
    pkt_id: np.ndarray | None
    pc: np.ndarray | None


def _meta(path: Path, header) -> dict | None:
    for entry in header.id_strings:
        if entry.key != META_KEY:
            continue
        try:
            meta = json.loads(entry.value)
        except json.JSONDecodeError:
            return None  # another program's string under the same key
        if isinstance(meta, dict) and meta.get("format") == META_FORMAT:
            if meta.get("version") != META_VERSION:
                raise TraceError(f"{path}: header: hostlink note version {meta.get('version')!r}; "
                                 f"this hostlink reads {META_VERSION}")
            return meta
    return None


def read_packets(path) -> Gem5Packets:
    """Every packet of a gem5 packet trace (TraceError for a bad file or command)."""
    path = Path(path)
    header, packets = read_messages(path)
    cols: dict[str, list] = {k: [] for k in ("tick", "cmd", "addr", "size", "pkt_id", "pc")}
    has_id = has_pc = True
    for k, p in enumerate(packets, start=1):
        if p.cmd not in CMD_NAMES:
            raise TraceError(f"{path}: packet {k}: command {p.cmd} is neither ReadReq "
                             f"({CMD_READ_REQ}) nor WriteReq ({CMD_WRITE_REQ})")
        if not 0 < p.size <= _SIZE_MAX_B:
            raise TraceError(f"{path}: packet {k}: size {p.size} B is outside 1 to {_SIZE_MAX_B}")
        cols["tick"].append(p.tick)
        cols["cmd"].append(p.cmd)
        cols["addr"].append(p.addr)
        cols["size"].append(p.size)
        has_id = has_id and p.HasField("pkt_id")
        has_pc = has_pc and p.HasField("pc")
        cols["pkt_id"].append(p.pkt_id)
        cols["pc"].append(p.pc)
    return Gem5Packets(
        obj_id=header.obj_id, tick_freq=header.tick_freq, meta=_meta(path, header),
        tick=np.array(cols["tick"], dtype=np.uint64), cmd=np.array(cols["cmd"], dtype=np.uint32),
        addr=np.array(cols["addr"], dtype=np.uint64), size=np.array(cols["size"], dtype=np.uint32),
        pkt_id=np.array(cols["pkt_id"], dtype=np.uint64) if has_id else None,
        pc=np.array(cols["pc"], dtype=np.uint64) if has_pc else None)


def packet_regions(pk: Gem5Packets, path) -> list[Region]:
    """The host regions a file this module wrote was laid out from (none for others)."""
    meta = pk.meta
    if meta is None:
        return []
    try:
        return [Region(p.name, p.start, p.size_B, "host")
                for p in HostLayout.from_json(meta["layout"]).placements]
    except (KeyError, TypeError, ValueError) as exc:
        raise TraceError(f"{path}: header: malformed hostlink note "
                         f"({type(exc).__name__}: {exc})") from None


def read_gem5(path) -> RequestStream:
    """A gem5 packet trace as a request stream of host requests (see the module notes)."""
    return packet_stream(read_packets(path), path)


def packet_stream(pk: Gem5Packets, path) -> RequestStream:
    """The request stream of packets read from ``path`` (named in errors)."""
    path = Path(path)
    n = len(pk.tick)
    size = pk.size.astype(np.uint16)
    write = pk.cmd == CMD_WRITE_REQ
    space = np.full(n, SPACE_HOST, dtype=np.uint8)
    if pk.meta is None:
        launches = (LaunchInfo("gem5", n, 1, 32),)
        return RequestStream(launch=np.zeros(n, np.uint32), warp=np.arange(n, dtype=np.uint32),
                             inst=np.zeros(n, np.uint32), addr=pk.addr, size_B=size,
                             useful_B=size, space=space, is_write=write, launches=launches)
    if pk.pkt_id is None or pk.pc is None:
        raise TraceError(f"{path}: a hostlink trace whose packets lack pkt_id or pc")
    try:
        launches = tuple(LaunchInfo(str(a), int(b), int(c), int(d))
                         for a, b, c, d in pk.meta["launches"])
        layout = HostLayout.from_json(pk.meta["layout"])
    except (KeyError, TypeError, ValueError) as exc:
        raise TraceError(f"{path}: header: malformed hostlink note "
                         f"({type(exc).__name__}: {exc})") from None
    launch = (pk.pc & np.uint64(_U32)).astype(np.uint32)
    useful = pk.pc >> np.uint64(32)
    bad = np.flatnonzero((useful > pk.size) | ((launch >= len(launches)) if launches else False))
    if len(bad):
        k = int(bad[0])
        raise TraceError(f"{path}: packet {k + 1}: pc 0x{int(pk.pc[k]):x} is not a launch of "
                         f"the header's and useful bytes within the size")
    try:
        addr = layout.to_virtual(pk.addr, size, label="packet", first=1)
    except HostlinkError as exc:
        raise TraceError(f"{path}: {exc}") from None
    return RequestStream(launch=launch, warp=(pk.pkt_id >> np.uint64(32)).astype(np.uint32),
                         inst=(pk.pkt_id & np.uint64(_U32)).astype(np.uint32), addr=addr,
                         size_B=size, useful_B=useful.astype(np.uint16), space=space,
                         is_write=write, launches=launches)
