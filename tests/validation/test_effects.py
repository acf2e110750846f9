"""The model's known gaps are data: validation/effects.toml, read by the diagnosis."""
from __future__ import annotations

import glob
import re
from pathlib import Path

import pandas as pd
import pytest

from hostlink.model.errors import HostlinkError
from hostlink.validation import report_diagnose
from hostlink.validation.report_judge import annotate, group_stats

ROOT = Path(__file__).resolve().parents[2]
RESULTS = re.compile(r"validation/experiments/[A-Za-z0-9_/*.-]*[A-Za-z0-9_*/]")


def _entries() -> list[dict]:
    import tomllib
    return tomllib.loads(report_diagnose.EFFECTS_TOML.read_text())["effect"]


def test_the_file_sits_in_the_package_and_gives_both_signs_per_group():
    assert report_diagnose.EFFECTS_TOML.parent == Path(report_diagnose.__file__).parent
    effects = report_diagnose.load_effects()
    assert effects == report_diagnose.EFFECTS and len(effects) == len(_entries())
    assert all(fast and slow and fast != slow for fast, slow in effects.values())


@pytest.mark.parametrize("entry", _entries(), ids=lambda e: e["group"])
def test_every_result_folder_a_text_quotes_is_cited_and_committed(entry):
    quoted = {m.rstrip(".") for m in RESULTS.findall(entry["too_fast"] + " " + entry["too_slow"])}
    assert quoted <= set(entry["cites"])
    for cited in entry["cites"]:
        assert glob.glob(str(ROOT / cited)), f"{entry['group']}: {cited} is not committed"


def _coalesced(measured, predicted):
    # two coalesced-read cases off by the same sign: one group, judged on bandwidth
    cases = {f"micro/zc_read/pattern=coalesced,offset_B=0,memory_mode={m}": {
        "kind": "micro", "benchmark": "zc_read", "pattern": "coalesced", "offset_B": 0,
        "memory_mode": m} for m in ("device", "zerocopy")}
    s = pd.DataFrame({"case": list(cases), "metric": "bw_GBps", "unit": "GB/s",
                      "measured": measured, "predicted": predicted})
    s["error_pct"] = (s["predicted"] - s["measured"]) / s["measured"] * 100
    ann = annotate(s, cases)
    (st,) = group_stats(ann, set())
    return st, ann


def test_the_diagnosis_quotes_the_files_text_by_the_sign_of_the_error(tmp_path, monkeypatch):
    # the H100's first_run: device memory 2876 GB/s measured against the twin's 3287,
    # pinned host memory 46.1 against 51.3 (validation/experiments/first_run/runs/h100/summary.csv)
    fast, ann = _coalesced([2876.26, 46.13], [3286.97, 51.29])
    slow, _ = _coalesced([3286.97, 51.29], [2876.26, 46.13])
    path = tmp_path / "effects.toml"
    path.write_text('[[effect]]\ngroup = "micro/zc_read"\ncites = []\n'
                    'too_fast = "a fast gap"\ntoo_slow = "a slow gap"\n')
    monkeypatch.setattr(report_diagnose, "EFFECTS", report_diagnose.load_effects(path))
    assert report_diagnose.diagnose(fast, ann)[-1] == \
        "Effect the model lacks, by the sign of the error: a fast gap."
    assert report_diagnose.diagnose(slow, ann)[-1] == \
        "Effect the model lacks, by the sign of the error: a slow gap."


@pytest.mark.parametrize("text, where", [
    ("[[effect]\n", "not valid TOML"),
    ('[[effect]]\ngroup = "g"\ntoo_fast = "x"\n', "'effect[0].too_slow' is required"),
    ('[[effect]]\ngroup = "g"\ntoo_fast = "x"\ntoo_slow = "y"\n' * 2,
     "'effect[1].group': g given twice"),
])
def test_a_bad_file_is_one_line_naming_it(tmp_path, text, where):
    path = tmp_path / "effects.toml"
    path.write_text(text)
    with pytest.raises(HostlinkError) as exc:
        report_diagnose.load_effects(path)
    msg = str(exc.value)
    assert msg.startswith(f"{path}: ") and where in msg and "\n" not in msg
