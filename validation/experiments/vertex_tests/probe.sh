#!/bin/bash
# What a traversal launch spends testing vertices it does not expand, in the
# naive and balanced walks (gpu_kernels/traversal/walk.cuh): Nsight Compute
# counters of six launches from the middle of BFS on the shuffled 1024 x 1024
# road grid of the families experiment (a frontier of about a thousand of its
# 1 M vertices), naive, balanced and chunked (whose tests device_work measured),
# in device memory and from pinned host memory; and of SSSP naive in device
# memory. Each run is timed without the profiler first (CUDA events, every
# launch). Source: the families run's first (480893). --clock-control none: the
# card's clocks untouched. Run from the repository root on the lent GPU with
# OUT set; everything is packed into $OUT/vertex_tests.tar.gz.
# Table: python3 validation/experiments/device_work/device_work_summary.py RUN --launch-offset 600
source "$(dirname "$0")/../tools/probe_common.sh"
probe_start vertex_tests bin/bfs bin/sssp
G=/tmp/hostlink_run/graphs
mkdir -p "$G" /tmp/ns/hostlink
for d in model traces validation; do ln -sfn "$PWD/$d" "/tmp/ns/hostlink/$d"; done
export PYTHONPATH=/tmp/ns PYTHONUNBUFFERED=1
( time python3 validation/experiments/tools/pregen.py "$G" validation/experiments/families/manifest.toml ) > "$W/graphs.txt" 2>&1
SRC=480893
SKIP=600     # launches before the profiled ones (BFS takes about 1,580 on this graph)
COUNT=6
M=gpu__time_duration.sum,smsp__inst_executed.sum,sm__cycles_active.avg,sm__cycles_elapsed.avg,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__warps_active.avg.pct_of_peak_sustained_active,sm__warps_active.avg.per_cycle_active,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,lts__t_sectors_srcunit_tex_aperture_sysmem_op_read.sum,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_no_instruction_per_issue_active.ratio,smsp__average_warps_issue_stalled_wait_per_issue_active.ratio,smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio,smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,smsp__average_warps_issue_stalled_branch_resolving_per_issue_active.ratio,launch__grid_size,launch__block_size,launch__registers_per_thread,launch__occupancy_limit_registers
echo "metrics: $M" > "$W/log.txt"
NCU="ncu --clock-control none -k regex:walk --launch-skip $SKIP --launch-count $COUNT --csv --page raw --metrics $M"
one() {  # one() TAG PROGRAM VARIANT MODE: timed run, then the profiled run
  local tag=$1 prog=$2; shift 2
  local args=(--graph "$G/road_shuffled" --graph-name road_shuffled --source $SRC --id-bytes 8
              --variant "$1" --memory-mode "$2" --warmup 0)
  timeout 120 gpu_kernels/bin/$prog "${args[@]}" --reps 3 >> "$W/plain.jsonl" 2>>"$W/log.txt"
  timeout 180 $NCU gpu_kernels/bin/$prog "${args[@]}" --reps 1 > "$W/ncu_$tag.csv" 2>>"$W/log.txt"
  echo "$(date -u +%T) $tag rc $?" | tee -a "$W/log.txt"
}
for v in naive balanced chunked; do
  one "bfs_road_shuffled_device_$v" bfs $v device
  one "bfs_road_shuffled_zerocopy_$v" bfs $v zerocopy
done
one sssp_road_shuffled_device_naive sssp naive device
probe_pack vertex_tests
