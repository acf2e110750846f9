#!/bin/bash
# One near-empty traversal launch beside launch_grid's launches of the same grid: BFS
# from an isolated vertex of a random graph of 2^14 vertices (one level, nothing found;
# the warp-per-vertex variants launch 2048 CTAs of 8 warps, as launch_grid --ctas 2048
# does), every variant but balanced, device and zero-copy edges, 8 B ids, 10
# repetitions, CUDA events (bfs_iso.jsonl, launch_grid.jsonl); medians printed.
# Run from the repository root on the lent GPU with OUT set.
source "$(dirname "$0")/../tools/probe_common.sh"
make -C gpu_kernels -j8 bin/bfs bin/launch_grid > /tmp/lp_build.txt 2>&1 || { tail -20 /tmp/lp_build.txt; exit 1; }
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/gpu.txt
python3 - <<'PY'
import numpy as np
V = 16384
rng = np.random.default_rng(5)
u = rng.integers(1, V, 120000); v = rng.integers(1, V, 120000)
keep = u != v
a = np.concatenate([u[keep], v[keep]]); b = np.concatenate([v[keep], u[keep]])
key = np.unique(a.astype(np.int64) * V + b)
a, b = key // V, key % V
offsets = np.zeros(V + 1, dtype=np.uint64); np.add.at(offsets, a + 1, 1); offsets = np.cumsum(offsets).astype(np.uint64)
for ext, arr in (("col", offsets), ("dst", b.astype(np.uint64)), ("val", np.ones(len(b), np.uint32))):
    with open(f"/tmp/iso.bel.{ext}", "wb") as f:
        np.array([len(arr), 0], dtype=np.uint64).tofile(f)
        arr.tofile(f)
print("graph", V, len(b), "vertex 0 degree", int(offsets[1] - offsets[0]))
PY
./gpu_kernels/bin/bfs --graph /tmp/iso --graph-name iso14 --variant naive,merged,merged_aligned,chunked --memory-mode device,zerocopy --id-bytes 8 --source 0 --reps 10 > $OUT/bfs_iso.jsonl 2> $OUT/bfs_iso.err
./gpu_kernels/bin/launch_grid --ctas 2048 --work empty,label --reps 10 > $OUT/launch_grid.jsonl
python3 - <<'PY'
import json, statistics as st, os
out = os.environ["OUT"]
for f in ("bfs_iso.jsonl", "launch_grid.jsonl"):
    d = {}
    for l in open(f"{out}/{f}"):
        r = json.loads(l)
        if r.get("type") != "measurement": continue
        p = r["params"]; m = r["metrics"]
        k = tuple(sorted((k2, v) for k2, v in p.items() if k2 not in ("source",)))
        d.setdefault(k, []).append(m.get("kernel_time_ms", m.get("time_ms")) * 1e3)
    for k, v in d.items(): print(f, dict(k), "median us", round(st.median(v), 2), "min", round(min(v), 2))
PY
