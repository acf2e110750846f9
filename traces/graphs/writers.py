"""Graph writers: EMOGI's binary CSR (what the CUDA harness reads) and GAP's text lists.

``write_bel(csr, PREFIX)`` writes ``PREFIX.bel.col`` (u64 offsets),
``PREFIX.bel.dst`` (u64 neighbour ids, whatever the CSR's id width) and, for a
weighted graph, ``PREFIX.bel.val`` (u32 weights); each starts with the 16 B
header (u64 element count, u64 unused, written as 0), little endian
(illinois-impact/EMOGI ``bfs.cu`` reads
``.col`` as V + 1 offsets and ``.dst`` as the edge list). Large arrays are
written in blocks so the u64 widening never holds a second full copy.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from hostlink.traces.graphs.csr import CSR, GraphError
from hostlink.traces.graphs.readers import bel_paths

_BLOCK = 1 << 23


def _write_array(path: Path, arr: np.ndarray, dtype) -> None:
    dtype = np.dtype(dtype).newbyteorder("<")
    with open(path, "wb") as f:
        np.array([len(arr), 0], dtype="<u8").tofile(f)
        for a in range(0, len(arr), _BLOCK):
            arr[a:a + _BLOCK].astype(dtype, copy=False).tofile(f)


def write_bel(csr: CSR, prefix) -> dict[str, Path]:
    """Write the binary CSR files; returns their paths (keys col, dst and val if weighted)."""
    paths = bel_paths(prefix)
    try:
        paths["col"].parent.mkdir(parents=True, exist_ok=True)
        _write_array(paths["col"], csr.offsets, np.uint64)
        _write_array(paths["dst"], csr.dst, np.uint64)
        if csr.weights is not None:
            _write_array(paths["val"], csr.weights, np.uint32)
        else:
            paths.pop("val")
    except OSError as exc:
        raise GraphError(f"{exc.filename}: cannot write ({exc.strerror})") from None
    return paths


def write_el(csr: CSR, path, *, weighted: bool | None = None) -> Path:
    """GAP's text edge list: 'u v' per line (.el), or 'u v w' with weights (.wel)."""
    path = Path(path)
    weighted = csr.weights is not None if weighted is None else weighted
    if weighted and csr.weights is None:
        raise GraphError(f"{path}: graph '{csr.name}' has no weights to write")
    try:
        with open(path, "w") as f:
            src = csr.sources()
            for a in range(0, csr.num_edges, _BLOCK):
                cols = [src[a:a + _BLOCK], csr.dst[a:a + _BLOCK]]
                if weighted:
                    cols.append(csr.weights[a:a + _BLOCK])
                np.savetxt(f, np.column_stack(cols).astype(np.uint64), fmt="%d")
    except OSError as exc:
        raise GraphError(f"{path}: cannot write ({exc.strerror})") from None
    return path
