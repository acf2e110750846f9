#!/bin/bash
# Whether the lines of atomics that return queue at a loaded SM as loads' do: the
# device pointer chase (gpu_kernels/bin/ptr_chase) by 1 to 16 warps of one CTA (one SM),
# each with 1 or 32 lanes on nodes of their own, loads (ld.cg and the default operator)
# beside atomicMin that returns the word, over 256 KiB (2048 lines the L2 holds after
# their first lap), 20000 steps, warp 0 timed, 3 repetitions. One warp's atomic of 32
# lines spreads over 94 ns (validation/experiments/atomic_chase/runs/h200); the SM's turns fitted
# to loads through the L1 (gpu.sm_request_ns, 4.34 ns a line) would hold 8 such warps
# 1.1 us a round. Run from the repository root on the lent GPU with OUT set; the
# results land in $OUT/atomic_warps.tar.gz.
source "$(dirname "$0")/../tools/probe_common.sh"
probe_start atomic_warps bin/ptr_chase
P=gpu_kernels/bin/ptr_chase
$P --memory-mode device --stride-B 128 --footprint-B 256KiB --cache cg,default,atomic --lanes 1,32 \
  --warps 1,2,4,8,16 --steps 20000 --reps 3 > $W/plain.jsonl 2> $W/plain.err
echo "ptr_chase rc $? lines $(grep -c measurement $W/plain.jsonl)"
probe_pack atomic_warps
