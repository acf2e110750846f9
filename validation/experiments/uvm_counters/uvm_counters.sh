#!/bin/bash
# Runs on the GPU machine, after run_manifest.sh has built gpu_kernels/ and
# generated the graphs (the repository root is the working directory).
# Records what the UVM driver does under first touch and under BFS in the
# managed-memory modes: every program runs unmodified with the CUPTI
# injection library gpu_kernels/bin/libuvm_counters.so (fault groups, host-to-
# device and device-to-host migrations, kernels; one CSV per run), beside its
# own JSON lines. Managed buffers stay far below the GPU's free memory (the
# programs refuse more than a quarter of it).
#   uvm_counters.tar.gz   <name>.csv (records), <name>.jsonl (the program's
#                         output), <name>.err, index.txt (name, exit status, command)
# Usage: uvm_counters.sh [GRAPH_DIR]   (default /tmp/hostlink_run/graphs)
set -u
: "${OUT:?OUT must name the output folder}"
graphs=${1:-/tmp/hostlink_run/graphs}
bin=$PWD/gpu_kernels/bin
lib=$bin/libuvm_counters.so
dir=/tmp/hostlink_run/uvm_counters
mkdir -p "$dir"
: > "$dir/index.txt"
[ -f "$lib" ] || make -C gpu_kernels "bin/libuvm_counters.so" > "$dir/build.log" 2>&1

record() {
  local name=$1
  shift
  HOSTLINK_UVM_COUNTERS_OUT="$dir/$name.csv" CUDA_INJECTION64_PATH="$lib" \
    timeout --kill-after=5 120 "$@" > "$dir/$name.jsonl" 2> "$dir/$name.err"
  local rc=$?
  echo "$name $rc $*" >> "$dir/index.txt"
  echo "== $name exit $rc ($(wc -l < "$dir/$name.csv" 2>/dev/null || echo 0) records)"
}

echo "== $(date -u +%FT%TZ) UVM first touch under CUPTI"
for advice in none readmostly; do
  for pattern in seq random; do
    record "touch_${pattern}_${advice}_64MiB" "$bin/uvm_touch" --size-B 64MiB --pattern "$pattern" \
      --advice "$advice" --reps 1
  done
  for stride in 2MiB 64KiB 4KiB; do
    record "touch_sparse${stride}_${advice}_64MiB" "$bin/uvm_touch" --size-B 64MiB --pattern sparse \
      --stride-B "$stride" --advice "$advice" --reps 1
  done
done

echo "== $(date -u +%FT%TZ) BFS under CUPTI (one source, the untimed warm-up run then one timed run)"
for graph in kron14 urand14 kron21; do
  [ -f "$graphs/$graph.bel.col" ] || { echo "no graph $graphs/$graph"; continue; }
  for variant in merged_aligned naive; do
    for mode in uvm uvm_readmostly; do
      record "bfs_${graph}_${variant}_${mode}_8B" "$bin/bfs" --graph "$graphs/$graph" \
        --variant "$variant" --memory-mode "$mode" --id-bytes 8 --sources 1 --reps 1 --load-ahead 1
    done
  done
done

(cd "$dir" && tar czf "$OUT/uvm_counters.tar.gz" .)
echo "== $(date -u +%FT%TZ) uvm_counters.tar.gz: $(du -h "$OUT/uvm_counters.tar.gz" | cut -f1)"
