"""Moving a calibrated system to other parts: every key has a class and a rule,
SM costs keep their cycles, link queueing keeps its bytes, the driver stays."""
from __future__ import annotations

import pytest

from hostlink.model.config import load_system
from hostlink.model.config.transfer import CLASSES, HOWS, RULES, all_keys, transfer



def test_every_key_of_the_schema_has_one_class_and_rule():
    assert set(RULES) == set(all_keys())
    assert {r.cls for r in RULES.values()} == set(CLASSES)
    assert {r.how for r in RULES.values()} <= set(HOWS)


@pytest.fixture(scope="module")
def h200():
    return load_system("h200-pcie5")


@pytest.fixture(scope="module")
def v100(h200):
    return transfer(h200, link="pcie/gen3_x16", host="host/ddr4_2933_4ch", gpu="gpu/v100_sxm2",
                    name="v100-moved")


def test_sm_costs_keep_their_cycles(h200, v100):
    for key in ("request_gap_ns", "host_request_gap_ns", "random_load_ns", "l1_hit_ns"):
        cycles_before = getattr(h200.gpu, key) * h200.gpu.clock_MHz
        assert getattr(v100.gpu, key) * v100.gpu.clock_MHz == pytest.approx(cycles_before)
    assert v100.gpu.clock_MHz == 1530   # the V100 SXM2 boost clock of its part preset
    assert "the same SM cycles at 1530 MHz" in v100.provenance["gpu.request_gap_ns"]


def test_datasheet_keys_come_from_the_new_part(v100):
    assert (v100.gpu.sm_count, v100.gpu.max_outstanding_host_reads) == (80, 256)
    assert (v100.host.channels, v100.host.transfer_rate_MTps) == (4, 2933)
    assert (v100.link.gen, v100.link.tags) == (3, 256)


def test_the_round_trips_growth_with_load_stays_with_the_host(h200, v100):
    assert transfer(h200, link="gen3_x16").link.rtt_at_full_link_ns == \
        h200.link.rtt_at_full_link_ns
    assert v100.link.rtt_at_full_link_ns == 0.0    # another host: its own, unmeasured


def test_driver_costs_are_kept_and_say_where_from(h200, v100):
    for key in ("block_us", "copy_page_us", "move_page_us", "first_fault_us", "batch_base_us"):
        assert getattr(v100.uvm, key) == getattr(h200.uvm, key)
    assert v100.provenance["uvm.block_us"].startswith("kept from h200-pcie5: measured")


def test_host_values_do_not_move_to_another_host(h200, v100):
    assert h200.host.serve_GBps is not None and v100.host.serve_GBps is None
    assert v100.link.rtt_ns == load_system("v100-pcie3").link.rtt_ns != h200.link.rtt_ns
    assert "h200" not in v100.provenance["link.rtt_ns"]
    same_host = transfer(h200, link="pcie/gen4_x16")
    assert same_host.link.rtt_ns == h200.link.rtt_ns
    assert same_host.host.serve_GBps == h200.host.serve_GBps


def test_measured_values_of_the_target_win(h200):
    s = transfer(h200, link="gen3_x16", host="ddr4_2933_4ch", gpu="v100_sxm2",
                 measured={"link.rtt_ns": (1000.0, "seed: emogi_vldb2020 §3.3")})
    assert s.link.rtt_ns == 1000.0 and s.provenance["link.rtt_ns"].startswith("seed")


def test_moving_to_flit_mode_drops_the_measured_dllp_share(h200):
    s = transfer(h200, link="gen6_x16")
    assert s.link.uses_flit_mode and s.link.tags == 16384 and s.link.dllp_overhead is None
    assert transfer(h200, link="gen4_x16").link.dllp_overhead == h200.link.dllp_overhead
