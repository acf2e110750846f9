#!/bin/bash
# Whether the SM's cost per request of a load (validation/experiments/request_cost/runs/h100) is
# paid per warp or shared by the warps of one SM: gpu_kernels/bin/zc_warps in device
# memory with 1, 2, 4 and 8 warps on every SM (132 x 1..8 warps in blocks of that many),
# strided reads (32 sector requests a load; 128 B and 4 KiB chunks) beside coalesced
# reads of 1 and 8 lines a round, default cache operator and ld.cv, 256 MiB per point
# (at most 1.8 TB/s asked of the 3.35 TB/s memory at 8 warps per SM), 3 repetitions.
# Run from the repository root on the lent GPU with OUT set; the results land in
# $OUT/request_share.tar.gz.
source "$(dirname "$0")/../tools/probe_common.sh"
probe_start request_share bin/zc_warps
Z=gpu_kernels/bin/zc_warps
N=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
SMS=132     # the lent H100s and H200s (the programs' device record in plain.jsonl says so)
WARPS=$((SMS)),$((2 * SMS)),$((4 * SMS)),$((8 * SMS))
COMMON="--warps $WARPS --total-B 256MiB --max-per-warp-B 256MiB --reps 3 --memory-mode device --cache default,cv"
{
$Z --pattern strided --chunk-B 128,4096 --bytes-per-lane 4 --unroll 1 $COMMON
$Z --pattern coalesced --bytes-per-lane 4 --unroll 1,8 $COMMON
} > $W/plain.jsonl 2> $W/plain.err
echo "$N: plain rc $? lines $(grep -c measurement $W/plain.jsonl)"
probe_pack request_share
