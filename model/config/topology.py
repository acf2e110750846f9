"""A host with several sockets and GPUs: the ``[topology]`` section of a system preset.

A topology lists the host's sockets (each a NUMA node with its own DRAM, a host
preset), the link between sockets (its bandwidth per direction and the latency
it adds to a read that crosses it), the PCIe switches (each on a socket, with an
uplink that all GPUs behind it share) and the GPUs (each on a socket or behind a
switch, optionally with its own system preset: its own calibration). Socket
``k`` is NUMA node ``k``. Every value is checked here, once, with the ranges and
provenance of its field; a bad value raises :class:`ConfigError` naming the file
and the key (``topology.gpus[2].socket``).

TOML shape (in a file under ``sim_configs/system/``)::

    [topology]
    name = "2s-4gpu"
    sockets = [{host = "host/ddr4_2133_4ch"}, {host = "host/ddr4_2133_4ch"}]
    inter_socket = {bandwidth_GBps = 30.6, lat_ns = 60}
    switches = [{name = "sw0", socket = 0, uplink = "pcie/gen3_x16"}]
    gpus = [{socket = 0}, {switch = "sw0"}, {socket = 1, system = "h200-pcie5"}]

Provenance of topology values goes into the system's ``[provenance]`` table
under ``topology.*`` keys, so the config stays hashable. A resolved system file
(:func:`hostlink.model.config.write_resolved`) holds one GPU's system: it leaves
the topology out.

References: PCIe Base Specification (a switch's upstream port carries all its
downstream ports' traffic); the Linux NUMA model (``numactl --membind``: each
buffer lives on one node).
"""
from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass, field
from typing import Annotated, Any

from pydantic import BaseModel, Field, create_model

from hostlink.model.config.fields import param, section_model
from hostlink.model.config.schema import HostMemoryConfig, LinkConfig
from hostlink.model.errors import ConfigError
from hostlink.model.tomlcheck import TomlModel, check


# declarations repeat in shape on purpose, as in hostlink.model.config.schema: one key,
# one declaration.
@dataclass(frozen=True)
class InterSocketConfig:
    """The link between two sockets (QPI, UPI, Infinity Fabric, SMP bus)."""
    bandwidth_GBps: float = param(38.4, doc="bytes a second the link carries per direction "
                                  "for reads of the other socket's memory", gt=0, le=1e4,
                                  provenance="datasheet")
    lat_ns: float = param(60.0, doc="what a read of the other socket's memory adds to the "
                          "round trip of a read of local memory", ge=0, le=1e5,
                          provenance="assumption")


@dataclass(frozen=True)
class SocketConfig:
    """One socket: a NUMA node and the DRAM on it."""
    name: str = param("socket", doc="label")
    host: HostMemoryConfig = field(default_factory=HostMemoryConfig)


@dataclass(frozen=True)
class SwitchConfig:
    """A PCIe switch: its GPUs share its uplink to a socket's root port."""
    name: str = param("switch", doc="label the GPUs name it by")
    socket: int = param(0, doc="socket (NUMA node) the uplink's root port is on", ge=0, le=63)
    uplink: LinkConfig = field(default_factory=LinkConfig)


@dataclass(frozen=True)
class GpuAttachment:
    """Where a GPU sits: on a socket's root port or behind a switch."""
    name: str = param("gpu", doc="label")
    socket: int = param(0, doc="socket (NUMA node) of its root port, or of its switch's",
                        ge=0, le=63)
    switch: str | None = param(None, doc="switch it sits behind; None: on the socket's "
                               "root port", optional=True)
    system: str | None = param(None, doc="system preset of this GPU's own link and "
                               "calibration; None: the enclosing system", optional=True)


@dataclass(frozen=True)
class TopologyConfig:
    """Sockets, the link between them, switches and GPUs of one host."""
    name: str = param("custom", doc="preset name")
    sockets: tuple[SocketConfig, ...] = (SocketConfig(),)
    inter_socket: InterSocketConfig = field(default_factory=InterSocketConfig)
    switches: tuple[SwitchConfig, ...] = ()
    gpus: tuple[GpuAttachment, ...] = (GpuAttachment(),)

    def switch(self, name: str) -> SwitchConfig:
        for s in self.switches:
            if s.name == name:
                return s
        raise ConfigError(f"topology: no switch '{name}'")

    def hops(self, gpu: int, node: int) -> int:
        """Inter-socket links a read from GPU ``gpu`` of memory on ``node`` crosses: every
        other socket is one link away (the sockets fully connected, as in two-socket
        hosts and the four-socket Xeon E5-4600/E7 rings' direct neighbours)."""
        return 0 if self.gpus[gpu].socket == node else 1


def _keys(cls, **parts: Any) -> type[TomlModel]:
    """The table of a ``cls`` entry: its :func:`param` keys, each checked against its
    field, and ``parts`` (preset names)."""
    return create_model(f"{cls.__name__}Table", __base__=section_model(cls), **parts)


