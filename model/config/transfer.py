"""Move a calibrated system's values to another combination of parts, by rules per class.

Every key of a system belongs to one class of part: the link (generation,
lanes, tags, framing, flit mode), the host and its root complex (round trip,
serve rate, DRAM, MPS/MRRS/RCB), the GPU (issue stage, caches, reads in
flight, clocks, address translation) or the driver (UVM fault batches,
prefetch, first-launch costs, the host loop's stream items). Each key has one
rule (:data:`RULES`) that says how its value moves when a part changes:

- ``part``: the value is the new part's own: its preset (the PCIe
  specification's for a link, the datasheet's for a host or a GPU), or the
  schema's default where the preset leaves it out. A calibrated value does
  not move to another part.
- ``keep``: the value moves as it is. Used for the driver (the same open
  UVM driver services faults in the same code on any GPU of a driver
  generation: NVIDIA open-gpu-kernel-modules, kernel-open/nvidia-uvm), for the
  GPU's address translation where no public figure tells architectures apart,
  and for a link port's measured DLLP share (a fraction of link time).
  ASSUMPTION for each: no measurement of the target system exists.
- ``host``: kept while the host stays the same; a new host takes its own
  measured value where the caller gives one (``measured``), else the new
  part preset's (or the default, an assumption). The root complex sets the
  round trip and its completion sizes: emogi_vldb2020 §3.3 measured 1.0-1.6 us
  on its PCIe 3.0 platform, well above what the calibrated H200's host gives
  (``sim_configs/system/h200-pcie5.toml``).
- ``cycles``: an SM-side cost in ns is a count of SM clock cycles, so it
  scales by old clock / new clock (Jia et al., "Dissecting the NVIDIA Volta
  GPU Architecture via Microbenchmarking", arXiv:1804.06826, 2018, measure
  cache and issue latencies in clock cycles). ASSUMPTION: the H200's cycle
  counts hold on the target; they differ between architectures (Jia et al.
  give an L1 hit of 28 cycles on Volta against 82 on Pascal), so a value
  moved across architectures is a first estimate, marked as moved.

The round trip's growth with the link's load (``link.rtt_at_full_link_ns``)
is classed with the host, not the link. Were it the link's own queueing, it
would scale with the link's time per byte (an M/D/1 queue's mean wait is
rho S / (2 (1 - rho)) at utilisation rho and service time S; Kleinrock,
Queueing Systems vol. 1, 1975): the growth fitted at Gen5 would become about
four times larger at Gen3. So scaled, merged BFS on the moved V100 would be
held by its 256 tags below the up to 11 GB/s the seed measured with round
trips of 1.0-1.6 us (emogi_vldb2020 §3.3, §5.3.2). The growth is therefore
kept per host, and the V100 takes the seed's 0.6 us (1.6 less 1.0).

:func:`transfer` applies the rules; the provenance of each moved key names
its source system and rule. Values a seed measured on the target system
are passed as ``measured`` with their provenance and win over every rule.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Mapping

from hostlink.model.config.schema import SECTIONS, SYSTEM_SCALARS, SystemConfig

CLASSES = ("link", "host", "gpu", "driver")
HOWS = ("part", "keep", "host", "cycles")


@dataclass(frozen=True)
class Rule:
    cls: str     # one of CLASSES
    how: str     # one of HOWS


def _rules() -> dict[str, Rule]:
    r: dict[str, Rule] = {}

    def put(cls: str, how: str, keys: str) -> None:
        for key in keys.split():
            r[key] = Rule(cls, how)

    put("link", "part", "link.name link.gen link.lanes link.tags link.flit_mode link.framing_B")
    put("link", "keep", "link.dllp_overhead")
    put("host", "host", "link.rtt_ns link.rtt_at_full_link_ns link.mps_B link.mrrs_B "
                        "link.rcb_B link.cpl_split link.addr_64bit link.ecrc host.serve_GBps translation.iommu "
                        "translation.iommu_page_B translation.iommu_iotlb_entries "
                        "translation.iommu_miss_lat_ns")
    put("gpu", "part", "link.cpl_buffer_B link.cpl_buffer_hdrs")
    put("host", "part", " ".join(f"host.{f.name}" for f in dataclasses.fields(SECTIONS["host"])
                                 if f.name != "serve_GBps"))
    put("gpu", "part", "gpu.name gpu.arch gpu.sm_count gpu.max_warps_per_sm gpu.registers_per_sm "
                       "gpu.l1_B gpu.l2_B "
                       "gpu.memory_GiB gpu.device_bw_GBps gpu.clock_MHz "
                       "gpu.max_outstanding_host_reads gpu.loads_in_flight_per_warp "
                       "gpu.max_request_B gpu.caches_host_reads")
    put("gpu", "cycles", "gpu.device_lat_ns gpu.l1_hit_ns gpu.dram_lat_ns gpu.host_path_ns "
                         "gpu.cta_dispatch_ns gpu.shared_write_ns gpu.request_gap_ns "
                         "gpu.host_request_gap_ns "
                         "gpu.sm_request_ns gpu.sm_l2_request_ns gpu.atomic_extra_ns "
                         "gpu.atomic_spread_ns gpu.atomic_sm_ns gpu.random_load_ns "
                         "gpu.random_chain_ns gpu.cv_line_ns gpu.cv_line_gap_ns")
    put("driver", "keep", "gpu.launch_ns gpu.copy_setup_ns")
    put("gpu", "keep", "translation.name translation.enabled translation.page_B "
                       "translation.tlb_entries translation.miss_lat_ns translation.walkers "
                       "translation.managed_walkers translation.cold_span_ns")
    put("driver", "keep", " ".join(f"uvm.{f.name}" for f in dataclasses.fields(SECTIONS["uvm"])
                                   if f.name != "gpu_memory_available_GiB"))
    put("gpu", "part", "uvm.gpu_memory_available_GiB")
    put("driver", "keep", " ".join(f"host_loop.{f.name}"
                                   for f in dataclasses.fields(SECTIONS["host_loop"])))
    put("driver", "keep", "launch_overhead_us level_sync_us")
    return r


#: "section.key" (or a system scalar) -> its class and rule
RULES = _rules()


def all_keys() -> list[str]:
    """Every key of a system that has a value: section.key, plus the scalars."""
    keys = [f"{s}.{f.name}" for s, cls in SECTIONS.items() for f in dataclasses.fields(cls)]
    return keys + [k for k in SYSTEM_SCALARS if k not in ("name", "description")]


def _defaults(section: str) -> dict[str, Any]:
    part = SECTIONS[section]()
    return {f.name: getattr(part, f.name) for f in dataclasses.fields(part)}


def transfer(source: SystemConfig, *, link: str | None = None, host: str | None = None,
             gpu: str | None = None, measured: Mapping[str, tuple[Any, str]] | None = None,
             name: str | None = None, description: str = "") -> SystemConfig:
    """``source`` moved to the parts named (presets: ``pcie/gen3_x16``,
    ``host/ddr4_2933_4ch``, ``gpu/v100_sxm2``; None keeps the source's) by
    :data:`RULES`. ``measured``: ``{"section.key": (value, provenance)}`` of
    the target system, applied last. Each moved key's provenance names the
    source system and the rule."""
    from hostlink.model.config.link_change import swap_link
    from hostlink.model.config.loader import load_component, system_from_dict
    old = {s: {f.name: getattr(getattr(source, s), f.name)
               for f in dataclasses.fields(SECTIONS[s])} for s in SECTIONS}
    old.update({k: getattr(source, k) for k in SYSTEM_SCALARS})
    # the new parts: each a full dict of its section's fields
    new: dict[str, dict] = {}
    part_prov: dict[str, str] = {}
    for section, preset in (("link", link), ("host", host), ("gpu", gpu)):
        if preset is not None:
            values, prov, _ = load_component(section, preset)
            new[section] = {**_defaults(section), **values}
            part_prov.update(prov)
    changed = {"link": link is not None, "host": host is not None, "gpu": gpu is not None,
               "driver": False}
    clock = (source.gpu.clock_MHz, new.get("gpu", old["gpu"])["clock_MHz"])
    out = {k: dict(v) if isinstance(v, dict) else v for k, v in old.items()}
    provenance = dict(source.provenance)
    src = source.name
    for key, rule in RULES.items():
        section, _, field = key.partition(".")
        before = old[section][field] if field else old[key]
        before_prov = source.provenance.get(key)
        if not changed[rule.cls] and not (rule.how == "host" and changed["host"]):
            value, why = before, (f"kept from {src}: {before_prov}" if before_prov else None)
        elif rule.how in ("part", "host"):
            value = new.get(section, _defaults(section))[field]
            why = part_prov.get(key) or (None if rule.how == "part" else
                                          "assumption: not measured on this host")
        elif rule.how == "cycles" and before is not None:
            value = before * clock[0] / clock[1]
            why = (f"moved from {src} ({before:.4g} ns at {clock[0]:g} MHz): the same SM "
                   f"cycles at {clock[1]:g} MHz")
        else:   # keep, or nothing to scale
            value, why = before, (f"kept from {src}: {before_prov}" if before_prov else None)
        if field:
            out[section][field] = value
        else:
            out[key] = value
        if why:
            provenance[key] = why
        else:
            provenance.pop(key, None)
    if link is not None:   # what the generation changes with it (link_change)
        swapped, _ = swap_link(old["link"], link)
        out["link"]["flit_mode"] = swapped["flit_mode"]
        out["link"]["framing_B"] = swapped["framing_B"]
        if swapped["dllp_overhead"] is None:
            out["link"]["dllp_overhead"] = None
            provenance.pop("link.dllp_overhead", None)
    for key, (value, why) in (measured or {}).items():
        section, _, field = key.partition(".")
        if field:
            out[section][field] = value
        else:
            out[key] = value
        provenance[key] = why
    data = {s: {k: v for k, v in out[s].items() if v is not None} for s in SECTIONS}
    data.update({k: out[k] for k in SYSTEM_SCALARS})
    data["name"] = name or source.name
    data["description"] = description or source.description
    system = system_from_dict(data, f"transfer from {src}")
    return dataclasses.replace(system, provenance=provenance)
