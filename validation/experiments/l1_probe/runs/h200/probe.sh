#!/bin/bash
# L1 behaviour of zc_read's strided, random and coalesced points on the lent GPU.
set -u
cd "$(dirname "$0")/../../../.."
nvidia-smi --query-gpu=name,pcie.link.gen.current,pcie.link.width.current,driver_version --format=csv > $OUT/gpu.txt 2>&1
( time make -C gpu_kernels bin/zc_read ) > $OUT/build.txt 2>&1 || { cat $OUT/build.txt; exit 1; }
Z=gpu_kernels/bin/zc_read
# plain timings
{
$Z --pattern strided --chunk-B 128,512,4096 --bytes-per-lane 4,8,16 --total-B 256MiB --reps 3
$Z --pattern strided --chunk-B 128,512,1024,2048,4096 --bytes-per-lane 4,8 --warps 1056,2112,4224,6336 --total-B 256MiB --reps 2
$Z --pattern random --region-B 64KiB,128KiB,192KiB,256KiB,384KiB,512KiB,1MiB --cache default --total-B 256MiB --reps 2
} > $OUT/plain.jsonl 2>$OUT/plain.err
echo plain done
ncu --query-metrics > $OUT/query.txt 2>&1
WANT="gpu__time_duration.sum l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_miss.sum l1tex__m_xbar2l1tex_read_sectors.sum l1tex__m_xbar2l1tex_read_sectors_mem_global_op_ld.sum lts__t_sectors_srcunit_tex_aperture_sysmem_op_read.sum lts__t_requests_srcunit_tex_aperture_sysmem_op_read.sum lts__t_sectors_aperture_sysmem_op_read.sum lts__t_requests_aperture_sysmem_op_read.sum lts__t_sectors_srcunit_tex_aperture_sysmem_op_read_lookup_hit.sum launch__shared_mem_config_size launch__grid_size launch__block_size launch__occupancy_limit_shared_mem pcie__read_bytes.sum"
M=""
for m in $WANT; do base=${m%%.*}; if grep -q "^$base\b\|^ *$base " $OUT/query.txt || [[ $m == launch__* ]]; then M="$M,$m"; fi; done
M=${M#,}
case "$M" in *l1tex__t_sectors*) ;; *) M=$(echo $WANT | tr " " "\n" | grep -v pcie | paste -sd,);; esac
echo "metrics: $M" > $OUT/metrics.txt
NCU="ncu --clock-control none -k regex:read_kernel --csv --page raw --metrics $M"
{
$NCU $Z --pattern strided --chunk-B 128,512,4096 --bytes-per-lane 4,8,16 --total-B 256MiB --reps 1
$NCU $Z --pattern strided --chunk-B 128,512,4096 --bytes-per-lane 4,8 --warps 2112,4224 --total-B 256MiB --reps 1
$NCU $Z --pattern random --region-B 64KiB,256KiB,1MiB --cache default --total-B 256MiB --reps 1
$NCU $Z --pattern coalesced --offset-B 0,32,64 --bytes-per-lane 4 --total-B 256MiB --reps 1
} > $OUT/ncu.csv 2>$OUT/ncu.err
tail -3 $OUT/ncu.err
wc -l $OUT/*.csv $OUT/*.jsonl
