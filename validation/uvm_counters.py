"""Per-launch summaries of the unified-memory (UVM) records of ``libuvm_counters.so``.

Reads the CSV written by the CUPTI injection library
``gpu_kernels/tools/uvm_counters.cu`` (any CUDA program run with
``CUDA_INJECTION64_PATH`` pointing at it and ``HOSTLINK_UVM_COUNTERS_OUT``
naming the file). The first line is the header
``record,kind,start_ns,end_ns,value,address,name``; every other line is one
CUPTI record, or a note starting with ``#``:

- ``uvm`` rows: ``kind`` htod / dtoh (a migration; ``value`` its bytes),
  gpu_fault (a GPU page-fault group; ``value`` summed as its faults, though
  CUPTI documents it as "the number of page fault groups for the same page")
  or cpu_fault (one
  CPU page fault; ``value`` is the faulting program counter, so these are
  counted, not summed); ``address`` the page (hex ``0x...`` or decimal);
  ``name`` the migration cause or access type;
- ``kernel`` rows: one launch; ``value`` the CTAs in its grid, ``name`` the
  kernel's name;
- ``memcpy`` rows: ``kind`` the direction (htod, dtoh, dtod, ...), ``value``
  the bytes.

``start_ns``/``end_ns`` and ``value`` are non-negative decimal integers;
``end_ns`` is at least ``start_ns`` except in cpu_fault, thrashing and
remote_map rows (where CUPTI leaves it meaningless). Anything else is an error
naming the file and line.

Assumptions of the summaries:

- every timestamp is on CUPTI's one clock, in ns;
- a UVM record belongs to the kernel launch whose ``[start_ns, end_ns]``
  (both ends included) holds the record's ``start_ns``; where launches
  overlap, to the one that started last; where none holds it, to ``outside``
  (launch -1). Fault groups are stamped when the driver starts servicing
  them and migrations when the copy starts, both while the faulting kernel
  runs;
- launches are numbered 0, 1, ... in the order they started;
- durations are summed per record (``end_ns - start_ns``), so overlapping
  fault groups or migrations count their overlap more than once;
- the HtoD size histogram uses power-of-two buckets: a migration of ``s``
  bytes counts in bucket ``size_B = 2**floor(log2(s))`` (bucket 4096 holds
  4096..8191 B).
"""
from __future__ import annotations

import csv
import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from hostlink.model.errors import HostlinkError

HEADER = ("record", "kind", "start_ns", "end_ns", "value", "address", "name")
RECORDS = ("uvm", "kernel", "memcpy")
# UVM kinds whose end_ns CUPTI leaves meaningless
NO_END_KINDS = ("cpu_fault", "thrashing", "remote_map")
OUTSIDE = "outside"
_INT64_MAX = (1 << 63) - 1

LAUNCH_COLUMNS = ("launch", "kernel", "start_ns", "kernel_ns", "grid_ctas", "fault_groups", "faults",
                  "fault_group_ns", "htod_transfers", "htod_B", "htod_ns", "dtoh_transfers", "dtoh_B",
                  "dtoh_ns", "cpu_faults")


class UvmCountersError(HostlinkError):
    """A uvm_counters CSV that cannot be read; the message names the file and line."""


@dataclass(frozen=True)
class UvmCounters:
    """One CSV, parsed: every record (with its file ``line``) and the ``#`` notes."""
    path: Path
    records: pd.DataFrame
    notes: tuple[str, ...] = ()

    def of(self, record: str) -> pd.DataFrame:
        return self.records[self.records["record"] == record]

    @property
    def kernels(self) -> pd.DataFrame:
        """The kernel rows, in launch order (by start, then end)."""
        k = self.of("kernel").sort_values(["start_ns", "end_ns", "line"], kind="stable")
        return k.reset_index(drop=True)


