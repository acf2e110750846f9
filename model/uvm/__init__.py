"""UVM (CUDA managed memory) model: page faults, migration, prefetch, eviction.

Public API
----------
``simulate_uvm(stream, system, *, read_mostly=False, accessed_by=False,
capacity_B=None, **options) -> UvmResult``

- ``stream``: a :class:`hostlink.model.workload.RequestStream`. Its host-space
  requests (``space == SPACE_HOST``) are the managed allocation; device-space
  requests are ordinary device memory and only add device time.
- ``system``: a :class:`hostlink.model.config.SystemConfig`; the model reads
  ``system.uvm`` (driver policy), ``system.gpu`` (resident warps, memory
  capacity, device bandwidth).
- ``read_mostly``: ``cudaMemAdviseSetReadMostly`` on the managed allocation:
  read faults duplicate pages (copy, not move), so evicting them is free;
  a GPU write to a page makes that page a migrated, writable copy again.
- ``accessed_by``: ``cudaMemAdviseSetAccessedBy(gpu)`` with the data resident
  on the CPU, on x86 without ATS: nothing migrates; the GPU maps the pages
  remotely and every host request goes over PCIe as a zero-copy request.
  The result's ``remote`` holds those requests for the zero-copy model to
  time; its ``time_s`` is only the device-memory part. ``read_mostly``
  overrides ``accessed_by`` (other advice takes precedence, emogi_vldb2020 §3.1).
- ``capacity_B``: GPU memory the managed data may occupy; default
  ``uvm.gpu_memory_available_GiB``, else ``gpu.memory_GiB``.
- ``options`` (all keyword, documented in :func:`simulate_uvm`): the batch
  service model, the duplicate-fault model, the LRU update rule, the resident
  warp count, a seed that shuffles the warps' run order (default: none), the
  order in which faults reach the buffer ``fault_order`` (default
  "sm_interleaved"), the service costs per VA block, per moved run, per moved
  and per copied page, per fetched and per raised fault and a run's first fault
  ``block_us``, ``move_run_us``, ``move_page_us``, ``copy_page_us``,
  ``fault_us``, ``raised_fault_us`` and ``first_fault_us`` (default 0).

``UvmResult`` (see :mod:`hostlink.model.uvm.result`): ``time_s``
(``service_time_s + device_time_s``; kernel launch overhead and inter-level
synchronisation are not included, the caller adds them), fault counts
(``faults``, ``faults_unique``, ``faults_duplicate``), ``batches``,
``h2d_B`` (migrated host to device, of which ``prefetched_B`` by the
prefetcher), ``d2h_B`` (write-backs on eviction), ``evictions`` (2 MB chunks),
``thrashing_events``, ``thrashing_chunks``, ``write_upgrades``, ``unique_B`` (distinct bytes the requests asked for),
``block_services`` (VA blocks serviced, over batches), ``migration_runs``
(contiguous transfers), ``move_runs`` (contiguous runs moved off the host),
``driver_time_s`` (the per-block, per-run and per-page part of the service
time),
``faults_raised`` (faults the warps raised on pages with none pending),
``read_amplification = h2d_B / unique_B``, ``oversubscription``
(touched pages' bytes over capacity), ``remote`` (a RequestStream or None)
and ``per_launch`` (a tuple of :class:`UvmLaunch`). ``to_dict()`` gives a
JSON-ready dict.

Helpers: :func:`transfer_bw_GBps` (the transfer-rate curve),
:func:`curve_peak_GBps` (its asymptote on a system's link),
:func:`prefetch_time_s` (explicit ``cudaMemPrefetchAsync`` to the GPU),
:func:`prefetch_pages` (the driver's tree rule on one VA block),
:func:`remote_requests` (what SetAccessedBy sends over PCIe).

The assumptions and references are in :mod:`hostlink.model.uvm.model`.
"""
from hostlink.model.uvm.model import (curve_peak_GBps, link_raw_GBps, prefetch_pages,
                                     prefetch_time_s, remote_requests, simulate_uvm,
                                     sm_interleaved_warps, transfer_bw_GBps, unique_bytes)
from hostlink.model.uvm.result import UvmLaunch, UvmResult

__all__ = ["UvmLaunch", "UvmResult", "curve_peak_GBps", "link_raw_GBps", "prefetch_pages",
           "prefetch_time_s", "remote_requests", "simulate_uvm", "sm_interleaved_warps",
           "transfer_bw_GBps", "unique_bytes"]
