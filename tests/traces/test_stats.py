"""hostlink.traces.stats on the real samples and a hand-made trace."""
from __future__ import annotations

import re

from hostlink.traces.accelsim import read_accelsim
from hostlink.traces.cache import CacheConfig
from hostlink.traces.stats import format_stats, trace_stats

from test_accelsim import DATA


def test_vectoradd_stats(accelsim_data):
    """vectoradd, n = 100 floats in three 400 B buffers placed in host memory:
    300 lane accesses; per buffer 3 full 128 B lines + one 32 B sector = 13
    sectors, 39 in all; reads 6 x 128 B + 2 x 32 B with 800 useful bytes."""
    s = trace_stats(read_accelsim(accelsim_data / "vectoradd", memcpy_location="host"))
    assert s["warp_insts"] == 344 and s["launches"] == 1
    assert s["warp_insts_by_op_space"]["load"] == {"global": 8}
    assert s["warp_insts_by_op_space"]["store"] == {"global": 4}
    assert s["lane_accesses"] == 300
    assert s["sectors"] == {"host": 39, "device": 0, "total": 39}
    assert s["requests_by_size_B"] == {"32": 2, "128": 6}
    assert s["host_writes_by_size_B"] == {"32": 1, "128": 3}
    assert (s["useful_B"], s["requested_B"]) == (800, 832)
    assert s["bytes"]["host_write"] == {"requests": 4, "useful_B": 400, "requested_B": 416}
    text = format_stats(s)
    assert "Host-memory read requests" in text and "128 B" in text and "96.2 %" in text


def test_matrixmul_stats_device_by_default(accelsim_data):
    folder = accelsim_data / "matrixmul"
    text = (folder / "kernel-1.traceg").read_text()
    # every global access line: full mask, mode 1, stride 4, 128 B aligned base -> 4 sectors
    glob = re.findall(r"^[0-9a-f]+ ffffffff \d (?:R\d+ )?(?:LDG|STG)\S* \d (?:R\d+ )*4 1 "
                      r"0x([0-9a-f]+) 4 $", text, re.M)
    n_glob = len(re.findall(r" (?:LDG|STG)\S* ", text))
    assert len(glob) == n_glob and all(int(a, 16) % 128 == 0 for a in glob)
    s = trace_stats(read_accelsim(folder))
    assert s["sectors"] == {"host": 0, "device": 4 * n_glob, "total": 4 * n_glob}
    assert s["requests_by_size_B"] == {} and s["efficiency"] is None
    assert s["bytes"]["device_read"]["requests"] + s["bytes"]["device_write"]["requests"] \
        == 4 * n_glob
    assert s["lane_accesses"] == 32 * n_glob


def test_stats_with_caches():
    trace = read_accelsim(DATA / "edge_v4", memcpy_location="host")
    plain = trace_stats(trace)
    cached = trace_stats(trace, cache=CacheConfig(l1_size_B=32 * 1024, sm_count=2),
                         cache_host=True)
    # warp 0's third load (lanes 0 and 31 on sector 0x000) hits the line its first load
    # brought in; LDG.E.64's sectors are new, atomics always go, launch 1's lines are new
    assert plain["requests_by_size_B"] == {"32": 6, "128": 3}
    assert cached["requests_by_size_B"] == {"32": 5, "128": 3}
    assert cached["sectors"] == plain["sectors"]  # sectors are counted before the caches
    assert cached["cache"]["cache_host"] is True
