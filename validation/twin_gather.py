"""The gather program's twin: the workload gpu_kernels/micro/gather.cu runs.

A case ``micro/gather/ids=...,table_B=...,row_B=...,variant=...,lane_B=...,memory_mode=...``
(variant and lane_B absent for ``cpu_gather``) is the
:class:`~hostlink.model.workload.Gather` that :func:`hostlink.traces.gather.gather_workload`
builds from the same parameters: the program's row ids (uniform: the same hash;
sampled: :mod:`hostlink.validation.gather_ids`, the file the program read), its
kernel as the emulator replays it, the system's GPU for its grid. The prediction
is :func:`hostlink.model.predict.predict` of that workload; the program's metrics
(``time_ms``, ``bw_GBps``) read off it. Nothing here times anything.

Memory modes map onto predict's: ``zerocopy`` and ``registered`` (pinned either
way) to ``zerocopy``, ``uvm_accessedby`` to itself, ``uvm`` (every rep starts with
the table on the host) to ``uvm``, ``uvm_warm`` and ``cpu_gather`` to the gather's
own modes, ``device`` to ``device``. The program flushes the GPU's L2 before every
timed kernel, so each twin's run starts with its L2 flushed (``l2_flushed``: its
walks fetch page-table entries cold).
"""
from __future__ import annotations

from hostlink.model.errors import HostlinkError

MODE_OF = {"zerocopy": "zerocopy", "registered": "zerocopy", "uvm_accessedby": "uvm_accessedby",
           "uvm": "uvm", "uvm_warm": "uvm_warm", "device": "device",
           "cpu_gather": "cpu_gather"}


def gather_twin(case: str, params: dict, system):
    """(predict's mode, the :class:`~hostlink.model.workload.Gather`) of one gather case;
    :func:`hostlink.validation.twin_micro.build_micro` wraps them in its twin."""
    from hostlink.traces.gather import GatherSpec, gather_workload
    mode = str(params.get("memory_mode", "zerocopy"))
    if mode not in MODE_OF:
        raise HostlinkError(f"case '{case}': no twin for memory mode '{mode}'")
    row_B, table_B = int(params["row_B"]), int(params["table_B"])
    rows = int(params.get("rows", 1 << 20))
    variant = str(params.get("variant", "aligned"))
    lane_B = int(params.get("lane_B", 4))
    ids = str(params.get("ids", "uniform"))
    try:
        spec = GatherSpec(row_B, table_B // row_B, rows, variant, lane_B)
        kwargs = {"seed": int(params.get("seed", 1)), "host_threads": int(params.get("threads", 16)),
                  "page_B": system.uvm.page_B, "exact_counts": False, "l2_flushed": True}
        if ids == "sampled":
            from hostlink.validation.gather_ids import graph_of
            fanouts = str(params.get("fanouts", "10,25"))
            kwargs.update(csr=graph_of(int(params.get("graph_scale", 20))),
                          fanouts=tuple(int(f) for f in fanouts.split(",")),
                          batch=int(params.get("batch", 1024)))
        work = gather_workload(spec, ids, system.gpu, **kwargs)
    except HostlinkError as exc:
        raise HostlinkError(f"case '{case}': {exc}") from None
    return MODE_OF[mode], work
