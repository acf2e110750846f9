"""Golden values (tests/golden/pcie_*.csv, dram_*.csv): the seeds' figures and
spec-derived numbers, each recomputed by the model in the unit its source uses."""
from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np
import pytest

from hostlink.model import dram
from hostlink.model.analytic import SizeHistogram, evaluate, outstanding_for
from hostlink.model.pcie import spec, tlp
from hostlink.model.units import parse_quantity

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
FILES = sorted(GOLDEN.glob("pcie_*.csv")) + sorted(GOLDEN.glob("dram_*.csv"))
COLUMNS = ["source", "where", "config", "metric", "value", "unit", "tol_pct"]

# Golden unit -> how many of the model's units (GB/s, fractions, counts) make one.
UNIT_SCALE = {"GB/s": 1.0, "GiB/s": 2**30 / 1e9, "%": 0.01, "requests": 1.0}


def _config(text: str) -> dict:
    out = {}
    for part in text.split(";"):
        key, _, value = part.partition("=")
        key, value = key.strip(), value.strip()
        if key == "expect_bound":
            out[key] = value
        elif key.endswith(("_GBps", "_ns")):
            out[key] = parse_quantity(value, key)
        else:
            out[key] = float(value) if "." in value else int(value)
    return out


def _link(c: dict) -> dict:
    keys = ("gen", "lanes", "tags", "rtt_ns", "mps_B", "framing_B")
    return {k: c[k] for k in keys if k in c}


def compute(metric: str, c: dict):
    """The model's value of ``metric`` (GB/s, fraction or count), and extra checks."""
    if metric == "raw":
        return float(spec.raw_GBps(c["gen"], c["lanes"]))
    if metric == "tlp_area":
        return float(spec.raw_GBps(c["gen"], c["lanes"]) * spec.flit_tlp_fraction(True))
    if metric == "link_overhead":
        raw = spec.raw_GBps(c["gen"], c["lanes"])
        return float(1 - spec.tlp_capacity_GBps(c["gen"], c["lanes"], c["mps_B"]) / raw)
    if metric == "bw_tags":
        r = evaluate(SizeHistogram.of(c["request_B"]), **_link(c))
        if "expect_bound" in c:
            assert r.bound == c["expect_bound"]
        return float(r.bw_tags_GBps)
    if metric in ("outstanding_to_saturate", "outstanding_to_saturate_ceil"):
        n = float(outstanding_for(c["bw_GBps"], c["request_B"], c["rtt_ns"]))
        return math.ceil(n) if metric.endswith("_ceil") else n
    if metric == "tlp_overhead_ratio":
        p = tlp.packetize_reads(0, c["request_B"], gen=c["gen"], framing_B=c.get("framing_B"))
        return float(1 - p.down_efficiency)
    if metric == "dram_bw":
        return float(dram.effective_read_GBps(
            c["request_B"], channels=c["channels"], transfer_rate_MTps=c["transfer_rate_MTps"],
            channel_width_bits=c["channel_width_bits"], burst_B=c["burst_B"], efficiency=1.0))
    raise AssertionError(f"unknown golden metric {metric!r}")


def _rows():
    rows = []
    for path in FILES:
        with open(path, newline="") as fh:
            reader = csv.DictReader(fh)
            assert reader.fieldnames == COLUMNS, path.name
            for i, row in enumerate(reader, start=2):
                rows.append(pytest.param(row, id=f"{path.stem}:{i}:{row['metric']}"))
    return rows


def test_golden_files_exist():
    names = {p.name for p in FILES}
    assert {"pcie_seed.csv", "pcie_spec.csv", "dram_seed.csv"} <= names


@pytest.mark.parametrize("row", _rows())
def test_golden(row):
    assert row["source"].strip() and row["where"].strip(), "every golden value names its source"
    assert row["unit"] in UNIT_SCALE, row["unit"]
    value, tol = float(row["value"]), float(row["tol_pct"])
    got = compute(row["metric"], _config(row["config"])) / UNIT_SCALE[row["unit"]]
    if tol == 0:
        assert got == value
    else:
        assert abs(got - value) <= tol / 100 * abs(value), \
            f"model {got:.6g} vs {value} {row['unit']}"


def test_unit_conversion_matters_for_the_seed_figures():
    # The same figures read as decimal GB/s would miss their goldens: 8.19 vs 7.63.
    r = evaluate(SizeHistogram.of(32), gen=3, lanes=16, tags=256, rtt_ns=1000.0)
    assert not np.isclose(r.bw_tags_GBps, 7.63, rtol=0.01)
    assert np.isclose(r.bw_tags_GBps * 1e9 / 2**30, 7.63, rtol=0.001)
