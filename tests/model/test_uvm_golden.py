"""The UVM model against published figures (tests/golden/uvm_seed.csv).

Each row names a configuration; this module builds it and compares the
metric with the row's value within its tolerance. The BFS rows run the
emulator's BFS (merged+aligned, 8 B ids) on GAP urand at scale 17 (degree 16,
about 31 MB of edges) instead of the seed's 32 GB graphs, averaged over three
sources as the seed averages over 64; GPU memory is scaled with the graph, so
the oversubscription ratio is the seed's. Read amplification is set by how
often levels re-read evicted data, which this keeps (it varies by under 10%
between scales 16 and 20 in this model).
"""
from __future__ import annotations

import csv
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest

from hostlink.model.config import load_system, system_with
from hostlink.model.uvm import simulate_uvm
from hostlink.model.workload import SPACE_HOST, RequestStream

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "uvm_seed.csv"
ROWS = list(csv.DictReader(GOLDEN.open()))
BLOCK = 2 * 1024**2


# Figures the model does not reach yet, with the reason; strict, so a fix shows up.
KNOWN_DEVIATIONS = {
    ("duplicate_fraction", "pattern=bfs_merged_aligned;graph=urand17;sources=0/5/77;"
     "capacity=edges/1.8;read_mostly=true;system=v100-pcie3"):
        "with faults reaching the buffer SM by SM (fault_order='sm_interleaved') a batch of "
        "BFS faults spans more neighbour lists, so 76% of its entries repeat a page, under the "
        "80-92% Allen & Ge measured on their (non-BFS) benchmarks; warp-by-warp order gives "
        "82% but a random first touch on an H200 shows the SM-interleaved order's many "
        "separate prefetch runs",
}


def parse(config: str) -> dict[str, str]:
    return dict(item.split("=", 1) for item in config.split(";"))


@lru_cache(maxsize=None)
def bfs_streams(graph: str, sources: str) -> tuple[tuple[RequestStream, ...], int]:
    from hostlink.traces.emulator import emulate
    from hostlink.traces.graphs.generators import kron, urand
    kind, scale = graph[:-2], int(graph[-2:])
    g = {"urand": urand, "kron": kron}[kind](scale, 16, id_bytes=8)
    streams = tuple(emulate(g, "bfs", "merged_aligned", memory="uvm", id_bytes=8,
                            source=int(src)).requests() for src in sources.split("/"))
    return streams, g.num_edges * 8


def sparse_stream() -> RequestStream:
    rng = np.random.default_rng(3)
    pages = rng.permutation(8192)[:2000]
    n = pages.shape[0]
    return RequestStream(launch=np.zeros(n), warp=np.arange(n), inst=np.zeros(n),
                         addr=(0x7F0000000000 + pages * 4096 + 1024).astype(np.uint64),
                         size_B=np.full(n, 128), useful_B=np.full(n, 128),
                         space=np.full(n, SPACE_HOST), is_write=np.zeros(n, bool))


def evaluate(config: dict[str, str], metric: str) -> float:
    system = load_system(config["system"])
    overrides = {k: v for k, v in config.items() if k.startswith("uvm.")}
    if overrides:
        system = system_with(system, [f"{k}={v}" for k, v in overrides.items()])
    if config["pattern"] == "sparse_line_per_page":
        return float(getattr(simulate_uvm(sparse_stream(), system), metric))
    streams, edges_B = bfs_streams(config["graph"], config["sources"])
    ratio = float(config["capacity"].split("/")[1])
    capacity = max(BLOCK, int(edges_B / ratio) // BLOCK * BLOCK)
    values = [getattr(simulate_uvm(s, system, capacity_B=capacity,
                                   read_mostly=config["read_mostly"] == "true"), metric)
              for s in streams if len(s)]
    return float(np.mean(values))


def _param(row: dict) -> object:
    reason = KNOWN_DEVIATIONS.get((row["metric"], row["config"]))
    marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
    return pytest.param(row, marks=marks, id=f"{row['metric']}[{row['config'][:60]}]")


@pytest.mark.parametrize("row", [_param(r) for r in ROWS])
def test_uvm_golden(row):
    got = evaluate(parse(row["config"]), row["metric"])
    assert got == pytest.approx(float(row["value"]), rel=float(row["tol_pct"]) / 100), \
        f"{row['source']} {row['where']}: model {got:.3f} {row['unit']}"


def test_golden_rows_have_sources():
    for row in ROWS:
        assert row["source"] and row["where"] and row["unit"]
        assert float(row["tol_pct"]) >= 0
