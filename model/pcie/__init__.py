"""PCIe: specification tables (:mod:`.spec`) and the one TLP packetiser (:mod:`.tlp`)."""
from hostlink.model.pcie import spec
from hostlink.model.pcie.tlp import (ReadPackets, TlpFormat, TlpList, WritePackets, expand_reads,
                                     expand_writes, packetize_reads, packetize_writes)

__all__ = ["spec", "TlpFormat", "ReadPackets", "WritePackets", "TlpList", "packetize_reads",
           "packetize_writes", "expand_reads", "expand_writes"]
