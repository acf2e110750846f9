#!/bin/bash
# What bounds a traversal launch whose edge list is in device memory: Nsight
# Compute counters per walk launch (warp instructions, issue activity, achieved
# occupancy, load requests and sectors, L2 and DRAM traffic, stall reasons)
# beside the same launches timed without the profiler. BFS on kron21/urand21
# (merged, merged_aligned, chunked; 4 and 8 B ids; device memory, and pinned
# host memory for two variants) and every kernel on kron14/urand14 (merged_aligned
# and chunked, 8 B ids), one source each (first_run's first), no warm-up run.
# --clock-control none: the card's clocks untouched. Run from the repository
# root on the lent GPU with OUT set; graphs are generated as first_run's.
# Everything is packed into $OUT/device_work.tar.gz.
source "$(dirname "$0")/../tools/probe_common.sh"
nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current --format=csv > "$OUT/gpu.txt" 2>&1
( time make -C gpu_kernels -j8 bin/bfs bin/sssp bin/cc bin/pagerank ) > "$OUT/build.txt" 2>&1 || { tail -20 "$OUT/build.txt"; exit 1; }
mkdir -p /tmp/ns/hostlink /tmp/dwp_graphs
for d in model traces validation; do ln -sfn "$PWD/$d" "/tmp/ns/hostlink/$d"; done
export PYTHONPATH=/tmp/ns PYTHONUNBUFFERED=1
( time python3 validation/experiments/tools/pregen.py /tmp/dwp_graphs validation/experiments/first_run/manifest.toml ) > "$OUT/graphs.txt" 2>&1
G=/tmp/dwp_graphs
declare -A SRC=([kron21]=322668 [urand21]=573449 [kron14]=9198 [urand14]=10374)

ncu --query-metrics > /tmp/dwp_query.txt 2>&1
WANT="gpu__time_duration.sum smsp__inst_executed.sum sm__cycles_active.avg sm__cycles_elapsed.avg
smsp__issue_active.avg.pct_of_peak_sustained_active sm__warps_active.avg.pct_of_peak_sustained_active
sm__warps_active.avg.per_cycle_active
l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum
l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum
l1tex__t_requests_pipe_lsu_mem_global_op_st.sum l1tex__t_requests_pipe_lsu_mem_global_op_atom.sum
l1tex__t_requests_pipe_lsu_mem_global_op_red.sum
lts__t_sectors_op_read.sum lts__t_sectors_op_atom.sum lts__t_sectors_op_red.sum lts__t_sectors_op_write.sum
lts__t_sectors_srcunit_tex_aperture_sysmem_op_read.sum dram__bytes_read.sum
l1tex__throughput.avg.pct_of_peak_sustained_active lts__throughput.avg.pct_of_peak_sustained_elapsed
smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio
smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio
smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio
smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio
smsp__average_warps_issue_stalled_wait_per_issue_active.ratio
smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio
smsp__average_warps_issue_stalled_membar_per_issue_active.ratio
smsp__average_warps_issue_stalled_no_instruction_per_issue_active.ratio
smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio
smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio
smsp__average_warps_issue_stalled_branch_resolving_per_issue_active.ratio
smsp__average_warps_issue_stalled_drain_per_issue_active.ratio
launch__grid_size launch__registers_per_thread launch__occupancy_limit_registers launch__waves_per_multiprocessor"
M=""
for m in $WANT; do base=${m%%.*}; if grep -q "^ *$base\b" /tmp/dwp_query.txt || [[ $m == launch__* ]]; then M="$M,$m"; fi; done
M=${M#,}
echo "metrics: $M" > "$OUT/log.txt"
NCU="ncu --clock-control none -k regex:walk --csv --page raw --metrics $M"

one() {  # one() TAG PROGRAM GRAPH ARGS...: timed run, then the profiled run
  local tag=$1 prog=$2 graph=$3; shift 3
  local args=(--graph "$G/$graph" --graph-name "$graph" --warmup 0 "$@")
  [ "$prog" = bfs ] || [ "$prog" = sssp ] && args+=(--source "${SRC[$graph]}")
  timeout 120 gpu_kernels/bin/$prog "${args[@]}" --reps 3 >> "$OUT/plain.jsonl" 2>>"$OUT/log.txt"
  timeout 240 $NCU gpu_kernels/bin/$prog "${args[@]}" --reps 1 > "$OUT/ncu_$tag.csv" 2>>"$OUT/log.txt"
  echo "$(date -u +%T) $tag rc $?" | tee -a "$OUT/log.txt"
}
for g in urand21 kron21; do
  one "bfs_${g}_device" bfs $g --variant merged,merged_aligned,chunked --memory-mode device --id-bytes 4,8
  one "bfs_${g}_zerocopy" bfs $g --variant merged_aligned,chunked --memory-mode zerocopy --id-bytes 8
done
for g in kron14 urand14; do
  for k in bfs sssp cc pagerank; do
    one "${k}_${g}_device" $k $g --variant merged_aligned,chunked --memory-mode device --id-bytes 8
  done
done
# one archive: the device tool returns a few files per call
(cd "$OUT" && tar czf device_work.tar.gz ./*.csv ./*.jsonl ./*.txt && rm -f ./*.csv ./*.jsonl ./*.txt)
ls -l "$OUT"
