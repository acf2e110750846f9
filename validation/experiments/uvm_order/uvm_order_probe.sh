#!/bin/bash
# Whether a UVM BFS's time depends on the managed buffers freed before it in the
# same process. uvm_session24.toml runs each graph in one bfs process, modes
# outermost and id widths inner (uvm 8 B, uvm 4 B, ReadMostly 8 B, ReadMostly 4 B):
# only the first allocates its GPU pages in a fresh process, and urand24's 4 B case
# without advice, which follows the 8 B one, came out 27-43% faster than predicted.
# Here each graph (the first source of uvm_session24's run) runs in managed memory
# without advice, BFS merged_aligned, load-ahead 4, 5 timed repetitions after the
# warm-up run, in four processes: ids 8,4 (the manifest's order), 4,8, 4 alone,
# 8 alone; then ReadMostly 8,4 and 4 alone. Into $OUT: uvm_order.tar.gz (one
# JSON-lines file per process, <graph>_<mode>_<ids>.jsonl, and its stderr),
# summary.json, gpu.txt and graphs.jsonl; medians printed. Managed buffers: the edge list
# only, 4.3 GB at most (far below the GPU's free memory).
# Run from the repository root on the lent GPU with OUT set.
source "$(dirname "$0")/../tools/probe_common.sh"
mkdir -p /tmp/ns/hostlink /tmp/hostlink_run/graphs
for d in model traces validation; do ln -sfn "$PWD/$d" "/tmp/ns/hostlink/$d"; done
export PYTHONPATH=/tmp/ns PYTHONUNBUFFERED=1
graphs=/tmp/hostlink_run/graphs
work=/tmp/hostlink_run/uvm_order
rm -rf "$work"; mkdir -p "$work"
make -C gpu_kernels -j"$(nproc)" bin/bfs bin/devinfo > /tmp/uop_build.txt 2>&1 || { tail -20 /tmp/uop_build.txt; exit 1; }
nvidia-smi --query-gpu=name,driver_version,memory.used,memory.total --format=csv > "$OUT/gpu.txt"
cat "$OUT/gpu.txt"
python3 validation/experiments/tools/pregen.py "$graphs" validation/experiments/uvm_session24/manifest.toml | tee "$OUT/graphs.jsonl"

run() {  # graph source mode ids
  local name="$1_$3_${4/,/-}"
  echo "== $(date -u +%T) $name"
  timeout --kill-after=5 120 ./gpu_kernels/bin/bfs --graph "$graphs/$1" --graph-name "$1" \
    --variant merged_aligned --memory-mode "$3" --id-bytes "$4" --reps 5 --warmup 1 \
    --load-ahead 4 --source "$2" > "$work/$name.jsonl" 2> "$work/$name.err"
  echo "   exit $?"
}
for gs in urand24:2740781 kron24:1844340; do
  g=${gs%%:*}; s=${gs##*:}
  for ids in 8,4 4,8 4 8; do run "$g" "$s" uvm "$ids"; done
  for ids in 8,4 4; do run "$g" "$s" uvm_readmostly "$ids"; done
done

python3 - <<'PY'
import json, os, statistics as st
from pathlib import Path
out = Path(os.environ["OUT"])
work = Path("/tmp/hostlink_run/uvm_order")
rows = []
for f in sorted(work.glob("*.jsonl")):
    by = {}
    for line in f.read_text().splitlines():
        r = json.loads(line)
        if r.get("type") != "measurement":
            continue
        p = r["params"]
        by.setdefault(p["id_bytes"], []).append(r["metrics"]["kernel_time_ms"])
    for b, t in by.items():
        rows.append({"process": f.stem, "id_bytes": b, "kernel_ms": t, "median_ms": st.median(t)})
        print(f"{f.stem:32s} {b} B  median {st.median(t):8.1f} ms  reps {' '.join(f'{x:.1f}' for x in t)}")
(out / "summary.json").write_text(json.dumps(rows, indent=1))
PY
tar czf "$OUT/uvm_order.tar.gz" -C "$work" .
