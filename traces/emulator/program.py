"""The static instructions of each emulated kernel: what a warp issues, in program order.

The host-array loads are exactly those of gpu_kernels/KERNELS.md: one load
of ``edges[i]`` per loop trip, and for SSSP one load of ``weights[i]`` right
after it, with the same index and lanes. Device-array accesses are emitted
only on request; KERNELS.md names the arrays but not the order of their
accesses, so this module fixes one, following the CUDA code the definitions
describe (EMOGI's kernels, illinois-impact/EMOGI ``bfs.cu``):

prologue, per vertex (warp-per-vertex variants: all 32 lanes, one address;
naive: one lane per vertex; balanced: one lane per vertex of the warp's 8,
where the kernel reads every vertex's offsets before its test, which this
listing keeps in the order below)
- bfs: load ``label[v]`` (the ``label[v] == level`` test); if active: load
  ``offsets[v]``, ``offsets[v+1]``;
- sssp, cc: load ``active_now[v]``; if active: ``offsets[v]``, ``offsets[v+1]``,
  then ``dist[v]`` / ``comp[v]``;
- pagerank: load ``offsets[v]``, ``offsets[v+1]``; if degree > 0: ``rank[v]``.
per loop trip, after the host loads, for the lanes holding a neighbour u
- bfs: load ``label[u]``; store ``label[u]`` and the ``changed`` flag (a 4 B
  int) in the lanes that found it unvisited;
- sssp, cc: load ``dist[u]`` / ``comp[u]``; ``atomicMin`` on it in the lanes
  whose candidate is below the loaded value; store ``active_next[u]`` and
  ``changed`` in the lanes whose atomic lowered it;
- pagerank: ``atomicAdd`` (a reduction, result unused) on ``next_rank[u]``.
This is the source-level order of gpu_kernels/traversal/*.cu (walk.cuh and
each algorithm's ``active``/``value``/``visit``); the compiler may merge or
reorder device loads (PageRank's ``value`` re-reads the offsets, which this
listing reads once), and the GPU self-trace records host loads only, so the
device part is a model, not a checked match. The PageRank update kernel
(``rank = 0.15 / V + next``) touches device memory only and is not traced.

PCs are fixed per static instruction (0x100 + 0x10 * position in the
kernel's full listing), so host-only and device-inclusive traces agree on
the PCs of the host loads. Opcode names are SASS-like (LDG.E, LDG.E.64,
LDG.E.U8, STG.E, STG.E.U8, ATOMG.E.MIN.STRONG.GPU,
RED.E.ADD.F32.FTZ.RN.STRONG.GPU) so an Accel-Sim reader classifies them.
"""
from __future__ import annotations

from dataclasses import dataclass

from hostlink.traces.schema import OP_ATOMIC, OP_LOAD, OP_STORE

# how the lane addresses of an instruction are formed
TARGET_EDGE = 0    # base + element index * width (edges, weights)
TARGET_NBR = 1     # base + neighbour id u * width
TARGET_SELF = 2    # base + v * width
TARGET_SELF1 = 3   # base + (v + 1) * width
TARGET_FLAG = 4    # base (one flag)

# which lanes are active
LANES_VALID = 0    # lanes holding an element of the list in this trip
LANES_FLAGGED = 1  # valid lanes whose update took effect (unvisited / lowered)
LANES_ATTEMPT = 4  # valid lanes whose candidate beat the value they loaded
LANES_ALL = 2      # every lane of the warp that has a vertex (prologue test)
LANES_ACTIVE = 3   # lanes whose vertex is active (rest of the prologue)

PC_BASE = 0x100
PC_STEP = 0x10


@dataclass(frozen=True)
class Instr:
    name: str
    op: int
    region: str
    width_B: int
    target: int
    lanes: int
    pc: int = 0

    @property
    def opcode(self) -> str:
        if self.op == OP_LOAD:
            return {1: "LDG.E.U8", 4: "LDG.E", 8: "LDG.E.64"}[self.width_B]
        if self.op == OP_STORE:
            return {1: "STG.E.U8", 4: "STG.E", 8: "STG.E.64"}[self.width_B]
        if self.region == "next_rank":
            return "RED.E.ADD.F32.FTZ.RN.STRONG.GPU"
        return "ATOMG.E.MIN.STRONG.GPU"

    @property
    def is_host_array(self) -> bool:
        return self.region in ("edges", "weights")


