"""``hostlink predict`` prints the band a second machine of the same kind would likely
measure the prediction in: its memory mode's, for the class of its mean launch time, or
its kernel variant's where that is wider (hostlink.model.bands); device memory takes
its own (the families BFS repeated with its graph in GPU memory)."""
from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import pytest

from hostlink.model.bands import half_width_pct, spread_pct
from hostlink.traces.graphs import kron, write_bel


@pytest.fixture(scope="module")
def graph(tmp_path_factory):
    prefix = tmp_path_factory.mktemp("band") / "kron10"
    write_bel(kron(10, 16), prefix)
    return prefix


def _predict(graph, mode: str, variant: str = "merged_aligned") -> str:
    proc = subprocess.run([sys.executable, "-m", "hostlink.model.cli.main", "predict",
                           "--system", "h200-pcie5", "--fidelity", "analytic", "--mode", mode,
                           "--graph", str(graph), "--kernel", "bfs", "--variant",
                           variant, "--source", "1"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.mark.parametrize("mode, variant", [("zerocopy", "merged_aligned"),
                                           ("uvm", "merged_aligned"), ("zerocopy", "naive"),
                                           ("device", "merged_aligned")])
def test_the_band_is_the_modes_for_the_runs_launch_length(graph, mode, variant):
    out = _predict(graph, mode, variant)
    time_ms = float(re.search(r": ([0-9.e+]+) ms over", out).group(1))
    band = re.search(r"band: ([0-9.e+]+)-([0-9.e+]+) ms .*\(±([0-9.]+)%, launches of "
                     r"([0-9.e+]+) us on average", out)
    assert band, out
    low, high, half, launch_us = map(float, band.groups())
    assert half == pytest.approx(half_width_pct(spread_pct(), mode, launch_us, variant), abs=0.05)
    if variant == "naive":   # its launches are long, and the naive walk's band is wider
        assert launch_us > 50 and "the naive walk's own band" in out
        assert half == pytest.approx(spread_pct()[mode]["by_variant"]["naive"]["half_width_pct"],
                                     abs=0.05)
    else:
        assert "own band" not in out
    if variant != "naive" and mode in ("zerocopy", "device"):   # short launches: widest class
        assert launch_us < 20 and half > spread_pct()[mode]["half_width_pct"]
    assert low == pytest.approx(time_ms * max(0.0, 1 - half / 100), rel=2e-3, abs=1e-4)
    assert high == pytest.approx(time_ms * (1 + half / 100), rel=2e-3)


def test_device_memory_takes_its_own_band_and_a_mode_without_repeats_none(graph):
    spread = spread_pct()
    assert spread["device"]["half_width_pct"] != spread["zerocopy"]["half_width_pct"]
    assert spread["device"]["runs"] and all(r.startswith("families/") for r in
                                            spread["device"]["runs"])
    without = {m: v for m, v in spread.items() if m != "device"}
    assert np.isnan(half_width_pct(without, "device", 10.0, "naive"))
