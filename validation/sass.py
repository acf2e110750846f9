"""Loads a compiled kernel keeps in flight per thread, read from its SASS.

The twins take a kernel's loads in flight from its source (``unroll`` of the
zero-copy microbenchmarks, ``load_ahead`` of the traversals); what the GPU
runs is what ptxas made of it. This module reads ``cuobjdump -sass`` output
and, for every loop of every function that issues global loads, finds how
many of those loads are outstanding at once: the groups of loads issued
before the first of them is waited for.

Model (assumptions):
- A load is waited for where the compiler says so. Every Volta-and-later
  instruction carries control bits in the high word of its encoding (the
  second ``/* 0x... */`` of each instruction in ``cuobjdump -sass``; bits
  41-44 stall, 45 yield, 46-48 write barrier, 49-51 read barrier, 52-57
  wait mask, 58-61 operand reuse, as decoded by Jia et al., "Dissecting the
  NVIDIA Volta GPU Architecture via Microbenchmarking", 2018): a load sets
  one of six scoreboards when its data arrives (its write barrier), and an
  instruction whose wait mask names that scoreboard waits for every load
  pending on it; ``DEPBAR.LE SBk, n`` waits until at most n are. A load's
  read barrier (its address registers read) is not a wait for its data.
- Without encodings (hand-written SASS) a load is waited for by the first
  instruction that reads or writes its destination registers (what the
  scoreboard wait of a read or a write after the load amounts to), the
  scoreboards' sharing aside.
- A ``CALL`` is not followed: the callee's own waits are not seen. The
  compiler makes the call itself wait for what the callee needs: the
  random pattern of the read kernels calls a 64-bit modulo routine before
  each load, and the call waits for the load before it (its wait mask holds
  the load's write barrier), so those kernels keep one load in flight
  whatever the unroll, with either cache operator (measured: one warp at
  0.085-0.095 GB/s at unroll 1 to 8 over 64 KiB to 1 GiB, on an H200,
  validation/experiments/cv_overlap/runs/h200).
- A load is ``LDG`` (global memory; ``LD`` generic, ``LDS`` shared and
  ``LDC`` constant loads are not counted); its destination spans 1, 2 or 4
  registers for 32, 64 and 128 bit widths (``.64``, ``.128``).
- The first operand of an instruction is its destination, except for
  stores, reductions and branches (``ST*``, ``RED*``, ``BRA``, ...), whose
  registers are all sources; registers inside ``[...]`` are sources, and an
  ``Rn.64`` address names the pair Rn, Rn+1. ``RZ``, predicates and uniform
  registers are ignored.
- A loop is the span from a backward branch's target to the branch. Its body
  is walked twice in address order (branches inside taken as not taken), the
  second time starting with the loads still pending at the end of the first
  (a load issued for the next iteration counts with this one's); what is
  reported is the second walk.
- Predicated instructions count as executed (the guards of a group's loads
  are true in the steady state of the loops measured here).
- System-scope strong loads (``LDG.E.STRONG.SYS``, ``ld.volatile`` and
  ``__ldcv``) count like any other: ptxas issues them back to back without a
  wait, and one warp's ld.cv reads of consecutive lines overlap exactly as
  the default operator's (0.10 / 0.19 / 0.37 / 0.71 GB/s at unroll 1 / 2 / 4
  / 8 with either operator, an H100 and an H200: validation/experiments/
  warp_rounds/runs/h100, cv_overlap/runs/h200). What keeps a warp's ld.cv loads of one line
  apart is the memory system's, not the SASS's (the twins').

Checked against measured bandwidth of one warp (validation/experiments/
unroll_probe/runs/h200, cv_overlap/runs/h200): the loads in flight found here for the zero-copy
read kernels match the measured bandwidth's steps with ``unroll``
(tests/validation/test_sass.py).
"""
from __future__ import annotations

import gzip
import re
import zlib
from dataclasses import dataclass, replace
from pathlib import Path

from hostlink.model.errors import HostlinkError
from hostlink.model.textfile import decode_utf8, where_in


class SassError(HostlinkError):
    """SASS text that cannot be read."""


#: opcodes whose register operands are all sources (no register destination)
NO_DESTINATION = ("ST", "RED", "BRA", "EXIT", "BAR", "CALL", "RET", "BSSY", "BSYNC", "WARPSYNC",
                  "NOP", "MEMBAR", "FENCE", "ERRBAR", "CCTL", "BPT", "JMP", "YIELD")

