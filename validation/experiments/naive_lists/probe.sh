#!/bin/bash
# Nsight Compute counters of zero-copy BFS on the two families graphs whose naive
# variant the model misses most (validation/experiments/families/runs/h200):
# dense16 (uniform, 256 neighbours a vertex; the model 25% fast) and rmat20 (hubs
# at low ids; the model 40% slow), naive beside merged_aligned. Per launch: the
# loads' requests and sectors, the L1's sector hits, the sectors read from host
# memory through the L2, the instructions issued and the launch's time; and the
# same runs timed by CUDA events with each launch's time (plain.jsonl).
# Run from the repository root on the lent GPU with OUT set.
source "$(dirname "$0")/../tools/probe_common.sh"
probe_start naive_lists bin/bfs
rm -f "$W"/{graphs.jsonl,plain.jsonl,ncu.csv,ncu.err}
G=/tmp/hostlink_run/graphs
mkdir -p "$G" /tmp/ns/hostlink
for d in model traces validation; do ln -sfn "$PWD/$d" "/tmp/ns/hostlink/$d"; done
export PYTHONPATH=/tmp/ns${PYTHONPATH:+:$PYTHONPATH}
# the families manifest's dense16 and rmat20 (its seed), built as its runs build them
for spec in "dense16 urand 16 128" "rmat20 rmat 20 16"; do
  set -- $spec
  s0=$SECONDS
  [ -e "$G/$1.bel.col" ] || python3 -c "
import sys
from hostlink.traces.graphs.families import build_graph
from hostlink.traces.graphs.writers import write_bel
write_bel(build_graph('$2', weighted=True, label='$1', seed=27491095, scale=$3, degree=$4),
          '$G/$1')"
  echo "{\"graph\": \"$1\", \"gen_s\": $((SECONDS - s0))}" >> "$W/graphs.jsonl"
done
B=gpu_kernels/bin/bfs
WANT="gpu__time_duration.sum l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum
l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum
l1tex__m_xbar2l1tex_read_sectors.sum lts__t_sectors_srcunit_tex_op_read.sum
lts__t_sectors_srcunit_tex_aperture_sysmem_op_read.sum lts__t_requests_srcunit_tex_aperture_sysmem_op_read.sum
lts__t_sectors_aperture_sysmem_op_read.sum lts__t_requests_aperture_sysmem_op_read.sum
pcie__read_bytes.sum smsp__inst_executed.sum sm__warps_active.avg.per_cycle_active"
ncu --query-metrics > "$W/query.txt" 2>&1
M=
for m in $WANT; do
  grep -q "^${m%.*} " "$W/query.txt" && M=$M${M:+,}$m
done
# the counters every GH100 has (validation/experiments/traversal_l1) if the query fails
case $M in gpu__time_duration*) ;; *) M=gpu__time_duration.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum,l1tex__m_xbar2l1tex_read_sectors.sum,lts__t_sectors_srcunit_tex_op_read.sum,smsp__inst_executed.sum ;; esac
echo "metrics: $M" > "$W/metrics.txt"
NCU="ncu --clock-control none -k regex:walk --csv --page raw --metrics $M"
for point in "dense16 42692" "rmat20 662202"; do
  set -- $point
  for v in naive merged_aligned; do
    $B --graph $G/$1 --graph-name $1 --variant $v --memory-mode zerocopy --id-bytes 8 \
      --source $2 --reps 3 --warmup 1 >> "$W/plain.jsonl"
    $NCU $B --graph $G/$1 --graph-name $1 --variant $v --memory-mode zerocopy --id-bytes 8 \
      --source $2 --reps 1 --warmup 0 2>> "$W/ncu.err" | sed "s/^/$1,$v,/" >> "$W/ncu.csv"
  done
done
tail -3 "$W/ncu.err"; cat "$W/metrics.txt"
wc -l "$W/ncu.csv" "$W/plain.jsonl"
probe_pack naive_lists
