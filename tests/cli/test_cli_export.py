"""Sweep results as CSV: ``hostlink sweep --csv`` and ``hostlink export``."""
from __future__ import annotations

import pandas as pd
import pytest

from hostlink.model.cli.main import main
from hostlink.model.sweep import load_results


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    from pathlib import Path
    root = Path(__file__).resolve().parents[2]
    tmp = tmp_path_factory.mktemp("rtt")
    csv = tmp / "wide.csv"
    assert main(["sweep", str(root / "sim_configs" / "sweeps" / "rtt_by_tags.toml"),
                 "--out", str(tmp / "res"), "--jobs", "1", "--quiet", "--csv", str(csv)]) == 0
    return tmp / "res", csv


def test_sweep_writes_a_row_per_point(swept):
    res, csv = swept
    table = pd.read_csv(csv)
    assert len(table) == 6 * 11        # 6 tag widths x RTT 500..3000 ns in 250 ns steps
    point = table[(table["link.tags"] == 32) & (table["link.rtt_ns"] == 500)]
    # Little's law, the tags binding: 32 reads x 128 B / 500 ns
    assert point["bw_GBps"].item() == pytest.approx(32 * 128 / 500)
    assert point["bound"].item() == "tags"
    wide = load_results(res, wide=True)
    assert sorted(table["run_id"]) == sorted(wide["run_id"])


def test_export_long_and_wide(swept, tmp_path, capsys):
    res, csv = swept
    out = tmp_path / "long.csv"
    assert main(["export", str(res), "--csv", str(out), "--long"]) == 0
    assert len(pd.read_csv(out)) == len(load_results(res))
    assert capsys.readouterr().out == f"wrote {len(load_results(res))} rows to {out}\n"
    assert main(["export", str(res), "--csv", "-", "--experiment", "rtt_by_tags"]) == 0
    printed = capsys.readouterr().out
    assert printed.splitlines()[0].startswith("run_id,") and len(printed.splitlines()) == 67


def test_export_of_a_missing_folder_is_one_line(tmp_path, capsys):
    assert main(["export", str(tmp_path / "none"), "--csv", str(tmp_path / "x.csv")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "none" in err
    assert not (tmp_path / "x.csv").exists()
