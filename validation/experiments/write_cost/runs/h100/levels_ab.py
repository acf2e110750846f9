"""What-if: the issue stage's SM cost read as the memory's (this folder's README), against
the stage as it is, for the first source of each matching traversal case of a run folder.

"stage": the folder's calibrated system with the H100 preset's issue costs (6.54 /
13.64 / 4.34 ns), as request_share/issue_ab.py predicts it. "levels": the same, but
every device access replayed in the engine's request order through the GPU's L2
alone (hostlink.traces.cache, 50 MiB, L1 hits already left out by the twin), a read
the L2 serves taking 1/120.3 G s per 32 B of the device server (this probe's
scattered L2 rate), one DRAM serves its bytes over the device bandwidth plus, once
per line, what brings a lone sector to 1/31.4 G s (the DRAM's scattered rate), both
shared by all SMs, and each SM's own cost per line 0.74 ns (the bound from 33 SMs).
The what-if patches build_inputs; nothing in the model changes. One JSON line per
case on stdout: kernel_time_ms measured (median of the source's repetitions), both
predictions and their errors, and the share of device reads the L2 served.

Usage: python3 levels_ab.py RUN_DIR CASE_REGEX
(e.g. validation/experiments/first_run/runs/h100 '^bfs/kron21/merged_aligned/device/8B')
"""
import dataclasses, json, re, sys, time
import numpy as np
from hostlink.model.config import load_any_system, load_system, system_with
from hostlink.validation.twin_traversal import GraphSource, predict_traversal
from hostlink.validation.twins import load_run
import hostlink.model.des.inputs as inp
from hostlink.model.des.events import DEVICE_READ, DEVICE_WRITE
from hostlink.traces.cache import CacheConfig, CacheState

L2_SECTOR_NS = 1 / 120.3      # write_cost: scattered sectors the L2 serves, all SMs
DRAM_SECTOR_NS = 1 / 31.4     # write_cost: scattered sectors from DRAM, all SMs
SM_NS = 0.74                  # write_cost: an SM sends at least 1.34 G lines/s
MODE = {"on": False}
STATS = {}
orig_build = inp.build_inputs

def patched(stream, system, **kw):
    x = orig_build(stream, system, **kw)
    if not MODE["on"]:
        return x
    kind = np.asarray(x.kind)
    dev = np.flatnonzero((kind == DEVICE_READ) | (kind == DEVICE_WRITE))
    if len(dev) == 0:
        return x
    addr = stream.addr[x.row[dev]].astype(np.int64)
    st = CacheState(CacheConfig.from_gpu(system.gpu, l1=False))
    lv = st.levels(0, addr // 32)
    rd = kind[dev] == DEVICE_READ
    leads = x.leads_per_request()[dev]
    lines = x.lines_per_request()[dev]
    size = np.asarray(x.size_B)[dev].astype(float)
    bw = system.gpu.device_bw_GBps
    dram_extra = DRAM_SECTOR_NS - 32 / bw
    dev_ns = np.array(x.dev_ns, dtype=float)
    r_l2 = rd & (lv == 1)
    r_dr = rd & (lv == 2)
    dev_ns[dev[r_l2]] = size[r_l2] / 32 * L2_SECTOR_NS
    dev_ns[dev[r_dr]] = size[r_dr] / bw + leads[r_dr] * lines[r_dr] * dram_extra
    STATS["l2_share"] = float(r_l2.sum() / max(1, rd.sum()))
    return dataclasses.replace(x, dev_ns=dev_ns, sm_request_ns=SM_NS)

inp.build_inputs = patched
import hostlink.model.des as d
if hasattr(d, "build_inputs"): d.build_inputs = patched
import hostlink.model.predict as pr
if hasattr(pr, "build_inputs"): pr.build_inputs = patched

rd_, pattern = sys.argv[1], re.compile(sys.argv[2])
run = load_run(rd_)
system = load_any_system(f"{rd_}/calibrated.toml")
preset = load_system("h100-pcie5")
KEYS = ("gpu.request_gap_ns", "gpu.host_request_gap_ns", "gpu.sm_request_ns")
staged = system_with(system, {k: float(getattr(preset.gpu, k.split(".")[1])) for k in KEYS})
graphs = GraphSource(run)
measured = run.measured
for case, params in sorted(run.cases.items()):
    if "kernel" not in params or not pattern.search(case) or params.get("variant") == "balanced":
        continue
    m = measured[(measured.case == case) & (measured.metric == "kernel_time_ms")]
    m = m[m.rep < int(params.get("reps", 1) or 1)]
    if m.empty:
        continue
    t0 = time.time()
    val = lambda rows: next(v for k, v, _ in rows if k == "kernel_time_ms")
    MODE["on"] = False
    a = val(predict_traversal(case, params, staged, graphs, max_sources=1))
    MODE["on"] = True
    b = val(predict_traversal(case, params, staged, graphs, max_sources=1))
    meas = float(np.median(m.value.values))
    print(json.dumps({"case": case, "measured_ms": round(meas, 4), "stage_ms": round(a, 4),
                      "levels_ms": round(b, 4), "err_stage": round(100 * (a / meas - 1), 1),
                      "err_levels": round(100 * (b / meas - 1), 1),
                      "l2_share": round(STATS.get("l2_share", -1), 3), "s": round(time.time() - t0, 1)}),
          flush=True)
