#!/bin/bash
# What the L1 keeps, two ways (validation/experiments/l1_policy/README.md):
#  chase/   one thread's pointer chase (gpu_kernels/bin/ptr_chase, default cache
#           operator, one random cycle) over N lines of device memory at strides
#           of 128 B to 4 KiB, N from 512 to 3072 lines around the 1792 lines of
#           a 224 KiB L1, 16384 links a launch (the L1 starts empty with each
#           launch, so the chase goes round the cycle 5-32 times); and a few of
#           the same in pinned host memory. Nothing else runs: what the L1 keeps
#           of a cycle tells its capacity for lines that far apart and how it
#           replaces them.
#  rounds/  zc_read's strided pattern read once (every thread one chunk) and four
#           times round (each thread four chunks), chunks of 128 B to 2 KiB, 4, 8
#           and 16 B per lane, 8 to 40 warps per SM (and 48 with 4 and 8 B):
#           host sectors fetched per sector read under Nsight Compute
#           (ncu_<chunk>_r<rounds>.csv, --clock-control none: the card's clocks
#           untouched), and the same points timed (plain.jsonl).
# Part 2 (`l1_policy_probe.sh 2`, a later lease): the same strided reads with
# 4 B per lane at 56 and 64 warps per SM and with 4 KiB chunks, and the chase at
# strides of 8 KiB to 2 MiB (lines in other pages: whether the L1 indexes and
# tags them alike). Part 3 (`l1_policy_probe.sh 3`): points between the table's,
# to hold its interpolation to: chunks of 384 B to 3 KiB read twice round, and
# 512 B chunks read twice and eight times round, 24 to 48 warps per SM.
# Run from the repository root on the lent GPU with OUT set; everything is packed
# into $OUT/l1_policy[2].tar.gz (gpu.txt, build.txt, log.txt, chase/, rounds/).
source "$(dirname "$0")/../tools/probe_common.sh"
PART=${1:-1}
DEST=$OUT
OUT=/tmp/l1_policy$([ "$PART" = 1 ] || echo "$PART")
rm -rf $OUT; mkdir -p "$OUT/chase" "$OUT/rounds"
nvidia-smi --query-gpu=name,pcie.link.gen.current,pcie.link.width.current,driver_version --format=csv > $OUT/gpu.txt 2>&1
( time make -C gpu_kernels bin/zc_read bin/ptr_chase ) > $OUT/build.txt 2>&1 || { cat $OUT/build.txt; exit 1; }
P=gpu_kernels/bin/ptr_chase
R=gpu_kernels/bin/zc_read
# one thread's chase over each count of lines at each stride
chase_points() {  # memory mode, strides, line counts, steps, repetitions
  local file=$OUT/chase/$([ "$1" = device ] && echo device || echo host).jsonl
  for stride in $2; do
    fp=""
    for n in $3; do fp="$fp,$((n * stride))"; done
    $P --memory-mode $1 --cache default --order random --stride-B $stride --footprint-B ${fp#,} \
       --steps $4 --reps $5 >> $file 2>>$OUT/log.txt
  done
}
# per point the bytes of `rounds` chunks a thread; the buffer holds the largest
strided_points() {  # chunk list, rounds, bytes per lane list, warps list, tag
  for chunk in $1; do
    per_warp=$(($2 * 32 * chunk))
    total=$((8448 * per_warp))
    common="--pattern strided --chunk-B $chunk --max-per-warp-B $per_warp --total-B $total"
    $R $common --bytes-per-lane $3 --warps $4 --reps 2 >> $OUT/rounds/plain.jsonl 2>>$OUT/log.txt
    timeout 150 ncu --clock-control none -k regex:read_kernel --csv --page raw --metrics $M \
      $R $common --bytes-per-lane $3 --warps $4 --reps 1 >> $OUT/rounds/ncu_${chunk}_r$2.csv 2>>$OUT/log.txt
    echo "$(date -u +%T) $5 chunk $chunk rounds $2: rc $?"
  done
}
if [ "$PART" = 1 ]; then
  echo "$(date -u +%T) chase"
  chase_points device "128 256 512 1024 4096" "512 1024 1536 1664 1728 1792 1856 1920 2048 2304 2560 3072" 16384 3
  chase_points zerocopy "128 512" "1536 1792 2048 2560" 8192 2
  echo "$(date -u +%T) rounds"
  M="gpu__time_duration.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_miss.sum,lts__t_sectors_srcunit_tex_aperture_sysmem_op_read.sum,launch__grid_size,launch__block_size"
  echo "metrics: $M" >> $OUT/log.txt
  # per point the bytes of `rounds` chunks a thread (--max-per-warp-B); the buffer holds the largest
  for chunk in 128 256 512 1024 2048; do
    for rounds in 1 4; do
      per_warp=$((rounds * 32 * chunk))
      total=$((6336 * per_warp))
      common="--pattern strided --chunk-B $chunk --max-per-warp-B $per_warp --total-B $total"
      $R $common --bytes-per-lane 4,8,16 --warps 1056,2112,3168,4224,5280 --reps 2 >> $OUT/rounds/plain.jsonl 2>>$OUT/log.txt
      $R $common --bytes-per-lane 4,8 --warps 6336 --reps 2 >> $OUT/rounds/plain.jsonl 2>>$OUT/log.txt
      { timeout 150 ncu --clock-control none -k regex:read_kernel --csv --page raw --metrics $M \
          $R $common --bytes-per-lane 4,8,16 --warps 1056,2112,3168,4224,5280 --reps 1
        timeout 60 ncu --clock-control none -k regex:read_kernel --csv --page raw --metrics $M \
          $R $common --bytes-per-lane 4,8 --warps 6336 --reps 1
      } > $OUT/rounds/ncu_${chunk}_r${rounds}.csv 2>>$OUT/log.txt
      echo "$(date -u +%T) chunk $chunk rounds $rounds: rc $?"
    done
  done
elif [ "$PART" = 3 ]; then
  echo "$(date -u +%T) rounds"
  M="gpu__time_duration.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_miss.sum,lts__t_sectors_srcunit_tex_aperture_sysmem_op_read.sum,launch__grid_size,launch__block_size"
  echo "metrics: $M" >> $OUT/log.txt
  for rounds in 2 8; do
    chunks="384 512 768 1536 3072"
    [ $rounds = 8 ] && chunks=512
    strided_points "$chunks" $rounds 4,8,16 3168,4224,5280 "between the table's points:"
    strided_points "$chunks" $rounds 4,8 6336 "between the table's points:"
  done
else
  echo "$(date -u +%T) chase"
  chase_points device "8192 65536 2097152" "1024 1792 2048" 16384 3
  echo "$(date -u +%T) rounds"
  M="gpu__time_duration.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_miss.sum,lts__t_sectors_srcunit_tex_aperture_sysmem_op_read.sum,launch__grid_size,launch__block_size"
  echo "metrics: $M" >> $OUT/log.txt
  for rounds in 1 4; do
    strided_points "128 256 512 1024 2048 4096" $rounds 4 7392,8448 "4 B, 56-64 warps per SM:"
    strided_points 4096 $rounds 8,16 1056,2112,3168,4224,5280 "4 KiB chunks:"
    strided_points 4096 $rounds 4 1056,2112,3168,4224,5280,6336 "4 KiB chunks:"
    strided_points 4096 $rounds 8 6336 "4 KiB chunks:"
  done
fi
wc -l $OUT/chase/* $OUT/rounds/* | tail -1
tar -czf $DEST/$(basename $OUT).tar.gz -C /tmp $(basename $OUT)
