"""A probe's gpu.txt names its columns in a header line; a run's record takes the GPU,
driver and link from them by name, whatever order the probe asked nvidia-smi for."""
from __future__ import annotations

from hostlink.validation.records import measured_info


def _run(tmp_path, text):
    run = tmp_path / "h100"
    run.mkdir()
    (run / "gpu.txt").write_text(text)
    return measured_info(run)


def test_columns_are_read_by_name(tmp_path):
    info = _run(tmp_path, "name, pcie.link.gen.current, pcie.link.width.current, "
                          "driver_version\nNVIDIA H100 80GB HBM3, 5, 16, 580.159.04\n")
    assert (info["gpu"], info["driver"], info["pcie"]) == (
        "NVIDIA H100 80GB HBM3", "580.159.04", "gen 5 x16")


def test_a_file_without_the_link_gives_no_link(tmp_path):
    info = _run(tmp_path, "name, driver_version, memory.used [MiB], memory.total [MiB]\n"
                          "NVIDIA H100 80GB HBM3, 580.159.04, 0 MiB, 81559 MiB\n")
    assert info["driver"] == "580.159.04" and "pcie" not in info


def test_a_file_without_a_header_takes_the_probes_order(tmp_path):
    info = _run(tmp_path, "NVIDIA H200, 580.159.04, 5, 16\n")
    assert (info["gpu"], info["driver"], info["pcie"]) == ("NVIDIA H200", "580.159.04",
                                                           "gen 5 x16")
