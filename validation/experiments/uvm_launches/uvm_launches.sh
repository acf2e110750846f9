#!/bin/bash
# UVM first touch split over launches (gpu_kernels/bin/uvm_touch --launches): the
# same lines read by 1 to 64 launches, each timed (detail.launch_ms), to tell a
# run's one-off fault cost from a cost every launch that faults pays, and one VA
# block per launch with the host idle 0 us to 3 ms before each. Managed
# buffers of at most 128 MiB (far below the GPU's free memory).
# Run from the repository root on the lent GPU with OUT set.
source "$(dirname "$0")/../tools/probe_common.sh"
nvidia-smi --query-gpu=name,pcie.link.gen.current,pcie.link.width.current,driver_version,memory.free --format=csv > $OUT/gpu.txt 2>&1
( time make -C gpu_kernels bin/uvm_touch ) > $OUT/build.txt 2>&1 || { cat $OUT/build.txt; exit 1; }
U=gpu_kernels/bin/uvm_touch
{
# one line per 2 MiB VA block: 16 and 64 blocks, all in one launch or a few per launch
$U --size-B 32MiB --pattern sparse --stride-B 2MiB --advice none,readmostly --host-state fresh,returned --launches 1,4,16 --reps 5
$U --size-B 128MiB --pattern sparse --stride-B 2MiB --advice none,readmostly --host-state returned --launches 1,8,64 --reps 5
# dense: a traversal's edge list of scale 14 (2-4 MiB), read whole by 1, 2 or 8 launches
$U --size-B 2MiB,4MiB --pattern seq --advice none,readmostly --host-state returned --launches 1,2,8 --reps 5
# one VA block per launch, the host idle before each launch after the first
$U --size-B 32MiB --pattern sparse --stride-B 2MiB --advice none --host-state returned --launches 16 --idle-us 0,30,100,300,1000,3000 --reps 5
} > $OUT/launches.jsonl 2>>$OUT/log.txt
echo done
tail -3 $OUT/log.txt
wc -l $OUT/*
