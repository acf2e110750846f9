"""Read and write Accel-Sim traces (``kernelslist.g`` + ``kernel-N.traceg[.xz]``).

Format (accel-sim/accel-sim-framework: util/tracer_nvbit/tracer_tool/tracer_tool.cu
writes it, traces-processing/post-traces-processing.cpp groups it by thread
block, gpu-simulator/trace-parser/trace_parser.cc reads it):

- ``kernelslist.g``: one command per line, ``MemcpyHtoD,0x<hex dst>,<bytes>``
  or a kernel trace file name (relative to the folder). Other ``Memcpy...``
  lines are skipped by Accel-Sim; here they are an error, as is anything else.
- ``kernel-N.traceg``: header lines ``-key = value`` up to the first line
  starting with ``#``; then per thread block ``#BEGIN_TB``, ``thread block =
  x,y,z``, per warp ``warp = w`` and ``insts = k`` followed by exactly k
  instruction lines, and ``#END_TB``.
- Instruction line: ``[tb_x tb_y tb_z warp] [line_num] PC mask ndst [R#]
  OPCODE nsrc [R#...] width [mode addresses] [imm]``: the thread-block prefix
  only in traces older than tracer version 3 (no ``-accelsim tracer version``
  header line reads as version 0); ``line_num`` only with ``-enable lineinfo
  = 1``; PC and mask in hex; ``width`` is bytes per lane, 0 for a non-memory
  instruction. A memory instruction then gives an address mode: 0 lists one
  hex address per active lane; 1 gives a hex base and a decimal stride for
  one contiguous run of active lanes; 2 gives a hex base and popcount-1
  signed decimal deltas, each to the previous active lane. A trailing decimal
  immediate may follow (tracers from 2023-09 on print it on every line).
- A memory instruction with mask 0 is written ``1 0x0 0`` (mode 1, base 0,
  stride 0) by the tracer.

Reading choices (the reader's, stated here):
- ``width_B`` is the width written in the trace (Accel-Sim's simulator
  re-derives it from the opcode suffix instead; the tracer writes that same
  value).
- op and space come from the opcode's first token (LDG/STG/LDS/STS/LDL/STL/
  LDSM/LDGSTS/ATOMG/ATOMS/REDG/...). Generic LD, ST, ATOM and RED are
  classified by their first active lane's address: inside
  [shmem base, +16 MiB) shared, inside [local mem base, +16 MiB) local
  (NVBit documents both windows as 16 MiB, 16 MiB aligned), else global.
  Without the base addresses in the header they are global (Accel-Sim would
  call them shared; for a host-memory study that would hide their traffic).
  A memory instruction with an opcode not in these lists keeps its addresses
  but gets op ``other`` and space ``none``, so the coalescer ignores it.
- Regions: a trace names none; ``MemcpyHtoD`` destinations become regions
  ``memcpy<i>`` in device memory by default (``memcpy_location``), and
  explicit ``regions`` (for example from a regions TOML file, see
  :func:`hostlink.traces.store.load_regions`) are added and win where they
  overlap a memcpy region.
- A ``kernelslist.g`` that names no kernel is an error, and a kernel file it
  names is found with ``.xz`` added or removed. Files are UTF-8; a byte that
  is not is an error naming its line.
- Local memory (LDL/STL, and generic accesses in the local window) is placed
  as Accel-Sim's timing model places it before coalescing
  (:mod:`hostlink.traces.local_memory`; ``translate_local=False`` keeps the
  tracer's per-thread offsets); the writer puts the offsets back.
- ``cluster id``/``cluster cta``/``cluster rank`` lines of newer traces are
  accepted and not kept. TMA (UTMA*/UBLK*) instructions are not supported.

Memory bound: the reader parses one line at a time and yields
:class:`InstTable` chunks of at most ``chunk_insts`` rows. The writer holds
one launch at a time (it must group rows by thread block and warp).

Format choices seen when reading go into each launch's ``extra`` so that
writing reproduces the file: ``header`` (the header lines, in order, as
[key, raw value]), ``preamble`` (text between the header and the first
thread block), ``tracer_version``, ``lineinfo``, ``immediate``,
``kernel_id``, ``trace_file``, ``shmem_base_addr``, ``local_base_addr``.
A file in the tracer's own layout reads and writes back byte for byte.
"""
from __future__ import annotations

import lzma
from itertools import accumulate
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hostlink.model.errors import TraceError
from hostlink.traces import local_memory
from hostlink.traces.schema import (
    LOCATION_DEVICE, LOCATION_HOST, MAX_SRC_REGS, NO_REG, OP_ATOMIC, OP_LOAD, OP_OTHER,
    OP_STORE, SPACE_GLOBAL, SPACE_LOCAL, SPACE_NONE, SPACE_SHARED, WARP_SIZE, InstTable,
    KernelLaunch, MemcpyRecord, Region, WarpTrace, merge_regions)

KERNELSLIST = "kernelslist.g"
DEFAULT_CHUNK_INSTS = 1 << 16
# Versions of accel-sim's tracer whose line layout this module knows; <3 has
# the thread-block prefix on each line.
LEGACY_VERSION_BELOW = 3
MAX_TRACER_VERSION = 5
WRITE_VERSION = 4
# NVBit's nvbit_get_shmem_base_addr/nvbit_get_local_mem_base_addr: windows of 16 MiB.
GENERIC_WINDOW_B = 16 * 1024 * 1024
ADDR_MODULUS = 1 << 64
ADDR_MASK = ADDR_MODULUS - 1

MODE_LIST, MODE_STRIDE, MODE_DELTA = 0, 1, 2
_MEMO_LINES = 1 << 16  # distinct instruction lines remembered per kernel

