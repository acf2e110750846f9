"""The seeds' systems built from a calibrated one by the transfer rules, with the seeds' numbers.

Each seed system names its parts (a link preset for its PCIe generation, a
host preset for its DRAM, a GPU preset from its datasheet) and the values the
seed measured on it, each with the seed's sentence. :func:`seed_system`
moves a calibrated system (by default the H200's, ``h200-pcie5``) to those
parts by :mod:`hostlink.model.config.transfer` and sets the measured values
last. Nothing here is fitted to a figure of the seeds.

Sources: emogi_vldb2020 (Min et al., "EMOGI: Efficient Memory-access for
Out-of-memory Graph-traversal in GPUs", VLDB 2020) §3.3, §5.1, §5.3.2, §5.5;
min_dissertation_2022 §3.3.2. The Titan Xp of the seeds' HALO comparison
took the V100's place in the same platform (emogi_vldb2020 §5.6: "we also use
a Titan Xp instead of V100"), so it takes that platform's measurements; the
seed publishes only run times for it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

EMOGI_RTT = ("emogi_vldb2020 §3.3: \"we find the PCIe round trip time (RTT) between the GPU "
             "and the FPGA is about roughly 1.0us to 1.6us\"")
EMOGI_MEMCPY = ("emogi_vldb2020 §5.3.2: \"We measured the maximum achievable PCIe bandwidth "
                "with cudaMemcpy() to be 12.3GB/s\"")
EMOGI_PCIE4 = ("emogi_vldb2020 §5.5: \"PCIe 4.0's measured peak bandwidth, approximately "
               "24GB/s, is twice as much as PCIe 3.0's peak measured bandwidth of "
               "approximately 12GB/s\"")
EMOGI_RCB = ("emogi_vldb2020 §3.3 Fig. 4(b): 128 B reads peak at 12.23 GB/s, which 64 B "
             "completions (the Xeon root port's RCB) give and whole 128 B completions "
             "(13.5 GB/s) do not")
DGX_RTT = ("assumption: min_dissertation_2022 §3.3.2 puts the PCIe round trip at 1-5 us; "
           "1.5 us as the a100 presets before (not measured on the DGX A100)")


@dataclass(frozen=True)
class SeedSystem:
    name: str
    base: str               # the existing system preset whose part presets it names
    description: str
    link: str
    host: str
    gpu: str
    measured: dict[str, tuple[Any, str]] = field(default_factory=dict)


def _dgx_a100(gen: int, link_text: str, transfer_peak_GBps: float) -> SeedSystem:
    """The DGX A100 of emogi_vldb2020 §5.5 with its link at PCIe ``gen``."""
    return SeedSystem(
        f"a100-pcie{gen}-from-h200", f"a100-pcie{gen}",
        f"A100 SXM4 40GB, {link_text}, EPYC 7742, DDR4-3200 x8 (DGX A100, emogi_vldb2020 "
        "§5.5), moved from the calibrated H200",
        f"pcie/gen{gen}_x16", "host/ddr4_3200_8ch", "gpu/a100_sxm4",
        {"link.rtt_ns": (1500.0, DGX_RTT),
         "uvm.transfer_peak_GBps": (transfer_peak_GBps, "seed: " + EMOGI_PCIE4)})


SEED_SYSTEMS = (
    SeedSystem(
        "v100-pcie3-from-h200", "v100-pcie3",
        "Tesla V100 SXM2 16GB, PCIe 3.0 x16, Xeon Gold 6230, DDR4-2933 x4 (emogi_vldb2020 "
        "§5.1), moved from the calibrated H200",
        "pcie/gen3_x16", "host/ddr4_2933_4ch", "gpu/v100_sxm2",
        {"link.rtt_ns": (1000.0, "seed: " + EMOGI_RTT + "; the unloaded end"),
         "link.rtt_at_full_link_ns": (600.0, "seed: " + EMOGI_RTT + "; 1.6 less 1.0 us, "
                                      "taken as the growth at full load"),
         "link.cpl_split": ("rcb", "seed: " + EMOGI_RCB),
         "uvm.transfer_peak_GBps": (12.3, "seed: " + EMOGI_MEMCPY)}),
    SeedSystem(
        "titanxp-pcie3-from-h200", "titanxp-pcie3",
        "NVIDIA TITAN Xp 12GB on the V100's platform, PCIe 3.0 x16, Xeon Gold 6230, "
        "DDR4-2933 x4 (emogi_vldb2020 §5.6), moved from the calibrated H200",
        "pcie/gen3_x16", "host/ddr4_2933_4ch", "gpu/titanxp",
        {"link.rtt_ns": (1000.0, "seed, measured with the V100 on the same platform: "
                         + EMOGI_RTT + "; the unloaded end"),
         "link.rtt_at_full_link_ns": (600.0, "seed, measured with the V100 on the same "
                                      "platform: " + EMOGI_RTT + "; 1.6 less 1.0 us"),
         "link.cpl_split": ("rcb", "seed, the same root port: " + EMOGI_RCB),
         "uvm.transfer_peak_GBps": (12.3, "seed, measured with the V100 on the same "
                                    "platform: " + EMOGI_MEMCPY)}),
    _dgx_a100(3, "root port at PCIe 3.0 x16", 12.0),
    _dgx_a100(4, "PCIe 4.0 x16", 24.0),
)


def seed_system(spec: SeedSystem, source: str = "h200-pcie5"):
    """The seed system ``spec`` moved from the calibrated system ``source``."""
    from hostlink.model.config.loader import load_any_system
    from hostlink.model.config.transfer import transfer
    return transfer(load_any_system(source), link=spec.link, host=spec.host, gpu=spec.gpu,
                    measured=spec.measured, name=spec.name, description=spec.description)


def write_seed_presets(folder: str | Path, source: str = "h200-pcie5") -> list[Path]:
    """Write every seed system as a system preset in ``folder``; the paths written."""
    from hostlink.model.config.freeze import preset_text
    folder = Path(folder)
    out = []
    for spec in SEED_SYSTEMS:
        header = (f"{spec.description}.\nBuilt by `make presets` (hostlink config seeds): "
                  f"{source} moved to these parts by\nhostlink.model.config.transfer, with "
                  "the seed's measured values. Do not edit by hand.")
        text = preset_text(seed_system(spec, source), name=spec.name,
                           description=spec.description, base=spec.base, header=header)
        path = folder / f"{spec.name}.toml"
        path.write_text(text, encoding="utf-8")
        out.append(path)
    return out
