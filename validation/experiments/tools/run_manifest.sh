#!/bin/bash
# Runs on the GPU machine (the repository root is the working directory).
# Builds gpu_kernels; optionally runs the GPU-marked tests; generates the
# manifests' graphs in parallel into one graph folder; runs each manifest
# with `hostlink validate run`; reads the PCIe link while the GPU streams
# host memory; and packs everything into $OUT:
#   run<i>_<manifest>.tar.gz  one run folder each (results, metadata,
#                             environment, raw JSON lines, logs, self-traces
#                             and the graphs under 8 MB)
#   extra.tar.gz              build log, PCIe under load, graph generation
#                             times, GPU tests' log, console log
# Usage: run_manifest.sh [--tests SECONDS] [--build TARGET] [--only STRING] MANIFEST:SECONDS [...]
# Each manifest run is stopped after its SECONDS (what it measured by then is
# kept). --build makes one gpu_kernels target only (e.g. bin/uvm_touch for a
# manifest of UVM first touch) instead of every program; the PCIe reading
# under load then runs only if bin/zc_read was built. hostlink is not
# installed there: a namespace folder makes it importable. --only runs only
# the jobs whose id contains STRING (validate run --only; e.g. trav__0__).
set -u
test_budget=0
build_target=
only=()
while [ $# -gt 0 ]; do
  case "$1" in
    --tests) test_budget=$2; shift 2 ;;
    --build) build_target=$2; shift 2 ;;
    --only) only=(--only "$2"); shift 2 ;;
    *) break ;;
  esac
done
: "${OUT:?OUT must name the output folder}"
repo=$PWD
work=/tmp/hostlink_run
graphs=$work/graphs
mkdir -p "$work" "$graphs" /tmp/ns/hostlink
for d in model traces validation; do ln -sfn "$repo/$d" "/tmp/ns/hostlink/$d"; done
export PYTHONPATH=/tmp/ns${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
exec > >(tee "$work/console.log") 2>&1

echo "== $(date -u +%FT%TZ) build"
make -C gpu_kernels -j"$(nproc)" $build_target > "$work/build.log" 2>&1 || tail -20 "$work/build.log"
nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current,memory.used,memory.total --format=csv

if [ "$test_budget" -gt 0 ]; then
  echo "== $(date -u +%FT%TZ) GPU tests"
  timeout --kill-after=10 "$test_budget" python3 -m pytest tests/gpu_kernels -m gpu -q -p no:cacheprovider \
    > "$work/pytest_gpu.log" 2>&1
  echo "pytest exit $?"
  tail -5 "$work/pytest_gpu.log"
fi

echo "== $(date -u +%FT%TZ) graphs"
manifests=()
for spec in "$@"; do manifests+=("${spec%%:*}"); done
python3 validation/experiments/tools/pregen.py "$graphs" "${manifests[@]}" | tee "$work/graphs.jsonl"

i=0
for spec in "$@"; do
  manifest=${spec%%:*}
  budget=${spec##*:}
  name=$(basename "$manifest" .toml)
  [ "$name" = manifest ] && name=$(basename "$(dirname "$manifest")")
  dir=$work/run${i}_$name
  echo "== $(date -u +%FT%TZ) validate run $manifest ($budget s)"
  timeout --kill-after=10 "$budget" python3 -m hostlink.validation.cli run "$manifest" --out "$dir" \
    --graph-dir "$graphs" --no-build --quiet --timeout-s "$budget" "${only[@]}"
  echo "validate exit $?"
  if [ ! -f "$dir/results.csv" ] && [ -f "$dir/run.json" ]; then
    python3 -m hostlink.validation.cli run "$manifest" --out "$dir" --reparse || true
  fi
  python3 -m hostlink.validation.cli pack "$dir" || true
  mkdir -p "$dir/graphs"
  find "$graphs" -name '*.bel.*' -size -8M -exec cp {} "$dir/graphs/" \;
  (cd "$dir" && tar czf "$OUT/run${i}_$name.tar.gz" .)
  i=$((i + 1))
done

if [ -x gpu_kernels/bin/zc_read ]; then
  echo "== $(date -u +%FT%TZ) PCIe link while streaming host memory"
  gpu_kernels/bin/zc_read --total-B 4GiB --reps 8 > /dev/null &
  zc=$!
  sleep 1
  nvidia-smi --query-gpu=pcie.link.gen.current,pcie.link.width.current,pcie.link.gen.max,pcie.link.width.max --format=csv | tee "$work/pcie_under_load.csv"
  wait $zc
fi

echo "== $(date -u +%FT%TZ) pack"
cp "$work/console.log" "$work/console_copy.log"
(cd "$work" && tar czf "$OUT/extra.tar.gz" build.log graphs.jsonl console_copy.log \
  $(ls pcie_under_load.csv pytest_gpu.log 2>/dev/null))
ls -la "$OUT"