FORMAT_LINE = ("#traces format = [line_num] PC mask dest_num [reg_dests] opcode src_num "
               "[reg_srcs] mem_width [adrrescompress?] [mem_addresses]")
LEGACY_FORMAT_LINE = ("#traces format = threadblock_x threadblock_y threadblock_z warpid_tb "
                      "PC mask dest_num reg_dests opcode src_num reg_srcs mem_width "
                      "mem_addresses")

_GENERIC = 255  # internal marker: space decided by the address
_OPCODE_CLASSES = {
    "LDG": (OP_LOAD, SPACE_GLOBAL), "LDGSTS": (OP_LOAD, SPACE_GLOBAL),
    "STG": (OP_STORE, SPACE_GLOBAL),
    "LDS": (OP_LOAD, SPACE_SHARED), "LDSM": (OP_LOAD, SPACE_SHARED),
    "STS": (OP_STORE, SPACE_SHARED),
    "LDL": (OP_LOAD, SPACE_LOCAL), "STL": (OP_STORE, SPACE_LOCAL),
    "LD": (OP_LOAD, _GENERIC), "ST": (OP_STORE, _GENERIC),
    "ATOMG": (OP_ATOMIC, SPACE_GLOBAL), "REDG": (OP_ATOMIC, SPACE_GLOBAL),
    "ATOMS": (OP_ATOMIC, SPACE_SHARED),
    "ATOM": (OP_ATOMIC, _GENERIC), "RED": (OP_ATOMIC, _GENERIC),
}
_TMA_PREFIXES = ("UTMA", "UBLK")


def classify_opcode(opcode: str) -> tuple[int, int]:
    """(op, space) of an opcode by its first token; space 255 means generic."""
    return _OPCODE_CLASSES.get(opcode.split(".", 1)[0], (OP_OTHER, SPACE_NONE))


# --------------------------------------------------------------------------- files

def _open_text(path: Path, mode: str = "rt"):
    if path.name.endswith(".xz"):
        return lzma.open(path, mode, encoding="utf-8", newline="\n",
                         **({"preset": 1} if "w" in mode else {}))
    return open(path, mode, encoding="utf-8", newline="\n")


def _lines(path: Path):
    """(line number, line without its newline) of a UTF-8 text file, plain or xz."""
    lineno = 0
    try:
        with (lzma.open(path, "rb") if path.name.endswith(".xz") else open(path, "rb")) as fh:
            for lineno, raw in enumerate(fh, 1):
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise TraceError(f"{path}:{lineno}: byte 0x{raw[exc.start]:02x} at column "
                                     f"{exc.start + 1} is not UTF-8 (not a text trace?)") from None
                yield lineno, line.rstrip("\n").rstrip("\r")
    except FileNotFoundError:
        raise TraceError(f"{path}: no such file") from None
    except (lzma.LZMAError, EOFError) as exc:
        raise TraceError(f"{path}: compressed stream is corrupt or truncated after line "
                         f"{lineno} ({exc})") from None
    except OSError as exc:
        raise TraceError(f"{path}: cannot read: {exc.strerror or exc}") from None


def _err(path, lineno, msg) -> TraceError:
    return TraceError(f"{path}:{lineno}: {msg}")


# --------------------------------------------------------------------------- kernelslist

@dataclass(frozen=True)
class _Command:
    kind: str  # "memcpy" or "kernel"
    lineno: int
    addr: int = 0
    size_B: int = 0
    file: str = ""


def read_kernelslist(path: Path) -> list[_Command]:
    path = Path(path)
    commands = []
    for lineno, line in _lines(path):
        text = line.strip()
        if not text:
            continue
        if text.startswith("MemcpyHtoD"):
            parts = text.split(",")
            if len(parts) != 3:
                raise _err(path, lineno, f"expected 'MemcpyHtoD,0x<address>,<bytes>', got '{text}'")
            try:
                addr = int(parts[1], 16)
                size_B = int(parts[2], 10)
            except ValueError:
                raise _err(path, lineno, f"bad address or size in '{text}'") from None
            if addr < 0 or size_B < 0 or addr > ADDR_MASK:
                raise _err(path, lineno, f"address or size out of range in '{text}'")
            commands.append(_Command("memcpy", lineno, addr=addr, size_B=size_B))
        elif text.startswith("kernel"):
            if "/" in text or "\\" in text:
                raise _err(path, lineno, f"kernel trace '{text}' must be a file name in the folder")
            commands.append(_Command("kernel", lineno, file=text))
        else:
            raise _err(path, lineno, f"unknown command '{text}' (expected MemcpyHtoD or a "
                                     "kernel trace file name)")
    return commands


# --------------------------------------------------------------------------- header

def _parse_dim(path, lineno, value: str) -> tuple[int, int, int]:
    v = value.strip()
    try:
        if not (v.startswith("(") and v.endswith(")")):
            raise ValueError
        dims = tuple(int(x) for x in v[1:-1].split(","))
        if len(dims) != 3 or min(dims) < 1:
            raise ValueError
    except ValueError:
        raise _err(path, lineno, f"expected a dimension like (x,y,z) with x, y, z >= 1, "
                                 f"got '{value}'") from None
    return dims  # type: ignore[return-value]


def _parse_int(path, lineno, key, value: str, base: int = 10) -> int:
    try:
        out = int(value.strip(), base)
    except ValueError:
        raise _err(path, lineno, f"header '{key}': '{value}' is not a "
                                 f"{'hex' if base == 16 else 'decimal'} integer") from None
    if out < 0:
        raise _err(path, lineno, f"header '{key}': must be >= 0, got {out}")
    return out


