"""Loads a compiled kernel keeps in flight per thread, read from its SASS.

The twins take a kernel's loads in flight from its source (``unroll`` of the
zero-copy microbenchmarks, ``load_ahead`` of the traversals); what the GPU
runs is what ptxas made of it. This module reads ``cuobjdump -sass`` output
and, for every loop of every function that issues global loads, finds how
many of those loads are outstanding at once: the groups of loads issued
before the first of them is waited for.

Model (assumptions):
- A load's destination registers are pending from the load until an
  instruction reads one of them or writes one of them (the scoreboard wait
  of a read after the load, or of a write after it); the wait retires the
  loads whose registers it touches, no others (one scoreboard per load;
  Hopper has six per warp, so a function with more than six loads in flight
  may wait on several at once: the count is an upper bound there).
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
- A system-scope strong load (``LDG.E.STRONG.SYS``, what ``ld.volatile`` and
  ``__ldcv`` compile to) waits for the one before it: measured, one warp's
  ld.cv reads of random host lines run at one load per round trip whatever
  the number ptxas issues back to back (0.08 GB/s at unroll 1 to 8 on the
  H200, validation/results/h200/unroll_probe), where default loads overlap.

Checked against measured bandwidth of one warp (validation/results/h200/
unroll_probe): the loads in flight found here for the zero-copy read kernels
match the measured bandwidth's steps with ``unroll`` (tests/validation/
test_sass.py).
"""
from __future__ import annotations

import gzip
import re
from dataclasses import dataclass
from pathlib import Path

from hostlink.model.errors import HostlinkError


class SassError(HostlinkError):
    """SASS text that cannot be read."""


#: opcodes whose register operands are all sources (no register destination)
NO_DESTINATION = ("ST", "RED", "BRA", "EXIT", "BAR", "CALL", "RET", "BSSY", "BSYNC", "WARPSYNC",
                  "NOP", "MEMBAR", "FENCE", "ERRBAR", "CCTL", "BPT", "JMP", "YIELD")

_FUNCTION = re.compile(r"Function : (\S+)")
_INST = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(?:(@!?U?P\w+)\s+)?([A-Z][A-Z0-9_.]*)\s*([^;]*);")
_REG = re.compile(r"\bR(\d+)(\.64)?\b")
_BRA_TARGET = re.compile(r"^\s*(?:`\(\S+\)|0x([0-9a-f]+))")


@dataclass(frozen=True)
class Inst:
    """One SASS instruction: address, opcode, destination and source registers."""
    addr: int
    op: str
    dst: tuple[int, ...]
    src: tuple[int, ...]
    target: int | None = None          # a branch's target address


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
    parts = [p.strip() for p in operands.split(",")] if operands.strip() else []
    if base.startswith(NO_DESTINATION) or not parts or not re.fullmatch(r"R\d+", parts[0]):
        return Inst(addr, op, (), tuple(_registers(operands)), target)
    first = int(parts[0][1:])
    width = _load_width(op) if base in ("LDG", "LD", "LDS", "LDC", "LDL") else 1
    if ".WIDE" in op or (base.startswith("IMAD") and ".64" in op):
        width = 2
    return Inst(addr, op, tuple(range(first, first + width)),
                tuple(_registers(",".join(parts[1:]))), target)


def parse_sass(text: str, source: str = "<sass>") -> dict[str, list[Inst]]:
    """Instructions of every function in ``cuobjdump -sass`` output, by mangled name."""
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
    text = gzip.decompress(raw).decode() if raw[:2] == b"\x1f\x8b" else raw.decode()
    return parse_sass(text, str(p))


def _is_load(inst: Inst) -> bool:
    return inst.op.split(".")[0] == "LDG"


def _serialised(inst: Inst) -> bool:
    return _is_load(inst) and ".STRONG.SYS" in inst.op


#: a pending load: its destination registers, and whether it is a strong
#: system-scope load (which the next such load waits for)
_Pending = tuple[frozenset[int], bool]


def _walk(body: list[Inst], pending: list[_Pending]) -> tuple[list[_Pending], list[int], int]:
    """Walk ``body`` with ``pending`` loads; returns the loads pending after it, the
    counts outstanding at each first wait of a run of loads, and the largest count."""
    pending = list(pending)
    groups: list[int] = []
    peak = len(pending)
    issued_since_wait = bool(pending)
    for inst in body:
        touched = set(inst.src) | set(inst.dst)
        strong = _serialised(inst)
        waited = [p for p in pending if p[0] & touched or (strong and p[1])]
        if waited:
            if issued_since_wait:
                groups.append(len(pending))
                issued_since_wait = False
            pending = [p for p in pending if p not in waited]
        if _is_load(inst):
            pending.append((frozenset(inst.dst), strong))
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
    print(format_table(read_sass(args.sass), args.match))
    return 0


def register_validate_commands(sub) -> None:
    p = sub.add_parser("sass", help="global loads each loop of a compiled kernel keeps in "
                                    "flight (from cuobjdump -sass output)")
    p.add_argument("sass", metavar="SASS", help="cuobjdump -sass output, gzipped or not")
    p.add_argument("--match", default=None, help="only functions whose mangled name matches "
                                                 "this regular expression")
    p.set_defaults(func=_cmd_sass)
