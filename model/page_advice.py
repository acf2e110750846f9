"""How the process holds its memory pages: NumPy's large arrays on ordinary pages,
and freed small arrays given back to the system.

NumPy advises the kernel to back each large array with transparent huge pages
(``madvise(MADV_HUGEPAGE)``, Linux). Where the kernel meets that advice by
compacting memory at the fault (``/sys/kernel/mm/transparent_hugepage/defrag``
set to ``madvise``, a common default), the first touch of each fresh array can
stall in the kernel. A prediction allocates large arrays by the dozen (request
columns, sort keys, the engines' inputs), streams over each a few times and
frees it: it pays those stalls and gains little from the larger pages.
Importing :mod:`hostlink.model` therefore turns NumPy's advice off for the
process; ``HOSTLINK_HUGE_PAGES=1`` in the environment keeps NumPy's default.

Arrays below the C library's mapping threshold (32 MiB at most) come from its
heap, and freeing them keeps their pages in the process: a stream built from
thousands of per-launch pieces leaves as much memory resident after they are
joined. :func:`release_freed_memory` gives such pages back (glibc's
``malloc_trim``; nothing elsewhere). The effects are measured in
tests/bench/results/scale.json.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os

#: environment variable that keeps NumPy's huge-page advice when set to 1
ENV = "HOSTLINK_HUGE_PAGES"


def advise_huge_pages(on: bool) -> bool:
    """Turn NumPy's huge-page advice for new large arrays on or off; returns the
    previous setting (False where this NumPy cannot change it)."""
    try:
        from numpy._core import multiarray
    except ImportError:                  # NumPy 1.x
        from numpy.core import multiarray
    setter = getattr(multiarray, "_set_madvise_hugepage", None)
    return bool(setter(bool(on))) if setter is not None else False


def apply_default() -> None:
    """hostlink's default: no huge-page advice, unless the environment keeps it."""
    if os.environ.get(ENV, "") != "1":
        advise_huge_pages(False)


def _trim():
    """glibc's ``malloc_trim``, or None where the C library has none."""
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None


_MALLOC_TRIM = _trim()


def release_freed_memory() -> bool:
    """Give the C library's freed heap pages back to the system; whether it could."""
    if _MALLOC_TRIM is None:
        return False
    _MALLOC_TRIM(0)
    return True