def _integer(text: str, column: str, where: str) -> int:
    t = text.strip()
    hexa = column == "address" and t.lower().startswith("0x")
    if not (t[2:] if hexa else t).isalnum():  # no sign, point or space
        v = -1
    else:
        try:
            v = int(t, 16) if hexa else int(t, 10)
        except ValueError:
            v = -1
    if v < 0:
        kind = "a non-negative integer (hex 0x... or decimal)" if column == "address" else "a non-negative integer"
        raise UvmCountersError(f"{where}: {column} {text!r} is not {kind}")
    if v > _INT64_MAX:
        raise UvmCountersError(f"{where}: {column} {text!r} is out of range (0 .. 2**63-1)")
    return v


def read_uvm_counters(path: str | Path) -> UvmCounters:
    """Parse a uvm_counters CSV; :class:`UvmCountersError` names the file and line of bad input."""
    path = Path(path)
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise UvmCountersError(f"{path}: cannot read ({reason})") from None
    lines = text.splitlines()
    if not lines or not lines[0].strip():
        raise UvmCountersError(f"{path}:1: missing header (expected {','.join(HEADER)})")
    if tuple(f.strip() for f in next(csv.reader([lines[0]]))) != HEADER:
        raise UvmCountersError(f"{path}:1: expected the header {','.join(HEADER)}, found {lines[0][:120]!r}")
    rows, notes = [], []
    for no, line in enumerate(lines[1:], start=2):
        if line.startswith("#"):
            notes.append(line[1:].strip())
            continue
        if not line.strip():
            continue
        where = f"{path}:{no}"
        try:
            fields = next(csv.reader([line], strict=True))
        except csv.Error as exc:
            raise UvmCountersError(f"{where}: not a CSV row ({exc})") from None
        if len(fields) != len(HEADER):
            raise UvmCountersError(f"{where}: expected {len(HEADER)} fields ({','.join(HEADER)}), "
                                   f"found {len(fields)}")
        record, kind = fields[0].strip(), fields[1].strip()
        if record not in RECORDS:
            raise UvmCountersError(f"{where}: unknown record {record!r} (expected one of {', '.join(RECORDS)})")
        if not kind:
            raise UvmCountersError(f"{where}: empty kind")
        start, end, value = (_integer(fields[i], HEADER[i], where) for i in (2, 3, 4))
        address = _integer(fields[5], "address", where) if fields[5].strip() else None
        if end < start and not (record == "uvm" and kind in NO_END_KINDS):
            raise UvmCountersError(f"{where}: end_ns {end} is before start_ns {start}")
        rows.append((no, record, kind, start, end, value, address, fields[6]))
    df = pd.DataFrame(rows, columns=("line", *HEADER))
    df = df.astype({"line": "int64", "start_ns": "int64", "end_ns": "int64", "value": "int64",
                    "address": "Int64", "record": "object", "kind": "object", "name": "object"})
    return UvmCounters(path, df, tuple(notes))


def _load(counters: UvmCounters | str | Path) -> UvmCounters:
    return counters if isinstance(counters, UvmCounters) else read_uvm_counters(counters)


def assign_launches(kernel_start_ns, kernel_end_ns, record_start_ns) -> np.ndarray:
    """The launch index of every record: the kernel (given sorted by start) whose
    [start, end] holds the record's start, the latest-started where several do; -1: none."""
    ks = np.asarray(kernel_start_ns, dtype=np.int64)
    ke = np.asarray(kernel_end_ns, dtype=np.int64)
    t = np.asarray(record_start_ns, dtype=np.int64)
    out = np.full(len(t), -1, dtype=np.int64)
    if len(ks) == 0 or len(t) == 0:
        return out
    i = np.searchsorted(ks, t, side="right") - 1
    hit = (i >= 0) & (ke[np.maximum(i, 0)] >= t)
    out[hit] = i[hit]
    # an earlier launch still running (overlapping kernels) may hold what the latest does not
    reach = np.maximum.accumulate(ke)
    for r in np.flatnonzero(~hit & (i >= 0)):
        if reach[i[r]] >= t[r]:
            j = i[r] - 1
            while ke[j] < t[r]:
                j -= 1
            out[r] = j
    return out


def _uvm_with_launch(c: UvmCounters) -> pd.DataFrame:
    k = c.kernels
    u = c.of("uvm").copy()
    u["launch"] = assign_launches(k["start_ns"], k["end_ns"], u["start_ns"])
    u["dur_ns"] = u["end_ns"] - u["start_ns"]
    return u


