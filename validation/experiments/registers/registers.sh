#!/bin/bash
# Registers each traversal kernel uses, as ptxas reports them for the programs'
# own build (gpu_kernels/Makefile's NVCCFLAGS and ARCH, plus -Xptxas -v). No GPU:
# run from the repository root with OUT set; writes $OUT/ptxas_PROGRAM.txt and
# $OUT/build.txt (the compiler's version).
set -euo pipefail
: "${OUT:?set OUT to the output folder}"
mkdir -p "$OUT"
flags=$(make -s -C gpu_kernels -p -n 2>/dev/null | sed -n 's/^NVCCFLAGS ?= //p; s/^NVCCFLAGS = //p' | head -1)
arch=$(make -s -C gpu_kernels -p -n 2>/dev/null | sed -n 's/^ARCH ?= //p; s/^ARCH = //p' | head -1)
flags=${flags//\$(ARCH)/$arch}
{ nvcc --version | tail -2; echo "flags: $flags -Xptxas -v"; } > "$OUT/build.txt"
for p in bfs sssp cc pagerank; do
  (cd gpu_kernels && nvcc $flags -Xptxas -v -o /dev/null traversal/$p.cu) 2> "$OUT/ptxas_$p.txt"
  gzip -9f "$OUT/ptxas_$p.txt"
done
ls -la "$OUT"
