#!/bin/bash
# Nsight Compute counters beside cv_pages_probe.sh: 16 warps (one per SM) reading
# pinned host memory strided, 4 B per lane, unroll 1, with ld.cv and the default
# operator over 128 B and 4 KiB chunks: the L1's requests and sectors and the L2's
# sysmem read requests, sectors, lookup hits and misses and sysmem fills.
# --clock-control none: the card's clocks untouched. Run from the repository root
# on the lent GPU with OUT set; everything lands in $OUT/cv_pages_ncu.tar.gz.
source "$(dirname "$0")/../tools/probe_common.sh"
probe_start cv_pages_ncu bin/zc_warps
Z=gpu_kernels/bin/zc_warps
M="gpu__time_duration.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,lts__t_requests_srcunit_tex_aperture_sysmem_op_read.sum,lts__t_sectors_srcunit_tex_aperture_sysmem_op_read.sum,lts__t_sectors_srcunit_tex_aperture_sysmem_op_read_lookup_hit.sum,lts__t_sectors_srcunit_tex_aperture_sysmem_op_read_lookup_miss.sum,lts__d_sectors_fill_sysmem.sum"
timeout 300 ncu --clock-control none -k regex:read_kernel --csv --page raw --metrics $M \
  $Z --pattern strided --chunk-B 128,4096 --bytes-per-lane 4 --unroll 1 --warps 16 \
  --total-B 4MiB --max-per-warp-B 256KiB --reps 1 --memory-mode zerocopy --cache default,cv \
  > $W/ncu.csv 2> $W/ncu.err
echo "ncu rc $?"
probe_pack cv_pages_ncu
