#!/bin/bash
# Runs on the GPU machine from the repository root, with OUT set: builds only
# uvm_touch, runs validation/manifests/uvm_sizes.toml with `hostlink validate run`
# and packs the run folder into $OUT/uvm_sizes.tar.gz (plus the build log).
# hostlink is not installed there: a namespace folder makes it importable.
set -u
: "${OUT:?OUT must name the output folder}"
repo=$PWD
mkdir -p /tmp/ns/hostlink
for d in model traces validation; do ln -sfn "$repo/$d" "/tmp/ns/hostlink/$d"; done
export PYTHONPATH=/tmp/ns PYTHONUNBUFFERED=1
make -C gpu_kernels bin/uvm_touch -j"$(nproc)" > "$OUT/build.log" 2>&1 || { tail -20 "$OUT/build.log"; exit 1; }
nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current,memory.used,memory.total --format=csv
dir=/tmp/uvm_sizes
timeout --kill-after=10 "${BUDGET_S:-300}" python3 -m hostlink.validation.cli run validation/manifests/uvm_sizes.toml \
  --out "$dir" --no-build --quiet --timeout-s "${BUDGET_S:-300}"
echo "validate exit $?"
if [ ! -f "$dir/results.csv" ] && [ -f "$dir/run.json" ]; then
  python3 -m hostlink.validation.cli run validation/manifests/uvm_sizes.toml --out "$dir" --reparse || true
fi
(cd "$dir" && tar czf "$OUT/uvm_sizes.tar.gz" .)
ls -la "$OUT"
