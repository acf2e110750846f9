"""Managed memory left on the host (SetAccessedBy) is translated apart from pinned
memory: the committed H100 and H200 runs that measure it.

validation/experiments/accessedby_reach/runs/h100 measured random 128 B lines over 1, 4
and 16 GiB of managed memory at 48.5, 45.1 and 42.7 GB/s where pinned memory
ran at 13.9, 6.0 and 4.9 GB/s; the H200's at 50.7, 50.5 and 45.3 against 14.2,
6.0 and 4.9. Their calibrations fit translation.managed_walkers on those three
points.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from hostlink.model.config import load_any_system
from hostlink.validation.calibrate import DEFAULT_MAX_REQUESTS as FIT_REQUESTS
from hostlink.validation.twin_micro import build_micro, run_loads_in_flight
from hostlink.validation.twins import load_run

ROOT = Path(__file__).resolve().parents[2]
REACH = {gpu: ROOT / f"validation/experiments/accessedby_reach/runs/{gpu}" for gpu in ("h100", "h200")}


def _twin(run, case, system):
    """The case's twin at the size the calibration fitted it (calibrate's requests per
    twin, an eighth of a report's: random reads reach their steady rate in either)."""
    return build_micro(case, run.cases[case], system, hints=lambda m: run.hint(case, m),
                       loads_in_flight=run_loads_in_flight(run.path), max_requests=FIT_REQUESTS)


@pytest.mark.slow
@pytest.mark.parametrize("gpu", sorted(REACH))
def test_committed_fit_reproduces_the_managed_reads_and_pinned_ones_stay_slow(gpu):
    from dataclasses import replace

    run = load_run(REACH[gpu])
    system = load_any_system(str(REACH[gpu] / "calibrated.toml"))
    assert system.translation.managed_walkers > 4 * system.translation.walkers
    as_pinned = replace(system, translation=replace(system.translation,
                                                    managed_walkers=system.translation.walkers))
    m = run.measured
    for region in (1 << 30, 4 << 30, 16 << 30):
        for mode in ("uvm_accessedby", "zerocopy"):
            case = next(c for c in run.cases
                        if c.startswith("micro/zc_read/pattern=random,")
                        and f"region_B={region}," in c and f"memory_mode={mode}," in c)
            measured = float(m[(m.case == case) & (m.metric == "bw_GBps")].value.median())
            # the twin's requests do not depend on the translation section: one serves both
            twin = _twin(run, case, system)
            bw = twin.predict(system, "des")["bw_GBps"]
            assert bw == pytest.approx(measured, rel=0.10), case
            if mode == "uvm_accessedby":
                # walked as pinned memory is, the managed reads would be 3-9x too slow
                assert twin.predict(as_pinned, "des")["bw_GBps"] < 0.4 * measured
