#!/bin/bash
# How fast an SM sends random lines that the L2 holds, beside lines that DRAM
# serves: gpu_kernels/bin/zc_warps scatter reads of device memory (each lane its
# own 8 B word, so a load touches up to 32 lines, as a BFS's label reads do) over
# an 8 MiB region (the L2 holds it after the warm-up; --l2-flush 0) and a 4 GiB
# one, at 8, 32 and 64 warps per SM, 1 and 4 loads in flight, with the default
# operator and ld.cg (no L1). The model's SM issue stage lets one line out per
# gpu.sm_request_ns (4.34 ns), fitted on strided reads that DRAM served
# (validation/experiments/request_share). Run from the repository root on the
# lent GPU with OUT set.
source "$(dirname "$0")/../tools/probe_common.sh"
probe_start scatter_l2 bin/zc_warps
Z=gpu_kernels/bin/zc_warps
SMS=132     # the lent H100s and H200s (the device record in plain.jsonl says so)
COMMON="--pattern scatter --memory-mode device --bytes-per-lane 8 --total-B 512MiB --max-per-warp-B 512MiB --reps 3"
{
$Z $COMMON --region-B 8MiB,4GiB --warps $((8 * SMS)),$((32 * SMS)),$((64 * SMS)) --unroll 1,4 \
  --cache default,cg --l2-flush 0
$Z $COMMON --region-B 8MiB --warps $((64 * SMS)) --unroll 4 --cache default,cg --l2-flush 1
} > "$W/plain.jsonl" 2> "$W/plain.err"
echo "scatter: rc $? lines $(grep -c measurement "$W/plain.jsonl")"
tail -3 "$W/plain.err"
probe_pack scatter_l2
