"""The trace schema: one row per warp-level instruction, whatever the source.

Sources (Accel-Sim .traceg files, the kernel emulator, the GPU self-trace)
all produce a :class:`WarpTrace`: per launch a table of warp instructions in
each warp's program order, plus a table of named memory regions that says
which address ranges are host or device memory.

Columns of :data:`INST_DTYPES` (one row per dynamic warp instruction):
launch, cta (linear CTA id, ``x + gx * (y + gy * z)``), warp (warp within its
CTA), pc, opcode (index into ``opcodes``), op (OP_*), space (SPACE_*), width_B
(bytes per lane; 0 for a non-memory instruction), mask (active lanes, bit i =
lane i), and ``addrs``, a (n, 32) uint64 array of lane addresses (0 where a
lane is inactive or the instruction is not a memory instruction).

Optional columns (:data:`OPTIONAL_DTYPES`), filled with their defaults when a
source does not give them; they carry what an Accel-Sim trace line holds
beyond the memory access, so that a read-write round trip loses nothing:
line_num (source line from ``-enable lineinfo``; 0 when absent), imm (the
trailing immediate; 0 when absent), dst_reg (destination register number, -1
for none) and ``src_regs``, a (n, MAX_SRC_REGS) int16 array of source
register numbers, -1 padded.

``space`` is always resolved: a generic LD/ST/ATOM has already been classified
as global, shared or local by whoever built the table. Memory that the
regions do not name is device memory.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from hostlink.model.geometry import WARP_SIZE  # noqa: F401  (the traces' lanes per warp)

OP_LOAD, OP_STORE, OP_ATOMIC, OP_OTHER = 0, 1, 2, 3
OP_NAMES = {OP_LOAD: "load", OP_STORE: "store", OP_ATOMIC: "atomic", OP_OTHER: "other"}

SPACE_GLOBAL, SPACE_SHARED, SPACE_LOCAL, SPACE_NONE = 0, 1, 2, 3
SPACE_NAMES = {SPACE_GLOBAL: "global", SPACE_SHARED: "shared", SPACE_LOCAL: "local",
               SPACE_NONE: "none"}

INST_DTYPES = {
    "launch": np.uint32,
    "cta": np.uint32,
    "warp": np.uint16,
    "pc": np.uint64,
    "opcode": np.uint16,
    "op": np.uint8,
    "space": np.uint8,
    "width_B": np.uint8,
    "mask": np.uint32,
}

# Register operands as Accel-Sim's tracer reports them: at most one
# destination and MAX_SRC_REGS sources (the tracer's MAX_SRC, 5 in
# accel-sim/accel-sim-framework util/tracer_nvbit/tracer_tool/common.h).
MAX_SRC_REGS = 5
NO_REG = -1

OPTIONAL_DTYPES = {
    "line_num": np.uint32,
    "imm": np.int64,
    "dst_reg": np.int16,
}
OPTIONAL_DEFAULTS = {"line_num": 0, "imm": 0, "dst_reg": NO_REG}

LOCATION_HOST = "host"
LOCATION_DEVICE = "device"


@dataclass(frozen=True)
class Region:
    """A named address range [start, start + size_B) living in host or device memory."""
    name: str
    start: int
    size_B: int
    location: str  # LOCATION_HOST or LOCATION_DEVICE

    def __post_init__(self) -> None:
        if self.location not in (LOCATION_HOST, LOCATION_DEVICE):
            raise ValueError(f"region '{self.name}': location must be 'host' or 'device', "
                             f"not '{self.location}'")
        if self.size_B < 0 or self.start < 0:
            raise ValueError(f"region '{self.name}': start and size_B must be >= 0")
        if self.start + self.size_B > 2**64:
            raise ValueError(f"region '{self.name}': ends beyond the 64-bit address space")

    @property
    def end(self) -> int:
        return self.start + self.size_B


def merge_regions(defaults: list[Region], explicit: list[Region]) -> list[Region]:
    """``explicit`` plus those of ``defaults`` that overlap none of them."""
    keep = [d for d in defaults
            if not any(d.start < e.end and e.start < d.end for e in explicit)]
    return list(explicit) + keep


@dataclass(frozen=True)
class KernelLaunch:
    """One launch: name, grid and block dimensions, and the header values it came with.

    ``extra`` keeps source-specific values (JSON-serialisable), for example the
    Accel-Sim header lines and format choices (see hostlink.traces.accelsim).
    """
    name: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shmem_B: int = 0
    nregs: int = 0
    extra: dict = field(default_factory=dict)  # other header keys, kept for round trips

    @property
    def ctas(self) -> int:
        return self.grid[0] * self.grid[1] * self.grid[2]

    @property
    def threads_per_cta(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]

    @property
    def warps_per_cta(self) -> int:
        return -(-self.threads_per_cta // WARP_SIZE)


@dataclass(frozen=True)
class MemcpyRecord:
    """A host-to-device copy listed among the launches (Accel-Sim ``MemcpyHtoD``).

    ``before_launch`` is the index of the first launch issued after the copy
    (``len(launches)`` for a copy after the last launch).
    """
    addr: int
    size_B: int
    before_launch: int


@dataclass
class InstTable:
    """Column arrays of one chunk of warp instructions (see module docstring)."""
    launch: np.ndarray
    cta: np.ndarray
    warp: np.ndarray
    pc: np.ndarray
    opcode: np.ndarray
    op: np.ndarray
    space: np.ndarray
    width_B: np.ndarray
    mask: np.ndarray
    addrs: np.ndarray  # (n, 32) uint64
    line_num: np.ndarray | None = None
    imm: np.ndarray | None = None
    dst_reg: np.ndarray | None = None
    src_regs: np.ndarray | None = None  # (n, MAX_SRC_REGS) int16

    def __post_init__(self) -> None:
        n = len(self.mask)
        for name, dtype in INST_DTYPES.items():
            col = np.asarray(getattr(self, name), dtype=dtype)
            if col.shape != (n,):
                raise ValueError(f"InstTable column '{name}' has shape {col.shape}, expected ({n},)")
            setattr(self, name, col)
        self.addrs = np.asarray(self.addrs, dtype=np.uint64).reshape(n, WARP_SIZE)
        for name, dtype in OPTIONAL_DTYPES.items():
            col = getattr(self, name)
            if col is None:
                col = np.full(n, OPTIONAL_DEFAULTS[name], dtype=dtype)
            else:
                col = np.asarray(col, dtype=dtype)
                if col.shape != (n,):
                    raise ValueError(f"InstTable column '{name}' has shape {col.shape}, "
                                     f"expected ({n},)")
            setattr(self, name, col)
        if self.src_regs is None:
            self.src_regs = np.full((n, MAX_SRC_REGS), NO_REG, dtype=np.int16)
        else:
            self.src_regs = np.asarray(self.src_regs, dtype=np.int16).reshape(n, MAX_SRC_REGS)

    def __len__(self) -> int:
        return len(self.mask)

    @staticmethod
    def column_names() -> tuple[str, ...]:
        """Every column, the (n, k) ones (addrs, src_regs) included."""
        return (*INST_DTYPES, "addrs", *OPTIONAL_DTYPES, "src_regs")

    def columns(self) -> dict[str, np.ndarray]:
        return {k: getattr(self, k) for k in self.column_names()}

    @classmethod
    def empty(cls) -> "InstTable":
        cols = {k: np.zeros(0, dtype=v) for k, v in INST_DTYPES.items()}
        return cls(**cols, addrs=np.zeros((0, WARP_SIZE), dtype=np.uint64))

    @classmethod
    def concat(cls, parts: list["InstTable"]) -> "InstTable":
        if not parts:
            return cls.empty()
        return cls(**{k: np.concatenate([getattr(p, k) for p in parts])
                      for k in cls.column_names()})

    def select(self, rows: np.ndarray) -> "InstTable":
        return InstTable(**{k: getattr(self, k)[rows] for k in self.column_names()})

    def memory_rows(self) -> np.ndarray:
        """Boolean mask of the rows that access memory (any space)."""
        return (self.op != OP_OTHER) & (self.width_B > 0)


@dataclass
class WarpTrace:
    """A whole trace: launches, opcode names, regions and instruction chunks.

    ``chunks`` is an iterable of :class:`InstTable`; a trace read from disk
    streams its chunks, so it is never all in memory at once. A reader that
    discovers opcode names while parsing appends them to ``opcodes`` as it
    goes: every index in a chunk it has yielded is already in the list.
    """
    launches: list[KernelLaunch]
    opcodes: list[str]
    regions: list[Region]
    chunks: object  # Iterable[InstTable]; re-iterable where the source allows
    memcpys: list[MemcpyRecord] = field(default_factory=list)

    def region_of(self, addr: np.ndarray) -> np.ndarray:
        """Index into ``regions`` of each address, or -1 where none holds it."""
        out = np.full(addr.shape, -1, dtype=np.int32)
        for i, r in enumerate(self.regions):
            out[(addr >= r.start) & (addr < r.end)] = i
        return out

    def iter_chunks(self):
        """Iterate the chunks (a single InstTable counts as one chunk)."""
        if isinstance(self.chunks, InstTable):
            yield self.chunks
        else:
            yield from self.chunks
