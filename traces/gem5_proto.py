"""gem5's packet trace file: its two protobuf messages and the file's framing.

A gem5 packet trace is what gem5's ``CommMonitor`` writes and its
``TrafficGen`` (TRACE state) reads. Its layout, from gem5's
src/proto/protoio.cc:

- a 4-byte magic number, 0x356d6567 ("gem5" as a little-endian word);
- then each message as a varint of its length followed by its bytes: one
  ``PacketHeader``, then one ``Packet`` per request;
- the whole file optionally gzipped (gem5 writes gzip when the file name ends
  in ``.gz`` and reads gzip when the file starts with the bytes 0x1f 0x8b).

The messages are defined here from the field numbers of gem5's
src/proto/packet.proto (package ``ProtoMessage``, proto2)::

    PacketHeader: obj_id = 1 (string, required), ver = 2 (uint32, default 0),
                  tick_freq = 3 (uint64, required),
                  id_strings = 4 (repeated IdStringEntry: key = 1 uint32,
                                  value = 2 string)
    Packet: tick = 1 (uint64), cmd = 2 (uint32), addr = 3 (uint64),
            size = 4 (uint32), all required; flags = 5 (uint32),
            pkt_id = 6 (uint64), pc = 7 (uint64), optional

They are built at import time with the ``protobuf`` package's descriptor
API, in a pool of their own, so no protoc step is needed.

Bad files raise :class:`~hostlink.model.errors.TraceError` with one line that
names the file and the record (the header, or packet N counted from 1).
"""
from __future__ import annotations

import gzip
import zlib
from pathlib import Path
from typing import Iterator

from google.protobuf import descriptor_pb2, descriptor_pool, message, message_factory

from hostlink.model.errors import TraceError

MAGIC = 0x356D6567                      # protoio.hh: "gem5" read as a little-endian word
MAGIC_BYTES = MAGIC.to_bytes(4, "little")
GZIP_MAGIC = b"\x1f\x8b"                # RFC 1952 §2.3.1 ID1 ID2

_F = descriptor_pb2.FieldDescriptorProto


def _add(msg, name: str, number: int, kind: int, label: int, **kw) -> None:
    msg.field.add(name=name, number=number, type=kind, label=label, **kw)


def _file() -> descriptor_pb2.FileDescriptorProto:
    fd = descriptor_pb2.FileDescriptorProto(name="hostlink/gem5_packet.proto",
                                            package="ProtoMessage", syntax="proto2")
    header = fd.message_type.add(name="PacketHeader")
    _add(header, "obj_id", 1, _F.TYPE_STRING, _F.LABEL_REQUIRED)
    _add(header, "ver", 2, _F.TYPE_UINT32, _F.LABEL_OPTIONAL, default_value="0")
    _add(header, "tick_freq", 3, _F.TYPE_UINT64, _F.LABEL_REQUIRED)
    entry = header.nested_type.add(name="IdStringEntry")
    _add(entry, "key", 1, _F.TYPE_UINT32, _F.LABEL_OPTIONAL)
    _add(entry, "value", 2, _F.TYPE_STRING, _F.LABEL_OPTIONAL)
    _add(header, "id_strings", 4, _F.TYPE_MESSAGE, _F.LABEL_REPEATED,
         type_name=".ProtoMessage.PacketHeader.IdStringEntry")
    packet = fd.message_type.add(name="Packet")
    for name, number, kind in (("tick", 1, _F.TYPE_UINT64), ("cmd", 2, _F.TYPE_UINT32),
                               ("addr", 3, _F.TYPE_UINT64), ("size", 4, _F.TYPE_UINT32)):
        _add(packet, name, number, kind, _F.LABEL_REQUIRED)
    for name, number, kind in (("flags", 5, _F.TYPE_UINT32), ("pkt_id", 6, _F.TYPE_UINT64),
                               ("pc", 7, _F.TYPE_UINT64)):
        _add(packet, name, number, kind, _F.LABEL_OPTIONAL)
    return fd


_POOL = descriptor_pool.DescriptorPool()
_POOL.Add(_file())
PacketHeader = message_factory.GetMessageClass(_POOL.FindMessageTypeByName("ProtoMessage.PacketHeader"))
Packet = message_factory.GetMessageClass(_POOL.FindMessageTypeByName("ProtoMessage.Packet"))


