"""Generate several graphs of a manifest at once, one process each, into a
graph folder that ``hostlink validate run --graph-dir`` then finds ready.

Usage: python3 pregen.py GRAPH_DIR MANIFEST [MANIFEST ...]
(every generated graph the manifests use; a name two manifests define
differently is an error). Prints one JSON line per graph with its
generation time.
"""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from hostlink.validation.manifest import load_manifest
from hostlink.validation.runner import graph_files, graph_gen_command


def main(argv: list[str]) -> int:
    gdir = Path(argv[0])
    gdir.mkdir(parents=True, exist_ok=True)
    specs = {}
    for path in argv[1:]:
        m = load_manifest(path)
        for name in m.graphs_used():
            spec = m.graphs[name]
            if spec.kind == "file":
                continue
            if specs.setdefault(name, spec) != spec:
                raise SystemExit(f"pregen: graph '{name}' is defined differently in {path}")
    procs = {}
    for name, spec in specs.items():
        prefix = spec.prefix(gdir)
        if all(p.exists() for p in graph_files(prefix)):
            continue
        cmd = graph_gen_command(spec.kind, spec.scale, spec.degree, spec.seed, prefix,
                                spec.params())
        procs[name] = (subprocess.Popen(cmd), time.monotonic())
    rc = 0
    for name, (p, t0) in procs.items():
        code = p.wait()
        rc = rc or code
        print(json.dumps({"graph": name, "returncode": code, "generate_s": round(time.monotonic() - t0, 1)}),
              flush=True)
    return rc


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