_FUNCTION = re.compile(r"Function : (\S+)")
_INST = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(?:(@!?U?P\w+)\s+)?([A-Z][A-Z0-9_.]*)\s*([^;]*);")
_REG = re.compile(r"\bR(\d+)(\.64)?\b")
_BRA_TARGET = re.compile(r"^\s*(?:`\(\S+\)|0x([0-9a-f]+))")
#: the high word of an instruction's encoding, alone on the line after it
_CONTROL = re.compile(r"^\s*/\*\s*(0x[0-9a-f]{16})\s*\*/\s*$")
_DEPBAR = re.compile(r"SB(\d)\s*,\s*(0x[0-9a-f]+|\d+)")
#: marks a record of loads in flight made with this module's wait model
#: (``loads_in_flight.json``'s ``"wait_model"``)
WAIT_MODEL = "scoreboard"
#: the 3-bit write-barrier field's value for "sets no scoreboard" (six scoreboards, 0-5)
NO_BARRIER = 7


@dataclass(frozen=True)
class Inst:
    """One SASS instruction: address, opcode, destination and source registers."""
    addr: int
    op: str
    dst: tuple[int, ...]
    src: tuple[int, ...]
    target: int | None = None          # a branch's target address
    wait_mask: int | None = None       # scoreboards it waits for (None: no encoding read)
    write_barrier: int | None = None   # scoreboard a load sets when its data arrives
    depbar: tuple[int, int] | None = None  # DEPBAR.LE SBk, n: (k, n)


@dataclass(frozen=True)
class LoopLoads:
    """Global loads of one loop: how many are outstanding at once."""
    start: int
    end: int
    loads: int                         # LDG instructions in the body
    groups: tuple[int, ...]            # loads outstanding at each first wait, in order
    max_in_flight: int


def _load_width(op: str) -> int:
    return 4 if ".128" in op else 2 if ".64" in op else 1


def _registers(text: str) -> list[int]:
    out = []
    for m in _REG.finditer(text):
        r = int(m.group(1))
        out += [r, r + 1] if m.group(2) else [r]
    return out


def parse_instruction(addr: int, op: str, operands: str) -> Inst:
    """An instruction from its address, opcode and operand text."""
    target = None
    if op.startswith("BRA"):
        m = _BRA_TARGET.match(operands)
        if m and m.group(1):
            target = int(m.group(1), 16)
    base = op.split(".")[0]
    if base == "DEPBAR":
        m = _DEPBAR.search(operands)
        return Inst(addr, op, (), (), None,
                    depbar=(int(m.group(1)), int(m.group(2), 0)) if m else None)
    parts = [p.strip() for p in operands.split(",")] if operands.strip() else []
    if base.startswith(NO_DESTINATION) or not parts or not re.fullmatch(r"R\d+", parts[0]):
        return Inst(addr, op, (), tuple(_registers(operands)), target)
    first = int(parts[0][1:])
    width = _load_width(op) if base in ("LDG", "LD", "LDS", "LDC", "LDL") else 1
    if ".WIDE" in op or (base.startswith("IMAD") and ".64" in op):
        width = 2
    return Inst(addr, op, tuple(range(first, first + width)),
                tuple(_registers(",".join(parts[1:]))), target)


def control_bits(high_word: int) -> tuple[int, int | None]:
    """Wait mask and write barrier (None: none) of an instruction's control bits, from
    the high 64 bits of its encoding (see the module's assumptions)."""
    barrier = (high_word >> 46) & 0x7
    return (high_word >> 52) & 0x3F, (None if barrier == NO_BARRIER else barrier)


def parse_sass(text: str, source: str = "<sass>") -> dict[str, list[Inst]]:
    """Instructions of every function in ``cuobjdump -sass`` output, by mangled name,
    with their control bits where the output holds the encodings."""
    functions: dict[str, list[Inst]] = {}
    current: list[Inst] | None = None
    for line in text.splitlines():
        m = _FUNCTION.search(line)
        if m:
            current = functions.setdefault(m.group(1), [])
            continue
        m = _INST.search(line)
        if m and current is not None:
            current.append(parse_instruction(int(m.group(1), 16), m.group(3), m.group(4)))
            continue
        m = _CONTROL.match(line)
        if m and current and current[-1].wait_mask is None:
            wait, barrier = control_bits(int(m.group(1), 16))
            current[-1] = replace(current[-1], wait_mask=wait, write_barrier=barrier)
    if not functions:
        raise SassError(f"{source}: no 'Function :' headers (not cuobjdump -sass output)")
    return functions


