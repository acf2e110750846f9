"""A/B of the traversal twins without and with the SM's issue stage: the first source of
each matching traversal case of a run folder, predicted as its report does (the folder's
calibrated system, the kernel's load-ahead, the DES), once as
calibrated (no issue stage: the committed calibrations predate it) and once with the
GPU preset's issue costs (gpu.request_gap_ns, gpu.host_request_gap_ns,
gpu.sm_request_ns); kernel_time_ms against the median of that source's measured
repetitions. One JSON line per case on stdout.

Usage: python3 issue_ab.py RUN_DIR CASE_REGEX [PRESET]
(e.g. validation/experiments/first_run/runs/h100 '^bfs/kron21/merged/' h100-pcie5)
"""
import json
import re
import sys
import time

import numpy as np

from hostlink.model.config import load_any_system, load_system, system_with
from hostlink.validation.twin_traversal import GraphSource, predict_traversal
from hostlink.validation.twins import load_run

KEYS = ("gpu.request_gap_ns", "gpu.host_request_gap_ns", "gpu.sm_request_ns")

rd, pattern = sys.argv[1], re.compile(sys.argv[2])
preset = load_system(sys.argv[3] if len(sys.argv) > 3 else "h100-pcie5")
run = load_run(rd)
system = load_any_system(f"{rd}/calibrated.toml")
costs = {k: float(getattr(preset.gpu, k.split(".")[1])) for k in KEYS}
staged = system_with(system, costs)
graphs = GraphSource(run)
measured = run.measured
for case, params in sorted(run.cases.items()):
    if "kernel" not in params or not pattern.search(case):
        continue
    if params.get("variant") == "balanced":
        continue                                   # runs on the GPU only
    m = measured[(measured.case == case) & (measured.metric == "kernel_time_ms")]
    reps = int(params.get("reps", 1) or 1)
    m = m[m.rep < reps]                            # the first source's repetitions
    if m.empty:
        continue
    t0 = time.time()
    before = predict_traversal(case, params, system, graphs, max_sources=1)
    after = predict_traversal(case, params, staged, graphs, max_sources=1)
    value = lambda rows: next(v for k, v, _ in rows if k == "kernel_time_ms")
    meas = float(np.median(m.value.values))
    b, a = value(before), value(after)
    print(json.dumps({"case": case, "measured_ms": round(meas, 4), "before_ms": round(b, 4),
                      "issue_stage_ms": round(a, 4),
                      "err_before_pct": round(100 * (b / meas - 1), 1),
                      "err_issue_stage_pct": round(100 * (a / meas - 1), 1),
                      **{k: v for k, v in costs.items()}, "wall_s": round(time.time() - t0, 1)}),
          flush=True)
