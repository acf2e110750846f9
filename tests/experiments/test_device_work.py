"""The H100's device_work probe (validation/experiments/device_work/runs/h100): its per-launch
table is what validation/experiments/device_work/device_work_summary.py makes of the committed files,
and the facts the traversal twins rest on hold in it."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from probe_files import csv_rows as rows
from probe_files import load_script
from hostlink.validation.data_tree import run_dir, script_path

ROOT = Path(__file__).resolve().parents[2]
FOLDER = run_dir("device_work", "h100")
SCRIPT = script_path("device_work", "device_work_summary.py")


def summary_module():
    return load_script(SCRIPT)


def test_the_committed_table_is_the_summary_of_the_committed_files(tmp_path):
    for f in list(FOLDER.glob("ncu_*.csv")) + [FOLDER / "plain.jsonl"]:
        shutil.copy(f, tmp_path / f.name)
    assert summary_module().main([str(tmp_path)]) == 0
    assert rows(tmp_path / "launches.csv") == rows(FOLDER / "launches.csv")


def test_a_folder_without_profiles_is_an_error(tmp_path):
    shutil.copy(FOLDER / "plain.jsonl", tmp_path / "plain.jsonl")
    with pytest.raises(SystemExit, match="no ncu_"):
        summary_module().main([str(tmp_path)])


def launches(**want) -> list[dict]:
    return [r for r in rows(FOLDER / "launches.csv")
            if all(r[k] == str(v) for k, v in want.items())]


def test_scans_are_dispatch_bound_or_issue_bound():
    """BFS's last launch on urand21 tests every vertex and expands none: merged_aligned's
    262,144 CTAs take their dispatch (0.617 ns each, ../launch_latency), chunked's
    32,768 issue their 27.4 instructions per vertex near the SMs' 4 a cycle."""
    ma = launches(kernel="bfs", graph="urand21", memory_mode="device",
                  variant="merged_aligned", id_bytes=8)[-1]
    ch = launches(kernel="bfs", graph="urand21", memory_mode="device", variant="chunked",
                  id_bytes=8)[-1]
    assert int(float(ma["grid_ctas"])) == 262144
    assert float(ma["ncu_us"]) == pytest.approx(262144 * 0.617e-3, rel=0.05)
    assert float(ch["warp_inst"]) / (1 << 21) == pytest.approx(27.4, abs=0.1)
    assert 3.0 < float(ch["ipc_per_sm"]) <= 4.0
    # the programs' device record: 132 SMs at 1980 MHz; Hopper issues from 4 schedulers per SM
    floor_us = float(ch["warp_inst"]) / (132 * 4 * 1.98e3)
    assert floor_us < float(ch["ncu_us"]) < 1.4 * floor_us


def test_the_hubs_launch_runs_at_low_occupancy_and_pays_its_visits():
    """kron21's second BFS launch (first_run's first source) is the hub's walk: 1,357
    trips of one warp, about 0.48 us each in device memory and 0.71-0.75 from host memory
    (a quarter of the load's latency plus a visit of about 0.39 us)."""
    dev = launches(kernel="bfs", graph="kron21", memory_mode="device",
                   variant="merged_aligned", id_bytes=8)[1]
    host = launches(kernel="bfs", graph="kron21", memory_mode="zerocopy",
                    variant="merged_aligned", id_bytes=8)[1]
    assert float(dev["occupancy_pct"]) < 60 and float(host["occupancy_pct"]) < 60
    assert float(dev["ncu_us"]) / 1357 == pytest.approx(0.48, rel=0.05)
    assert float(host["ncu_us"]) / 1357 == pytest.approx(0.75, rel=0.06)


def probe_source(graph: str) -> int:
    """The BFS source the probe ran on ``graph`` (its programs' own records)."""
    import json
    for line in (FOLDER / "plain.jsonl").read_text().splitlines():
        rec = json.loads(line)
        if rec.get("type") == "measurement" and rec["params"].get("graph") == graph:
            return int(rec["params"]["source"])
    raise AssertionError(f"no measurement of {graph} in plain.jsonl")


@pytest.mark.slow
def test_the_zero_copy_twins_host_sectors_are_the_gpus_launch_by_launch():
    """The sectors the SMs read from host memory (Nsight Compute's sysmem reads at the
    L2) in each zero-copy BFS launch on kron21 and urand21 (8 B ids, the probe's
    source) against the traversal twin's host requests through the H100's L1
    (hostlink.traces.cache.host_read_cache): merged_aligned within 0.5% in every launch,
    chunked within 5% (the GPU's L1 keeps a little less of the chunks' shared sectors
    than the twin's, which replays them in trace order). Without the L1 the twin reads
    18% more than the GPU in kron21's fourth launch: the sectors neighbouring warps
    share are read from host memory once, as the L1 has them."""
    import dataclasses

    import numpy as np

    from hostlink.model.predict import resolve_system
    from hostlink.model.workload import SPACE_HOST
    from hostlink.traces.cache import host_read_cache
    from hostlink.traces.coalescer import coalesce
    from hostlink.traces.emulator import emulate
    from hostlink.validation.twin_common import load_run
    from hostlink.validation.twin_traversal import GraphSource

    system = resolve_system(str(ROOT / "validation/experiments/first_run/runs/h100/calibrated.toml"))
    cache = host_read_cache(system.gpu)
    resident = system.gpu.sm_count * system.gpu.max_warps_per_sm
    graphs = GraphSource(load_run(ROOT / "validation/experiments/first_run/runs/h100"))

    def twin_sectors(trace, c, n):
        stream = coalesce(trace, cache=c, cache_host=True, include_device=False)
        host = stream.space == SPACE_HOST
        return np.bincount(stream.launch[host], weights=stream.size_B[host] / 32, minlength=n)

    for graph in ("kron21", "urand21"):
        csr = graphs.get(graph)
        source = probe_source(graph)
        for variant, tol in (("merged_aligned", 0.005), ("chunked", 0.05)):
            gpu = np.array([float(r["sysmem_read_sectors"]) for r in
                            launches(kernel="bfs", graph=graph, memory_mode="zerocopy",
                                     variant=variant, id_bytes=8)])
            em = emulate(csr, "bfs", variant, source=source, id_bytes=8, memory="zerocopy",
                         include_device=False, resident_warps=resident)
            trace = em.trace()
            twin = twin_sectors(trace, cache, len(gpu))
            assert len(twin) == len(gpu), (graph, variant)
            np.testing.assert_allclose(twin, gpu, rtol=tol, err_msg=f"{graph} {variant}")
            if graph == "kron21" and variant == "merged_aligned":
                no_l1 = twin_sectors(trace, dataclasses.replace(cache, l1_size_B=0), len(gpu))
                assert no_l1[3] / gpu[3] > 1.15
