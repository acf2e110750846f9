"""The address map of an emulated kernel run: where each array lives.

KERNELS.md "Data": ``edges`` and ``weights`` live where the memory mode puts
them (host memory for the zero-copy and UVM modes, device memory for
``device``); ``offsets`` and every per-vertex array live in device memory.
Every array starts on an ``align_B`` boundary (4 KiB by default: the
allocators return page-aligned memory), so a 128 B aligned element index is a
128 B aligned address.

Assumptions (only the alignment matters to the coalescer; the bases are
arbitrary but fixed, so traces are reproducible):
- host arrays are laid out from ``HOST_BASE`` = 0x7f00_0000_0000, device
  arrays from ``DEVICE_BASE`` = 0x7e00_0000_0000, in the order of
  :data:`ARRAYS`, each padded to the alignment;
- per-vertex flags are 1 B (``uint8_t``), ``changed`` one 4 B ``int``, as in
  gpu_kernels/traversal/*.cu.
"""
from __future__ import annotations

from dataclasses import dataclass

from hostlink.model.errors import ConfigError
from hostlink.traces.schema import LOCATION_DEVICE, LOCATION_HOST, Region

HOST_BASE = 0x7F00_0000_0000
DEVICE_BASE = 0x7E00_0000_0000
DEFAULT_ALIGN_B = 4096

# Memory modes of the harness (gpu_kernels/common/memory.cuh,
# validation/manifest.py) and where they put the edge list (and weights);
# managed memory starts resident on the host.
MEMORY_MODES = {
    "zerocopy": LOCATION_HOST,        # cudaHostAlloc(cudaHostAllocMapped)
    "registered": LOCATION_HOST,      # cudaHostRegister on page-aligned memory
    "uvm_accessedby": LOCATION_HOST,  # managed + SetAccessedBy (EMOGI's "zero-copy")
    "uvm": LOCATION_HOST,             # managed memory
    "uvm_readmostly": LOCATION_HOST,  # managed + SetReadMostly
    "device": LOCATION_DEVICE,        # cudaMalloc
}

# Device arrays of each kernel: name -> (bytes per vertex, fixed bytes).
ARRAYS = {
    "bfs": {"label": (4, 0), "changed": (0, 4)},
    "sssp": {"dist": (4, 0), "active_now": (1, 0), "active_next": (1, 0), "changed": (0, 4)},
    "cc": {"comp": (4, 0), "active_now": (1, 0), "active_next": (1, 0), "changed": (0, 4)},
    "pagerank": {"rank": (4, 0), "next_rank": (4, 0)},
}


@dataclass(frozen=True)
class AddressMap:
    """Regions by name, plus the id width the edges are read with."""
    regions: tuple[Region, ...]
    id_bytes: int

    def __getitem__(self, name: str) -> Region:
        for r in self.regions:
            if r.name == name:
                return r
        raise KeyError(name)

    def base(self, name: str) -> int:
        return self[name].start

    def __contains__(self, name: str) -> bool:
        return any(r.name == name for r in self.regions)


def _align(x: int, a: int) -> int:
    return -(-x // a) * a


def address_map(num_vertices: int, num_edges: int, kernel: str, *, id_bytes: int = 4,
                memory: str = "zerocopy", align_B: int = DEFAULT_ALIGN_B) -> AddressMap:
    """Regions for one kernel run on a graph with the given sizes."""
    if kernel not in ARRAYS:
        raise ConfigError(f"unknown kernel '{kernel}' (expected one of {', '.join(ARRAYS)})")
    if memory not in MEMORY_MODES:
        raise ConfigError(f"unknown memory mode '{memory}' (expected one of "
                          f"{', '.join(MEMORY_MODES)})")
    if id_bytes not in (4, 8):
        raise ConfigError(f"id_bytes must be 4 or 8, not {id_bytes}")
    if align_B < 128 or align_B & (align_B - 1):
        raise ConfigError(f"align_B must be a power of two >= 128, not {align_B}")
    edge_loc = MEMORY_MODES[memory]
    wanted = [("edges", num_edges * id_bytes, edge_loc)]
    if kernel == "sssp":
        wanted.append(("weights", num_edges * 4, edge_loc))
    wanted.append(("offsets", (num_vertices + 1) * 8, LOCATION_DEVICE))
    for name, (per_vertex_B, fixed_B) in ARRAYS[kernel].items():
        wanted.append((name, per_vertex_B * num_vertices + fixed_B, LOCATION_DEVICE))
    cursor = {LOCATION_HOST: HOST_BASE, LOCATION_DEVICE: DEVICE_BASE}
    regions = []
    for name, size_B, loc in wanted:
        start = cursor[loc]
        regions.append(Region(name, start, int(size_B), loc))
        cursor[loc] = _align(start + max(int(size_B), 1), align_B)
    return AddressMap(tuple(regions), id_bytes)
