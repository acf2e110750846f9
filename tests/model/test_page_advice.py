"""NumPy's huge-page advice, off once hostlink.model is imported (hostlink.model.page_advice)."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from hostlink.model.page_advice import ENV, advise_huge_pages

PROBE = ("import hostlink.model\n"
         "from hostlink.model.page_advice import advise_huge_pages\n"
         "print(advise_huge_pages(False))\n")


def _advice_after_import(env_value: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if k != ENV}
    if env_value is not None:
        env[ENV] = env_value
    done = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True,
                          text=True, check=True)
    return done.stdout.strip()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="NumPy advises on Linux only")
def test_importing_the_model_turns_the_advice_off_unless_the_environment_keeps_it():
    assert _advice_after_import(None) == "False"
    assert _advice_after_import("0") == "False"
    assert _advice_after_import("1") == "True"


def test_the_setter_returns_the_previous_setting():
    before = advise_huge_pages(True)
    try:
        assert advise_huge_pages(False) is True or not sys.platform.startswith("linux")
        assert advise_huge_pages(False) is False
    finally:
        advise_huge_pages(before)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim")
def test_freed_small_arrays_go_back_to_the_system():
    """Thousands of small arrays freed stay resident until release_freed_memory gives
    their pages back (glibc; the probe runs in a fresh process)."""
    probe = ("import numpy as np, hostlink.model.page_advice as pa\n"
             "def rss():\n"
             "    return int(open('/proc/self/statm').read().split()[1]) * 4096\n"
             "keep = []\n"
             "parts = [np.ones(4096, dtype=np.int64) for _ in range(20000)]\n"
             "keep.append(np.ones(8))\n"
             "del parts\n"
             "before = rss()\n"
             "done = pa.release_freed_memory()\n"
             "print(done, before - rss())\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True).stdout.split()
    if out[0] != "True":
        pytest.skip("no malloc_trim in this C library")
    assert int(out[1]) > 300e6 * 0.5      # most of the 655 MB the parts held
