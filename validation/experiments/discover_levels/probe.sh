#!/bin/bash
# Why BFS levels in device memory take longer on the GPU than the model gives
# them on the families experiment's 3-D grid and dense graph: Nsight Compute
# counters per walk launch (L2 read lookups and hits, stores, DRAM traffic,
# stall reasons) beside the same launches timed without the profiler, and the
# rate at which all SMs store to a few hot lines (a BFS launch stores its
# `changed` flag from every warp that discovers a vertex).
#   grid3d   naive and merged_aligned (the model's -34% and 0% on the H100),
#            launches 120-127 of 282 (the widest frontiers), its first source
#   dense16  merged_aligned and naive, all four launches (the discovering
#            level: 125 us on the H200 against 78 modelled)
#   hot      zc_warps scattered stores, reductions and loads over 512 B (four
#            lines: every SM on the same lines) and over 16 MiB, 1 to 64 warps an SM
# --clock-control none: the card's clocks untouched; --cache-control none and
# application replay: each profiled launch finds the caches as the run left
# them. Run from the repository root on the lent GPU with OUT set; everything
# is packed into $OUT/discover_levels.tar.gz.
source "$(dirname "$0")/../tools/probe_common.sh"
probe_start discover_levels bin/bfs bin/zc_warps
mkdir -p /tmp/ns/hostlink /tmp/dl_graphs
for d in model traces validation; do ln -sfn "$PWD/$d" "/tmp/ns/hostlink/$d"; done
export PYTHONPATH=/tmp/ns${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
G=/tmp/dl_graphs
( time python3 validation/experiments/tools/pregen.py "$G" validation/experiments/families/manifest.toml ) \
  > "$W/graphs.txt" 2>&1
declare -A SRC=([grid3d]=223825 [dense16]=42692)
ncu --query-metrics > /tmp/dl_query.txt 2>&1
WANT="gpu__time_duration.sum smsp__inst_executed.sum sm__cycles_active.avg
sm__warps_active.avg.pct_of_peak_sustained_active
l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum
l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum
l1tex__t_requests_pipe_lsu_mem_global_op_st.sum l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum
lts__t_sectors_op_read.sum lts__t_sectors_op_read_lookup_hit.sum lts__t_sectors_op_write.sum
lts__t_sectors_op_atom.sum lts__t_sectors_op_red.sum dram__bytes_read.sum dram__bytes_write.sum
smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio
smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio
smsp__average_warps_issue_stalled_drain_per_issue_active.ratio
smsp__average_warps_issue_stalled_membar_per_issue_active.ratio
smsp__average_warps_issue_stalled_wait_per_issue_active.ratio
smsp__average_warps_issue_stalled_no_instruction_per_issue_active.ratio
launch__grid_size launch__registers_per_thread"
M=""
for m in $WANT; do base=${m%%.*}; if grep -q "^ *$base\b" /tmp/dl_query.txt || [[ $m == launch__* ]]; then M="$M,$m"; fi; done
M=${M#,}
echo "metrics: $M" > "$W/log.txt"
one() {  # one() GRAPH VARIANT [NCU ARGS]: timed run, then the profiled run
  local graph=$1 variant=$2; shift 2
  local args=(--graph "$G/$graph" --graph-name "$graph" --source "${SRC[$graph]}" --id-bytes 8
              --variant "$variant" --memory-mode device --load-ahead 4 --warmup 0)
  timeout 120 gpu_kernels/bin/bfs "${args[@]}" --reps 3 >> "$W/plain.jsonl" 2>>"$W/log.txt"
  timeout 300 ncu --clock-control none --cache-control none --replay-mode application -k regex:walk "$@" \
    --csv --page raw --metrics "$M" gpu_kernels/bin/bfs "${args[@]}" --reps 1 \
    > "$W/ncu_bfs_${graph}_device_$variant.csv" 2>>"$W/log.txt"
  echo "$(date -u +%T) bfs $graph $variant rc $?" | tee -a "$W/log.txt"
}
for v in naive merged_aligned; do one grid3d $v --launch-skip 120 --launch-count 8; done
for v in merged_aligned naive; do one dense16 $v; done
HOT="--pattern scatter --region-B 512,16MiB --warps 132,528,2112,8448 --total-B 16MiB --max-per-warp-B 16MiB
     --reps 3 --memory-mode device --bytes-per-lane 4 --unroll 1 --op store,red,load"
timeout 300 gpu_kernels/bin/zc_warps $HOT > "$W/hot.jsonl" 2> "$W/hot.err"
echo "$(date -u +%T) hot rc $? lines $(grep -c measurement "$W/hot.jsonl")" | tee -a "$W/log.txt"
probe_pack discover_levels
