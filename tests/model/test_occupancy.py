"""CTAs an SM holds at once (hostlink.model.occupancy): warp slots and registers."""
from __future__ import annotations

import numpy as np

from hostlink.model.config import load_system
from hostlink.model.des.inputs import layout
from hostlink.model.occupancy import ctas_per_sm, launch_shapes
from hostlink.model.workload import LaunchInfo, RequestStream


def test_warp_slots_bind_when_the_registers_fit():
    # 64 warp slots, 64 K registers: 32 registers a thread fill the file exactly
    assert ctas_per_sm(64, 65536, 8) == 8
    assert ctas_per_sm(64, 65536, 8, 32) == 8
    assert ctas_per_sm(64, 65536, 8, 0) == 8          # unknown: the slots alone


def test_registers_are_allocated_per_warp_in_units_of_256():
    # 58 registers x 32 lanes = 1856, allocated 2048: 32 warps, 4 CTAs of 8
    assert ctas_per_sm(64, 65536, 8, 58) == 4
    # 44 x 32 = 1408 -> 1536: 42 warps, 5 CTAs of 8
    assert ctas_per_sm(64, 65536, 8, 44) == 5
    # 40 x 32 = 1280, a multiple of 256: 51 warps, 6 CTAs of 8
    assert ctas_per_sm(64, 65536, 8, 40) == 6
    # 33 registers cost as much as 40
    assert ctas_per_sm(64, 65536, 8, 33) == 6
    # a CTA too large for the file still runs, one at a time
    assert ctas_per_sm(64, 65536, 32, 255) == 1
    assert list(ctas_per_sm(64, 65536, np.array([8, 8]), np.array([32, 58]))) == [8, 4]


def test_the_engines_slots_follow_the_launch_registers():
    system = load_system("h200-pcie5")
    n = 4
    stream = RequestStream(launch=np.array([0, 0, 1, 1]), warp=np.array([0, 1, 0, 1]),
                           inst=np.zeros(n), addr=np.arange(n, dtype=np.uint64) * 128,
                           size_B=np.full(n, 128), useful_B=np.full(n, 128),
                           space=np.zeros(n, np.uint8), is_write=np.zeros(n, bool),
                           launches=(LaunchInfo("a", 1, 8, 256, regs_per_thread=32),
                                     LaunchInfo("b", 1, 8, 256, regs_per_thread=58)))
    slots = layout(stream, system)["launch_slots"]
    assert slots.tolist() == [132 * 8, 132 * 4]


def test_a_launch_without_a_record_is_a_warp_per_cta_of_unknown_registers():
    infos = (LaunchInfo("k", 4, 8, 256, regs_per_thread=40), LaunchInfo("k", 2, 0, 0))
    wpc, regs = launch_shapes(infos, 3)
    assert wpc.tolist() == [8, 1, 1] and regs.tolist() == [40, 0, 0]
    assert launch_shapes(infos, 1)[0].tolist() == [8]
