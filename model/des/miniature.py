"""A scale model of the GPU and its host: a share of every resource the warps contend for.

``miniature(inputs, share)`` turns the engine's inputs for the whole GPU into
those of a machine that has ``share`` of it: ``share`` of the SMs (rounded,
at least one) and so of the CTA slots, of the link's rate in each direction,
of the host DRAM's and of device memory's rates, and of the tags, completion
credits and page walkers. Every latency stays (below): the round trip, the
GPU's way back to the warp, DRAM's and device memory's latencies, the SM's
issue gaps.

A uniform sample of ``share`` of a launch's CTAs, run on the miniature, then
keeps what sets the launch's time on the whole GPU: each resource carries the
same load per unit of time, a queue holds the same number of requests and a
request waits as long in it, the resident warps stand in the same number of
waves over the CTAs, and a warp's walk of a long list takes as many round
trips, each as long. The dispatcher keeps its pace: a sampled CTA keeps its
place in the grid and so its start (``cta_start_ns``), and a share of the
CTAs reaches a share of the SMs over the whole launch's dispatch. So the
sample takes about as long as the whole launch,
its tail included: a long walk that starts late and runs on alone after the
other warps' bytes have moved ends a miniature as it ends the launch, which
scaling a sample's time by its bytes cannot show. (A scale model in the
sense of similitude: the dimensionless loads, queue lengths and waves, are
kept; Buckingham, Phys. Rev. 4, 1914.)

A request's own service does not divide: on the miniature's link a request
holds the link ``1 / share`` times as long, and host DRAM, device memory and
the L2's server of a launch's shared words (``warp_shared_ns``) likewise, which
an idle machine's round trip would show (a 128 B read on PCIe 5.0 x16: 2.5 ns
each way on the whole link, 330 ns on a 132nd of it). So the miniature's round
trip (device memory's latency) is shortened by that growth for the mean read of
the stream: an idle miniature's read takes as long as on
the whole machine, and a loaded one waits behind ``share`` as many requests,
each served ``1 / share`` times as long, as long as on the whole machine.

Assumptions: reads of other sizes than the mean keep a residue of the growth;
posted writes leave the miniature's link ``1 / share`` times as slowly; the
rounding of the SMs (a miniature of 8 SMs stands for 8.25) changes their
share alone, not the link's. The scaling is exact where the link is saturated
(its queue holds the warps' requests, ``share`` as many) or idle. In between,
a queue at a given load holds about as many requests on either machine, and
the miniature serves each ``1 / share`` times as long, so its reads wait
longer, the more so the smaller the miniature: a level of urand21's merged
BFS, which keeps the link busy but not full, came out 2.2% slow on 2 SMs and
0.2% on 6, so samples run on 6 SMs at the least
(:data:`hostlink.traces.sampled.MIN_MINIATURE_SMS`). Serving the miniature's
link as ``1 / share`` servers at the whole link's rate would remove the rest.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from hostlink.model.des.events import (DEVICE_ATOMIC, DEVICE_READ, HOST_READ, UNLIMITED,
                                       DesInputs)


def miniature_sms(sm_count: int, share: float) -> int:
    """SMs of a miniature of ``share`` of a GPU of ``sm_count`` SMs (at least one)."""
    return max(1, int(round(sm_count * share)))


def miniature(inputs: DesInputs, share: float) -> DesInputs:
    """``inputs`` on a machine of ``share`` of the GPU and its host (module doc)."""
    if not 0 < share <= 1:
        raise ValueError(f"a miniature's share must lie in (0, 1], not {share}")
    if share == 1:
        return inputs
    c = inputs.costs
    costs = dataclasses.replace(c, ser_up_ns=c.ser_up_ns / share,
                                ser_down_ns=c.ser_down_ns / share,
                                dram_ns=c.dram_ns / share, dev_ns=c.dev_ns / share)
    sms = miniature_sms(inputs.sm_count, share)
    slots = np.maximum(1, np.round(inputs.launch_slots * (sms / max(inputs.sm_count, 1))))

    def credits(n: int, least: int) -> int:
        # a credit pool no request can outgrow stays as it is
        if n >= UNLIMITED:
            return n
        return max(least, int(round(n * share)))

    # an idle read's time stays: the round trip less the growth of its own service
    grow = 1.0 / share - 1.0
    host = inputs.kind == HOST_READ
    dev = (inputs.kind == DEVICE_READ) | (inputs.kind == DEVICE_ATOMIC)
    own = c.ser_up_ns + c.ser_down_ns + c.dram_ns
    rtt_ns = float(inputs.rtt_ns)
    if host.any():
        rtt_ns = max(0.0, rtt_ns - grow * float(own[inputs.cost_id[host]].mean()))
    device_lat_ns = float(inputs.device_lat_ns)
    if dev.any():
        device_lat_ns = max(0.0, device_lat_ns - grow * float(c.dev_ns[inputs.cost_id[dev]]
                                                                  .mean()))
    need = (int(c.need_tags.max()) if len(c.need_tags) else 1,
            int(c.need_hdr.max()) if len(c.need_hdr) else 1,
            int(c.need_data_B.max()) if len(c.need_data_B) else 1)
    return dataclasses.replace(
        inputs, costs=costs, sm_count=sms, launch_slots=slots.astype(np.int64),
        tags=credits(int(inputs.tags), max(1, need[0])),
        cpl_hdrs=credits(int(inputs.cpl_hdrs), max(1, need[1])),
        cpl_data_B=credits(int(inputs.cpl_data_B), max(1, need[2])),
        walkers=max(1, int(round(inputs.walkers * share))), rtt_ns=rtt_ns,
        device_lat_ns=device_lat_ns,
        warp_shared_ns=(None if inputs.warp_shared_ns is None
                        else np.asarray(inputs.warp_shared_ns) / share))
