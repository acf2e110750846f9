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

The C library maps an array above its threshold (32 MiB at most by default)
apart and unmaps it when freed, so the next array of that size faults its pages
in afresh, and the kernel zeroes each one. A prediction allocates such arrays
by the dozen. Importing :mod:`hostlink.model` therefore has glibc serve arrays
up to :data:`HEAP_ARRAY_B` from its heap and keep freed pages there for the next
ones (``mallopt``; nothing elsewhere). ``HOSTLINK_LIBC_MALLOC=1`` in the
environment keeps the C library's defaults.

Freed heap pages stay in the process: a stream built from thousands of
per-launch pieces leaves as much memory resident after they are joined.
:func:`release_freed_memory` gives such pages back (glibc's ``malloc_trim``;
nothing elsewhere). The effects are measured in tests/bench/results/scale.json.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os

#: environment variable that keeps NumPy's huge-page advice when set to 1
ENV = "HOSTLINK_HUGE_PAGES"
#: environment variable that keeps the C library's allocation defaults when set to 1
MALLOC_ENV = "HOSTLINK_LIBC_MALLOC"
#: arrays up to this size come from the C library's heap, which keeps their freed pages
HEAP_ARRAY_B = 1 << 30
# glibc's mallopt parameters (malloc.h)
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
# the most free memory at the heap's top that glibc keeps (mallopt takes an int)
_TRIM_B = (1 << 31) - 1


def advise_huge_pages(on: bool) -> bool:
    """Turn NumPy's huge-page advice for new large arrays on or off; returns the
    previous setting (False where this NumPy cannot change it)."""
    try:
        from numpy._core import multiarray
    except ImportError:                  # NumPy 1.x
        from numpy.core import multiarray
    setter = getattr(multiarray, "_set_madvise_hugepage", None)
    return bool(setter(bool(on))) if setter is not None else False


def _libc_function(name: str):
    """A function of the C library, or None where it has none."""
    try:
        return getattr(ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6"), name)
    except (OSError, AttributeError):
        return None


_MALLOC_TRIM = _libc_function("malloc_trim")
_MALLOPT = _libc_function("mallopt")


def reuse_freed_arrays() -> bool:
    """Have glibc serve arrays up to :data:`HEAP_ARRAY_B` from its heap and keep their
    freed pages for the next ones; whether it could."""
    if _MALLOPT is None:
        return False
    return bool(_MALLOPT(_M_MMAP_THRESHOLD, HEAP_ARRAY_B)) and \
        bool(_MALLOPT(_M_TRIM_THRESHOLD, _TRIM_B))


def apply_default() -> None:
    """hostlink's default: no huge-page advice and freed arrays' pages reused, unless the
    environment keeps NumPy's or the C library's defaults."""
    if os.environ.get(ENV, "") != "1":
        advise_huge_pages(False)
    if os.environ.get(MALLOC_ENV, "") != "1":
        reuse_freed_arrays()


def release_freed_memory() -> bool:
    """Give the C library's freed heap pages back to the system; whether it could."""
    if _MALLOC_TRIM is None:
        return False
    _MALLOC_TRIM(0)
    return True
