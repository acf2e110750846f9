#!/bin/bash
# Why does a zero-copy gather walk slower than random lines past the translation
# reach? (validation/experiments/gather_walks/README.md)
# gather's uniform rows (aligned, 4 B per lane, pinned table) of 128 B and 1 KiB
# from 1 and 16 GiB tables, as gather/manifest.toml runs them (262144 rows), with
# the kernel's stores and its id loads each taken out (gather --store fold,
# --id-source hash); the same rows over 16x as many rows (a 16x longer kernel);
# and zc_read's random 128 B lines over the same tables (random_reach's points),
# all in one lease. Run from the repository root on the lent GPU with OUT set;
# everything is packed into $OUT/gather_walks.tar.gz (gpu.txt, build.txt, log.txt,
# gather.jsonl, zc_read.jsonl).
source "$(dirname "$0")/../tools/probe_common.sh"
probe_start gather_walks bin/gather bin/zc_read
G=gpu_kernels/bin/gather
common="--ids uniform --table-B 1GiB,16GiB --row-B 128,1024 --variant aligned --lane-B 4 --memory-mode zerocopy --reps 5"
for store in out fold; do
  for ids in array hash; do
    $G $common --rows 262144 --store $store --id-source $ids >> "$W/gather.jsonl" 2>> "$W/log.txt"
    echo "$(date -u +%T) store $store ids $ids: rc $?" | tee -a "$W/log.txt"
  done
done
$G $common --rows 4194304 >> "$W/gather_long.jsonl" 2>> "$W/log.txt"
echo "$(date -u +%T) 4194304 rows: rc $?" | tee -a "$W/log.txt"
gpu_kernels/bin/zc_read --pattern random --region-B 1GiB,16GiB --bytes-per-lane 4 \
  --memory-mode zerocopy --unroll 1 --total-B 512MiB --reps 5 >> "$W/zc_read.jsonl" 2>> "$W/log.txt"
echo "$(date -u +%T) zc_read random: rc $?" | tee -a "$W/log.txt"
wc -l "$W"/*.jsonl
probe_pack gather_walks
