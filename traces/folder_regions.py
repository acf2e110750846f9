"""The regions a trace folder carries beside its trace, and whether a trace reads the host.

``hostlink trace gen --format accelsim`` writes the emulated kernel's arrays
beside its Accel-Sim files in ``regions.toml`` (the format of
:func:`hostlink.traces.store.load_regions`), since an Accel-Sim trace names
no memory spaces of its own. Whoever opens such a folder by its path
(``predict``, ``sweep``, ``trace stats``, ``trace convert``) takes that file's
regions; regions given explicitly (``--regions``) win where they overlap
(:func:`hostlink.traces.schema.merge_regions`). A trace store keeps its
regions in its own manifest and needs no such file.

A trace with no host region reads nothing from the host: its zero-copy or
UVM bandwidth is 0 GB/s by construction. :func:`no_host_memory` says why in
one sentence, for a warning on stderr rather than a silent 0.
"""
from __future__ import annotations

from pathlib import Path

from hostlink.traces.schema import LOCATION_HOST, Region, merge_regions

REGIONS_FILE = "regions.toml"


def folder_of(path) -> Path:
    """The folder of a trace path (a folder, or a file such as its kernelslist.g)."""
    path = Path(path)
    return path if path.is_dir() else path.parent


def folder_regions(path) -> list[Region]:
    """The regions of ``regions.toml`` beside the trace at ``path`` (none without one)."""
    from hostlink.traces.store import load_regions
    beside = folder_of(path) / REGIONS_FILE
    return load_regions(beside) if beside.is_file() else []


def with_folder_regions(path, regions: list[Region] | None) -> list[Region] | None:
    """``regions`` (explicit) over those of the folder's ``regions.toml``; None if neither."""
    found = folder_regions(path)
    if not found:
        return regions
    return merge_regions(found, list(regions or []))


def no_host_memory(trace) -> str | None:
    """Why ``trace`` (a WarpTrace) reads nothing from the host, or None where it names
    host memory."""
    if any(r.location == LOCATION_HOST for r in trace.regions):
        return None
    memcpys = len(getattr(trace, "memcpys", ()) or ())
    how = ("its MemcpyHtoD buffers stay in device memory (--memcpy-location device)"
           if memcpys else "it copies nothing in with MemcpyHtoD")
    return (f"the trace names no host memory: {how} and no regions file gives host ranges "
            f"(--regions FILE); nothing is read from the host")
