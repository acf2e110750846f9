"""A truncated or corrupt results part names itself and what to delete, and the sweep
resumes once it is gone."""
from __future__ import annotations

import pytest

from hostlink.model.cli.main import main
from hostlink.model.sweep import load_results, run_sweep
from hostlink.model.sweep.store import StoreError

SWEEP = """
[sweep]
name = "corrupt"
system = "h100-pcie5"

[workload]
kind = "sizes"
sizes_B = [128]
fractions = [1.0]

[[axis]]
key = "link.tags"
values = [32, 64, 128, 256]
"""


@pytest.mark.parametrize("damage", ["truncate", "garbage", "empty"])
def test_corrupt_part_names_what_to_delete_and_resume_recomputes(tmp_path, capsys, damage):
    sweep = tmp_path / "s.toml"
    sweep.write_text(SWEEP)
    out = tmp_path / "out"
    run_sweep(sweep, out, jobs=1, batch_size=2)
    good = load_results(out, wide=True)
    parts = sorted((out / "results").glob("part-*.parquet"))
    assert len(parts) == 2  # 4 points in batches of 2
    raw = parts[0].read_bytes()
    parts[0].write_bytes({"truncate": raw[: len(raw) // 2], "garbage": b"\x00" * 64,
                          "empty": b""}[damage])
    with pytest.raises(StoreError) as info:
        load_results(out)
    msg = str(info.value)
    assert msg.startswith(f"{parts[0]}: cannot read results") and "\n" not in msg
    assert "delete it and run the sweep again" in msg
    # the commands that read the folder say the same on one line, exit 2
    assert main(["sweep", str(sweep), "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(parts[0]) in err
    assert main(["plot", str(out), "--kind", "bw-vs-tags", "--out", str(tmp_path / "p.png")]) == 2
    assert str(parts[0]) in capsys.readouterr().err
    # doing what it says recomputes the lost points, to the same numbers
    parts[0].unlink()
    assert main(["sweep", str(sweep), "--out", str(out), "--quiet"]) == 0
    again = load_results(out, wide=True)
    merged = good.merge(again, on="run_id", suffixes=("_a", "_b"))
    assert len(merged) == 4 and (merged["bw_GBps_a"] == merged["bw_GBps_b"]).all()


def test_validation_results_parquet_names_its_csv(tmp_path):
    from hostlink.validation.results_io import ResultsError, read_results
    p = tmp_path / "results.parquet"
    p.write_bytes(b"PAR1" + b"\x00" * 10)
    (tmp_path / "results.csv").write_text("")
    with pytest.raises(ResultsError, match=r"results.parquet: cannot read results .*truncated "
                                           r"or corrupt: delete it.*results.csv beside it"):
        read_results(p)


def test_program_output_latin1_names_line(tmp_path):
    from hostlink.validation.results_io import ResultsError, read_output
    p = tmp_path / "out.jsonl"
    p.write_bytes(b'{"type": "device"}\n{"type": "caf\xe9"}\n')
    with pytest.raises(ResultsError, match=r"out.jsonl:2: byte 0xe9"):
        read_output(p)
