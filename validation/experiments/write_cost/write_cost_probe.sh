#!/bin/bash
# What a warp's device-memory writes cost the SM, beside its loads of the same lines:
# gpu_kernels/bin/zc_warps in device memory with 1 to 32 warps on every SM (132 x 1..32
# warps in blocks of up to 8) and at full occupancy, loads, stores and reductions (4 B
# atomic adds whose result is unused: RED) of
#   scatter  each lane its own random word: 32 lines an instruction, over 64 KiB (the
#            reductions of PageRank on a scale-14 graph: 2^14 4 B ranks), 16 MiB (in
#            the L2) and 1 GiB (in DRAM);
#   random   one random 128 B line an instruction (the lanes coalesced), over 1 GiB;
#   strided  each lane its own 128 B chunk, word by word: 32 lines an instruction,
#            the same lines eight instructions in a row;
# 64 MiB of useful bytes per point, 3 repetitions (plain.jsonl); then whether the
# limits are the SM's or the memory's: the same scatter with 1056 and 2112 warps in
# blocks of 8, 16 and 32 warps, so on 132, 66 or 33 SMs (spread.jsonl), and scattered
# loads and reductions at full occupancy over regions of 1 MiB to 4 GiB, across the
# 50 MiB L2 (regions.jsonl); and the SASS of the write kernels (RED.E.ADD for red, STG
# for store; sass.txt). Run from the repository root on the lent GPU with OUT set; the
# results land in $OUT/write_cost.tar.gz.
source "$(dirname "$0")/../tools/probe_common.sh"
probe_start write_cost bin/zc_warps
nvcc --version | tail -2 >> $W/build.txt
Z=gpu_kernels/bin/zc_warps
cuobjdump -sass $Z | awk '/Function :/ {f = $0} /write_kernel/ && /Function :/ {print} f ~ /write_kernel/ && /(RED|ATOM|STG)/ {print "   ", $0}' > $W/sass.txt
N=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
SMS=132     # the lent H100s and H200s (the programs' device record in plain.jsonl says so)
WARPS=$SMS,$((2 * SMS)),$((4 * SMS)),$((8 * SMS)),$((16 * SMS)),$((32 * SMS)),0
COMMON="--warps $WARPS --total-B 64MiB --max-per-warp-B 64MiB --reps 3 --memory-mode device --bytes-per-lane 4 --unroll 1 --op load,store,red"
{
$Z --pattern scatter --region-B 64KiB,16MiB,1GiB $COMMON
$Z --pattern random --region-B 1GiB $COMMON
$Z --pattern strided --chunk-B 128 $COMMON
} > $W/plain.jsonl 2> $W/plain.err
echo "$N: plain rc $? lines $(grep -c measurement $W/plain.jsonl)"
SPREAD="--pattern scatter --region-B 16MiB,1GiB --total-B 64MiB --max-per-warp-B 64MiB --reps 3 --memory-mode device --bytes-per-lane 4 --unroll 1 --op load,store,red"
{
for wpb in 8 16 32; do $Z $SPREAD --warps $((8 * SMS)) --warps-per-block $wpb; done
for wpb in 16 32; do $Z $SPREAD --warps $((16 * SMS)) --warps-per-block $wpb; done
} > $W/spread.jsonl 2> $W/spread.err
echo "$N: spread rc $? lines $(grep -c measurement $W/spread.jsonl)"
$Z --pattern scatter --region-B 1MiB,4MiB,8MiB,16MiB,32MiB,48MiB,64MiB,128MiB,256MiB,1GiB,4GiB --warps 0 \
   --total-B 64MiB --max-per-warp-B 64MiB --reps 3 --memory-mode device --bytes-per-lane 4 --unroll 1 \
   --op load,red > $W/regions.jsonl 2> $W/regions.err
echo "$N: regions rc $? lines $(grep -c measurement $W/regions.jsonl)"
probe_pack write_cost
