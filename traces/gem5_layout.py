"""The host's physical layout of a trace's host regions, for gem5 packet traces.

A GPU trace holds virtual addresses; gem5's memory controllers take physical
ones from 0 up. :class:`HostLayout` places the trace's host regions one after
another from ``base`` (0 by default), each on a fresh 4 KiB page at the same
offset in its page as its virtual start, so a request keeps its offset in the
page (and so its offset in every DRAM burst and row shorter than a page).

Assumptions: each host region is one physically contiguous buffer (pinned
memory is contiguous per page only; the layout keeps what is the same within
a page, the offsets); the page is 4 KiB, the x86-64 base page (Intel SDM
vol. 3A §4.5).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hostlink.model.errors import HostlinkError
from hostlink.traces.schema import LOCATION_HOST, Region

PAGE_B = 4096


@dataclass(frozen=True)
class Placement:
    """One host region: its virtual range and its physical start."""
    name: str
    start: int
    size_B: int
    phys: int


@dataclass(frozen=True)
class HostLayout:
    """Host regions placed in physical memory (see the module notes)."""
    placements: tuple[Placement, ...]

    @classmethod
    def of(cls, regions: list[Region], base: int = 0) -> "HostLayout":
        cursor = base
        out = []
        for r in sorted((r for r in regions if r.location == LOCATION_HOST and r.size_B > 0),
                        key=lambda r: r.start):
            page = -(-cursor // PAGE_B) * PAGE_B
            phys = page + r.start % PAGE_B
            out.append(Placement(r.name, r.start, r.size_B, phys))
            cursor = phys + r.size_B
        return cls(tuple(out))

    def _lookup(self, addr: np.ndarray, size_B: np.ndarray, starts: np.ndarray,
                ends: np.ndarray, what: str, label: str, first: int) -> np.ndarray:
        """Index of the placement whose [start, end) holds each request's first byte
        (a request may run past its region's end into the padding of its last
        sector, as the coalescer's whole sectors do)."""
        addr = np.asarray(addr, dtype=np.uint64)
        idx = np.searchsorted(starts, addr, side="right").astype(np.int64) - 1
        ok = idx >= 0
        safe = np.maximum(idx, 0)
        ok &= addr < ends[safe]
        if not ok.all():
            bad = int(np.flatnonzero(~ok)[0])
            raise HostlinkError(f"{label} {bad + first} at {what} 0x{int(addr[bad]):x} "
                                f"({int(size_B[bad])} B) lies in no host region")
        return safe

    def to_physical(self, addr: np.ndarray, size_B: np.ndarray, *, label: str = "request",
                    first: int = 0) -> np.ndarray:
        """Physical addresses of requests at virtual ``addr`` (an error names the first
        request outside every region as ``label`` and its index counted from ``first``)."""
        return self._translate(addr, size_B, lambda p: p.start, lambda p: p.phys,
                               "virtual address", label, first)

    def to_virtual(self, addr: np.ndarray, size_B: np.ndarray, *, label: str = "request",
                   first: int = 0) -> np.ndarray:
        """Virtual addresses of requests at physical ``addr`` (the inverse)."""
        return self._translate(addr, size_B, lambda p: p.phys, lambda p: p.start,
                               "physical address", label, first)

    def _translate(self, addr, size_B, source, target, what: str, label: str,
                   first: int) -> np.ndarray:
        """``addr`` moved from each placement's ``source`` address to its ``target``."""
        if not self.placements:
            return np.asarray(addr, dtype=np.uint64)
        order = sorted(self.placements, key=source)
        starts = np.array([source(p) for p in order], dtype=np.uint64)
        ends = np.array([source(p) + p.size_B for p in order], dtype=np.uint64)
        to = np.array([target(p) for p in order], dtype=np.uint64)
        i = self._lookup(addr, size_B, starts, ends, what, label, first)
        return np.asarray(addr, dtype=np.uint64) - starts[i] + to[i]

    def to_json(self) -> list[dict]:
        return [{"name": p.name, "start": p.start, "size_B": p.size_B, "phys": p.phys}
                for p in self.placements]

    @classmethod
    def from_json(cls, items: list[dict]) -> "HostLayout":
        return cls(tuple(Placement(str(i["name"]), int(i["start"]), int(i["size_B"]),
                                   int(i["phys"])) for i in items))
