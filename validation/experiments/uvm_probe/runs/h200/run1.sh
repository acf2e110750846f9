#!/bin/bash
# build and run the UVM probe; writes to $OUT
set -x
nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current --format=csv
for f in /sys/module/nvidia_uvm/parameters/*; do echo "$(basename $f)=$(cat $f 2>/dev/null)"; done > $OUT/uvm_params.txt
cat $OUT/uvm_params.txt | head -80
CUPTI_INC=$(dirname $(find / -name cupti.h -path '*include*' 2>/dev/null | head -1))
CUPTI_LIB=$(dirname $(find / -name 'libcupti.so*' 2>/dev/null | head -1))
echo inc=$CUPTI_INC lib=$CUPTI_LIB
nvcc --version | tail -2
nvcc -O3 -std=c++17 -arch=sm_90 -I$CUPTI_INC -L$CUPTI_LIB -lcupti -Xlinker -rpath=$CUPTI_LIB -o probe probe.cu || exit 1
CSV=$OUT/recs.csv; : > $CSV
for sz in 64 512; do for pat in seq random; do for adv in none readmostly; do
  ./probe $sz $pat $adv 0 $CSV ${sz}_${pat}_${adv} 1
  ./probe $sz $pat $adv 0 /dev/null ${sz}_${pat}_${adv}_nocupti 0
done; done; done 2>&1 | tee $OUT/summary.jsonl
