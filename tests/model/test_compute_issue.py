"""The instruction issue floor (hostlink.model.compute) and its place in predict()."""
from __future__ import annotations

from pathlib import Path

import re

import numpy as np
import pytest

from hostlink.model.compute import ISSUE_PER_SM_PER_CLK, IssueCounter, issue_floor_ns
from hostlink.model.config import load_system
from hostlink.model.predict import predict

# the shared Accel-Sim sample traces (tests/conftest.py's ACCELSIM_DATA)
ACCELSIM_DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "accelsim"

FFMA = ACCELSIM_DATA / "ffma_1_32_10"    # one CTA of one warp, FFMA only: no memory traffic


def test_four_warp_instructions_per_sm_per_clock():
    gpu = load_system("h200-pcie5").gpu           # 132 SMs at 1980 MHz (its preset)
    per_clock = ISSUE_PER_SM_PER_CLK * gpu.sm_count
    # enough CTAs for every SM: 1000 clocks of issue across all of them
    assert issue_floor_ns([1000 * per_clock], [10], [10 * gpu.sm_count], gpu)[0] == \
        pytest.approx(1000 / 1.980)
    # two CTAs issue on two SMs only
    assert issue_floor_ns([8000], [10], [2], gpu)[0] == pytest.approx(8000 / (4 * 2) / 1.980)
    # one warp issues one instruction per clock at most
    assert issue_floor_ns([1328], [1328], [1], gpu)[0] == pytest.approx(1328 / 1.980)
    assert issue_floor_ns([0], [0], [5], gpu)[0] == 0.0             # unknown: no floor
    # known stalls: SM clocks summed over the SMs, spread over the same SMs
    assert issue_floor_ns([8000], [10], [2], gpu, [600])[0] == \
        pytest.approx((8000 / 4 + 600) / 2 / 1.980)


def test_counter_sums_a_warp_split_over_chunks():
    c = IssueCounter()
    c.add(np.array([0, 0, 1]), np.array([0, 0, 0]), np.array([0, 1, 0]))
    c.add(np.array([0, 0, 0]), np.array([0, 0, 3]), np.array([0, 0, 0]))
    total, longest = c.per_launch(2)
    assert total.tolist() == [5, 1]
    assert longest.tolist() == [3, 1]      # launch 0, CTA 0, warp 0: one row then two


def test_counter_compacts_without_changing_counts(monkeypatch):
    monkeypatch.setattr(IssueCounter, "COMPACT_KEYS", 3)
    rng = np.random.default_rng(5)
    launch, cta, warp = (rng.integers(0, k, 2000) for k in (3, 7, 4))
    c = IssueCounter()
    for start in range(0, 2000, 100):
        c.add(launch[start:start + 100], cta[start:start + 100], warp[start:start + 100])
    total, longest = c.per_launch(3)
    assert total.tolist() == np.bincount(launch, minlength=3).tolist()
    for k in range(3):
        sel = launch == k
        pairs = cta[sel] * 4 + warp[sel]
        assert longest[k] == np.bincount(pairs).max()


def _traceg_insts(folder) -> list[int]:
    """Each warp's instruction count as the traceg files state it (their 'insts = N' lines)."""
    counts = []
    for path in sorted(folder.glob("*.traceg")):
        counts += [int(m) for m in re.findall(r"^insts = (\d+)", path.read_text(), re.M)]
    return counts


@pytest.mark.skipif(not FFMA.is_dir(), reason=f"shared trace {FFMA} not found")
def test_a_kernel_without_memory_traffic_takes_its_issue_time():
    system = load_system("h200-pcie5")
    counts = _traceg_insts(FFMA)
    assert len(counts) == 1                                   # one warp
    p = predict(FFMA, system)
    floor_s = counts[0] / (system.gpu.clock_MHz * 1e6)        # one instruction per clock
    assert p.extra["issue"]["floor_s"] == pytest.approx(floor_s)
    assert p.extra["issue"]["launches"] == 1 and p.extra["issue"]["binds"]
    assert p.per_launch_kernel_s[0] == pytest.approx(floor_s + system.gpu.launch_ns * 1e-9)
    assert p.requested_B == 0


@pytest.mark.skipif(not FFMA.is_dir(), reason=f"shared trace {FFMA} not found")
def test_predict_says_when_compute_binds(capsys):
    from hostlink.model.cli.main import main
    assert main(["predict", "--system", "h200-pcie5", "--trace", str(FFMA)]) == 0
    out = capsys.readouterr().out
    assert "compute: instruction issue, not memory, sets 1 of 1 launch(es)" in out
    # with the launch overhead gone, the run's bound is compute itself
    assert main(["predict", "--system", "h200-pcie5", "--trace", str(FFMA), "--set",
                 "launch_overhead_us=0", "--set", "gpu.launch_ns=0"]) == 0
    assert "bound: compute" in capsys.readouterr().out
