"""Functional emulation of the traversal kernels of gpu_kernels/KERNELS.md.

``emulate(csr, kernel, variant, ...)`` returns an :class:`Emulation` with the
algorithm's result, the address map (regions), the launches, the trace as
InstTable chunks and the host read requests (fast path).
"""
from hostlink.traces.emulator.algorithms import AlgorithmRun
from hostlink.traces.emulator.core import (DEFAULT_CHUNK_ROWS, KERNELS, Emulation, emulate,
                                           request_histogram)
from hostlink.traces.emulator.emit import VARIANTS
from hostlink.traces.emulator.layout import MEMORY_MODES, AddressMap, address_map

__all__ = ["AlgorithmRun", "DEFAULT_CHUNK_ROWS", "KERNELS", "Emulation", "emulate",
           "request_histogram", "VARIANTS", "MEMORY_MODES", "AddressMap", "address_map"]
