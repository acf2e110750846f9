#!/bin/bash
cd /root 2>/dev/null; cd $OLDPWD
ROOT=$(pwd)/../..
( cd $ROOT/gpu_kernels && make bin/uvm_touch >/dev/null ) || exit 1
nvcc -O2 -std=c++17 -arch=sm_90 -o advise advise.cu || exit 1
./advise 256 1 | tee $OUT/advise.jsonl; ./advise 256 0 | tee -a $OUT/advise.jsonl; ./advise 64 1 | tee -a $OUT/advise.jsonl
for w in 264 1056 2112 4224 8448; do
  $ROOT/gpu_kernels/bin/uvm_touch --size-B 64MiB,256MiB --pattern seq,random --advice none,readmostly --reps 3 --warps $w | grep measurement
done > $OUT/sweep.jsonl
wc -l $OUT/sweep.jsonl
