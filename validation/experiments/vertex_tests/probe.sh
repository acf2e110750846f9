#!/bin/bash
# What a traversal launch spends testing vertices it does not expand, in the
# naive and balanced walks (gpu_kernels/traversal/walk.cuh), beside chunked
# (whose tests device_work measured): Nsight Compute counters of
#   scale21/  every BFS launch on first_run's kron21 and urand21 (device memory,
#             device_work's sources): their last launches test 2 M vertices and
#             expand none, as device_work's chunked ones did;
#   road/     six launches from the middle of BFS on the families experiment's
#             shuffled 1024 x 1024 road grid (launches 600-605 of about 1,580, a
#             frontier of about a thousand of its 1 M vertices; its first
#             source, 480893), device and pinned host memory; and SSSP naive.
# Each run is timed without the profiler first (CUDA events, every launch,
# three repetitions). --clock-control none: the card's clocks untouched. Run
# from the repository root on the lent GPU with OUT set; everything is packed
# into $OUT/vertex_tests.tar.gz. Tables:
#   python3 validation/experiments/device_work/device_work_summary.py RUN/scale21
#   python3 validation/experiments/device_work/device_work_summary.py RUN/road --launch-offset 600
source "$(dirname "$0")/../tools/probe_common.sh"
probe_start vertex_tests bin/bfs bin/sssp
mkdir -p /tmp/ns/hostlink /tmp/vt_graphs "$W/scale21" "$W/road"
for d in model traces validation; do ln -sfn "$PWD/$d" "/tmp/ns/hostlink/$d"; done
export PYTHONPATH=/tmp/ns${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
G=/tmp/vt_graphs
( time python3 validation/experiments/tools/pregen.py "$G" validation/experiments/first_run/manifest.toml \
    validation/experiments/families/manifest.toml ) > "$W/graphs.txt" 2>&1
declare -A SRC=([kron21]=322668 [urand21]=573449 [road_shuffled]=480893)
M=gpu__time_duration.sum,smsp__inst_executed.sum,sm__cycles_active.avg,sm__cycles_elapsed.avg,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__warps_active.avg.pct_of_peak_sustained_active,sm__warps_active.avg.per_cycle_active,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,lts__t_sectors_srcunit_tex_aperture_sysmem_op_read.sum,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_no_instruction_per_issue_active.ratio,smsp__average_warps_issue_stalled_wait_per_issue_active.ratio,smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio,smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,smsp__average_warps_issue_stalled_branch_resolving_per_issue_active.ratio,launch__grid_size,launch__block_size,launch__registers_per_thread,launch__occupancy_limit_registers
echo "metrics: $M" > "$W/log.txt"
one() {  # one() DIR PROGRAM GRAPH VARIANT MODE [NCU ARGS]: timed run, then the profiled run
  local part=$1 dir=$W/$1 prog=$2 graph=$3 variant=$4 mode=$5; shift 5
  local args=(--graph "$G/$graph" --graph-name "$graph" --source "${SRC[$graph]}" --id-bytes 8
              --variant "$variant" --memory-mode "$mode" --warmup 0)
  timeout 120 gpu_kernels/bin/$prog "${args[@]}" --reps 3 >> "$dir/plain.jsonl" 2>>"$W/log.txt"
  timeout 180 ncu --clock-control none -k regex:walk "$@" --csv --page raw --metrics "$M" \
    gpu_kernels/bin/$prog "${args[@]}" --reps 1 > "$dir/ncu_${prog}_${graph}_${mode}_$variant.csv" 2>>"$W/log.txt"
  echo "$(date -u +%T) $part $prog $graph $variant $mode rc $?" | tee -a "$W/log.txt"
}
for g in kron21 urand21; do
  for v in naive balanced chunked; do one scale21 bfs $g $v device; done
done
for v in naive balanced chunked; do
  for mode in device zerocopy; do one road bfs road_shuffled $v $mode --launch-skip 600 --launch-count 6; done
done
one road sssp road_shuffled naive device --launch-skip 600 --launch-count 6
probe_pack vertex_tests