# --------------------------------------------------------------------------- varints

def varint(value: int) -> bytes:
    """``value`` (>= 0) as a protobuf base-128 varint."""
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _read_varint(data: bytes, pos: int) -> tuple[int, int] | None:
    """The varint at ``pos`` and the position after it; None where the data ends first
    or the varint runs past 10 bytes."""
    value = shift = 0
    end = min(len(data), pos + 10)
    while pos < end:
        b = data[pos]
        value |= (b & 0x7F) << shift
        pos += 1
        if b < 0x80:
            return value, pos
        shift += 7
    return None


# --------------------------------------------------------------------------- files

def _raw(path: Path) -> bytes:
    """The file's bytes, gunzipped where it starts with the gzip magic."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise TraceError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise TraceError(f"{path}: is a folder, not a gem5 packet trace") from None
    if data[:2] == GZIP_MAGIC:
        try:
            data = gzip.decompress(data)
        except (EOFError, OSError, zlib.error) as exc:
            raise TraceError(f"{path}: gzip stream is damaged or cut short ({exc})") from None
    return data


def has_magic(path) -> bool:
    """Whether ``path`` is a file that starts with gem5's magic (plain or gzipped)."""
    path = Path(path)
    if not path.is_file():
        return False
    try:
        with path.open("rb") as f:
            head = f.read(4)
            if head[:2] == GZIP_MAGIC:
                f.seek(0)
                with gzip.GzipFile(fileobj=f) as g:
                    head = g.read(4)
    except (EOFError, OSError, zlib.error):
        return False
    return head == MAGIC_BYTES


def read_messages(path) -> tuple[message.Message, Iterator[message.Message]]:
    """The header of a packet trace and an iterator over its packets.

    Raises TraceError (the file and the record named) for a wrong magic, a cut
    length or message, or a message protobuf cannot parse (a missing required
    field included)."""
    path = Path(path)
    data = _raw(path)
    if data[:4] != MAGIC_BYTES:
        raise TraceError(f"{path}: not a gem5 packet trace (magic {data[:4].hex() or 'missing'}, "
                         f"expected {MAGIC_BYTES.hex()})")
    pos = 4

    def next_message(cls, where: str):
        nonlocal pos
        got = _read_varint(data, pos)
        if got is None:
            raise TraceError(f"{path}: {where}: length cut short at byte {pos}")
        size, start = got
        if start + size > len(data):
            raise TraceError(f"{path}: {where}: truncated ({size} bytes announced, "
                             f"{len(data) - start} left)")
        msg = cls()
        try:
            msg.ParseFromString(data[start:start + size])
        except message.DecodeError as exc:
            raise TraceError(f"{path}: {where}: not a valid {cls.DESCRIPTOR.name} ({exc})") from None
        if not msg.IsInitialized():
            missing = ", ".join(msg.FindInitializationErrors())
            raise TraceError(f"{path}: {where}: not a valid {cls.DESCRIPTOR.name} "
                             f"(required field missing: {missing})")
        pos = start + size
        return msg

    if len(data) == 4:
        raise TraceError(f"{path}: header: missing (the file ends after the magic)")
    header = next_message(PacketHeader, "header")

    def packets():
        k = 0
        while pos < len(data):
            k += 1
            yield next_message(Packet, f"packet {k}")

    return header, packets()


_FLUSH_B = 1 << 20  # bytes buffered between writes


class MessageWriter:
    """Write the magic, then length-prefixed messages; gzip where the name ends in .gz
    (as gem5's ProtoOutputStream does)."""

    def __init__(self, path):
        self.path = Path(path)
        self._f = (gzip.open(self.path, "wb") if self.path.suffix == ".gz"
                   else self.path.open("wb"))
        self._buf = bytearray(MAGIC_BYTES)

    def write(self, msg: message.Message) -> None:
        body = msg.SerializeToString()
        self._buf += varint(len(body))
        self._buf += body
        if len(self._buf) >= _FLUSH_B:
            self._f.write(self._buf)
            self._buf.clear()

    def close(self) -> None:
        self._f.write(self._buf)
        self._buf.clear()
        self._f.close()

    def __enter__(self) -> "MessageWriter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
