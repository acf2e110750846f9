#!/bin/bash
# Host sectors the L1 fetches per sector read (Nsight Compute) against the length
# of a strided zero-copy run: whether the L1's partial losses at 32-48 warps per SM
# grow as the warps of a grid-stride loop drift apart (short runs keep them in
# step). gpu_kernels/bin/zc_read, strided 128 B and 512 B chunks, default cache
# operator, unroll 4; 16 MiB to 1 GiB of pinned host memory per point (far below
# the host's memory); --clock-control none: the card's clocks untouched. One ncu
# process per point (ncu_<point>.csv), each point also timed without the profiler
# (plain.jsonl). Run from the repository root on the lent GPU with OUT set.
source "$(dirname "$0")/../tools/probe_common.sh"
nvidia-smi --query-gpu=name,pcie.link.gen.current,pcie.link.width.current,driver_version --format=csv > $OUT/gpu.txt 2>&1
( time make -C gpu_kernels bin/zc_read ) > $OUT/build.txt 2>&1 || { cat $OUT/build.txt; exit 1; }
R=gpu_kernels/bin/zc_read
M="gpu__time_duration.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_miss.sum,lts__t_sectors_srcunit_tex_aperture_sysmem_op_read.sum,launch__grid_size,launch__block_size"
echo "metrics: $M" > $OUT/log.txt
# bytes per lane and warps in the grid (132 SMs): 8 B at 48 and 40 warps per SM, 4 B at 32
for point in "8 6336" "8 5280" "4 4224"; do
  set -- $point
  for chunk in 128 512; do
    for total in 16MiB 64MiB 256MiB 1GiB; do
      args="--pattern strided --chunk-B $chunk --bytes-per-lane $1 --warps $2 --total-B $total"
      $R $args --reps 3 >> $OUT/plain.jsonl 2>>$OUT/log.txt
      timeout 120 ncu --clock-control none -k regex:read_kernel --csv --page raw --metrics $M \
        $R $args --reps 1 > $OUT/ncu_chunk${chunk}_bpl$1_warps$2_total$total.csv 2>>$OUT/log.txt
      echo "$(date -u +%T) chunk $chunk bpl $1 warps $2 total $total: rc $?"
    done
  done
done
ls $OUT | wc -l
