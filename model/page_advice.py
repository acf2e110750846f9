"""NumPy's large arrays on ordinary pages, hostlink's default.

NumPy advises the kernel to back each large array with transparent huge pages
(``madvise(MADV_HUGEPAGE)``, Linux). Where the kernel meets that advice by
compacting memory at the fault (``/sys/kernel/mm/transparent_hugepage/defrag``
set to ``madvise``, a common default), the first touch of each fresh array can
stall in the kernel. A prediction allocates large arrays by the dozen (request
columns, sort keys, the engines' inputs), streams over each a few times and
frees it: it pays those stalls and gains little from the larger pages.
Importing :mod:`hostlink.model` therefore turns NumPy's advice off for the
process; ``HOSTLINK_HUGE_PAGES=1`` in the environment keeps NumPy's default.
The effect is measured in tests/bench/results/scale.json.
"""
from __future__ import annotations

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
