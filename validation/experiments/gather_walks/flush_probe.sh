#!/bin/bash
# Is a short kernel's slow walking past the reach the L2 flush before it?
# (validation/experiments/gather_walks/README.md) zc_read's random 128 B lines in
# kernels of 262144 lines over 1, 4 and 16 GiB, each repetition on fresh lines
# (--seed-step 1): after an L2 flush as every timed kernel has (--l2-flush 1), and
# without one (--l2-flush 0: the page-table entries the previous kernels walked may
# still be in the L2); and kernels of 4 M lines after a flush. Run from the
# repository root on the lent GPU with OUT set; packed into $OUT/gather_flush.tar.gz.
source "$(dirname "$0")/../tools/probe_common.sh"
probe_start gather_flush bin/zc_read
for flush in 1 0; do
  gpu_kernels/bin/zc_read --pattern random --region-B 1GiB,4GiB,16GiB --bytes-per-lane 4 \
    --memory-mode zerocopy --unroll 1 --total-B 32MiB --reps 5 --seed-step 1 --l2-flush $flush \
    >> "$W/zc_read.jsonl" 2>> "$W/log.txt"
  echo "$(date -u +%T) 262144 lines, flush $flush: rc $?" | tee -a "$W/log.txt"
done
gpu_kernels/bin/zc_read --pattern random --region-B 1GiB,4GiB,16GiB --bytes-per-lane 4 \
  --memory-mode zerocopy --unroll 1 --total-B 512MiB --reps 5 --seed-step 1 \
  >> "$W/zc_read.jsonl" 2>> "$W/log.txt"
echo "$(date -u +%T) 4 M lines, flush 1: rc $?" | tee -a "$W/log.txt"
wc -l "$W"/*.jsonl
probe_pack gather_flush
