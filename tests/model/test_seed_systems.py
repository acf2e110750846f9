"""The seeds' systems moved from the calibrated H200: the committed presets are what
the rules give, and the seeds' measured values carry the seeds' sentences."""
from __future__ import annotations

import pytest

from hostlink.model.config import load_system
from hostlink.model.config.freeze import preset_text
from hostlink.model.config.loader import find_preset
from hostlink.model.config.seed_systems import SEED_SYSTEMS, seed_system


@pytest.mark.parametrize("spec", SEED_SYSTEMS, ids=lambda s: s.name)
def test_committed_preset_is_what_the_rules_build(spec):
    built = seed_system(spec)
    committed = load_system(spec.name)
    for section in ("link", "host", "gpu", "uvm", "translation", "host_loop"):
        assert getattr(committed, section) == getattr(built, section), section
    text = find_preset("system", spec.name).read_text(encoding="utf-8")
    assert text.split("[system]", 1)[1] == preset_text(
        built, name=spec.name, description=spec.description,
        base=spec.base).split("[system]", 1)[1]


def test_seed_measurements_win_with_their_sentence():
    v100 = load_system("v100-pcie3-from-h200")
    assert v100.uvm.transfer_peak_GBps == 12.3
    assert "cudaMemcpy() to be 12.3GB/s" in v100.provenance["uvm.transfer_peak_GBps"]
    assert v100.link.cpl_split == "rcb"
    assert (v100.link.rtt_ns, v100.link.rtt_at_full_link_ns) == (1000.0, 600.0)  # 1.0-1.6 us
    a4 = load_system("a100-pcie4-from-h200")
    assert a4.uvm.transfer_peak_GBps == 24.0 and "approximately 24GB/s" in \
        a4.provenance["uvm.transfer_peak_GBps"]


def test_the_a100_pair_differs_in_the_link_alone():
    a3, a4 = load_system("a100-pcie3-from-h200"), load_system("a100-pcie4-from-h200")
    assert (a3.link.gen, a3.link.tags, a4.link.gen, a4.link.tags) == (3, 256, 4, 768)
    assert a3.gpu == a4.gpu and a3.host == a4.host
    assert a3.link.rtt_ns == a4.link.rtt_ns