def read_sass(path: str | Path) -> dict[str, list[Inst]]:
    """:func:`parse_sass` of a file, gzipped or not."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise SassError(f"{p}: {exc.strerror or exc}") from None
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as exc:
            raise SassError(f"{p}: gzip stream is corrupt or truncated ({exc})") from None
    if b"\0" in raw:
        line, _ = where_in(raw, raw.index(b"\0"))
        raise SassError(f"{p}:{line}: binary data (NUL byte); expected cuobjdump -sass text")
    return parse_sass(decode_utf8(raw, p, SassError), str(p))


def _is_load(inst: Inst) -> bool:
    return inst.op.split(".")[0] == "LDG"


#: a pending load: its issue number, destination registers and the scoreboard it
#: sets (None where the SASS has no encodings)
_Pending = tuple[int, frozenset[int], "int | None"]


def _waited(inst: Inst, pending: list[_Pending]) -> set[int]:
    """Issue numbers of the pending loads ``inst`` waits for."""
    if inst.wait_mask is None:
        touched = set(inst.src) | set(inst.dst)
        return {p[0] for p in pending if p[1] & touched}
    waited = {p[0] for p in pending if p[2] is not None and inst.wait_mask >> p[2] & 1}
    if inst.depbar is not None:
        sb, keep = inst.depbar
        on_sb = [p[0] for p in pending if p[2] == sb]          # oldest first
        waited.update(on_sb[:max(0, len(on_sb) - keep)])
    return waited


def _walk(body: list[Inst], pending: list[_Pending]) -> tuple[list[_Pending], list[int], int]:
    """Walk ``body`` with ``pending`` loads; returns the loads pending after it, the
    counts outstanding at each first wait of a run of loads, and the largest count."""
    pending = list(pending)
    issued = max((p[0] for p in pending), default=-1)
    groups: list[int] = []
    peak = len(pending)
    issued_since_wait = bool(pending)
    for inst in body:
        waited = _waited(inst, pending)
        if waited:
            if issued_since_wait:
                groups.append(len(pending))
                issued_since_wait = False
            pending = [p for p in pending if p[0] not in waited]
        if _is_load(inst):
            issued += 1
            pending.append((issued, frozenset(inst.dst), inst.write_barrier))
            issued_since_wait = True
            peak = max(peak, len(pending))
    return pending, groups, peak


def loop_loads(insts: list[Inst]) -> list[LoopLoads]:
    """The innermost loops of a function that issue global loads, with the loads
    each keeps outstanding (:class:`LoopLoads`), in address order."""
    loops = sorted({(i.target, i.addr) for i in insts
                    if i.target is not None and i.target <= i.addr}, key=lambda s: (s[0], -s[1]))
    out = []
    for start, end in loops:
        body = [i for i in insts if start <= i.addr <= end]
        if not any(_is_load(i) for i in body):
            continue
        inner = [(s, e) for s, e in loops if (s, e) != (start, end) and start <= s and e <= end
                 and any(_is_load(i) for i in insts if s <= i.addr <= e)]
        if inner:
            continue
        carried, _, _ = _walk(body, [])
        _, groups, peak = _walk(body, carried)
        out.append(LoopLoads(start, end, sum(_is_load(i) for i in body), tuple(groups), peak))
    return out


def kernels_in_flight(functions: dict[str, list[Inst]]) -> dict[str, int]:
    """Per function whose loops issue global loads, the most its innermost loops keep
    outstanding at once (its steady state)."""
    out = {}
    for name, insts in functions.items():
        loops = loop_loads(insts)
        if loops:
            out[name] = max(lp.max_in_flight for lp in loops)
    return out


def loads_in_flight(functions: dict[str, list[Inst]], name: str) -> int:
    """:func:`kernels_in_flight` of the one function the regular expression ``name``
    matches."""
    hits = [f for f in functions if re.search(name, f)]
    if len(hits) != 1:
        raise SassError(f"'{name}' matches {len(hits)} functions, not one"
                        + (f": {', '.join(hits[:4])}" if hits else ""))
    found = kernels_in_flight({hits[0]: functions[hits[0]]})
    if not found:
        raise SassError(f"{hits[0]}: no loop issues global loads")
    return found[hits[0]]


def format_table(functions: dict[str, list[Inst]], match: str | None = None) -> str:
    """One line per loop with loads: function, span, loads, groups, most in flight."""
    lines = [f"{'function':70s} {'loop':>13s} {'loads':>5s} {'most':>4s}  groups"]
    for name, insts in functions.items():
        if match and not re.search(match, name):
            continue
        for lp in loop_loads(insts):
            short = name if len(name) <= 70 else name[:67] + "..."
            lines.append(f"{short:70s} {lp.start:#06x}-{lp.end:#06x} {lp.loads:5d} "
                         f"{lp.max_in_flight:4d}  {','.join(map(str, lp.groups))}")
    return "\n".join(lines)


def _cmd_sass(args) -> int:
    if args.match is not None:
        try:
            re.compile(args.match)
        except re.error as exc:
            raise SassError(f"--match '{args.match}': not a regular expression ({exc})") from None
    print(format_table(read_sass(args.sass), args.match))
    return 0


def register_validate_commands(sub) -> None:
    p = sub.add_parser("sass", help="global loads each loop of a compiled kernel keeps in "
                                    "flight (from cuobjdump -sass output)")
    p.add_argument("sass", metavar="SASS", help="cuobjdump -sass output, gzipped or not")
    p.add_argument("--match", default=None, help="only functions whose mangled name matches "
                                                 "this regular expression")
    p.set_defaults(func=_cmd_sass)
