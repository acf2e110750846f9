#!/bin/bash
# What slows strided ld.cv reads of host memory once several warps send them
# (validation/experiments/warp_rounds/runs/h100: one warp's strided ld.cv load of 32 sectors
# takes one line's round trip, but 16 warps on 4 KiB chunks read 1.4-3.6 times
# slower than the twin, where 128 B chunks do not): gpu_kernels/bin/zc_warps,
# strided, 4 B per lane, unroll 1, pinned host memory, ld.cv and the default
# operator, chunks of 128 B to 8 KiB (one lane's chunk: from 32 lanes in one 4 KiB
# page to one page per lane), 1 to 264 warps spread one per SM; then 16 and 64
# warps packed 1, 4 and 16 to a block (on 16 to 1 SMs) to tell an SM's limit from
# the GPU's. 16 MiB per point, at most 256 KiB per warp, 3 repetitions.
# With PART=offsets, only chunks of a page or two plus 64 to 256 B (each lane in
# its own page, the lanes' addresses no longer equal in their low 12 bits) beside
# 128 B, 4 KiB and 8 KiB, ld.cv, 16 and 64 warps, into offsets.jsonl: whether
# the pages or the address bits the lanes share set the cost.
# Run from the repository root on the lent GPU with OUT set; everything lands in
# $OUT/cv_pages.tar.gz.
source "$(dirname "$0")/../tools/probe_common.sh"
probe_start cv_pages bin/zc_warps
git rev-parse HEAD > $W/commit.txt 2>/dev/null
Z=gpu_kernels/bin/zc_warps
COMMON="--pattern strided --bytes-per-lane 4 --unroll 1 --total-B 16MiB --max-per-warp-B 256KiB --reps 3 --memory-mode zerocopy"
if [ "${PART:-}" = offsets ]; then
  $Z $COMMON --cache cv --chunk-B 128,2048,2176,4096,4160,4224,4352,8192 --warps 16,64 > $W/offsets.jsonl 2> $W/offsets.err
  echo "offsets rc $? lines $(grep -c measurement $W/offsets.jsonl)"
  probe_pack cv_pages
  exit 0
fi
{
$Z $COMMON --cache cv,default --chunk-B 128,256,512,1024,2048,4096,8192 --warps 1,4,16,64,132,264
for wpb in 1 4 16; do
  $Z $COMMON --cache cv --chunk-B 128,1024,4096 --warps 16,64 --warps-per-block $wpb
done
} > $W/plain.jsonl 2> $W/plain.err
echo "plain rc $? lines $(grep -c measurement $W/plain.jsonl)"
probe_pack cv_pages
