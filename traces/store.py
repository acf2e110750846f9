"""The binary trace store: a folder of Arrow IPC chunk files plus a JSON manifest.

Layout of a store folder:
- ``manifest.json``: ``format`` ("hostlink-trace-store"), ``schema_version``,
  ``chunk_insts`` (the most rows a chunk holds), ``compression``, the
  ``launches`` (name, grid, block, shmem_B, nregs, extra), ``opcodes``,
  ``regions``, ``memcpys``, and ``chunks``: per chunk its file, row count and
  launch range. Written last (to a temporary name, then renamed), so a folder
  without a manifest is an unfinished store.
- ``chunk-NNNNNN.arrow``: one Arrow IPC file per chunk, one column per
  InstTable column (addrs as a fixed-size list of 32 uint64, src_regs of
  MAX_SRC_REGS int16), compressed with zstd by default.

Memory bound: writing buffers at most ``chunk_insts`` rows (plus the table
being appended); reading holds one chunk at a time, so streaming a store
through costs about ``chunk_insts`` x 330 B (the row size with its 32
addresses), twice during the Arrow-to-NumPy copy, whatever the store's total
size. tests/traces/test_store.py measures this bound.

Regions files (TOML, :func:`load_regions`): an array of tables ``[[region]]``
with ``name``, ``start`` (integer or "0x..." string), ``size_B`` (integer or
a quantity like "4 KiB") and ``location`` ("host" or "device"), checked by
the pydantic model :class:`RegionsFile` (:mod:`hostlink.model.tomlcheck`).
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc
from pydantic import BeforeValidator, Field

from hostlink.model.errors import ConfigError, TraceError
from hostlink.model.textfile import read_toml
from hostlink.model.tomlcheck import Bytes, TomlModel, check, fault
from hostlink.traces.schema import (INST_DTYPES, MAX_SRC_REGS, OPTIONAL_DTYPES, WARP_SIZE,
                                    InstTable, KernelLaunch, MemcpyRecord, Region, WarpTrace,
                                    merge_regions)

STORE_FORMAT = "hostlink-trace-store"
SCHEMA_VERSION = 1
MANIFEST = "manifest.json"
DEFAULT_CHUNK_INSTS = 1 << 16
_CHUNK_GLOB = "chunk-*.arrow"

_WIDE = {"addrs": (np.uint64, WARP_SIZE), "src_regs": (np.int16, MAX_SRC_REGS)}
_FLAT = {**INST_DTYPES, **OPTIONAL_DTYPES}


def _arrow_schema() -> pa.Schema:
    fields = [pa.field(k, pa.from_numpy_dtype(np.dtype(v)), nullable=False)
              for k, v in _FLAT.items()]
    fields += [pa.field(k, pa.list_(pa.from_numpy_dtype(np.dtype(t)), w), nullable=False)
               for k, (t, w) in _WIDE.items()]
    return pa.schema(fields)


def _to_record_batch(table: InstTable, schema: pa.Schema) -> pa.RecordBatch:
    arrays = [pa.array(getattr(table, k)) for k in _FLAT]
    for k, (_, w) in _WIDE.items():
        flat = np.ascontiguousarray(getattr(table, k)).reshape(-1)
        arrays.append(pa.FixedSizeListArray.from_arrays(pa.array(flat), w))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


# --------------------------------------------------------------------------- writing

class StoreWriter:
    """Write InstTable chunks to a store folder, then the manifest on :meth:`close`.

    ``append`` accepts tables of any size; rows are re-cut into chunks of
    exactly ``chunk_insts`` rows (the last one shorter).
    """

    def __init__(self, path, *, chunk_insts: int = DEFAULT_CHUNK_INSTS,
                 compression: str | None = "zstd", overwrite: bool = False):
        if chunk_insts < 1:
            raise ValueError("chunk_insts must be >= 1")
        if compression not in (None, "zstd", "lz4"):
            raise TraceError(f"store compression must be 'zstd', 'lz4' or none, not '{compression}'")
        self.path = Path(path)
        if self.path.exists() and not self.path.is_dir():
            raise TraceError(f"{self.path}: exists and is not a folder")
        self.path.mkdir(parents=True, exist_ok=True)
        old = [p for p in self.path.iterdir() if p.name == MANIFEST or p.match(_CHUNK_GLOB)]
        if old and not overwrite:
            raise TraceError(f"{self.path}: already holds a trace store (use overwrite)")
        for p in old:
            p.unlink()
        self.chunk_insts = chunk_insts
        self.compression = compression
        self._schema = _arrow_schema()
        self._options = ipc.IpcWriteOptions(compression=compression)
        self._pending: list[InstTable] = []
        self._pending_rows = 0
        self._chunks: list[dict] = []
        self._closed = False

    def append(self, table: InstTable) -> None:
        if self._closed:
            raise TraceError(f"{self.path}: store already closed")
        start = 0
        n = len(table)
        while start < n:
            take = min(self.chunk_insts - self._pending_rows, n - start)
            part = table if (start == 0 and take == n) else table.select(slice(start, start + take))
            self._pending.append(part)
            self._pending_rows += take
            start += take
            if self._pending_rows == self.chunk_insts:
                self._flush()

    def _flush(self) -> None:
        if not self._pending_rows:
            return
        table = self._pending[0] if len(self._pending) == 1 else InstTable.concat(self._pending)
        self._pending, self._pending_rows = [], 0
        name = f"chunk-{len(self._chunks):06d}.arrow"
        batch = _to_record_batch(table, self._schema)
        with pa.OSFile(str(self.path / name), "wb") as sink:
            with ipc.new_file(sink, self._schema, options=self._options) as writer:
                writer.write_batch(batch)
        self._chunks.append({"file": name, "rows": len(table),
                             "launch_min": int(table.launch.min()),
                             "launch_max": int(table.launch.max())})

    def close(self, *, launches: list[KernelLaunch], opcodes: list[str],
              regions: list[Region], memcpys: list[MemcpyRecord] = ()) -> Path:
        """Write the last chunk and the manifest; returns the store folder."""
        self._flush()
        manifest = {
            "format": STORE_FORMAT,
            "schema_version": SCHEMA_VERSION,
            "chunk_insts": self.chunk_insts,
            "compression": self.compression,
            "rows": sum(c["rows"] for c in self._chunks),
            "launches": [_launch_to_json(l) for l in launches],
            "opcodes": list(opcodes),
            "regions": [{"name": r.name, "start": r.start, "size_B": r.size_B,
                         "location": r.location} for r in regions],
            "memcpys": [{"addr": m.addr, "size_B": m.size_B, "before_launch": m.before_launch}
                        for m in memcpys],
            "chunks": self._chunks,
        }
        tmp = self.path / (MANIFEST + ".tmp")
        tmp.write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
        os.replace(tmp, self.path / MANIFEST)
        self._closed = True
        return self.path


def _launch_to_json(launch: KernelLaunch) -> dict:
    return {"name": launch.name, "grid": list(launch.grid), "block": list(launch.block),
            "shmem_B": launch.shmem_B, "nregs": launch.nregs, "extra": launch.extra}


def write_store(trace: WarpTrace, path, *, chunk_insts: int = DEFAULT_CHUNK_INSTS,
                compression: str | None = "zstd", overwrite: bool = False) -> Path:
    """Stream ``trace`` into a store folder (one chunk in memory at a time)."""
    writer = StoreWriter(path, chunk_insts=chunk_insts, compression=compression,
                         overwrite=overwrite)
    for chunk in trace.iter_chunks():
        writer.append(chunk)
    return writer.close(launches=trace.launches, opcodes=trace.opcodes, regions=trace.regions,
                        memcpys=trace.memcpys)


# --------------------------------------------------------------------------- reading

class _StoreChunks:
    """Re-iterable chunks of a store; each iteration reads the files again."""

    def __init__(self, path: Path, chunks: list[dict]):
        self.path = path
        self.chunks = chunks

    def __len__(self) -> int:
        return len(self.chunks)

    def __iter__(self):
        for meta in self.chunks:
            yield _read_chunk(self.path / meta["file"], meta["rows"])


def _read_chunk(path: Path, rows: int) -> InstTable:
    try:
        with pa.memory_map(str(path), "r") as src:
            table = ipc.open_file(src).read_all()
    except FileNotFoundError:
        raise TraceError(f"{path}: chunk file missing") from None
    except (pa.ArrowException, OSError, MemoryError) as exc:  # a corrupt length may ask for GBs
        raise TraceError(f"{path}: not a readable chunk ({' '.join(str(exc).split())})") from None
    if table.num_rows != rows:
        raise TraceError(f"{path}: holds {table.num_rows} rows, the manifest says {rows}")
    cols = {}
    for k, dtype in _FLAT.items():
        if k not in table.column_names:
            raise TraceError(f"{path}: column '{k}' missing")
        arr = table.column(k).to_numpy()
        if arr.dtype != np.dtype(dtype):
            raise TraceError(f"{path}: column '{k}' is {arr.dtype}, expected {np.dtype(dtype)}")
        cols[k] = np.array(arr, copy=True)
    for k, (dtype, w) in _WIDE.items():
        if k not in table.column_names:
            raise TraceError(f"{path}: column '{k}' missing")
        flat = table.column(k).combine_chunks().flatten().to_numpy()
        if flat.dtype != np.dtype(dtype) or len(flat) != rows * w:
            raise TraceError(f"{path}: column '{k}' is not {rows} x {w} {np.dtype(dtype)}")
        cols[k] = np.array(flat, copy=True).reshape(rows, w)
    del table
    return InstTable(**cols)


def is_store(path) -> bool:
    return (Path(path) / MANIFEST).is_file()


def read_store(path, *, regions: list[Region] | None = None) -> WarpTrace:
    """Open a store folder as a :class:`WarpTrace` whose chunks stream from disk.

    ``regions`` (if given) are added to the store's; they win where they
    overlap one of its regions.
    """
    path = Path(path)
    mpath = path / MANIFEST
    try:
        manifest = json.loads(mpath.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise TraceError(f"{path}: no {MANIFEST} (not a trace store, or an unfinished one)") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise TraceError(f"{mpath}: not valid JSON ({exc})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != STORE_FORMAT:
        raise TraceError(f"{mpath}: 'format' is not '{STORE_FORMAT}'")
    version = manifest.get("schema_version")
    if version != SCHEMA_VERSION:
        raise TraceError(f"{mpath}: schema_version {version!r}; this hostlink reads "
                         f"{SCHEMA_VERSION}")
    try:
        launches = [KernelLaunch(name=l["name"], grid=tuple(l["grid"]), block=tuple(l["block"]),
                                 shmem_B=l["shmem_B"], nregs=l["nregs"], extra=l["extra"])
                    for l in manifest["launches"]]
        stored = [Region(r["name"], r["start"], r["size_B"], r["location"])
                  for r in manifest["regions"]]
        memcpys = [MemcpyRecord(m["addr"], m["size_B"], m["before_launch"])
                   for m in manifest["memcpys"]]
        opcodes = [str(o) for o in manifest["opcodes"]]
        chunks = [{"file": c["file"], "rows": int(c["rows"])} for c in manifest["chunks"]]
    except (KeyError, TypeError, ValueError) as exc:
        raise TraceError(f"{mpath}: malformed manifest ({type(exc).__name__}: {exc})") from None
    return WarpTrace(launches=launches, opcodes=opcodes,
                     regions=merge_regions(stored, regions or []),
                     chunks=_StoreChunks(path, chunks), memcpys=memcpys)


def open_trace(path, *, regions: list[Region] | None = None,
               memcpy_location: str = "device", chunk_insts: int = DEFAULT_CHUNK_INSTS
               ) -> WarpTrace:
    """Open a store folder or an Accel-Sim folder (or its kernelslist.g), by what it holds."""
    from hostlink.traces.accelsim import KERNELSLIST, read_accelsim
    path = Path(path)
    if is_store(path):
        return read_store(path, regions=regions)
    if (path.is_dir() and (path / KERNELSLIST).is_file()) or path.name == KERNELSLIST:
        return read_accelsim(path, regions=regions, memcpy_location=memcpy_location,
                             chunk_insts=chunk_insts)
    if not path.exists():
        raise TraceError(f"{path}: no such file or folder")
    raise TraceError(f"{path}: neither a trace store ({MANIFEST}) nor an Accel-Sim trace "
                     f"folder ({KERNELSLIST})")


def trace_format(path) -> str:
    """'store' or 'accelsim' (by the same rule as :func:`open_trace`)."""
    return "store" if is_store(path) else "accelsim"


# --------------------------------------------------------------------------- regions files

def _address(value: Any) -> Any:
    """An address written as a string ("0x7f0000000000") as an integer."""
    if isinstance(value, str):
        try:
            return int(value, 0)
        except ValueError:
            raise fault(" = {value} is not an integer", value=repr(value)) from None
    return value


class RegionTable(TomlModel):
    """One ``[[region]]`` of a regions file."""
    name: str
    start: Annotated[int, BeforeValidator(_address), Field(ge=0)]
    size_B: Annotated[Bytes, Field(ge=0)]
    location: Literal["host", "device"]


class RegionsFile(TomlModel):
    region: list[RegionTable] = []


def load_regions(path) -> list[Region]:
    """Read a regions TOML file (see the module docstring)."""
    path = Path(path)
    doc = check(RegionsFile, read_toml(path, "regions file")[0], str(path))
    try:
        return [Region(r.name, r.start, r.size_B, r.location) for r in doc.region]
    except ValueError as exc:  # a region beyond the 64-bit address space
        raise ConfigError(f"{path}: {exc}") from None


def save_regions(regions: list[Region], path) -> Path:
    """Write regions as a TOML file that :func:`load_regions` reads back."""
    lines = []
    for r in regions:
        lines += ["[[region]]", f"name = {json.dumps(r.name)}", f"start = 0x{r.start:x}",
                  f"size_B = {r.size_B}", f"location = \"{r.location}\"", ""]
    path = Path(path)
    path.write_text("\n".join(lines), encoding="utf-8")
    return path
