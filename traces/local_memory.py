"""Place each thread's local memory in one shared space, as Accel-Sim does.

Local memory is private to a thread: all 32 lanes of a warp may use the same
local address (Rodinia b+tree's ``STL.64`` at ``0xfffbd0`` from every lane),
and a trace records that per-thread address. Taken as it is, 32 lanes would
share one sector. Accel-Sim's timing model maps a thread's local address into
one space shared by all threads before it coalesces
(gpgpu-sim/gpgpu-sim_distribution, src/gpgpu-sim/shader.cc,
``shader_core_ctx::translate_local_memaddr``, with ``-gpgpu_local_mem_map 1``,
its default; Accel-Sim's trace-driven core calls it for each active lane of
an LDL or STL, gpu-simulator/trace-driven/trace_driven.cc,
``trace_shader_core_ctx::checkExecutionStatusAndUpdate``):

    word D of the thread in slot s lands at 4 * (D * N + s),

with N the thread slots (threads per CTA, padded to whole warps, times the
CTAs that can be resident) and the slots of one CTA's threads contiguous. So
the 32 lanes of a warp reading one word touch 128 contiguous bytes (4
sectors). An access of w > 4 bytes is split there into w / 4 words
(src/abstract_hardware_model.cc, ``memory_coalescing_arch``: "Local memory
accesses >4B were split into 4B chunks").

Here (one address per lane, the access [addr, addr + w) contiguous):

- the local offset ``o`` (the address modulo the 16 MiB local window NVBit
  documents) is word ``D = o // 4`` plus ``o % 4`` bytes; with the lane's
  unit u = max(w, 4) bytes it lands at ``BASE + (D * N + s) * u + o % 4``;
- the slot s is the thread's index in the launch (CTA times padded threads
  per CTA, plus warp * 32 + lane), CTAs taken modulo 65,536 slots, so N is
  the padded threads per CTA times min(CTAs, 65,536) (and at most 2**31,
  slots taken modulo N past it). Accel-Sim reuses a finished CTA's hardware
  slot on its SM; here slots are reused only past 65,536 CTAs, so a later
  CTA rarely hits an earlier one's lines in a cache.

For accesses of 1 to 4 bytes this is Accel-Sim's layout and the sectors are
the same. For w = 8 or 16 at a 4 B aligned offset a full warp touches the
same number of sectors and 128 B lines as Accel-Sim (32 * w contiguous bytes:
w / 4 lines); a partial warp may touch fewer (w = 8, lanes 0-3 active: 1
sector, Accel-Sim 2), and accesses of different widths to one word do not
share addresses. ``BASE`` is 2**61: above every GPU virtual address (49 to 57
bits); 2**22 words, at most 2**31 slots and units of at most 255 B span less
than 2**61 bytes from it, below the 2**62 the coalescer accepts.

:func:`original_offset` inverts the mapping, so a trace written back holds
the tracer's addresses.
"""
from __future__ import annotations

from hostlink.traces.schema import WARP_SIZE, KernelLaunch

LOCAL_WINDOW_B = 16 * 1024 * 1024  # NVBit: nvbit_get_local_mem_base_addr's window
BASE = 1 << 61
MAX_CTA_SLOTS = 1 << 16
MAX_SLOTS = 1 << 31


def _first_slot(cta: int, warp: int, launch: KernelLaunch) -> tuple[int, int]:
    """(slot of the warp's lane 0, thread slots N) of a launch."""
    per_cta = launch.warps_per_cta * WARP_SIZE
    n = min(per_cta * min(launch.ctas, MAX_CTA_SLOTS), MAX_SLOTS)
    return ((cta % MAX_CTA_SLOTS) * per_cta + warp * WARP_SIZE) % n, n


def unit_B(width_B: int) -> int:
    return width_B if width_B >= 4 else 4


def translate(addrs: list[int], mask: int, width_B: int, cta: int, warp: int,
              launch: KernelLaunch) -> list[int]:
    """The 32 lane addresses of a local access, in the shared space (inactive lanes 0)."""
    first, n = _first_slot(cta, warp, launch)
    u = unit_B(width_B)
    out = [0] * WARP_SIZE
    for lane in range(WARP_SIZE):
        if mask >> lane & 1:
            o = addrs[lane] % LOCAL_WINDOW_B
            out[lane] = BASE + (o // 4 * n + (first + lane) % n) * u + o % 4
    return out


def original_offset(addr: int, lane: int, width_B: int, cta: int, warp: int,
                    launch: KernelLaunch) -> int | None:
    """The local offset :func:`translate` placed at ``addr``; None if it placed none there."""
    first, n = _first_slot(cta, warp, launch)
    u = unit_B(width_B)
    if addr < BASE:
        return None
    q, r = divmod(addr - BASE, u)
    word, s = divmod(q, n)
    if r >= 4 or s != (first + lane) % n:
        return None
    return word * 4 + r
