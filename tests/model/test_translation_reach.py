"""Translation reach from random-line bandwidths: the closed forms calibration starts from.

Expected values follow from the LRU hit rate of independent uniform
references (entries / pages, checked against the simulated TLB) and from the
walker bound ``S walkers / (m miss_lat_ns)`` of hostlink.model.translation.
"""
from __future__ import annotations

import numpy as np
import pytest

from hostlink.model.translation import (lru_misses, reach_from_two_regions,
                                        translation_bound_GBps, uniform_miss_rate)

MiB = 1 << 20
GiB = 1 << 30
PAGE = 2 * MiB


def test_uniform_miss_rate_is_the_share_of_pages_not_held():
    assert uniform_miss_rate(GiB, 316, PAGE) == pytest.approx(1 - 316 / 512)
    assert uniform_miss_rate(256 * MiB, 316, PAGE) == 0.0        # 128 pages all fit
    rng = np.random.default_rng(5)
    keys = rng.integers(0, 1024, 300_000)
    sim = lru_misses(keys, 300)[50_000:].mean()
    assert sim == pytest.approx(uniform_miss_rate(1024 * PAGE, 300, PAGE), abs=0.005)
    with pytest.raises(ValueError):
        uniform_miss_rate(0, 1, PAGE)


def test_reach_is_recovered_from_two_walker_bound_bandwidths():
    # a TLB of 316 entries of 2 MB and 8 walkers of 200 ns: bandwidth over 1 GiB and 4 GiB
    reach = 316 * PAGE
    bw = {r: translation_bound_GBps(uniform_miss_rate(r, 316, PAGE), 128, 200.0, 8)
          for r in (GiB, 4 * GiB)}
    assert bw[GiB] == pytest.approx(128 * 8 / (200 * (1 - 316 / 512)))
    assert reach_from_two_regions(GiB, bw[GiB], 4 * GiB, bw[4 * GiB]) == pytest.approx(reach)
    # order of the arguments does not matter
    assert reach_from_two_regions(4 * GiB, bw[4 * GiB], GiB, bw[GiB]) == pytest.approx(reach)


def test_the_h200_cliff_gives_a_reach_between_256_MiB_and_1_GiB():
    # validation/experiments/first_run/runs/h200: 13.37 GB/s over 1 GiB, 6.054 GB/s over 4 GiB
    reach = reach_from_two_regions(GiB, 13.37, 4 * GiB, 6.054)
    assert 256 * MiB < reach < GiB
    assert reach / PAGE == pytest.approx(316, abs=2)


def test_shapes_that_are_not_walker_bound_give_no_reach():
    assert reach_from_two_regions(GiB, 5.0, 4 * GiB, 6.0) is None     # larger region faster
    assert reach_from_two_regions(GiB, 6.0, GiB, 5.0) is None          # one region