@functools.cache
def _topology_model() -> type[TomlModel]:
    preset = (str | None, None)
    return create_model(
        "TopologyTable", __base__=TomlModel,
        name=(str, "custom"),
        sockets=(Annotated[list[_keys(SocketConfig, host=preset)], Field(min_length=1)], ...),
        inter_socket=(section_model(InterSocketConfig), None),
        switches=(list[_keys(SwitchConfig, uplink=preset)], []),
        gpus=(Annotated[list[_keys(GpuAttachment)], Field(min_length=1)], ...))


def _values(table: BaseModel, where: str, path: str, parts: dict | None = None) -> dict:
    """The keys a table set, its preset names loaded as those parts' presets."""
    from hostlink.model.config.loader import load_component
    out = {k: getattr(table, k) for k in table.model_fields_set}
    for key, (section, cls) in (parts or {}).items():
        if out.get(key) is None:
            out.pop(key, None)
            continue
        try:
            values, _, _ = load_component(section, out[key])
        except ConfigError as exc:
            raise ConfigError(f"{where}: '{path}.{key}': {exc}") from None
        out[key] = dataclasses.replace(cls(), **values)
    return out


def load_topology(data: Any, where: str) -> TopologyConfig:
    """The ``[topology]`` table of a system preset, checked."""
    doc = check(_topology_model(), data, where, "topology")
    sockets = tuple(SocketConfig(**_values(s, where, f"topology.sockets[{i}]",
                                           {"host": ("host", HostMemoryConfig)}))
                    for i, s in enumerate(doc.sockets))
    inter_socket = InterSocketConfig(**(_values(doc.inter_socket, where, "topology.inter_socket")
                                        if doc.inter_socket is not None else {}))
    switches = tuple(SwitchConfig(**_values(s, where, f"topology.switches[{i}]",
                                            {"uplink": ("link", LinkConfig)}))
                     for i, s in enumerate(doc.switches))
    gpus = []
    for i, g in enumerate(doc.gpus):
        path = f"topology.gpus[{i}]"
        values = _values(g, where, path)
        values.setdefault("name", f"gpu{i}")
        if values.get("switch") is not None:
            sw = [s for s in switches if s.name == values["switch"]]
            if not sw:
                raise ConfigError(f"{where}: '{path}.switch' = '{values['switch']}' names no "
                                  f"switch (known: {', '.join(s.name for s in switches) or 'none'})")
            if "socket" in values and values["socket"] != sw[0].socket:
                raise ConfigError(f"{where}: '{path}.socket' = {values['socket']} differs from "
                                  f"its switch's socket {sw[0].socket}")
            values["socket"] = sw[0].socket
        gpus.append(GpuAttachment(**values))
    for path, socket in ([(f"topology.gpus[{i}].socket", g.socket) for i, g in enumerate(gpus)]
                         + [(f"topology.switches[{i}].socket", s.socket)
                            for i, s in enumerate(switches)]):
        if socket >= len(sockets):
            raise ConfigError(f"{where}: '{path}' = {socket} but the topology has "
                              f"{len(sockets)} socket(s)")
    names = [s.name for s in switches]
    if len(set(names)) != len(names):
        raise ConfigError(f"{where}: 'topology.switches' names a switch twice")
    return TopologyConfig(name=doc.name, sockets=sockets, inter_socket=inter_socket,
                          switches=switches, gpus=tuple(gpus))


def topology_lines(system) -> list[str]:
    """``hostlink config show``'s lines for a system's topology: each value with its
    source, assumptions marked as such."""
    topo = system.topology
    prov = system.provenance
    lines = [f"[topology] {topo.name}"]
    for k, s in enumerate(topo.sockets):
        h = s.host
        lines.append(f"  socket {k} ({s.name}): host {h.name}, {h.channels} x "
                     f"{h.dram_type}-{h.transfer_rate_MTps:g}")
    if prov.get("topology.sockets"):
        lines.append(f"    # {prov['topology.sockets']}")
    docs = {f.name: f.metadata for f in dataclasses.fields(InterSocketConfig)}
    for key in ("bandwidth_GBps", "lat_ns"):
        source = prov.get(f"topology.inter_socket.{key}", "")
        backed = source.startswith(("seed", "measured", "datasheet"))
        flag = "  (assumption)" if docs[key]["provenance"] == "assumption" and not backed else ""
        lines.append(f"  inter_socket.{key} = {getattr(topo.inter_socket, key)!r}{flag}"
                     + (f"  # {source}" if source else ""))
    for s in topo.switches:
        lines.append(f"  switch {s.name}: socket {s.socket}, uplink gen{s.uplink.gen} "
                     f"x{s.uplink.lanes}")
    for k, g in enumerate(topo.gpus):
        where = f"switch {g.switch}" if g.switch else "root port"
        own = f", system {g.system}" if g.system else ""
        lines.append(f"  gpu {k} ({g.name}): socket {g.socket}, {where}{own}")
    if prov.get("topology.gpus"):
        lines.append(f"    # {prov['topology.gpus']}")
    return lines