def _aggregate(u: pd.DataFrame, by: str) -> pd.DataFrame:
    """Counts, bytes and summed durations of the UVM rows ``u`` per value of column ``by``."""
    def part(kind, **aggs):
        sel = u[u["kind"] == kind]
        return sel.groupby(by).agg(**aggs) if len(sel) else pd.DataFrame(columns=list(aggs))

    parts = [
        part("gpu_fault", fault_groups=("value", "size"), faults=("value", "sum"), fault_group_ns=("dur_ns", "sum")),
        part("htod", htod_transfers=("value", "size"), htod_B=("value", "sum"), htod_ns=("dur_ns", "sum")),
        part("dtoh", dtoh_transfers=("value", "size"), dtoh_B=("value", "sum"), dtoh_ns=("dur_ns", "sum")),
        part("cpu_fault", cpu_faults=("value", "size")),
    ]
    return pd.concat(parts, axis=1)


def per_launch(counters: UvmCounters | str | Path) -> pd.DataFrame:
    """One row per kernel launch (``launch`` 0, 1, ... in start order), then a row
    ``launch`` -1, ``kernel`` 'outside' for the UVM records no launch holds.

    Columns: launch, kernel, start_ns, kernel_ns (duration), grid_ctas,
    fault_groups, faults, fault_group_ns (summed durations of the fault groups),
    htod_transfers, htod_B, htod_ns, dtoh_transfers, dtoh_B, dtoh_ns,
    cpu_faults. The outside row has no start_ns, kernel_ns or grid_ctas (<NA>).
    """
    c = _load(counters)
    k = c.kernels
    base = pd.DataFrame({
        "launch": np.arange(len(k), dtype=np.int64),
        "kernel": k["name"].to_numpy(dtype=object),
        "start_ns": k["start_ns"].to_numpy(),
        "kernel_ns": (k["end_ns"] - k["start_ns"]).to_numpy(),
        "grid_ctas": k["value"].to_numpy(),
    })
    outside = pd.DataFrame({"launch": [-1], "kernel": [OUTSIDE], "start_ns": [pd.NA], "kernel_ns": [pd.NA],
                            "grid_ctas": [pd.NA]})
    base = pd.concat([base, outside], ignore_index=True)
    for col in ("start_ns", "kernel_ns", "grid_ctas"):
        base[col] = base[col].astype("Int64")
    agg = _aggregate(_uvm_with_launch(c), "launch")
    out = base.join(agg, on="launch")
    for col in LAUNCH_COLUMNS[5:]:
        out[col] = out[col].fillna(0).astype("int64") if col in out else 0
    return out[list(LAUNCH_COLUMNS)].reset_index(drop=True)


def htod_histogram(counters: UvmCounters | str | Path, by_launch: bool = False) -> pd.DataFrame:
    """HtoD migrations by power-of-two size bucket: ``size_B`` (the bucket's
    lower bound), ``transfers``, ``htod_B``; with ``by_launch``, per ``launch``
    (-1: outside) too. Sorted by launch, then size."""
    c = _load(counters)
    u = _uvm_with_launch(c)
    h = u[u["kind"] == "htod"].copy()
    h["size_B"] = [0 if v <= 0 else 1 << (int(v).bit_length() - 1) for v in h["value"]]
    keys = ["launch", "size_B"] if by_launch else ["size_B"]
    if h.empty:
        return pd.DataFrame({col: pd.Series(dtype="int64") for col in (*keys, "transfers", "htod_B")})
    g = h.groupby(keys).agg(transfers=("value", "size"), htod_B=("value", "sum")).reset_index()
    return g.sort_values(keys).reset_index(drop=True).astype("int64")


def by_kernel(counters: UvmCounters | str | Path) -> pd.DataFrame:
    """The per-launch table summed per kernel name (``launches`` counts them); no outside row."""
    pl = per_launch(counters)
    pl = pl[pl["launch"] >= 0]
    num = [col for col in LAUNCH_COLUMNS[3:] if col != "grid_ctas"]
    g = pl.groupby("kernel", sort=False).agg(launches=("launch", "size"),
                                             **{col: (col, "sum") for col in num})
    return g.reset_index().astype({col: "int64" for col in ("launches", *num)})


