"""Write the synthetic measured run in synthetic_h100/ (run from the repository root).

The "measurements" are the model's own predictions of microbenchmark twins on
a known system, the h100-pcie5 preset with:
  link.rtt_ns = 1300, gpu.max_outstanding_host_reads = 400,
  gpu.device_lat_ns = 480, link.dllp_overhead = 0.05,
  translation.tlb_entries = 1024, translation.miss_lat_ns = 900,
  uvm.batch_base_us = 35, uvm.transfer_peak_GBps = 20,
with 1% log-normal noise (seed 7) over 3 repetitions. The values are chosen
so that every calibrated key is identifiable (400 reads x 128 B / 1.3 us =
39 GB/s, below the 128 B link bound of about 51 GB/s). Calibration must
recover them (tests/validation/test_calibrate.py). Twins use 32768 requests
(the tests calibrate with the same number).

    .venv/bin/python tests/validation/data/make_synthetic.py
"""
from __future__ import annotations

import json
from pathlib import Path

from hostlink.model.config import load_system
from hostlink.validation.manifest import micro_case_name
from hostlink.validation.twins import synthesize

HERE = Path(__file__).resolve().parent
OUT = HERE / "synthetic_h100"
TRUTH = {"link.rtt_ns": 1300.0, "gpu.max_outstanding_host_reads": 400,
         "gpu.device_lat_ns": 480.0, "link.dllp_overhead": 0.05,
         "translation.tlb_entries": 1024, "translation.miss_lat_ns": 900.0,
         "uvm.batch_base_us": 35.0, "uvm.transfer_peak_GBps": 20.0}
MAX_REQUESTS = 1 << 15
MiB = 1 << 20


def points() -> dict[str, dict]:
    pts = []
    for mode in ("device", "zerocopy"):
        for stride in (128, 4096, 65536):
            pts.append(("ptr_chase", dict(memory_mode=mode, stride_B=stride, footprint_B=64 * MiB,
                                          order="random", cache="default"),
                        dict(steps=500, reps=3, seed=1)))
    for d in ("h2d", "d2h"):
        for size in (64 << 10, 16 * MiB, 256 * MiB):
            pts.append(("memcpy", dict(direction=d, size_B=size), dict(reps=3, min_bytes_B=256 * MiB)))
    zc = dict(pattern="coalesced", offset_B=0, bytes_per_lane=4, memory_mode="zerocopy",
              cache="default")
    for w in (1, 8, 66, 132, 264, 528, 1056, 4224):
        for u in (1, 4):
            pts.append(("zc_warps", dict(zc, warps=w, unroll=u),
                        dict(total_B=512 * MiB, max_per_warp_B=1 * MiB, reps=3, seed=1)))
    for region in (64 * MiB, 1024 * MiB, 4096 * MiB, 16384 * MiB):
        pts.append(("zc_read", dict(zc, pattern="random", region_B=region, offset_B=None, unroll=4,
                                    warps=0),
                    dict(total_B=1 << 30, max_per_warp_B=1 << 30, reps=3, seed=1)))
    for off in (0, 32, 64, 96):
        for bpl in (4, 16):
            pts.append(("zc_read", dict(zc, offset_B=off, bytes_per_lane=bpl, unroll=4, warps=0),
                        dict(total_B=1 << 30, max_per_warp_B=1 << 30, reps=3, seed=1)))
    for adv in ("none", "readmostly", "accessedby"):
        for pat in ("seq", "random"):
            for size in (16 * MiB, 64 * MiB):
                pts.append(("uvm_touch", dict(size_B=size, pattern=pat, advice=adv),
                            dict(warps=0, reps=3)))
    cases = {}
    for bench, naming, settings in pts:
        naming = {k: v for k, v in naming.items() if v is not None}
        name = micro_case_name(bench, naming)
        cases[name] = {"kind": "micro", "benchmark": bench, **naming, **settings}
    return cases


def main() -> None:
    from hostlink.validation.results_io import write_results

    system = load_system("h100-pcie5", TRUTH)
    cases = points()
    table = synthesize(cases, system, fidelity="des", noise_pct=1.0, reps=3, seed=7,
                       experiment="synthetic-h100", max_requests=MAX_REQUESTS)
    OUT.mkdir(parents=True, exist_ok=True)
    csv, parquet = write_results(table, OUT)
    parquet.unlink()                      # the CSV alone is committed
    meta = {"run_id": "synthetic-h100-synthetic", "experiment": "synthetic-h100",
            "description": "model-generated measurements with known parameters (see truth.json)",
            "cases": cases}
    (OUT / "metadata.json").write_text(json.dumps(meta, indent=1) + "\n")
    (OUT / "truth.json").write_text(json.dumps({"base_system": "h100-pcie5", "truth": TRUTH,
                                                "noise_pct": 1.0, "seed": 7,
                                                "max_requests": MAX_REQUESTS}, indent=1) + "\n")
    print(f"wrote {csv} ({len(table)} rows, {len(cases)} cases)")


if __name__ == "__main__":
    main()