def read_header(path: Path, trace_file: str | None = None) -> tuple[KernelLaunch, int]:
    """Parse a kernel trace's header: the launch and the line number where its body starts.

    The header is the ``-key = value`` lines up to the first line starting
    with ``#``; the comment and blank lines from there to the first
    ``#BEGIN_TB`` are its preamble.
    """
    path = Path(path)
    header: list[list[str]] = []
    values: dict[str, tuple[int, str]] = {}
    preamble: list[str] = []
    in_header = True
    body_start = 0
    for lineno, line in _lines(path):
        body_start = lineno
        if in_header:
            if not line.strip():
                preamble.append(line)
                continue
            if line.startswith("-"):
                preamble = []
                if " = " not in line:
                    raise _err(path, lineno, f"header line '{line}' is not '-key = value'")
                key, raw = line[1:].split(" = ", 1)
                if key in values:
                    raise _err(path, lineno, f"header key '{key}' given twice")
                header.append([key, raw])
                values[key] = (lineno, raw)
                continue
            if not line.startswith("#"):
                raise _err(path, lineno, f"unexpected line in the header: '{line}'")
            in_header = False
        if line.startswith("#BEGIN_TB") or not (line.startswith("#") or not line.strip()):
            break
        preamble.append(line)
    else:
        body_start += 1
    if in_header:
        raise TraceError(f"{path}: no instruction section (header only, or empty file)")
    if preamble and not preamble[-1].strip():
        preamble = preamble[:-1]  # the blank line before #BEGIN_TB belongs to the block
    launch = _launch_from_header(path, header, values)
    launch.extra["preamble"] = "".join(p + "\n" for p in preamble)
    launch.extra["trace_file"] = trace_file or path.name
    launch.extra["immediate"] = False
    return launch, body_start


def _launch_from_header(path, header, values) -> KernelLaunch:
    def need(key):
        if key not in values:
            raise TraceError(f"{path}: header has no '-{key} = ...' line")
        return values[key]

    name = need("kernel name")[1]
    grid = _parse_dim(path, *need("grid dim"))
    block = _parse_dim(path, *need("block dim"))
    ints = {}
    for key, base in (("shmem", 10), ("nregs", 10), ("kernel id", 10), ("binary version", 10),
                      ("cuda stream id", 10), ("shmem base_addr", 16),
                      ("local mem base_addr", 16), ("accelsim tracer version", 10),
                      ("enable lineinfo", 10)):
        if key in values:
            ints[key] = _parse_int(path, values[key][0], key, values[key][1], base)
    version = ints.get("accelsim tracer version", 0)
    if version > MAX_TRACER_VERSION:
        raise _err(path, values["accelsim tracer version"][0],
                   f"accelsim tracer version {version} is newer than the versions this reader "
                   f"knows (0-{MAX_TRACER_VERSION})")
    lineinfo = ints.get("enable lineinfo", 0)
    if lineinfo not in (0, 1):
        raise _err(path, values["enable lineinfo"][0], f"enable lineinfo must be 0 or 1, got {lineinfo}")
    extra = {
        "header": header,
        "tracer_version": version,
        "lineinfo": bool(lineinfo),
        "shmem_base_addr": ints.get("shmem base_addr", 0),
        "local_base_addr": ints.get("local mem base_addr", 0),
    }
    if "kernel id" in ints:
        extra["kernel_id"] = ints["kernel id"]
    if "binary version" in ints:
        extra["binary_version"] = ints["binary version"]
    return KernelLaunch(name=name, grid=grid, block=block, shmem_B=ints.get("shmem", 0),
                        nregs=ints.get("nregs", 0), extra=extra)


# --------------------------------------------------------------------------- body

class _ChunkBuilder:
    """Collects parsed rows and emits InstTable chunks of at most ``cap`` rows."""

    def __init__(self, cap: int):
        self.cap = cap
        self._reset()

    def _reset(self):
        self.rows: list[tuple] = []
        self.mem_rows: list[int] = []
        self.mem_addrs: list[list[int]] = []

    def add(self, row: tuple, addrs: list[int] | None) -> bool:
        if addrs is not None:
            self.mem_rows.append(len(self.rows))
            self.mem_addrs.append(addrs)
        self.rows.append(row)
        return len(self.rows) >= self.cap

    def take(self) -> InstTable:
        n = len(self.rows)
        cols = list(zip(*self.rows)) if n else [()] * 13
        addrs = np.zeros((n, WARP_SIZE), dtype=np.uint64)
        if self.mem_rows:
            addrs[np.asarray(self.mem_rows)] = np.array(self.mem_addrs, dtype=np.uint64)
        names = ("launch", "cta", "warp", "pc", "opcode", "op", "space", "width_B", "mask",
                 "line_num", "imm", "dst_reg")  # the order of _KernelParser's rows
        kw = {k: np.array(cols[i], dtype=np.int64 if k in ("imm", "dst_reg") else np.uint64)
              for i, k in enumerate(names)}
        src = np.array(cols[12], dtype=np.int16).reshape(n, MAX_SRC_REGS)
        self._reset()
        return InstTable(**kw, addrs=addrs, src_regs=src)


