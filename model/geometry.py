"""The GPU's memory access granularity, defined once for the whole package.

An SM's load is served in 32 B sectors of 128 B cache lines: a warp's request
to global memory is split into the 128 B lines it touches, and each line into
the 32 B sectors it needs (NVIDIA, CUDA C++ Best Practices Guide, "Coalesced
Access to Global Memory"; the same granularity from Volta to Hopper, NVIDIA
Volta, Ampere and Hopper tuning guides, "L1 cache"). Zero-copy reads of host
memory leave the GPU as PCIe read requests of whole sectors, up to a line
(EMOGI, VLDB 2020, §3.2).
"""
from __future__ import annotations

LINE_B = 128      # a cache line: the largest request a warp's load sends per line
SECTOR_B = 32     # a sector: the least a load reads
SECTOR_SHIFT = SECTOR_B.bit_length() - 1   # an address's sector: address >> this
WARP_SIZE = 32    # threads a warp (CUDA C++ Programming Guide, "SIMT Architecture")
