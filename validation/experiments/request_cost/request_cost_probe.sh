#!/bin/bash
# How long one warp's load instruction takes against the requests it sends, in device
# memory beside pinned host memory: gpu_kernels/bin/zc_warps with 1, 4 and 16 warps
# (one per SM), coalesced reads of 1 to 32 lines a round and strided reads of one
# 32 B sector per lane (32 lines a load), default cache operator and ld.cv, unroll 1
# to 8; 16 MiB per point (far below either memory), 3 repetitions; then the same
# warps under Nsight Compute for their L1 and L2 request counts.
# --clock-control none: the card's clocks untouched. Run from the repository root on
# the lent GPU with OUT set; everything lands in $OUT/request_cost.tar.gz.
source "$(dirname "$0")/../tools/probe_common.sh"
probe_start request_cost bin/zc_warps
Z=gpu_kernels/bin/zc_warps
COMMON="--warps 1,4,16 --total-B 16MiB --max-per-warp-B 256KiB --reps 3 --memory-mode device,zerocopy --cache default,cv"
{
$Z --pattern coalesced --bytes-per-lane 4,16 --unroll 1,2,4,8 $COMMON
$Z --pattern strided --chunk-B 128,4096 --bytes-per-lane 4 --unroll 1,4 $COMMON
} > $W/plain.jsonl 2> $W/plain.err
echo "plain rc $? lines $(grep -c measurement $W/plain.jsonl)"
M="gpu__time_duration.sum,smsp__inst_executed.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_miss.sum,lts__t_requests_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_read.sum"
timeout 300 ncu --clock-control none -k regex:read_kernel --csv --page raw --metrics $M \
  $Z --pattern strided,coalesced --chunk-B 4096 --bytes-per-lane 4 --unroll 1 --warps 1 \
  --total-B 1MiB --max-per-warp-B 64KiB --reps 1 --memory-mode device,zerocopy --cache default,cv \
  > $W/ncu.csv 2> $W/ncu.err
echo "ncu rc $?"
probe_pack request_cost