class _KernelParser:
    """Parses the body of one kernel trace into rows of a _ChunkBuilder."""

    def __init__(self, path: Path, launch_idx: int, launch: KernelLaunch,
                 opcode_index: dict[str, int], opcodes: list[str], translate_local: bool = True):
        self.path = path
        self.translate_local = translate_local
        self.launch_idx = launch_idx
        self.launch = launch
        self.opcode_index = opcode_index
        self.opcodes = opcodes
        ex = launch.extra
        self.legacy = ex.get("tracer_version", 0) < LEGACY_VERSION_BELOW
        self.lineinfo = bool(ex.get("lineinfo", False))
        self.shmem_base = ex.get("shmem_base_addr", 0)
        self.local_base = ex.get("local_base_addr", 0)
        self.generic_by_addr = bool(self.shmem_base and self.local_base)
        self.op_cache: dict[str, tuple[int, int, int]] = {}
        self.immediate_seen: bool | None = None
        self.padded_seen: bool | None = None
        self._memo: dict[str, tuple] = {}

    def _opcode(self, name: str, lineno: int) -> tuple[int, int, int]:
        hit = self.op_cache.get(name)
        if hit is None:
            if name.startswith(_TMA_PREFIXES):
                raise _err(self.path, lineno, f"TMA instruction '{name}' is not supported")
            idx = self.opcode_index.get(name)
            if idx is None:
                idx = len(self.opcodes)
                if idx > np.iinfo(np.uint16).max:
                    raise _err(self.path, lineno, "more than 65536 distinct opcodes")
                self.opcodes.append(name)
                self.opcode_index[name] = idx
            op, space = classify_opcode(name)
            hit = (idx, op, space)
            self.op_cache[name] = hit
        return hit

    def _generic_space(self, first_addr: int) -> int:
        if not self.generic_by_addr:
            return SPACE_GLOBAL
        if self.shmem_base <= first_addr < self.shmem_base + GENERIC_WINDOW_B:
            return SPACE_SHARED
        if self.local_base <= first_addr < self.local_base + GENERIC_WINDOW_B:
            return SPACE_LOCAL
        return SPACE_GLOBAL

    def parse(self, lines, builder: _ChunkBuilder):
        """Consume lines (an iterator positioned after the header); yield full chunks."""
        path = self.path
        grid = self.launch.grid
        wpc = self.launch.warps_per_cta
        in_tb = False
        cta_xyz = None
        cta = -1
        warp = -1
        expected = 0  # instruction lines still owed to the current warp
        insts_line = 0
        seen_warps: set[int] = set()
        # thread blocks seen, one bit each (the check is skipped for grids over 2**30 CTAs)
        ctas = self.launch.ctas
        seen_ctas = bytearray((ctas + 7) // 8) if ctas <= 1 << 30 else None
        lineno = 0
        for lineno, line in lines:
            if not line or line[0] in " \t\r" and not line.strip():
                continue
            c0 = line[0]
            if c0 == "#":
                if line.startswith("#BEGIN_TB"):
                    if in_tb:
                        raise _err(path, lineno, "#BEGIN_TB before the previous thread block's #END_TB")
                    in_tb, cta_xyz, warp, expected = True, None, -1, 0
                    seen_warps = set()
                    continue
                if line.startswith("#END_TB"):
                    if not in_tb:
                        raise _err(path, lineno, "#END_TB without #BEGIN_TB")
                    if expected:
                        raise _err(path, insts_line, f"insts = says {expected} more instruction "
                                   f"lines than follow before line {lineno}")
                    if cta_xyz is None:
                        raise _err(path, lineno, "thread block without a 'thread block =' line")
                    in_tb = False
                    continue
                raise _err(path, lineno, f"unexpected line '{line}'")
            if not in_tb:
                raise _err(path, lineno, "line outside a thread block (#BEGIN_TB ... #END_TB)")
            if c0 in "tcwi" and ("=" in line):
                key, _, value = line.partition("=")
                key = key.strip()
                if key == "thread block":
                    if cta_xyz is not None:
                        raise _err(path, lineno, "second 'thread block =' line in one thread block")
                    try:
                        xyz = tuple(int(v) for v in value.split(","))
                        if len(xyz) != 3:
                            raise ValueError
                    except ValueError:
                        raise _err(path, lineno, f"expected 'thread block = x,y,z', got '{line}'") from None
                    if not all(0 <= xyz[i] < grid[i] for i in range(3)):
                        raise _err(path, lineno, f"thread block {xyz} lies outside grid {grid}")
                    cta_xyz = xyz
                    cta = xyz[0] + grid[0] * (xyz[1] + grid[1] * xyz[2])
                    if seen_ctas is not None:
                        if seen_ctas[cta >> 3] >> (cta & 7) & 1:
                            raise _err(path, lineno, f"thread block {xyz} appears twice")
                        seen_ctas[cta >> 3] |= 1 << (cta & 7)
                    continue
                if key == "warp":
                    if cta_xyz is None:
                        raise _err(path, lineno, "'warp =' before 'thread block ='")
                    if expected:
                        raise _err(path, insts_line, f"insts = says {expected} more instruction "
                                   f"lines than follow before line {lineno}")
                    try:
                        warp = int(value)
                    except ValueError:
                        raise _err(path, lineno, f"expected 'warp = <n>', got '{line}'") from None
                    if not 0 <= warp < wpc:
                        raise _err(path, lineno, f"warp {warp} outside 0..{wpc - 1} "
                                   f"(block {self.launch.block} has {wpc} warps)")
                    if warp in seen_warps:
                        raise _err(path, lineno, f"warp {warp} appears twice in thread block {cta_xyz}")
                    seen_warps.add(warp)
                    expected = -1  # an insts line must come next
                    continue
                if key == "insts":
                    if expected != -1:
                        raise _err(path, lineno, "'insts =' not right after 'warp ='")
                    try:
                        expected = int(value)
                        if expected < 0:
                            raise ValueError
                    except ValueError:
                        raise _err(path, lineno, f"expected 'insts = <n>', got '{line}'") from None
                    insts_line = lineno
                    continue
                if key in ("cluster id", "cluster cta", "cluster rank"):
                    continue
                raise _err(path, lineno, f"unknown line '{line}'")
            # an instruction line
            if expected <= 0:
                if expected == -1:
                    raise _err(path, lineno, "instruction line before 'insts ='")
                if warp < 0:
                    raise _err(path, lineno, "instruction line before 'warp ='")
                raise _err(path, lineno, f"more instruction lines than 'insts =' (line "
                           f"{insts_line}) announced for warp {warp}")
            row, addrs = self._parse_inst(line, lineno, cta, cta_xyz, warp)
            expected -= 1
            if builder.add(row, addrs):
                yield builder.take()
        if in_tb:
            raise TraceError(f"{path}:{lineno}: file ends inside a thread block (no #END_TB; "
                             f"truncated?)")

    def _parse_inst(self, line: str, lineno: int, cta: int, cta_xyz, warp: int):
        if self.legacy:
            parts = line.split(None, 4)
            if len(parts) < 5:
                raise _err(self.path, lineno, "instruction line ends early (truncated?)")
            try:
                prefix = tuple(int(x) for x in parts[:4])
            except ValueError:
                raise _err(self.path, lineno, f"bad thread block prefix '{' '.join(parts[:4])}'") \
                    from None
            if prefix != (*cta_xyz, warp):
                raise _err(self.path, lineno, f"line prefix {' '.join(parts[:4])} does not match "
                           f"thread block {cta_xyz} warp {warp}")
            body = parts[4]
        else:
            body = line
        # Instruction lines repeat a lot (same PC, mask and addresses in many warps):
        # parse each distinct text once per kernel.
        hit = self._memo.get(body)
        if hit is None:
            hit = self._parse_body(body, lineno)
            if len(self._memo) >= _MEMO_LINES:
                self._memo.clear()
            self._memo[body] = hit
        tail, addrs = hit
        if tail[3] == SPACE_LOCAL and addrs is not None and self.translate_local:
            addrs = local_memory.translate(addrs, tail[5], tail[4], cta, warp, self.launch)
            self.launch.extra["local_translated"] = True
        return (self.launch_idx, cta, warp, *tail), addrs

    def _parse_body(self, body: str, lineno: int):
        """Parse an instruction line (without the legacy prefix): the row's fields after
        (launch, cta, warp), and the 32 lane addresses (None for a non-memory line)."""
        t = body.split()
        p = 0
        try:
            line_num = 0
            if self.lineinfo:
                line_num = int(t[p])
                p += 1
            pc = _hex(t[p], "PC", self.path, lineno)
            mask = _hex(t[p + 1], "mask", self.path, lineno)
            if mask > 0xFFFFFFFF:
                raise _err(self.path, lineno, f"mask '{t[p + 1]}' has more than 32 bits")
            p += 2
            ndst = int(t[p])
            p += 1
            if ndst not in (0, 1):
                raise _err(self.path, lineno, f"{ndst} destination registers (0 or 1 expected)")
            dst = NO_REG
            if ndst:
                dst = _reg(t[p], self.path, lineno)
                p += 1
            opname = t[p]
            p += 1
            nsrc = int(t[p])
            p += 1
            if not 0 <= nsrc <= MAX_SRC_REGS:
                raise _err(self.path, lineno, f"{nsrc} source registers (at most {MAX_SRC_REGS})")
            src = [NO_REG] * MAX_SRC_REGS
            for i in range(nsrc):
                src[i] = _reg(t[p + i], self.path, lineno)
            p += nsrc
            width = int(t[p])
            p += 1
            if not 0 <= width <= 255:
                raise _err(self.path, lineno, f"memory width {width} outside 0..255")
            idx, op, space = self._opcode(opname, lineno)
            addrs = None
            if width:
                addrs, p = self._parse_addrs(t, p, mask, lineno)
                if space == _GENERIC:
                    space = self._generic_space(addrs[(mask & -mask).bit_length() - 1]) if mask \
                        else SPACE_GLOBAL
            else:
                op, space = OP_OTHER, SPACE_NONE
            rest = len(t) - p
            imm = 0
            if rest == 1:
                imm = int(t[p])
                seen = True
            elif rest == 0:
                seen = False
            else:
                raise _err(self.path, lineno, f"{rest} unexpected tokens at the end: "
                           f"'{' '.join(t[p:])}'")
            if self.immediate_seen is None:
                self.immediate_seen = seen
                self.launch.extra["immediate"] = seen
            if not -(1 << 63) <= imm < (1 << 63):
                raise _err(self.path, lineno, f"immediate {imm} does not fit 64 bits")
        except IndexError:
            raise _err(self.path, lineno, "instruction line ends early (truncated?)") from None
        except ValueError as exc:
            raise _err(self.path, lineno, f"bad number in instruction line ({exc})") from None
        return (pc, idx, op, space, width, mask, line_num, imm, dst, tuple(src)), addrs

    def _note_padding(self, tok: str) -> None:
        if self.padded_seen is None:
            self.padded_seen = len(tok) == 18  # 0x and 16 digits: printed as 0x%016x
            self.launch.extra["padded_base"] = self.padded_seen

    def _parse_addrs(self, t, p, mask, lineno):
        path = self.path
        mode = int(t[p])
        p += 1
        lanes = _LANES.get(mask)
        if lanes is None:
            lanes = _LANES.setdefault(mask, tuple(i for i in range(WARP_SIZE) if mask >> i & 1))
        n = len(lanes)
        if mode == MODE_LIST:
            if len(t) < p + n:
                raise IndexError
            vals = [_hex(x, "address", path, lineno) for x in t[p:p + n]]
            p += n
        elif mode == MODE_STRIDE:
            self._note_padding(t[p])
            base = _hex(t[p], "base address", path, lineno)
            stride = int(t[p + 1])
            p += 2
            if n and lanes[-1] - lanes[0] + 1 != n:
                raise _err(path, lineno, f"address mode 1 needs one contiguous run of active "
                           f"lanes, mask is {mask:08x}")
            last = base + (n - 1) * stride
            if stride and 0 <= last <= ADDR_MASK:
                vals = range(base, last + (1 if stride > 0 else -1), stride)
            else:
                vals = [(base + k * stride) & ADDR_MASK for k in range(n)]
        elif mode == MODE_DELTA:
            self._note_padding(t[p])
            base = _hex(t[p], "base address", path, lineno)
            if len(t) < p + n:
                raise IndexError
            vals = list(accumulate([int(x) for x in t[p + 1:p + n]], initial=base))[:n]
            p += max(n, 1)
            if n and (min(vals) < 0 or max(vals) > ADDR_MASK):
                vals = [v & ADDR_MASK for v in vals]
        else:
            raise _err(path, lineno, f"unknown address mode {mode} (0, 1 or 2 expected)")
        if n == WARP_SIZE:
            return list(vals), p
        addrs = [0] * WARP_SIZE
        if n and lanes[-1] - lanes[0] + 1 == n:
            addrs[lanes[0]:lanes[0] + n] = vals
        else:
            for lane, v in zip(lanes, vals):
                addrs[lane] = v
        return addrs, p


_LANES: dict[int, tuple[int, ...]] = {}  # active lanes of each mask seen


def _hex(tok: str, what: str, path, lineno) -> int:
    try:
        v = int(tok, 16)
    except ValueError:
        raise _err(path, lineno, f"bad hex {what} '{tok}'") from None
    if v < 0 or v > ADDR_MASK:
        raise _err(path, lineno, f"{what} '{tok}' outside 0..2^64-1")
    return v


def _reg(tok: str, path, lineno) -> int:
    if not tok.startswith("R"):
        raise _err(path, lineno, f"register operand '{tok}' is not R<number>")
    try:
        v = int(tok[1:])
    except ValueError:
        raise _err(path, lineno, f"register operand '{tok}' is not R<number>") from None
    if not 0 <= v < 32768:
        raise _err(path, lineno, f"register number in '{tok}' out of range")
    return v


# --------------------------------------------------------------------------- reader

class _AccelSimChunks:
    """Re-iterable chunks of an Accel-Sim trace folder (parses on each iteration)."""

    def __init__(self, kernels: list[tuple[Path, KernelLaunch, int]], opcodes: list[str],
                 chunk_insts: int, translate_local: bool = True):
        self.kernels = kernels
        self.translate_local = translate_local
        self.opcodes = opcodes
        self.opcode_index = {name: i for i, name in enumerate(opcodes)}
        self.chunk_insts = chunk_insts

    def __iter__(self):
        builder = _ChunkBuilder(self.chunk_insts)
        for launch_idx, (path, launch, body_start) in enumerate(self.kernels):
            parser = _KernelParser(path, launch_idx, launch, self.opcode_index, self.opcodes,
                                   self.translate_local)
            body = ((n, line) for n, line in _lines(path) if n >= body_start)
            yield from parser.parse(body, builder)
        if builder.rows:
            yield builder.take()


def read_accelsim(folder, *, regions: list[Region] | None = None,
                  memcpy_location: str = LOCATION_DEVICE,
                  chunk_insts: int = DEFAULT_CHUNK_INSTS, translate_local: bool = True) -> WarpTrace:
    """Open an Accel-Sim trace folder (or its kernelslist.g) as a :class:`WarpTrace`.

    Headers are read now; instruction lines are parsed while ``chunks`` is
    iterated (each iteration parses the files again). The launches' format
    flags (``extra['immediate']``) are final once the chunks have been read.
    Local memory addresses are placed as Accel-Sim's timing model places them
    (:mod:`hostlink.traces.local_memory`) unless ``translate_local`` is False.
    """
    if memcpy_location not in (LOCATION_DEVICE, LOCATION_HOST):
        raise TraceError(f"memcpy_location must be 'device' or 'host', not '{memcpy_location}'")
    if chunk_insts < 1:
        raise ValueError("chunk_insts must be >= 1")
    folder = Path(folder)
    listfile = folder if folder.is_file() else folder / KERNELSLIST
    folder = listfile.parent
    if not listfile.is_file():
        raise TraceError(f"{folder}: no {KERNELSLIST} (not an Accel-Sim trace folder)")
    commands = read_kernelslist(listfile)
    if not any(cmd.kind == "kernel" for cmd in commands):
        raise TraceError(f"{listfile}: names no kernel trace (an empty trace predicts nothing)")
    kernels: list[tuple[Path, KernelLaunch, int]] = []
    memcpys: list[MemcpyRecord] = []
    for cmd in commands:
        if cmd.kind == "memcpy":
            memcpys.append(MemcpyRecord(cmd.addr, cmd.size_B, before_launch=len(kernels)))
            continue
        path = _kernel_file(folder, cmd.file)
        if path is None:
            raise _err(listfile, cmd.lineno, f"kernel trace '{cmd.file}' not found in {folder} "
                       f"(nor with .xz added or removed)")
        launch, body_start = read_header(path, trace_file=cmd.file)
        kernels.append((path, launch, body_start))
    opcodes: list[str] = []
    chunks = _AccelSimChunks(kernels, opcodes, chunk_insts, translate_local)
    return WarpTrace(launches=[k for _, k, _ in kernels], opcodes=opcodes,
                     regions=merge_regions(memcpy_regions(memcpys, memcpy_location), regions or []),
                     chunks=chunks, memcpys=memcpys)


def _kernel_file(folder: Path, name: str) -> Path | None:
    """The kernel trace a kernelslist line names, as named or with ``.xz`` added or
    removed: a folder whose kernel files were compressed after tracing keeps its
    listing of plain names."""
    alt = name[:-3] if name.endswith(".xz") else name + ".xz"
    for candidate in (folder / name, folder / alt):
        if candidate.is_file():
            return candidate
    return None


def memcpy_regions(memcpys: list[MemcpyRecord], location: str = LOCATION_DEVICE) -> list[Region]:
    """One region per distinct MemcpyHtoD destination range, named memcpy<i>."""
    out: list[Region] = []
    seen = set()
    for rec in memcpys:
        key = (rec.addr, rec.size_B)
        if key in seen or rec.size_B == 0:
            continue
        seen.add(key)
        out.append(Region(f"memcpy{len(out)}", rec.addr, rec.size_B, location))
    return out


# --------------------------------------------------------------------------- writer

def _choose_mode(addrs: list[int], lanes: list[int]) -> tuple[int, int, list[int]]:
    """The tracer's compression choice: (mode, base, stride or deltas)."""
    if not lanes:
        return MODE_STRIDE, 0, [0]
    base = addrs[lanes[0]]
    if len(lanes) >= 2 and lanes[-1] - lanes[0] + 1 == len(lanes):
        stride = (addrs[lanes[1]] - base) & ADDR_MASK
        if stride >= 1 << 63:
            stride -= ADDR_MODULUS
        if -(1 << 31) <= stride < (1 << 31) and all(
                (addrs[lanes[k]] - addrs[lanes[k - 1]]) & ADDR_MASK == stride & ADDR_MASK
                for k in range(2, len(lanes))):
            return MODE_STRIDE, base, [stride]
    deltas = []
    for k in range(1, len(lanes)):
        d = (addrs[lanes[k]] - addrs[lanes[k - 1]]) & ADDR_MASK
        deltas.append(d - ADDR_MODULUS if d >= 1 << 63 else d)
    return MODE_DELTA, base, deltas


def format_inst(row: dict, opcode: str, *, legacy_prefix: tuple | None, lineinfo: bool,
                immediate: bool, compress: bool = True, padded_base: bool = False) -> str:
    """One instruction line in the tracer's layout (with its trailing space)."""
    parts = []
    if legacy_prefix is not None:
        parts.append("%d %d %d %d " % legacy_prefix)
    if lineinfo:
        parts.append("%d " % row["line_num"])
    parts.append("%04x %08x " % (row["pc"], row["mask"]))
    if row["dst_reg"] >= 0:
        parts.append("1 R%d " % row["dst_reg"])
    else:
        parts.append("0 ")
    srcs = [s for s in row["src_regs"] if s >= 0]
    parts.append(opcode + " %d " % len(srcs))
    parts.extend("R%d " % s for s in srcs)
    width = row["width_B"]
    parts.append("%d " % width)
    if width:
        mask = row["mask"]
        addrs = row["addrs"]
        lanes = [i for i in range(WARP_SIZE) if mask >> i & 1]
        if compress:
            mode, base, rest = _choose_mode(addrs, lanes)
            parts.append(("%d 0x%016x " if padded_base else "%d 0x%x ") % (mode, base))
            parts.extend("%d " % v for v in rest)
        else:
            parts.append("0 ")
            parts.extend("0x%016x " % addrs[i] for i in lanes)
    if immediate:
        parts.append("%d " % row["imm"])
    return "".join(parts)


def _header_text(launch: KernelLaunch, kernel_id: int, version: int, lineinfo: bool,
                 binary_version: int | None) -> str:
    ex = launch.extra
    header = ex.get("header")
    field_values = {
        "kernel name": launch.name,
        "grid dim": "(%d,%d,%d)" % tuple(launch.grid),
        "block dim": "(%d,%d,%d)" % tuple(launch.block),
        "shmem": str(launch.shmem_B),
        "nregs": str(launch.nregs),
    }
    if header is None:
        bv = binary_version if binary_version is not None else ex.get("binary_version", 0)
        header = [["kernel name", ""], ["kernel id", str(kernel_id)], ["grid dim", ""],
                  ["block dim", ""], ["shmem", ""], ["nregs", ""], ["binary version", str(bv)],
                  ["cuda stream id", "0"],
                  ["shmem base_addr", "0x%016x" % ex.get("shmem_base_addr", 0)],
                  ["local mem base_addr", "0x%016x" % ex.get("local_base_addr", 0)],
                  ["nvbit version", "hostlink"]]
        if version >= LEGACY_VERSION_BELOW:
            header += [["accelsim tracer version", str(version)],
                       ["enable lineinfo", str(int(lineinfo))]]
    out = []
    for key, raw in header:
        if key == "":
            out.append(raw + "\n")
            continue
        value = field_values.get(key, raw)
        if key == "kernel id":
            value = str(kernel_id)
        out.append(f"-{key} = {value}\n")
    return "".join(out)


def _default_preamble(version: int, immediate: bool) -> str:
    if version < LEGACY_VERSION_BELOW:
        return "\n" + LEGACY_FORMAT_LINE + "\n\n"
    return "\n" + FORMAT_LINE + (" immediate" if immediate else "") + "\n\n\n"


def write_accelsim(trace: WarpTrace, folder, *, xz: bool = False, compress: bool = True,
                   binary_version: int | None = None) -> list[Path]:
    """Write ``trace`` as an Accel-Sim folder: kernelslist.g and one traceg per launch.

    Format per launch: the tracer version, line numbers and immediate flags in
    its ``extra`` (as read), else version 4 without line numbers or
    immediates. ``compress`` picks the address mode per instruction as the
    tracer does (1 for one constant-stride run of at least two lanes, with
    mask 0 written ``1 0x0 0``; otherwise 2); ``compress=False`` writes mode 0.
    ``binary_version`` fills the header where a launch has none (0 if not
    given). Rows must come in launch order; each launch is held in memory
    while it is written. Returns the files written.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    launches = trace.launches
    written: list[Path] = []
    names = _kernel_file_names(launches, xz)
    parts: list[InstTable] = []
    current = 0

    def flush(idx: int, parts: list[InstTable]):
        table = InstTable.concat(parts) if parts else InstTable.empty()
        path = folder / names[idx]
        _write_kernel(path, launches[idx], idx, table, trace.opcodes, compress, binary_version)
        written.append(path)

    for chunk in trace.iter_chunks():
        if len(chunk) == 0:
            continue
        lmin, lmax = int(chunk.launch.min()), int(chunk.launch.max())
        if lmin < current or np.any(np.diff(chunk.launch.astype(np.int64)) < 0):
            raise TraceError("write_accelsim: rows are not in launch order")
        if lmax >= len(launches):
            raise TraceError(f"write_accelsim: row names launch {lmax} but the trace has "
                             f"{len(launches)} launches")
        for idx in range(lmin, lmax + 1):
            sel = chunk.launch == idx
            if idx != current:
                flush(current, parts)
                for skipped in range(current + 1, idx):
                    flush(skipped, [])
                parts, current = [], idx
            if np.any(sel):
                parts.append(chunk.select(sel))
    if launches:
        flush(current, parts)
        for skipped in range(current + 1, len(launches)):
            flush(skipped, [])
    listing = []
    memcpys = sorted(trace.memcpys, key=lambda m: m.before_launch)
    mi = 0
    for idx in range(len(launches) + 1):
        while mi < len(memcpys) and memcpys[mi].before_launch <= idx:
            listing.append("MemcpyHtoD,0x%016x,%d\n" % (memcpys[mi].addr, memcpys[mi].size_B))
            mi += 1
        if idx < len(launches):
            listing.append(names[idx] + "\n")
    listpath = folder / KERNELSLIST
    listpath.write_text("".join(listing), encoding="utf-8")
    written.insert(0, listpath)
    return written


def _kernel_file_names(launches: list[KernelLaunch], xz: bool) -> list[str]:
    names = []
    for i, launch in enumerate(launches):
        kid = launch.extra.get("kernel_id", i + 1)
        name = f"kernel-{kid}.traceg"
        names.append(name + (".xz" if xz else ""))
    if len(set(names)) != len(names):
        names = [f"kernel-{i + 1}.traceg" + (".xz" if xz else "") for i in range(len(launches))]
    return names


def _tracer_local_addrs(row: dict, opcode: str, cta: int, warp: int,
                        launch: KernelLaunch) -> list[int]:
    """A local access's lane addresses as the tracer wrote them (undoing
    :func:`hostlink.traces.local_memory.translate`): offsets for LDL/STL, the
    local window's base plus the offset for generic opcodes."""
    base = launch.extra.get("local_base_addr", 0) if classify_opcode(opcode)[1] == _GENERIC else 0
    out = list(row["addrs"])
    for lane in range(WARP_SIZE):
        if row["mask"] >> lane & 1:
            off = local_memory.original_offset(out[lane], lane, row["width_B"], cta, warp, launch)
            if off is not None:
                out[lane] = base + off
    return out


