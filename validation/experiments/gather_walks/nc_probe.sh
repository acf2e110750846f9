#!/bin/bash
# Does the read-only data path walk slower past the translation reach?
# (validation/experiments/gather_walks/README.md) gather_kernel reads its table
# through ld.global.nc (a const __restrict__ pointer); zc_read's random lines use
# ld.global. Here zc_read's random 128 B lines over 1 to 16 GiB with the default
# operator and with ld.global.nc (--cache nc), one load in flight per warp, and
# gather's 128 B and 1 KiB rows of 1 and 16 GiB tables through ld.global.nc (the
# kernel as measured) and ld.global.ca (--load ca), all in one lease. Run from the
# repository root on the lent GPU with OUT set; everything is packed into
# $OUT/gather_nc.tar.gz (gpu.txt, build.txt, log.txt, gather.jsonl, zc_read.jsonl).
source "$(dirname "$0")/../tools/probe_common.sh"
probe_start gather_nc bin/gather bin/zc_read
gpu_kernels/bin/zc_read --pattern random --region-B 1GiB,2GiB,4GiB,8GiB,16GiB --bytes-per-lane 4 \
  --memory-mode zerocopy --unroll 1 --cache default,nc --total-B 512MiB --reps 5 \
  >> "$W/zc_read.jsonl" 2>> "$W/log.txt"
echo "$(date -u +%T) zc_read random: rc $?" | tee -a "$W/log.txt"
for load in nc ca; do
  gpu_kernels/bin/gather --ids uniform --table-B 1GiB,16GiB --row-B 128,1024 --variant aligned \
    --lane-B 4 --memory-mode zerocopy --rows 262144 --reps 5 --store fold --load $load \
    >> "$W/gather.jsonl" 2>> "$W/log.txt"
  echo "$(date -u +%T) gather load $load: rc $?" | tee -a "$W/log.txt"
done
wc -l "$W"/*.jsonl
probe_pack gather_nc
