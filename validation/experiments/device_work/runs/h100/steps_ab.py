"""A/B of the traversal twin with and without the walk's dependent device steps: the
first source of each BFS case on the given graphs of a first_run folder, predicted as the
twins do (the folder's calibrated system, the kernel's load-ahead, the
DES) from the edge list alone and with the steps; kernel_time_ms against the median of
that source's measured repetitions. One JSON line per case on stdout.

Usage: python3 steps_ab.py RUN_DIR VARIANTS GRAPHS
(e.g. validation/experiments/first_run/runs/h100 merged,merged_aligned,chunked kron21,urand21)
"""
import glob
import json
import sys

import numpy as np

from hostlink.model.config import load_any_system, system_with
from hostlink.validation.twins import load_run
from hostlink.validation.twin_traversal import GraphSource, requests_ahead
from hostlink.validation.twin_common import run_model, PREDICT_MODE
from hostlink.traces.emulator import emulate
from hostlink.traces.emulator.visits import with_visit_skeleton
from hostlink.traces.cache import host_read_cache
from hostlink.traces.coalescer import coalesce

rd = sys.argv[1]; variants = sys.argv[2].split(','); graphs_ = sys.argv[3].split(',')
run = load_run(rd)
system = load_any_system(f"{rd}/calibrated.toml")
cache = host_read_cache(system.gpu)
resident = system.gpu.sm_count * system.gpu.max_warps_per_sm
gs = GraphSource(run)
for graph in graphs_:
    meas = {}
    for f in glob.glob(f"{rd}/raw/trav__*__bfs__{graph}.jsonl"):
        for line in open(f):
            r = json.loads(line)
            if r.get('type') != 'measurement': continue
            p = r['params']
            meas.setdefault((p['variant'], p['memory_mode'], p['id_bytes'], p['source']), []).append(
                (r['metrics']['kernel_time_ms'], p.get('load_ahead', 1)))
    csr = gs.get(graph)
    for v in variants:
        for idb in (4, 8):
            keys = [k for k in meas if k[0] == v and k[2] == idb]
            if not keys: continue
            order = [k[3] for k in meas]                       # sources in the run's order
            src = min({k[3] for k in keys}, key=order.index)
            la = meas[keys[0]][0][1]
            em = emulate(csr, 'bfs', v, source=src, id_bytes=idb, memory='zerocopy', include_device=False, resident_warps=resident)
            host = coalesce(em.trace(), cache=cache, cache_host=True, include_device=False)
            skel = with_visit_skeleton(host, em, la)
            sysv = system_with(system, {"gpu.loads_in_flight_per_warp": requests_ahead(v, la, idb)})
            for mode in sorted({k[1] for k in keys}):
                if (v, mode, idb, src) not in meas: continue
                m = float(np.median([x[0] for x in meas[(v, mode, idb, src)]]))
                a = run_model(host, sysv, PREDICT_MODE[mode], 'des').kernel_ns.sum() * 1e-6
                b = run_model(skel, sysv, PREDICT_MODE[mode], 'des').kernel_ns.sum() * 1e-6
                print(json.dumps({"graph": graph, "variant": v, "id_bytes": idb, "mode": mode, "source": src,
                                  "measured_ms": m, "edge_list_ms": a, "steps_ms": b}), flush=True)
