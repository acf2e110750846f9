"""A sweep's worker processes end when the sweep's own process is killed (kill -9)."""
from __future__ import annotations

import subprocess
import sys
import time

import psutil
import pytest

# A pool of the sweep runner's with two workers, each busy for two minutes
SCRIPT = """
import time
from hostlink.model.sweep import runner
pool = runner._Pool(2)
busy = [pool.pool.submit(time.sleep, 120) for _ in range(2)]
print("ready", flush=True)
time.sleep(120)
"""


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="kills processes the Linux way")
def test_workers_exit_when_the_sweep_is_killed():
    proc = subprocess.Popen([sys.executable, "-c", SCRIPT], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        parent = psutil.Process(proc.pid)
        deadline = time.monotonic() + 30
        workers = []
        while time.monotonic() < deadline:
            workers = [c.pid for c in parent.children(recursive=True)]
            if len(workers) >= 2:
                break
            time.sleep(0.1)
        assert len(workers) >= 2
        proc.kill()                                   # SIGKILL: no clean-up runs in it
        proc.wait(timeout=10)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and any(_alive(p) for p in workers):
            time.sleep(0.2)
        left = [p for p in workers if _alive(p)]
        for pid in left:                              # leave nothing behind if it fails
            psutil.Process(pid).kill()
        assert left == []
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
