#!/bin/bash
# Runs on the GPU machine (the repository root is the working directory):
# builds gpu_kernels, runs a manifest with `hostlink validate run`, reads the
# PCIe link while the GPU streams host memory, optionally runs the GPU-marked
# tests, and packs everything into $OUT (at most 8 files):
#   environment.json metadata.json results.csv results.parquet
#   raw.tar.gz (raw JSON lines, logs, manifest, run.json)
#   traces.tar.gz (self-traces and the graphs they ran on, when any)
#   extra.tar.gz (build log, PCIe under load, GPU tests' log, console log)
# Usage: run_manifest.sh MANIFEST RUN_BUDGET_S [TEST_BUDGET_S]
# The whole script stays within RUN_BUDGET_S + TEST_BUDGET_S + about 60 s.
# hostlink is not installed there: a namespace folder makes it importable.
set -u
manifest=$1
run_budget=$2
test_budget=${3:-0}
: "${OUT:?OUT must name the output folder}"
repo=$PWD
work=/tmp/hostlink_run
mkdir -p "$work" /tmp/ns/hostlink
for d in model traces validation; do ln -sfn "$repo/$d" "/tmp/ns/hostlink/$d"; done
export PYTHONPATH=/tmp/ns PYTHONUNBUFFERED=1
exec > >(tee "$work/console.log") 2>&1

echo "== $(date -u +%FT%TZ) build"
make -C gpu_kernels -j"$(nproc)" > "$work/build.log" 2>&1 || { tail -20 "$work/build.log"; }
nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current,memory.used,memory.total --format=csv

echo "== $(date -u +%FT%TZ) validate run $manifest"
timeout --kill-after=10 "$run_budget" python3 -m hostlink.validation.cli run "$manifest" --out "$work/run" \
  --no-build --quiet --timeout-s "$((run_budget * 2 / 3))"
echo "validate exit $?"
if [ ! -f "$work/run/results.csv" ] && [ -f "$work/run/run.json" ]; then
  echo "== reparse after timeout"
  python3 -m hostlink.validation.cli run "$manifest" --out "$work/run" --reparse || true
fi

echo "== $(date -u +%FT%TZ) PCIe link while streaming host memory"
gpu_kernels/bin/zc_read --total-B 4GiB --reps 8 > /dev/null &
zc=$!
sleep 1
nvidia-smi --query-gpu=pcie.link.gen.current,pcie.link.width.current,pcie.link.gen.max,pcie.link.width.max,pcie.link.gen.gpumax,pcie.link.gen.hostmax --format=csv | tee "$work/pcie_under_load.csv"
wait $zc

if [ "$test_budget" -gt 0 ]; then
  echo "== $(date -u +%FT%TZ) GPU tests"
  timeout --kill-after=10 "$test_budget" python3 -m pytest tests/gpu_kernels -m gpu -q -p no:cacheprovider -x \
    > "$work/pytest_gpu.log" 2>&1
  echo "pytest exit $?"
  tail -5 "$work/pytest_gpu.log"
fi

echo "== $(date -u +%FT%TZ) pack"
cd "$work/run" 2>/dev/null && {
  for f in environment.json metadata.json results.csv results.parquet; do [ -f "$f" ] && cp "$f" "$OUT/"; done
  tar czf "$OUT/raw.tar.gz" raw logs manifest.toml run.json 2>/dev/null
  if [ -d traces ]; then
    graphs=$(ls graphs/*.bel.* 2>/dev/null | while read -r f; do
      [ "$(stat -c %s "$f")" -lt 8000000 ] && echo "$f"; done)
    tar czf "$OUT/traces.tar.gz" traces $graphs
  fi
  cd "$work"
}
cp "$work/console.log" "$work/console_copy.log"
tar czf "$OUT/extra.tar.gz" -C "$work" build.log pcie_under_load.csv console_copy.log \
  $(cd "$work" && ls pytest_gpu.log 2>/dev/null)
ls -la "$OUT"
