#!/bin/bash
# What the UVM driver does in the migrating launch of a BFS that the model times
# right and of one it times too slow (validation/experiments/uvm_ids/runs/h100): kron21
# with 4 B ids from sources 1786844 (11.2 ms measured, 21.0 predicted) and
# 322668 (24.3 / 25.2), kron20 with 8 B ids from 868962 (13.6 / 20.7) and 653996
# (23.8 / 23.2); BFS merged_aligned in managed memory, no advice, load-ahead 4,
# one warm-up and one timed run each, under the CUPTI injection library
# gpu_kernels/bin/libuvm_counters.so (HtoD migrations, fault groups, kernels;
# one CSV per run), beside each program's JSON lines. Edge lists of at most
# 268 MB: far below the GPU's free memory.
# Run from the repository root on the lent GPU with OUT set; everything lands
# in $OUT/uvm_fast_launch.tar.gz (<name>.csv, <name>.jsonl, <name>.err, index.txt).
source "$(dirname "$0")/../tools/probe_common.sh"
repo=$PWD
W=/tmp/uvm_fast_launch
graphs=/tmp/hostlink_run/graphs
mkdir -p "$W" "$graphs" /tmp/ns/hostlink
for d in model traces validation; do ln -sfn "$repo/$d" "/tmp/ns/hostlink/$d"; done
export PYTHONPATH=/tmp/ns PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current --format=csv > $W/gpu.txt 2>&1
make -C gpu_kernels -j"$(nproc)" bin/bfs bin/libuvm_counters.so > $W/build.log 2>&1 || { tail -20 $W/build.log; exit 1; }
python3 validation/experiments/tools/pregen.py "$graphs" validation/experiments/uvm_ids/manifest.toml > $W/graphs.jsonl
: > $W/index.txt
run() {
  local name=$1; shift
  HOSTLINK_UVM_COUNTERS_OUT="$W/$name.csv" CUDA_INJECTION64_PATH="$repo/gpu_kernels/bin/libuvm_counters.so" \
    timeout --kill-after=5 120 gpu_kernels/bin/bfs "$@" > "$W/$name.jsonl" 2> "$W/$name.err"
  echo "$name $? $*" >> $W/index.txt
}
for spec in kron21:4:1786844 kron21:4:322668 kron20:8:868962 kron20:8:653996; do
  IFS=: read -r g ids src <<< "$spec"
  run "bfs_${g}_${ids}B_${src}" --graph "$graphs/$g" --graph-name "$g" --variant merged_aligned \
    --memory-mode uvm --id-bytes "$ids" --source "$src" --reps 1 --warmup 1 --load-ahead 4
done
cat $W/index.txt
(cd $W && tar czf "$OUT/uvm_fast_launch.tar.gz" .)
