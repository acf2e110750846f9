"""The presets of the validated GPUs are the calibrations their reports use.

`make presets` writes sim_configs/system/h200-pcie5.toml and h100-pcie5.toml from
the calibrated systems that validation/experiments/first_run/runs/<gpu>/report.md names in
its header ("made with ... --system X"): so `--system h200-pcie5` predicts what
the report predicts, and `hostlink validate report ... --system h200-pcie5`
reproduces it.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from hostlink.model.config import load_any_system, load_system, system_to_dict
from hostlink.model.config.freeze import preset_text
from hostlink.model.config.schema import SECTIONS
from hostlink.model.errors import ConfigError
from hostlink.validation.data_tree import run_dir

REPO = Path(__file__).resolve().parents[2]
#: keys the preset takes from a later measurement than the report's chain: the
#: host threads' row costs (host_read, the chain's last link, which first_run
#: does not use), the cold page-table spans of a flushed L2 (gather_walks, which
#: no first_run twin takes), an SM's rate for lines the L2 serves (scatter_l2),
#: the one-off fault cost of buffers within one VA block (uvm_launches' one_block
#: calibration beside the chain), the L2's time per write to a shared word (flag_writes)
#: and, on the H200, the managed page walks and UVM first
#: touch's fault-service costs fitted on every lease (uvm_sparse's pooled calibration)
HOST_THREADS = {"host.cpu_load_lat_ns", "host.cpu_line_ns", "host.cpu_stream_line_ns",
                "host.cpu_thread_load", "host.cpu_dram_GBps"}
LATER = {"translation.cold_span_ns", "gpu.sm_l2_request_ns", "gpu.shared_write_ns",
         "uvm.launches_one_block_first_fault_us"} | HOST_THREADS
UVM_POOLED = {"uvm.batch_base_us", "uvm.block_us", "uvm.copy_page_us", "uvm.move_page_us",
              "uvm.first_fault_us"}
KEPT = {"h200": {"translation.managed_walkers"} | UVM_POOLED | LATER, "h100": LATER}


def _report_system(gpu: str) -> Path:
    header = (run_dir("first_run", gpu) / "report.md").read_text()
    match = re.search(r"--system (\S+?\.toml)", header)
    assert match, "the report names its system"
    return REPO / match.group(1)


@pytest.mark.parametrize("gpu", ["h200", "h100"])
def test_the_preset_is_the_reports_calibrated_system(gpu):
    preset = load_system(f"{gpu}-pcie5")
    calibrated = load_any_system(str(_report_system(gpu)))
    a, b = system_to_dict(preset), system_to_dict(calibrated)
    for section in SECTIONS:
        for key, value in b[section].items():
            dotted = f"{section}.{key}"
            if key == "name" or dotted in KEPT[gpu]:
                continue
            assert a[section][key] == value, dotted
    for key in ("launch_overhead_us", "level_sync_us"):
        assert a[key] == b[key]
    for dotted in KEPT[gpu]:
        source = preset.provenance[dotted]
        assert source.startswith("measured") and "validation/experiments/" in source, dotted


@pytest.mark.parametrize("gpu", ["h200", "h100"])
def test_every_measured_key_names_a_committed_run(gpu):
    preset = load_system(f"{gpu}-pcie5")
    measured = {k: v for k, v in preset.provenance.items() if v.startswith("measured")}
    assert len(measured) >= 20
    named = 0
    for key, source in measured.items():
        folders = re.findall(r"validation/experiments/[\w/.-]+\w", source)
        named += bool(folders)
        for folder in folders:
            assert (REPO / folder).exists(), (key, folder)
    assert named >= 20          # the rest cite a paper or another key's run


@pytest.mark.parametrize("gpu,part", [("h200", "H200 SXM5 141 GB HBM3e"),
                                      ("h100", "H100 SXM5 80 GB HBM3")])
def test_the_description_names_the_part_and_the_link(gpu, part):
    description = load_system(f"{gpu}-pcie5").description
    assert part in description and "PCIe 5.0 x16" in description


def test_a_frozen_preset_loads_back_as_its_system(tmp_path):
    from hostlink.model.config import system_with
    system = system_with(load_system("v100-pcie3"), {"link.rtt_ns": 812.5,
                                                      "uvm.first_fault_us": 90.0})
    text = preset_text(system, name="mine", description="d", base="v100-pcie3")
    path = tmp_path / "mine.toml"
    path.write_text(text)
    again = load_system(str(path))
    assert again.link.rtt_ns == 812.5 and again.uvm.first_fault_us == 90.0
    assert "rtt_ns = 812.5" in text and "[uvm]" in text
    assert "tags" not in text.split("[link]")[1].split("[")[0]      # unchanged keys stay out


def test_a_system_the_base_cannot_carry_is_refused():
    # a PCIe 3.0 system over the H200's parts: the link's part name would differ
    with pytest.raises(ConfigError, match="would not load as the calibrated system"):
        preset_text(load_system("v100-pcie3"), name="x", description="d", base="h200-pcie5")
