"""``hostlink validate calibrate`` and ``validate report`` take ``--set`` as ``predict`` does."""
from __future__ import annotations

import json
import tomllib

import pytest

from hostlink.model.cli.main import main
from hostlink.validation import report


@pytest.fixture(scope="module")
def chases(tmp_path_factory):
    """Pointer chases the model measured on an H100 (ld.cv host loads: no cache model)."""
    from hostlink.model.config import load_system
    from hostlink.validation.manifest import micro_case_name
    from hostlink.validation.results_io import write_results
    from hostlink.validation.twins import synthesize
    cases = {}
    for stride in (128, 4096):
        naming = dict(memory_mode="zerocopy", stride_B=stride, footprint_B=64 << 20,
                      order="random", cache="cv")
        cases[micro_case_name("ptr_chase", naming)] = dict(kind="micro", benchmark="ptr_chase",
                                                           **naming, steps=100)
    path = tmp_path_factory.mktemp("chases")
    write_results(synthesize(cases, load_system("h100-pcie5"), fidelity="analytic", seed=3,
                             max_requests=4096), path)
    (path / "metadata.json").write_text(json.dumps({"cases": cases}))
    return path


def _predicted(out):
    summary = report.read_summary(out / "summary.csv")
    return summary.sort_values(["case", "metric"])["predicted"].to_numpy()


def test_report_applies_set_and_names_it(tmp_path, capsys, chases):
    runs = {}
    for rtt in ("1us", "2us"):
        out = tmp_path / rtt
        assert main(["validate", "report", str(chases), "--system", "h100-pcie5",
                     "--set", f"link.rtt_ns={rtt}", "--fidelity", "analytic",
                     "--out", str(out), "--quiet"]) == 0
        runs[rtt] = _predicted(out)
        assert f"--set link.rtt_ns={rtt}" in (out / "report.md").read_text()
    assert (runs["1us"] != runs["2us"]).any()     # a chase waits for each round trip
    assert main(["validate", "report", str(chases), "--system", "h100-pcie5",
                 "--set", "link.nonsense=1", "--quiet", "--out", str(tmp_path / "x")]) == 2
    assert "link.nonsense" in capsys.readouterr().err


def test_calibrate_applies_set_to_the_base_system(tmp_path, capsys, chases):
    out = tmp_path / "calibrated.toml"
    assert main(["validate", "calibrate", str(chases), "--system", "h100-pcie5",
                 "--set", "link.lanes=8", "--fidelity", "analytic", "--steps", "host_round_trip",
                 "--max-requests", "4096", "--out", str(out), "--quiet"]) == 0
    resolved = tomllib.loads(out.read_text())
    assert resolved["resolved_system"]["link"]["lanes"] == 8
    assert main(["validate", "calibrate", str(chases), "--system", "h100-pcie5",
                 "--set", "link.nonsense=1", "--quiet"]) == 2
    assert "link.nonsense" in capsys.readouterr().err