def totals(counters: UvmCounters | str | Path) -> pd.DataFrame:
    """The whole run in one row: launches, kernel_ns, the UVM aggregates of every
    record (inside launches or not), the part outside launches (outside_fault_groups,
    outside_faults, outside_htod_transfers, outside_htod_B), memcpys and memcpy_B."""
    c = _load(counters)
    pl = per_launch(c)
    row = {"launches": int((pl["launch"] >= 0).sum()),
           "kernel_ns": int(pl["kernel_ns"].fillna(0).sum())}
    for col in LAUNCH_COLUMNS[5:]:
        row[col] = int(pl[col].sum())
    out = pl[pl["launch"] == -1].iloc[0]
    for col in ("fault_groups", "faults", "htod_transfers", "htod_B"):
        row[f"outside_{col}"] = int(out[col])
    m = c.of("memcpy")
    row["memcpys"], row["memcpy_B"] = len(m), int(m["value"].sum())
    return pd.DataFrame([row]).astype("int64")


def summary(counters: UvmCounters | str | Path) -> dict:
    """A small JSON-able summary: the file, totals, the HtoD size histogram, the
    per-kernel-name table and the file's notes."""
    c = _load(counters)
    hist = htod_histogram(c)
    return {
        "file": str(c.path),
        "totals": {k: int(v) for k, v in totals(c).iloc[0].items()},
        "htod_size_histogram": [{"size_B": int(r.size_B), "transfers": int(r.transfers), "htod_B": int(r.htod_B)}
                                for r in hist.itertuples()],
        "by_kernel": [{k: (v if isinstance(v, str) else int(v)) for k, v in r.items()}
                      for r in by_kernel(c).to_dict(orient="records")],
        "notes": list(c.notes),
    }


def write_summary_json(counters: UvmCounters | str | Path, out: str | Path) -> Path:
    """Write :func:`summary` as indented JSON to ``out``; returns the path."""
    out = Path(out)
    out.write_text(json.dumps(summary(counters), indent=2) + "\n")
    return out


def format_bytes(n: int) -> str:
    """``n`` bytes in the largest binary unit that keeps it at least 1 (``4 KiB``, ``1.5 MiB``)."""
    units = ("B", "KiB", "MiB", "GiB", "TiB")
    i = 0 if n < 1024 else min(int(math.log(n, 1024)), len(units) - 1)
    v = n / 1024 ** i
    return f"{v:.0f} {units[i]}" if v == int(v) else f"{v:.1f} {units[i]}"


def format_totals(counters: UvmCounters | str | Path) -> str:
    """The totals and the HtoD size histogram, as text lines."""
    c = _load(counters)
    t = totals(c).iloc[0]
    us = lambda ns: f"{ns / 1e3:.1f} us"  # noqa: E731
    lines = [
        f"{c.path}: {t.launches} kernel launches, {us(t.kernel_ns)} in kernels",
        f"  GPU fault groups {t.fault_groups:>10}  faults {t.faults}, {us(t.fault_group_ns)} summed",
        f"  HtoD migrations  {t.htod_transfers:>10}  {format_bytes(int(t.htod_B))}, {us(t.htod_ns)} summed",
        f"  DtoH migrations  {t.dtoh_transfers:>10}  {format_bytes(int(t.dtoh_B))}, {us(t.dtoh_ns)} summed",
        f"  CPU faults       {t.cpu_faults:>10}",
        f"  outside kernels: {t.outside_fault_groups} fault groups, {t.outside_htod_transfers} HtoD migrations "
        f"({format_bytes(int(t.outside_htod_B))})",
        f"  memcpys: {t.memcpys} ({format_bytes(int(t.memcpy_B))})",
    ]
    hist = htod_histogram(c)
    if len(hist):
        lines.append("  HtoD sizes: " + ", ".join(f"{format_bytes(int(r.size_B))} x{r.transfers}"
                                                  for r in hist.itertuples()))
    lines += [f"  note: {n}" for n in c.notes]
    return "\n".join(lines)
