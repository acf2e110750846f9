#!/bin/bash
# Do the L1's losses of strided reads follow the latency of the memory behind it?
# (validation/experiments/l1_latency/README.md)
# zc_read's strided pattern (unroll 4, default cache operator, every thread one chunk)
# over device memory and over pinned host memory in one lease, at the points where
# validation/experiments/l1_policy/runs/h200/ measured the host losses: chunks of 512 B and
# 2 KiB, 4 and 16 B per lane, 8 to 48 warps per SM. Device memory answers an L1
# miss in a few hundred ns, host memory in a microsecond or more: the same warps
# keep the same lines in use for far less time. Under Nsight Compute
# (--clock-control none: the card's clocks untouched) the L1's sector lookups and
# misses and the L2's sectors read for the L1, all of them and those of system
# memory; the same points timed without it (plain.jsonl).
# Run from the repository root on the lent GPU with OUT set; everything is packed
# into $OUT/l1_latency.tar.gz (gpu.txt, build.txt, log.txt, rounds/).
source "$(dirname "$0")/../tools/probe_common.sh"
DEST=$OUT
OUT=/tmp/l1_latency
rm -rf $OUT; mkdir -p "$OUT/rounds"
nvidia-smi --query-gpu=name,pcie.link.gen.current,pcie.link.width.current,driver_version --format=csv > $OUT/gpu.txt 2>&1
( time make -C gpu_kernels bin/zc_read ) > $OUT/build.txt 2>&1 || { cat $OUT/build.txt; exit 1; }
R=gpu_kernels/bin/zc_read
M="gpu__time_duration.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_miss.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_aperture_sysmem_op_read.sum,launch__grid_size,launch__block_size"
echo "metrics: $M" >> $OUT/log.txt
points() {  # memory mode, chunk, bytes per lane list, warps list
  # every thread one chunk; the buffer holds the most warps asked for (48 per SM x 132 SMs)
  local per_warp=$((32 * $2)) total
  total=$((6336 * per_warp))
  local common="--pattern strided --chunk-B $2 --max-per-warp-B $per_warp --total-B $total --memory-mode $1"
  $R $common --bytes-per-lane $3 --warps $4 --reps 2 >> $OUT/rounds/plain.jsonl 2>>$OUT/log.txt
  timeout 150 ncu --clock-control none -k regex:read_kernel --csv --page raw --metrics $M \
    $R $common --bytes-per-lane $3 --warps $4 --reps 1 >> $OUT/rounds/ncu_$1_$2.csv 2>>$OUT/log.txt
  echo "$(date -u +%T) $1 chunk $2 bytes per lane $3: rc $?" | tee -a $OUT/log.txt
}
for mode in device zerocopy; do
  points $mode 512 4,16 1056,2112,3168,4224,5280
  points $mode 512 4 6336
  points $mode 2048 4 1056,2112,3168,4224,5280,6336
done
wc -l $OUT/rounds/* | tail -1
tar -czf $DEST/l1_latency.tar.gz -C /tmp l1_latency
