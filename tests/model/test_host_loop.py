"""The host loop between a program's timed launches (hostlink.model.host_loop):
its items, their costs, and the tables it shares with the CUDA programs."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from hostlink.model.config import load_any_system, system_with
from hostlink.model.errors import ConfigError
from hostlink.model.host_loop import (COST_KEYS, LOOPS, PROGRAMS, launch_gaps_ns, loop_gap_ns,
                                      loop_terms, parse_loop)

KERNELS = Path(__file__).resolve().parents[2] / "gpu_kernels"

#: round numbers, so that each expected time below is plain arithmetic
COSTS = {"host_loop.launch_gap_us": 1.0, "host_loop.memset_small_us": 0.5,
         "host_loop.memset_us": 2.0, "host_loop.copy_us": 7.0, "host_loop.copy_return_us": 1.5,
         "host_loop.sync_us": 5.0, "host_loop.run_us": 3.0, "host_loop.memset_small_max_B": 64,
         "gpu.cta_dispatch_ns": 0.5, "gpu.device_bw_GBps": 4000.0}


@pytest.fixture(scope="module")
def system():
    return system_with(load_any_system("h200-pcie5"), COSTS)


def test_bfs_loop_is_its_items(system):
    # memset:4 (small) + walk + d2h:4 + sync, per iteration; the run once
    per_iter = 0.5 + 1.0 + 7.0 + 5.0
    assert loop_gap_ns(system, "bfs", 16384, 10) == pytest.approx((10 * per_iter + 3.0) * 1e3)


def test_sssp_pays_the_return_from_the_copy_and_the_flags_bytes(system):
    v = 1 << 21
    per_iter = 0.5 + 1.0 + 7.0 + (1.5 + 2.0 + v / 4000.0 * 1e-3) + 5.0
    assert loop_gap_ns(system, "sssp", v, 4) == pytest.approx((4 * per_iter + 3.0) * 1e3)
    assert LOOPS["cc"] == LOOPS["sssp"]


def test_pagerank_ends_with_one_synchronisation(system):
    v = 1 << 20          # the update kernel: V/256 CTAs dispatched
    per_iter = 1.0 + 1.0 + (v // 256) * 0.5e-3
    assert loop_gap_ns(system, "pagerank", v, 10) == pytest.approx((10 * per_iter + 3.0 + 5.0) * 1e3)


def test_memset_threshold(system):
    small = loop_gap_ns(system, "walk_memset_v", 64, 1)
    large = loop_gap_ns(system, "walk_memset_v", 65, 1)
    assert large - small == pytest.approx((2.0 - 0.5) * 1e3 + 65 / 4000.0)


def test_per_launch_gaps_sum_to_the_run(system):
    gaps = launch_gaps_ns(system, "sssp", 16384, 7)
    assert len(gaps) == 7 and gaps.sum() == pytest.approx(loop_gap_ns(system, "sssp", 16384, 7))
    assert gaps[0] - gaps[1] == pytest.approx(3.0e3)          # the run's own cost
    assert len(launch_gaps_ns(system, "bfs", 16384, 0)) == 0


def test_terms_are_linear_in_the_costs(system):
    per_iter, per_run, iter_ns = loop_terms("walk_copy_memset_v", 1000, system)
    c = np.array([COSTS[f"host_loop.{k}"] for k in COST_KEYS]) * 1e3
    n = 5
    assert n * (per_iter @ c + iter_ns) + per_run @ c == pytest.approx(
        loop_gap_ns(system, "walk_copy_memset_v", 1000, n))
    assert per_iter[COST_KEYS.index("copy_return_us")] == 1


@pytest.mark.parametrize("bad, says", [
    ("walk,flush", "unknown item 'flush'"),
    ("memset,walk", "needs an amount"),
    ("walk:3", "takes no amount"),
    ("memset:V/2,walk", "not a number, V or V/256"),
    ("memset:4,sync", "no walk"),
])
def test_bad_loops_say_what_is_wrong(bad, says):
    with pytest.raises(ConfigError, match=re.escape(says)):
        parse_loop(bad)


def test_predict_takes_the_program_loop():
    from hostlink.model.predict import predict
    from hostlink.model.workload import SPACE_HOST, LaunchInfo, RequestStream
    system = load_any_system("h200-pcie5")
    n = 96                                    # 32 lines in each of three launches
    stream = RequestStream(launch=np.repeat(np.arange(3), 32), warp=np.arange(n) % 32,
                           inst=np.zeros(n, dtype=np.int64),
                           addr=np.arange(n, dtype=np.uint64) * 128, size_B=np.full(n, 128),
                           useful_B=np.full(n, 128), space=np.full(n, SPACE_HOST, dtype=np.uint8),
                           is_write=np.zeros(n, bool), launches=(LaunchInfo("k", 4, 8, 256),) * 3)
    plain = predict(stream, system)
    looped = predict(stream, system, host_loop="bfs", vertices=1000)
    assert sum(looped.per_launch_kernel_s) == pytest.approx(sum(plain.per_launch_kernel_s))
    assert looped.time_s - sum(looped.per_launch_kernel_s) == pytest.approx(
        loop_gap_ns(system, "bfs", 1000, 3) * 1e-9)
    # without a loop: the launch overhead per launch and the sync between launches
    assert plain.time_s - sum(plain.per_launch_kernel_s) == pytest.approx(
        (3 * system.launch_overhead_us + 2 * system.level_sync_us) * 1e-6)


# --- the same tables in the CUDA sources

def _cuda_loops() -> dict[str, str]:
    text = (KERNELS / "micro" / "host_loop.cu").read_text()
    return dict(re.findall(r'\{"(\w+)", "([^"]+)"\}', text))


def test_the_microbenchmark_runs_the_same_loops():
    assert _cuda_loops() == LOOPS


#: the CUDA calls of a program's run() as loop items
_CALLS = [(r"cudaMemsetAsync\([^,]+,\s*[^,]+,\s*sizeof\(int\)", "memset:4"),
          (r"cudaMemsetAsync\([^,]+,\s*[^,]+,\s*g_\.V,", "memset:V"),
          (r"L\.walk\(", "walk"),
          (r"cudaMemcpyAsync\([^;]*cudaMemcpyDeviceToHost", "d2h:4"),
          (r"pr_update<<<grid\(\)", "kernel:V/256"),
          (r"cudaStreamSynchronize\(s\)", "sync")]


def _run_body_items(program: str) -> tuple[list[str], list[str]]:
    """The items of a program's run(): inside its loop, and after it."""
    text = (KERNELS / "traversal" / f"{program}.cu").read_text()
    body = text[text.index("int run(Launcher& L"):]
    body = body[:body.index("\n  }\n")]
    loop_start = body.index("for (")
    # the loop's body ends where its braces close
    depth, i = 0, body.index("{", loop_start)
    for j in range(i, len(body)):
        depth += {"{": 1, "}": -1}.get(body[j], 0)
        if depth == 0:
            break
    inside, after = body[i:j], body[j:]

    def items(part):
        found = []
        for pattern, item in _CALLS:
            found += [(m.start(), item) for m in re.finditer(pattern, part)]
        return [item for _, item in sorted(found)]
    return items(inside), items(after)


@pytest.mark.parametrize("program", PROGRAMS)
def test_each_program_runs_its_loop(program):
    inside, after = _run_body_items(program)
    assert ",".join(inside) == LOOPS[program]
    # a loop that does not end synchronised is followed by one synchronisation
    assert after == ([] if inside[-1] == "sync" else ["sync"])
