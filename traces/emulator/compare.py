"""Compare a recorded trace of a real kernel run (the GPU self-trace) with its emulation.

The CUDA harness (gpu_kernels, ``--self-trace DIR``) records every host load
(edges, weights) of every launch as an Accel-Sim folder plus ``regions.json``
(``{"regions": [{"name", "start", "size_B", "location"}]}``). Its arrays live
at addresses the driver chose, so rows are compared with each lane address
taken relative to the start of its region: the emulation matches the kernel
exactly when, launch by launch, every warp issues the same loads in the same
order with the same active lanes and the same element offsets. The request
histograms (host reads, no caches) are compared too: they depend only on the
offsets and on each region's 128 B alignment.

BFS and PageRank launches are fixed by the graph alone. SSSP's and CC's
active sets after their first launches depend on the order in which warps
update (KERNELS.md), so :func:`timing_independent_launches` says how many of
their launches a recorded run must reproduce: SSSP's first two (the source,
then all its neighbours), CC's first (every vertex).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hostlink.model.errors import TraceError
from hostlink.traces.schema import WARP_SIZE, Region, WarpTrace

HOST_ARRAYS = ("edges", "weights")


def load_regions_json(path) -> list[Region]:
    """Regions from the harness's ``regions.json``."""
    path = Path(path)
    try:
        doc = json.loads(path.read_text())
        return [Region(str(r["name"]), int(r["start"]), int(r["size_B"]), str(r["location"]))
                for r in doc["regions"]]
    except FileNotFoundError:
        raise TraceError(f"{path}: no such regions file") from None
    except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise TraceError(f"{path}: malformed regions file ({type(exc).__name__}: {exc})") from None


@dataclass
class HostRows:
    """Host loads of a trace: launch, global warp, mask, array index, relative lane addresses."""
    launch: np.ndarray
    warp: np.ndarray
    mask: np.ndarray
    array: np.ndarray
    rel: np.ndarray  # (n, 32) int64, -1 on inactive lanes


def host_rows(trace: WarpTrace) -> HostRows:
    """The rows of ``trace`` that load from its 'edges' or 'weights' region."""
    regions = {r.name: r for r in trace.regions}
    missing = [n for n in ("edges",) if n not in regions]
    if missing:
        raise TraceError(f"trace has no '{missing[0]}' region (regions: {sorted(regions)})")
    arrays = [regions[n] for n in HOST_ARRAYS if n in regions]
    wpc = [lc.warps_per_cta for lc in trace.launches]
    parts = {k: [] for k in ("launch", "warp", "mask", "array", "rel")}
    for chunk in trace.iter_chunks():
        if not len(chunk):
            continue
        lanes = ((chunk.mask[:, None] >> np.arange(WARP_SIZE, dtype=np.uint32)) & 1).astype(bool)
        first = np.argmax(lanes, axis=1)
        lane0 = chunk.addrs[np.arange(len(chunk)), first]
        which = np.full(len(chunk), -1, dtype=np.int64)
        for i, r in enumerate(arrays):
            which[(lane0 >= r.start) & (lane0 < r.end) & (chunk.mask != 0)] = i
        keep = which >= 0
        if not keep.any():
            continue
        sub = chunk.select(keep)
        w = which[keep]
        starts = np.array([r.start for r in arrays], dtype=np.uint64)[w]
        rel = sub.addrs.astype(np.int64) - starts.astype(np.int64)[:, None]
        rel[~lanes[keep]] = -1
        per = np.array(wpc, dtype=np.int64)[sub.launch.astype(np.int64)]
        parts["launch"].append(sub.launch.astype(np.int64))
        parts["warp"].append(sub.cta.astype(np.int64) * per + sub.warp)
        parts["mask"].append(sub.mask.astype(np.int64))
        parts["array"].append(w)
        parts["rel"].append(rel)
    if not parts["launch"]:
        z = np.zeros(0, dtype=np.int64)
        return HostRows(z, z, z, z, np.zeros((0, WARP_SIZE), dtype=np.int64))
    return HostRows(*(np.concatenate(parts[k]) for k in ("launch", "warp", "mask", "array", "rel")))


