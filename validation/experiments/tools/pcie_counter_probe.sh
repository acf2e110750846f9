#!/bin/bash
# What the GPU's own PCIe counters see of warp-coalesced zero-copy reads at
# offsets 0 to 112 B from the 128 B line (4 B per lane): nvidia-smi dmon's
# PCIe receive and transmit rates (NVML's byte counters) while each offset
# streams 1 GiB of pinned host memory for a few seconds, beside the program's
# own bandwidth; and, where Nsight Compute lists PCIe metrics for this GPU,
# those metrics per offset (--clock-control none: the card's clocks untouched).
# Received bytes per byte read tell whether the counter sees TLP headers and so
# how many completions an offset costs. Run from the repository root on the lent
# GPU with OUT set, after gpu_kernels/bin/zc_read is built; everything lands in
# $OUT/pcie_counters.tar.gz.
source "$(dirname "$0")/probe_common.sh"
W=/tmp/pcie_counters
mkdir -p $W
Z=gpu_kernels/bin/zc_read
[ -x $Z ] || make -C gpu_kernels bin/zc_read > $W/build.txt 2>&1
nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current --format=csv > $W/gpu.txt 2>&1
for off in 0 16 32 48 64 80 96 112; do
  $Z --pattern coalesced --offset-B $off --bytes-per-lane 4 --total-B 1GiB --reps 240 \
    > $W/zc_off$off.jsonl 2> $W/zc_off$off.err &
  zc=$!
  sleep 2
  nvidia-smi dmon -s t -d 1 -c 3 > $W/dmon_off$off.txt 2>&1
  wait $zc
done
# the metric list's header and its PCIe metrics (the whole list is about 1 MB)
ncu --query-metrics 2>&1 | awk 'NR <= 5 || /^pcie__/' > $W/ncu_metrics_pcie.txt
M=$(grep -o '^pcie__[a-z0-9_]*' $W/ncu_metrics_pcie.txt | sort -u | sed 's/$/.sum/' | paste -sd, -)
echo "pcie metrics: $M" > $W/ncu_run.txt
if [ -n "$M" ]; then
  timeout 240 ncu --clock-control none -k regex:read_kernel --csv --page raw \
    --metrics "gpu__time_duration.sum,$M" \
    $Z --pattern coalesced --offset-B 0,16,32,48,64,80,96,112 --bytes-per-lane 4 \
    --total-B 256MiB --reps 1 > $W/ncu.csv 2> $W/ncu.err
  echo "ncu rc $?" >> $W/ncu_run.txt
fi
find $W -size 0 -delete          # stderr files of runs that printed nothing
(cd $W && tar czf "$OUT/pcie_counters.tar.gz" .)
ls -l "$OUT"
