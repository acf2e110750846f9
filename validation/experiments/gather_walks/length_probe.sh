#!/bin/bash
# Past the reach, do random lines walk as slowly as the gather's rows when the
# kernel is as short, or when the table is the process's only allocation?
# (validation/experiments/gather_walks/README.md) zc_read's random 128 B lines over
# 16 GiB in kernels of 262144 lines (as gather/manifest.toml's rows) and of 4 M
# lines (random_reach's); gather's 128 B rows (rows folded, ids loaded) from a
# 16 GiB table that is the process's only table. Run from the repository root on
# the lent GPU with OUT set; packed into $OUT/gather_length.tar.gz.
source "$(dirname "$0")/../tools/probe_common.sh"
probe_start gather_length bin/gather bin/zc_read
for total in 32MiB 512MiB; do
  gpu_kernels/bin/zc_read --pattern random --region-B 16GiB --bytes-per-lane 4 --memory-mode zerocopy \
    --unroll 1 --total-B $total --reps 5 >> "$W/zc_read.jsonl" 2>> "$W/log.txt"
  echo "$(date -u +%T) zc_read random, $total: rc $?" | tee -a "$W/log.txt"
done
gpu_kernels/bin/gather --ids uniform --table-B 16GiB --row-B 128 --variant aligned --lane-B 4 \
  --memory-mode zerocopy --rows 262144 --reps 5 --store fold >> "$W/gather.jsonl" 2>> "$W/log.txt"
echo "$(date -u +%T) gather, one 16 GiB table: rc $?" | tee -a "$W/log.txt"
wc -l "$W"/*.jsonl
probe_pack gather_length