def _write_kernel(path: Path, launch: KernelLaunch, idx: int, table: InstTable,
                  opcodes: list[str], compress: bool, binary_version: int | None) -> None:
    ex = launch.extra
    version = int(ex.get("tracer_version", WRITE_VERSION))
    lineinfo = bool(ex.get("lineinfo", False))
    immediate = bool(ex.get("immediate", False))
    legacy = version < LEGACY_VERSION_BELOW
    padded_base = bool(ex.get("padded_base", legacy))
    translated = bool(ex.get("local_translated", False))
    kernel_id = int(ex.get("kernel_id", idx + 1))
    grid = launch.grid
    wpc = launch.warps_per_cta
    if len(table):
        if int(table.cta.max()) >= launch.ctas:
            raise TraceError(f"launch {idx} ('{launch.name}'): CTA {int(table.cta.max())} outside "
                             f"its grid {grid}")
        if int(table.warp.max()) >= wpc:
            raise TraceError(f"launch {idx} ('{launch.name}'): warp {int(table.warp.max())} "
                             f"outside its block {launch.block}")
        order = np.lexsort((table.warp, table.cta))
        table = table.select(order)
    n = len(table)
    preamble = ex.get("preamble")
    if preamble is None:
        preamble = _default_preamble(version, immediate)
    fields = ("pc", "mask", "dst_reg", "src_regs", "width_B", "addrs", "line_num", "imm")
    cta_starts = np.flatnonzero(np.diff(table.cta.astype(np.int64))) + 1 if n else []
    bounds = [0, *map(int, cta_starts), n] if n else [0]
    with _open_text(path, "wt") as fh:
        fh.write(_header_text(launch, kernel_id, version, lineinfo, binary_version))
        fh.write(preamble)
        for i, j in zip(bounds[:-1], bounds[1:]):  # one thread block at a time
            cta = int(table.cta[i])
            block = {k: getattr(table, k)[i:j].tolist()
                     for k in (*fields, "warp", "opcode", "space")}
            xyz = (cta % grid[0], (cta // grid[0]) % grid[1], cta // (grid[0] * grid[1]))
            fh.write("\n#BEGIN_TB\n\nthread block = %d,%d,%d\n" % xyz)
            k = 0
            for w in range(wpc):
                start = k
                while k < j - i and block["warp"][k] == w:
                    k += 1
                fh.write("\nwarp = %d\ninsts = %d\n" % (w, k - start))
                prefix = (*xyz, w) if legacy else None
                for r in range(start, k):
                    row = {name: block[name][r] for name in fields}
                    if translated and block["space"][r] == SPACE_LOCAL:
                        row["addrs"] = _tracer_local_addrs(row, opcodes[block["opcode"][r]],
                                                           cta, w, launch)
                    fh.write(format_inst(row, opcodes[block["opcode"][r]], legacy_prefix=prefix,
                                         lineinfo=lineinfo, immediate=immediate,
                                         compress=compress, padded_base=padded_base) + "\n")
            fh.write("\n#END_TB\n")
