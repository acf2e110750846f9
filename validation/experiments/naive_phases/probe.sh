#!/bin/bash
# Whether a warp of the naive walk keeps a group's loads in flight together when
# its lanes cross 32 B sectors on different trips: zero-copy BFS (8 B ids) on
# graphs of one hub, of a warp of 24 and of 32 hubs, and of 256 warps of two
# lists, whose lists start on one sector phase or on several (hub_graphs.py), at
# load-ahead 4 and 1. Launch 1 walks those lists alone. Run from the repository
# root on the lent GPU with OUT set.
source "$(dirname "$0")/../tools/probe_common.sh"
probe_start naive_phases bin/bfs
rm -f "$W"/{graphs.jsonl,plain.jsonl,plain.err}
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
probe_pack naive_phases