@dataclass(frozen=True)
class Program:
    """``check``: prologue every unit issues; ``active``: prologue of active units;
    ``trip``: one loop trip."""
    check: tuple[Instr, ...]
    active: tuple[Instr, ...]
    trip: tuple[Instr, ...]

    @property
    def prologue(self) -> tuple[Instr, ...]:
        return self.check + self.active

    @property
    def all(self) -> tuple[Instr, ...]:
        return self.check + self.active + self.trip


def _ld(name, region, width, target, lanes):
    return Instr(name, OP_LOAD, region, width, target, lanes)


def full_program(kernel: str, id_bytes: int) -> Program:
    """The kernel's listing with device accesses (PCs assigned)."""
    edges = _ld("ld_edges", "edges", id_bytes, TARGET_EDGE, LANES_VALID)
    weights = _ld("ld_weights", "weights", 4, TARGET_EDGE, LANES_VALID)
    offs = (_ld("ld_offsets", "offsets", 8, TARGET_SELF, LANES_ACTIVE),
            _ld("ld_offsets_next", "offsets", 8, TARGET_SELF1, LANES_ACTIVE))
    changed = Instr("st_changed", OP_STORE, "changed", 4, TARGET_FLAG, LANES_FLAGGED)
    if kernel == "bfs":
        check = (_ld("ld_label_v", "label", 4, TARGET_SELF, LANES_ALL),)
        active = offs
        trip = (edges,
                _ld("ld_label_u", "label", 4, TARGET_NBR, LANES_VALID),
                Instr("st_label_u", OP_STORE, "label", 4, TARGET_NBR, LANES_FLAGGED),
                changed)
    elif kernel in ("sssp", "cc"):
        value = "dist" if kernel == "sssp" else "comp"
        check = (_ld("ld_active_now", "active_now", 1, TARGET_SELF, LANES_ALL),)
        active = offs + (_ld(f"ld_{value}_v", value, 4, TARGET_SELF, LANES_ACTIVE),)
        host = (edges, weights) if kernel == "sssp" else (edges,)
        trip = host + (_ld(f"ld_{value}_u", value, 4, TARGET_NBR, LANES_VALID),
                       Instr(f"atom_min_{value}_u", OP_ATOMIC, value, 4, TARGET_NBR, LANES_ATTEMPT),
                       Instr("st_active_next_u", OP_STORE, "active_next", 1, TARGET_NBR,
                             LANES_FLAGGED),
                       changed)
    elif kernel == "pagerank":
        check = (_ld("ld_offsets", "offsets", 8, TARGET_SELF, LANES_ALL),
                 _ld("ld_offsets_next", "offsets", 8, TARGET_SELF1, LANES_ALL))
        active = (_ld("ld_rank_v", "rank", 4, TARGET_SELF, LANES_ACTIVE),)
        trip = (edges, Instr("red_add_next_u", OP_ATOMIC, "next_rank", 4, TARGET_NBR, LANES_VALID))
    else:
        raise KeyError(kernel)
    listing = check + active + trip
    pcs = {id(ins): PC_BASE + PC_STEP * i for i, ins in enumerate(listing)}

    def with_pc(seq):
        return tuple(Instr(i.name, i.op, i.region, i.width_B, i.target, i.lanes, pcs[id(i)])
                     for i in seq)
    return Program(with_pc(check), with_pc(active), with_pc(trip))


def program(kernel: str, id_bytes: int, include_device: bool) -> Program:
    """The instructions a trace holds: host loads only, or everything."""
    full = full_program(kernel, id_bytes)
    if include_device:
        return full
    return Program((), (), tuple(i for i in full.trip if i.is_host_array))


def opcode_names(kernel: str, id_bytes: int) -> list[str]:
    """Opcode table of a kernel's traces (index = InstTable.opcode)."""
    names: list[str] = []
    for ins in full_program(kernel, id_bytes).all:
        if ins.opcode not in names:
            names.append(ins.opcode)
    return names
