"""Warnings of the commands: one line on stderr, ``hostlink: warning: ...``.

A warning marks an answer that is right by the model but likely not what the
user meant (a trace that reads nothing from the host predicts 0 GB/s); the
command still succeeds. Errors go through :class:`hostlink.model.errors.HostlinkError`.
"""
from __future__ import annotations

import sys


def warn(message: str) -> None:
    sys.stderr.write(f"hostlink: warning: {message}\n")
    sys.stderr.flush()


def trace_reads_no_host(path, regions=None, memcpy_location: str = "device") -> str | None:
    """Why the trace at ``path`` (with the regions its reader would get) reads nothing
    from the host, or None where it names host memory."""
    from hostlink.traces.folder_regions import no_host_memory, with_folder_regions
    from hostlink.traces.store import open_trace
    trace = open_trace(path, regions=with_folder_regions(path, regions),
                       memcpy_location=memcpy_location)
    return no_host_memory(trace)
