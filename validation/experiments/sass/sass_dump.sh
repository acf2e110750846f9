#!/bin/bash
# SASS of the traversal and zero-copy read programs as built for the lent GPU
# (cuobjdump -sass), gzipped into $OUT: what the compiled kernels keep in flight.
# Run from the repository root with OUT set.
source "$(dirname "$0")/../tools/probe_common.sh"
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/gpu.txt 2>&1
progs="bfs sssp cc pagerank zc_read zc_warps"
( time make -C gpu_kernels -j8 $(printf 'bin/%s ' $progs) ) > $OUT/build.txt 2>&1 || { tail -20 $OUT/build.txt; exit 1; }
nvcc --version | tail -2 >> $OUT/build.txt
for p in $progs; do cuobjdump -sass gpu_kernels/bin/$p | gzip -9 > $OUT/$p.sass.gz; done
ls -la $OUT
