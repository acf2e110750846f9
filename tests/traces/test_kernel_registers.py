"""The traversal programs' registers per thread (traces/kernel_registers.py): their source,
the profiler's count where it ran, and the launches that carry them."""
from __future__ import annotations

import gzip
import re

import pandas as pd

from hostlink.model.config import load_system
from hostlink.traces.graphs.families import build_graph
from hostlink.traces.kernel_registers import REGISTERS, registers
from hostlink.traces.traversal import traversal_workload
from hostlink.validation.data_tree import run_dir

PTXAS = run_dir("registers", "h200")
ALGOS = {"BfsAlgo": "bfs", "SsspAlgo": "sssp", "CcAlgo": "cc", "PrAlgo": "pagerank"}
VARIANTS = ("naive", "merged", "merged_aligned", "chunked", "balanced")   # walk.cuh's order
ENTRY = re.compile(r"Compiling entry function '_ZN2hl4walkI(\w)Li(\d)ELi(\d)ELi(\d)ENS_\d+"
                   r"(\w+?Algo)E[^']*'.*?Used (\d+) registers", re.S)


def ptxas_table() -> dict:
    out = {}
    for program in ("bfs", "sssp", "cc", "pagerank"):
        text = gzip.open(PTXAS / f"ptxas_{program}.txt.gz", "rt").read()
        for idt, var, trace, ahead, algo, regs in ENTRY.findall(text):
            if trace == "0":                      # kNoTrace: the timed build
                key = (ALGOS[algo], VARIANTS[int(var)])
                out.setdefault(key, {})[(8 if idt == "m" else 4, int(ahead))] = int(regs)
    return out


def test_the_table_is_the_committed_ptxas_reports():
    assert ptxas_table() == REGISTERS
    assert "13.0" in (PTXAS / "build.txt").read_text()


def test_the_profiler_counted_the_same_registers():
    # Nsight Compute's registers per thread of the launches it profiled (load-ahead 4)
    d = pd.read_csv(run_dir("device_work", "h100") / "launches.csv")
    for row in d.drop_duplicates(["kernel", "variant", "id_bytes"]).itertuples():
        assert registers(row.kernel, row.variant, row.id_bytes, 4) == row.registers, row


def test_only_the_balanced_walk_holds_fewer_ctas():
    for (kernel, variant), counts in REGISTERS.items():
        assert (max(counts.values()) > 32) == (variant == "balanced"), (kernel, variant)


def test_a_runs_launches_carry_the_programs_registers():
    system = load_system("h200-pcie5")
    grid = build_graph("grid", dims="32x32", ids="shuffled", seed=3)
    work = traversal_workload(grid, "bfs", "balanced", system.gpu, source=5, id_bytes=8,
                              load_ahead=4)
    assert {info.regs_per_thread for info in work.stream.launches} == {58}
    assert registers("bfs", "balanced", 8, 2) == 0          # not a built load-ahead
