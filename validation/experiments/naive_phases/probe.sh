#!/bin/bash
# Whether a warp of the naive walk keeps a group's loads in flight together when
# its lanes cross 32 B sectors on different trips: zero-copy BFS (8 B ids) on
# graphs of one hub, of a warp of 24 and of 32 hubs, and of 256 warps of two
# lists, whose lists start on one sector phase or on several (hub_graphs.py), at
# load-ahead 4 and 1. Launch 1 walks those lists alone. Run from the repository
# root on the lent GPU with OUT set.
source "$(dirname "$0")/../tools/probe_common.sh"
probe_start naive_phases bin/bfs
rm -f "$W"/{graphs.jsonl,plain.jsonl,plain.err,ncu.csv,ncu.err}
G=/tmp/naive_phases_graphs
mkdir -p "$G" /tmp/ns/hostlink
for d in model traces validation; do ln -sfn "$PWD/$d" "/tmp/ns/hostlink/$d"; done
export PYTHONPATH=/tmp/ns${PYTHONPATH:+:$PYTHONPATH}
python3 validation/experiments/naive_phases/hub_graphs.py "$G" > "$W/graphs.jsonl"
while read -r line; do
  g=$(echo "$line" | sed 's/.*"graph": "\([^"]*\)".*/\1/')
  for la in 4 1; do
    gpu_kernels/bin/bfs --graph "$G/$g" --graph-name "$g" --variant naive --memory-mode zerocopy \
      --id-bytes 8 --load-ahead $la --source 1048575 --reps 5 --warmup 1 >> "$W/plain.jsonl" 2>> "$W/plain.err"
  done
done < "$W/graphs.jsonl"
echo "lines $(grep -c measurement "$W/plain.jsonl")"; tail -3 "$W/plain.err"
# NCU=1: Nsight Compute counters of the pairs graphs' walk launches (host sectors the
# L2 read for the SMs, the L1's hits), whether their lanes fetch a sector again
if [ "${NCU:-0}" = 1 ]; then
  M=gpu__time_duration.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum,lts__t_sectors_srcunit_tex_aperture_sysmem_op_read.sum,smsp__inst_executed.sum
  for g in pairs256_64 pairs256_65; do
    for la in 4 1; do
      ncu --clock-control none -k regex:walk --csv --page raw --metrics $M gpu_kernels/bin/bfs \
        --graph "$G/$g" --graph-name "$g" --variant naive --memory-mode zerocopy --id-bytes 8 \
        --load-ahead $la --source 1048575 --reps 1 --warmup 0 2>> "$W/ncu.err" | sed "s/^/$g,$la,/" >> "$W/ncu.csv"
    done
  done
  wc -l "$W/ncu.csv"; tail -2 "$W/ncu.err"
fi
probe_pack naive_phases
