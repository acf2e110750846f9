"""The SM issue stage's costs: what validation/experiments/request_share/issue_stage_fit.py makes of the
committed request_cost and request_share probes is the committed issue_stage.json, and
the H100 and H200 presets carry its mean (the model's side of the fit, one gap per line
beyond the first, is tests/model/test_des.py's)."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from hostlink.model.config import load_system
from hostlink.validation.data_tree import run_dir, script_path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = script_path("request_share", "issue_stage_fit.py")
LEASES = [str(run_dir("request_cost", "h100")), str(run_dir("request_share", "h100")),
          str(run_dir("request_cost", "h100-repeat")), str(run_dir("request_share", "h100-repeat"))]


def fit_module():
    spec = importlib.util.spec_from_file_location("issue_stage_fit", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_committed_fit_is_the_fit_of_the_committed_probes():
    committed = json.loads((run_dir("request_share", "h100") / "issue_stage.json").read_text())
    fitted = fit_module().fit_leases(LEASES)
    # the committed file names the folders as given on its command line
    assert list(fitted["leases"].values()) == list(committed["leases"].values())
    assert fitted["mean"] == committed["mean"]


def test_the_leases_agree_and_the_presets_carry_their_mean():
    fitted = fit_module().fit_leases(LEASES)
    first, second = fitted["leases"].values()
    for key in ("request_gap_ns", "host_request_gap_ns", "sm_request_ns"):
        assert first[key] == pytest.approx(second[key], rel=0.15), key
    # a host line costs a warp about twice a device line; both above an SM's turn
    mean = fitted["mean"]
    assert mean["host_request_gap_ns"] > 1.8 * mean["request_gap_ns"] > 1.8 * mean["sm_request_ns"]
    for preset in ("h100-pcie5", "h200-pcie5"):
        gpu = load_system(preset).gpu
        assert (gpu.request_gap_ns, gpu.host_request_gap_ns, gpu.sm_request_ns) == (
            mean["request_gap_ns"], mean["host_request_gap_ns"], mean["sm_request_ns"])


def test_unmatched_points_and_odd_arguments_are_errors(tmp_path):
    mod = fit_module()
    (tmp_path / "plain.jsonl").write_text('{"type": "measurement", "params": {}, '
                                          '"metrics": {"bw_GBps": 1}}\n')
    with pytest.raises(ValueError, match="no device record"):
        mod.fit(tmp_path, tmp_path)
    (tmp_path / "plain.jsonl").write_text('{"type": "device", "sm_count": 132}\n'
                                          '{"type": "measurement", "params": {}, '
                                          '"metrics": {"bw_GBps": 1}}\n')
    with pytest.raises(ValueError, match="expected one point"):
        mod.fit(tmp_path, tmp_path)
    (tmp_path / "plain.jsonl").write_text("not json\n")
    with pytest.raises(ValueError, match=r"plain.jsonl:1: not JSON"):
        mod.fit(tmp_path, tmp_path)
    with pytest.raises(ValueError, match="pairs"):
        mod.fit_leases(LEASES[:3])
    assert mod.main([]) == 2