@dataclass
class RecordedComparison:
    launches: tuple[int, int]            # (recorded, emulated)
    grids: tuple[list, list]
    rows: tuple[int, int]
    rows_equal: bool
    first_difference: str | None
    histograms: tuple[dict, dict]

    @property
    def equal(self) -> bool:
        return (self.launches[0] == self.launches[1] and self.grids[0] == self.grids[1]
                and self.rows_equal and self.histograms[0] == self.histograms[1])

    def summary(self) -> dict:
        return {"equal": self.equal, "launches": list(self.launches), "rows": list(self.rows),
                "rows_equal": self.rows_equal, "first_difference": self.first_difference,
                "requests_by_size_B": {"recorded": self.histograms[0],
                                       "emulated": self.histograms[1]}}


def _first_difference(a: HostRows, b: HostRows) -> str | None:
    n = min(len(a.launch), len(b.launch))
    for name in ("launch", "warp", "array", "mask"):
        x, y = getattr(a, name)[:n], getattr(b, name)[:n]
        if not np.array_equal(x, y):
            i = int(np.argmax(x != y))
            return (f"row {i} (launch {int(a.launch[i])}, warp {int(a.warp[i])}): {name} "
                    f"{int(x[i])} recorded, {int(y[i])} emulated")
    if not np.array_equal(a.rel[:n], b.rel[:n]):
        i = int(np.argmax(np.any(a.rel[:n] != b.rel[:n], axis=1)))
        lane = int(np.argmax(a.rel[i] != b.rel[i]))
        return (f"row {i} (launch {int(a.launch[i])}, warp {int(a.warp[i])}): lane {lane} "
                f"offset {int(a.rel[i, lane])} recorded, {int(b.rel[i, lane])} emulated")
    if len(a.launch) != len(b.launch):
        return f"{len(a.launch)} host loads recorded, {len(b.launch)} emulated"
    return None


def timing_independent_launches(kernel: str) -> int | None:
    """How many leading launches any GPU run must share with the emulation (None: all)."""
    return {"sssp": 2, "cc": 1}.get(kernel)


def _first_launches(rows: HostRows, n: int | None) -> HostRows:
    if n is None:
        return rows
    keep = rows.launch < n
    return HostRows(*(getattr(rows, k)[keep] for k in ("launch", "warp", "mask", "array", "rel")))


def compare_recorded(recorded: WarpTrace, emulation, *,
                     max_launches: int | None = None) -> RecordedComparison:
    """Compare a recorded trace with an :class:`~hostlink.traces.emulator.Emulation`
    of the same kernel, variant, graph, source and id width; ``max_launches``
    limits the comparison to the first launches (the launch counts are then
    not compared)."""
    from hostlink.model.workload import SPACE_HOST
    from hostlink.traces.coalescer import coalesce
    a = _first_launches(host_rows(recorded), max_launches)
    b = _first_launches(host_rows(emulation.trace()), max_launches)
    diff = _first_difference(a, b)
    rec = coalesce(recorded).host_reads()
    emu = emulation.requests()
    if max_launches is not None:
        rec = rec.select(rec.launch < max_launches)
        emu = emu.select(emu.launch < max_launches)
    hist_rec, hist_emu = rec.size_histogram(SPACE_HOST), emu.size_histogram(SPACE_HOST)
    n_rec, n_emu = len(recorded.launches), len(emulation.launches)
    if max_launches is not None:
        n_rec, n_emu = min(n_rec, max_launches), min(n_emu, max_launches)
    return RecordedComparison(
        launches=(n_rec, n_emu),
        grids=([list(lc.grid) for lc in recorded.launches[:n_rec]],
               [list(lc.grid) for lc in emulation.launches[:n_emu]]),
        rows=(len(a.launch), len(b.launch)), rows_equal=diff is None, first_difference=diff,
        histograms=(hist_rec, hist_emu))


def open_recorded(folder) -> WarpTrace:
    """A self-trace folder (Accel-Sim files plus regions.json) as a WarpTrace."""
    from hostlink.traces.accelsim import read_accelsim
    folder = Path(folder)
    return read_accelsim(folder, regions=load_regions_json(folder / "regions.json"))


__all__ = ["HostRows", "RecordedComparison", "compare_recorded", "host_rows", "load_regions_json",
           "open_recorded", "timing_independent_launches"]
