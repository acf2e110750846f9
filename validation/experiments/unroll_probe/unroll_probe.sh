#!/bin/bash
# Loads in flight per warp against the `unroll` knob of gpu_kernels/micro/zc_*:
# the SASS of read_kernel (how many independent LDGs each loop issues), bandwidth
# of a few warps against unroll and bytes per lane (strided 4 KiB chunks), and
# host sectors fetched per sector read at full occupancy against unroll (Nsight
# Compute, --clock-control none: the card's clocks untouched).
# Run from the repository root on the lent GPU with OUT set.
source "$(dirname "$0")/../tools/probe_common.sh"
nvidia-smi --query-gpu=name,pcie.link.gen.current,pcie.link.width.current,driver_version --format=csv > $OUT/gpu.txt 2>&1
( time make -C gpu_kernels bin/zc_read bin/zc_warps ) > $OUT/build.txt 2>&1 || { cat $OUT/build.txt; exit 1; }
# SASS of the default-cache read kernels; per kernel, LDGs and the loop's branches
cuobjdump -sass gpu_kernels/bin/zc_warps > /tmp/zc_warps.sass 2>>$OUT/log.txt
awk '/Function : /{name=$3; keep=(name ~ /read_kernelILi(4|8|16)ELi0ELi[1248]ELi[012]E/)} keep' /tmp/zc_warps.sass > $OUT/sass.txt
awk '/Function : /{if(n)print n, l, b; n=$3; l=0; b=0} /LDG/{l++} /BRA/{b++} END{print n, l, b}' $OUT/sass.txt > $OUT/sass_counts.txt
echo sass done
W=gpu_kernels/bin/zc_warps
R=gpu_kernels/bin/zc_read
{
$W --pattern strided --chunk-B 4096 --bytes-per-lane 4,8,16 --warps 1,4,16 --unroll 1,2,4,8 --reps 3
$W --pattern random --region-B 1GiB --bytes-per-lane 4 --warps 1,4,16 --unroll 1,2,4,8 --cache cv --reps 3
$W --pattern coalesced --bytes-per-lane 4,16 --warps 1,4,16 --unroll 1,2,4,8 --reps 3
} > $OUT/warps.jsonl 2>>$OUT/log.txt
echo warps done
$R --pattern strided --chunk-B 128,512,4096 --bytes-per-lane 4,8,16 --unroll 1,2,4,8 --total-B 256MiB --reps 3 > $OUT/plain.jsonl 2>>$OUT/log.txt
echo plain done
M="gpu__time_duration.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_miss.sum,lts__t_sectors_srcunit_tex_aperture_sysmem_op_read.sum,launch__grid_size,launch__block_size"
echo "metrics: $M" >> $OUT/log.txt
timeout 300 ncu --clock-control none -k regex:read_kernel --csv --page raw --metrics $M \
  $R --pattern strided --chunk-B 128,512 --bytes-per-lane 4,8,16 --unroll 1,2,4,8 --total-B 256MiB --reps 1 > $OUT/ncu.csv 2>>$OUT/log.txt
tail -3 $OUT/log.txt
wc -l $OUT/*
