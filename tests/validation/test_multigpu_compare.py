"""A placed run predicted case by case: the GPUs that ran at once share the host."""
from __future__ import annotations

import json

import pytest

from hostlink.model.config import load_system
from hostlink.model.shared_host import GpuRun, predict_shared
from hostlink.model.workload import Copy
from hostlink.validation.multigpu import compare, verdict
from hostlink.validation.placement import alone_suffix, placed_case_params, together_suffix
from hostlink.validation.results_io import make_table, write_results

BASE = "micro/memcpy/direction=h2d,size_B=268435456"
PARAMS = {"kind": "micro", "benchmark": "memcpy", "direction": "h2d", "size_B": 256 << 20,
          "reps": 3, "min_bytes_B": 256 << 20}


def _system(tmp_path):
    # one socket of one DDR4-2400 channel (19.2 GB/s) under two GPUs: it binds them at once
    path = tmp_path / "t.toml"
    path.write_text('[system]\nname = "t"\nlink = "pcie/gen3_x16"\nhost = "host/ddr4_2400_1ch"\n'
                    'gpu = "gpu/v100_sxm2"\n[link]\ncpl_split = "rcb"\n'
                    '[topology]\nsockets = [{host = "host/ddr4_2400_1ch"}]\ngpus = [{}, {}]\n')
    return load_system(str(path))


def _run(tmp_path, times_ms: dict[str, float]):
    cases = placed_case_params({BASE: PARAMS}, list(times_ms))   # as the runner records them
    rows = [("r", "x", case, "measured", "time_ms", t, "ms", rep)
            for case, t in times_ms.items() for rep in range(3)]
    out = tmp_path / "run"
    write_results(make_table(rows), out)
    (out / "metadata.json").write_text(json.dumps({"experiment": "x", "cases": cases}))
    return out


def _model_ms(system):
    copy = Copy(256 << 20)
    alone = predict_shared([GpuRun(0, copy, node=0)], system).runs[0].time_s * 1e3
    both = predict_shared([GpuRun(0, copy, node=0), GpuRun(1, copy, node=0)], system)
    return alone, [r.time_s * 1e3 for r in both.runs]


def test_runs_at_once_are_predicted_together(tmp_path):
    system = _system(tmp_path)
    alone, both = _model_ms(system)
    assert both[0] > alone   # the one channel binds two copies
    cases = {BASE + alone_suffix(0, "0"): alone, BASE + alone_suffix(1, "0"): alone,
             BASE + together_suffix((0, 1), "0", 0): both[0],
             BASE + together_suffix((0, 1), "0", 1): both[1]}
    table = compare(_run(tmp_path, cases), system)
    assert len(table) == 4
    assert table["error"].abs().max() == pytest.approx(0.0, abs=1e-6)
    at_once = table[table["together"] == "0+1"]
    assert set(at_once["bound"]) == {"dram:0"}
    assert (at_once["predicted_ms"] > at_once["alone_ms"]).all()
    assert verdict(table)["memcpy"]["within"]


def test_a_slower_measurement_falls_outside(tmp_path):
    system = _system(tmp_path)
    alone, both = _model_ms(system)
    cases = {BASE + together_suffix((0, 1), "0", 0): both[0] * 1.2,
             BASE + together_suffix((0, 1), "0", 1): both[1]}
    v = verdict(compare(_run(tmp_path, cases), system))["memcpy"]
    assert not v["within"] and v["worst_error"] == pytest.approx(1 - 1 / 1.2, rel=1e-6)
