"""The strided pattern's L1 losses in the microbenchmark twins against the H200's.

Measured numbers: host sectors fetched per sector read by zc_read's strided
pattern (256 MiB per point, default cache operator, unroll 4), NVIDIA H200 under
Nsight Compute (``lts__t_sectors_srcunit_tex_aperture_sysmem_op_read``,
validation/results/h200/l1_probe/ncu.csv; tabled in hostlink.traces.cache's
notes). The compiled kernel keeps 4 loads in flight with 4 B per lane and two
pairs with 8 B per lane (validation/results/h200/sass): 2.0 means no sector
survived from a lane's first round trip on it to its second.
"""
from __future__ import annotations

import numpy as np
import pytest

from hostlink.model.config import load_system
from hostlink.validation import twin_micro, twins

SMS = 132                                 # H200
IN_FLIGHT = {4: 4, 8: 2, 16: 2}           # loads a thread keeps in flight (SASS)


@pytest.fixture(scope="module")
def h200():
    return load_system("h200-pcie5")


def strided(chunk_B: int, bpl: int, warps_per_sm: int, cache: str = "default") -> dict:
    return dict(benchmark="zc_read", pattern="strided", chunk_B=chunk_B, bytes_per_lane=bpl,
                memory_mode="zerocopy", warps=warps_per_sm * SMS, unroll=4, cache=cache,
                total_B=256 << 20)


def refetch(system, chunk_B: int, bpl: int, warps_per_sm: int) -> tuple[float, str | None]:
    twin = twins.build_zc("t", strided(chunk_B, bpl, warps_per_sm), system,
                          in_flight=IN_FLIGHT[bpl])
    return (float(twin.stream.size_B.astype(np.int64).sum()) / twin.twin_bytes_B,
            twin.extra.get("phases"))


@pytest.mark.parametrize("chunk_B,measured", [(128, 1.007), (512, 1.003)])
def test_few_warps_keep_their_sectors(h200, chunk_B, measured):
    got, _ = refetch(h200, chunk_B, 4, 16)
    assert got == pytest.approx(measured, abs=0.02)


@pytest.mark.parametrize("chunk_B,measured", [(128, 1.945), (512, 2.192)])
def test_lines_beyond_the_l1_lose_everything_in_step(h200, chunk_B, measured):
    """64 warps per SM read 2048 lines at once against the L1's 1792: no line
    survives, every warp is held back alike, and the in-step replay loses more
    than the drifted one."""
    got, phases = refetch(h200, chunk_B, 4, 64)
    assert phases == "in step"
    assert got == pytest.approx(2.0, abs=0.01)
    assert got == pytest.approx(measured, abs=0.2)


@pytest.mark.parametrize("chunk_B,measured", [(128, 1.222), (512, 1.441)])
def test_drifted_warps_lose_part_of_their_sectors(h200, chunk_B, measured):
    """48 warps per SM, 8 B per lane: 1536 lines in 1792 fit in step (the replay
    in step refetches nothing), but warps drifted apart crowd some sets."""
    got, phases = refetch(h200, chunk_B, 8, 48)
    assert phases == "drifted"
    assert 1.15 < got < 1.5
    assert got == pytest.approx(measured, abs=0.22)


def test_drifted_losses_match_the_measured_mean(h200):
    got = [refetch(h200, c, 8, 48)[0] for c in (128, 512)]
    assert np.mean(got) == pytest.approx(np.mean([1.222, 1.441]), abs=0.06)


@pytest.mark.parametrize("chunk_B,measured", [(128, 1.124), (512, 1.227)])
def test_half_occupancy_loses_a_little(h200, chunk_B, measured):
    """32 warps per SM: the H200 lost 12-23% of the reuse; the drifted replay
    5-10% (the lines a warp leaves behind are outside its prefix)."""
    got, phases = refetch(h200, chunk_B, 4, 32)
    assert phases == "drifted"
    assert 1.03 < got < measured + 0.02


def test_without_the_l1_the_phases_are_not_replayed(h200):
    twin = twins.build_zc("t", strided(512, 8, 48, cache="cg"), h200, in_flight=2)
    assert "phases" not in twin.extra


def test_replays_are_deterministic(h200):
    a, b = (twins.build_zc("t", strided(512, 8, 48), h200, in_flight=2) for _ in range(2))
    assert np.array_equal(a.stream.addr, b.stream.addr)
    assert np.array_equal(a.stream.inst, b.stream.inst)


def test_drifted_starts_stand_at_a_sector_in_range():
    starts = twin_micro._drifted_starts(5000, 1000, 64, 8)
    assert starts.min() >= 0 and starts.max() < 1000
    assert np.all(starts % 64 % 8 == 0)
    assert len(np.unique(starts)) > 50
    # chunks that are not a multiple of the step: the step counts from the chunk's start
    odd = twin_micro._drifted_starts(5000, 600, 12, 8)
    assert set(np.unique(odd % 12)) <= {0, 8}
