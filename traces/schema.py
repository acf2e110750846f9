"""The trace schema: one row per warp-level instruction, whatever the source.

Sources (Accel-Sim .traceg files, the kernel emulator, the GPU self-trace)
all produce a :class:`WarpTrace`: per launch a table of warp instructions in
each warp's program order, plus a table of named memory regions that says
which address ranges are host or device memory.

Columns of :data:`INST_DTYPES` (one row per dynamic warp instruction):
launch, cta (linear CTA id), warp (warp within its CTA), pc, opcode (index into
``opcodes``), op (OP_*), space (SPACE_*), width_B (bytes per lane; 0 for a
non-memory instruction), mask (active lanes, bit i = lane i), and ``addrs``, a
(n, 32) uint64 array of lane addresses (0 where a lane is inactive or the
instruction is not a memory instruction).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

WARP_SIZE = 32

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

    @property
    def end(self) -> int:
        return self.start + self.size_B


@dataclass(frozen=True)
class KernelLaunch:
    """One launch: name, grid and block dimensions, and the header values it came with."""
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

    def __post_init__(self) -> None:
        n = len(self.mask)
        for name, dtype in INST_DTYPES.items():
            col = np.asarray(getattr(self, name), dtype=dtype)
            if col.shape != (n,):
                raise ValueError(f"InstTable column '{name}' has shape {col.shape}, expected ({n},)")
            setattr(self, name, col)
        self.addrs = np.asarray(self.addrs, dtype=np.uint64).reshape(n, WARP_SIZE)

    def __len__(self) -> int:
        return len(self.mask)

    @classmethod
    def empty(cls) -> "InstTable":
        cols = {k: np.zeros(0, dtype=v) for k, v in INST_DTYPES.items()}
        return cls(**cols, addrs=np.zeros((0, WARP_SIZE), dtype=np.uint64))

    @classmethod
    def concat(cls, parts: list["InstTable"]) -> "InstTable":
        if not parts:
            return cls.empty()
        cols = {k: np.concatenate([getattr(p, k) for p in parts]) for k in INST_DTYPES}
        return cls(**cols, addrs=np.concatenate([p.addrs for p in parts]))

    def select(self, rows: np.ndarray) -> "InstTable":
        return InstTable(**{k: getattr(self, k)[rows] for k in INST_DTYPES}, addrs=self.addrs[rows])


@dataclass
class WarpTrace:
    """A whole trace: launches, opcode names, regions and instruction chunks.

    ``chunks`` is an iterable of :class:`InstTable`; a trace read from disk
    streams its chunks, so it is never all in memory at once.
    """
    launches: list[KernelLaunch]
    opcodes: list[str]
    regions: list[Region]
    chunks: object  # Iterable[InstTable]; re-iterable where the source allows

    def region_of(self, addr: np.ndarray) -> np.ndarray:
        """Index into ``regions`` of each address, or -1 where none holds it."""
        out = np.full(addr.shape, -1, dtype=np.int32)
        for i, r in enumerate(self.regions):
            out[(addr >= r.start) & (addr < r.end)] = i
        return out
