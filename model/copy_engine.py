"""Time of a cudaMemcpy between pinned host memory and the GPU: the copy engine's stream.

The copy engine moves a copy as 256 B requests (NVIDIA/nccl-tests issue #149: the
copy engines read and write PCIe in 256 B requests): host to device, reads whose
completions cross the link; device to host, posted writes. Their bandwidth is the
analytic model's link bound for one request size
(:func:`hostlink.model.analytic.predict_system`), not held to the SMs' limits on host
reads (``gpu.max_outstanding_host_reads``, ``link.cpl_buffer_B``: calibrated from SM
reads). A copy pays ``gpu.copy_setup_ns`` (copies timed back to back in one stream)
and, host to device, one round trip (``link.rtt_ns``) before its first byte.

Assumptions: the copy is large enough that its requests fill the link; the host
memory is pinned (no staging copy).
"""
from __future__ import annotations

#: bytes of one copy-engine request (NVIDIA/nccl-tests #149)
COPY_ENGINE_REQUEST_B = 256


def copy_bw_GBps(system, to_device: bool = True) -> float:
    """The copy engine's streaming bandwidth over the link, GB/s."""
    from hostlink.model.analytic import SizeHistogram, predict_system
    from hostlink.model.config import system_with

    hist = SizeHistogram.of([COPY_ENGINE_REQUEST_B], [1.0], 0, not to_device)
    if system.link.cpl_buffer_B:
        system = system_with(system, {"link.cpl_buffer_B": 0})
    return float(predict_system(system, hist, requester_limit=0).bw_GBps)


def copy_time_ns(system, size_B: int, to_device: bool = True) -> float:
    """Time of one copy of ``size_B`` bytes, ns."""
    bw = copy_bw_GBps(system, to_device)
    return (system.gpu.copy_setup_ns + size_B / bw
            + (system.link.rtt_ns if to_device else 0.0))
