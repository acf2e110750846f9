#!/bin/bash
# Whether a warp that exits frees its slot on the SM before its CTA's other
# warps finish: launch_grid's work "spin" (the first live-warps warps of each
# 256-thread CTA spin for spin-us of the global timer, the others exit at once) over
# grids of one CTA per SM up to 128 per SM. The time in rounds of the spin gives
# the CTAs an SM holds at once: 8 (64 warp slots over 8 warps) if slots are
# freed with the CTA, up to 32 (the CTA limit) if a warp's slot is freed when it
# exits; every CTA records its SM and its spin's start and end, from which the
# program reports the CTAs each SM held spinning at once. Run from the repository root on the lent GPU with OUT set; everything
# lands in $OUT (spin.jsonl; spin32.jsonl and spin1024.jsonl for CTAs of one
# and 32 warps; gpu.txt, build.txt).
source "$(dirname "$0")/../tools/probe_common.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,pcie.link.gen.current,pcie.link.width.current \
  --format=csv > "$OUT/gpu.txt" 2>&1
make -C gpu_kernels bin/launch_grid > "$OUT/build.txt" 2>&1 || { tail -20 "$OUT/build.txt"; exit 1; }
gpu_kernels/bin/launch_grid --work spin --live-warps 1,2,4,8 --spin-us 20 --reps 5 \
  --ctas 132,264,528,1056,2112,4224,8448,16896 > "$OUT/spin.jsonl" 2> "$OUT/spin.err"
echo "rc $?" >> "$OUT/spin.err"
# one-warp CTAs: the CTA limit alone (32 per SM on Hopper), for reference
gpu_kernels/bin/launch_grid --work spin --threads-per-cta 32 --live-warps 1 --spin-us 20 --reps 5 \
  --ctas 132,1056,2112,4224,8448,16896 > "$OUT/spin32.jsonl" 2> "$OUT/spin32.err"
echo "rc $?" >> "$OUT/spin32.err"
# 1024-thread CTAs: one or two per SM (32 or 64 warps) with every warp spinning
gpu_kernels/bin/launch_grid --work spin --threads-per-cta 1024 --live-warps 1,32 --spin-us 20 --reps 5 \
  --ctas 132,264,528,1056,2112 > "$OUT/spin1024.jsonl" 2> "$OUT/spin1024.err"
echo "rc $?" >> "$OUT/spin1024.err"
nvidia-smi --query-gpu=clocks.sm --format=csv >> "$OUT/gpu.txt" 2>&1
find "$OUT" -size 0 -delete
ls -l "$OUT"
