"""The data tree read through its index: every committed run listed, every record
valid, every folder a record or the index names committed, and the generated
pages (records' derived tables, the index, the README's table) what the
generator writes now."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from hostlink.model.errors import ConfigError
from hostlink.validation import data_index, records
from hostlink.validation.data_tree import EXPERIMENTS, committed_runs

REPO = EXPERIMENTS.parents[1]
ROW = re.compile(r"^\| \[(?P<exp>[\w.-]+)\]\((?P=exp)/README\.md\) \| \[(?P<run>[\w.-]+)\]"
                 r"\((?P=exp)/runs/(?P=run)/\) \|")


@pytest.fixture(scope="module")
def fresh():
    return records.refreshed()


def test_the_generated_pages_are_current():
    # `make index` writes them; a run, record or report changed without it fails here
    assert [str(p.relative_to(REPO)) for p in data_index.write_index(check=True)] == []


def test_every_run_folder_is_in_the_index_and_every_row_is_a_run():
    rows = [ROW.match(line) for line in data_index.INDEX.read_text().splitlines()]
    listed = sorted(f"{m['exp']}/{m['run']}" for m in rows if m)
    folders = sorted(f"{p.parents[1].name}/{p.name}" for p in committed_runs())
    assert listed == folders


def test_every_summary_csv_is_a_reports():
    # the validation notebook and the index read every summary.csv under the tree as a
    # report's; a probe's own table takes another name (summary_by_point.csv)
    from hostlink.validation.report_judge import SUMMARY_COLUMNS
    for path in sorted(EXPERIMENTS.glob("**/summary.csv")):
        header = path.read_text().split("\n", 1)[0].split(",")
        assert set(SUMMARY_COLUMNS) <= set(header), path.relative_to(REPO)


def test_every_record_is_valid_and_names_its_folder(fresh):
    assert len(fresh) == len(committed_runs())
    formers = [rec.former_path for rec in fresh.values() if rec.former_path]
    assert len(set(formers)) == len(formers)        # one old folder, one new run
    # 100: the run folders validation/results/h100/ and h200/ held before the tree
    # (57 + 43); runs made since have none
    assert len(formers) == 100
    assert all(re.fullmatch(r"validation/results/h[12]00/\w+", f) for f in formers)
    for path, rec in fresh.items():
        assert (rec.experiment, rec.run) == (path.parents[2].name, path.parent.name)
        assert rec.measured["gpu"].startswith(records.GPU_NAMES[rec.gpu])
        assert re.fullmatch(r"2026-\d\d-\d\d", rec.measured["date"]), path


def test_supersession_is_marked_both_ways_and_nothing_superseded_is_gone(fresh):
    by_id = {rec.id: rec for rec in fresh.values()}
    pairs = 0
    for rec in by_id.values():
        for newer in rec.superseded_by:
            assert rec.id in by_id[newer].supersedes
            pairs += 1
        for older in rec.supersedes:
            assert rec.id in by_id[older].superseded_by
            assert (EXPERIMENTS / older.replace("/", "/runs/", 1) / "results.parquet").is_file()
    assert pairs >= 1


def test_every_folder_a_record_names_is_committed(fresh):
    for rec in fresh.values():
        used = rec.used_by
        for rid in used["calibrations"]:
            assert (EXPERIMENTS / rid.replace("/", "/runs/", 1) / "calibration.json").is_file(), rid
        for label in used["reports"]:
            exp, rest = label.split("/", 1)
            assert (EXPERIMENTS / exp / "runs" / rest / "report.md").is_file(), label
        for preset in used["presets"]:
            assert (REPO / "sim_configs" / "system" / f"{preset}.toml").is_file()


def test_the_first_run_reports_rest_on_their_calibration_chains(fresh):
    by_id = {rec.id: rec for rec in fresh.values()}
    # the H200's chain starts at launch_latency and ends at atomic_warps (Makefile)
    for rid in ("launch_latency/h200", "atomic_warps/h200", "host_loop/h200-repeat"):
        assert "first_run/h200" in by_id[rid].used_by["reports"], rid
    assert "h200-pcie5" in by_id["atomic_warps/h200"].used_by["presets"]
    assert by_id["uvm_session/h200-repeat"].used_by["bands"]


def test_a_bad_record_is_one_line_naming_file_and_key(tmp_path):
    path = tmp_path / "record.toml"
    path.write_text('experiment = "x"\nrun = "h200"\npurpose = "whim"\nnote = "n"\n')
    with pytest.raises(ConfigError, match=r"record\.toml: 'purpose' = 'whim' is not one of"):
        records.load_record(path)
    path.write_text('experiment = "x"\nrun = "a100"\npurpose = "first"\nnote = "n"\n')
    with pytest.raises(ConfigError, match=r"record\.toml: 'run' = 'a100' is not <gpu>"):
        records.load_record(path)
    path.write_text('experiment = "x"\nrun = "h200"\npurpose = "first"\nnote = "n"\nsupersedes = "y"\n')
    with pytest.raises(ConfigError, match=r"record\.toml: 'supersedes' must be a list"):
        records.load_record(path)


def test_the_readme_needs_its_markers():
    with pytest.raises(ConfigError, match="README.md: no '<!-- validation-table:start -->'"):
        data_index.readme_with_table("no markers here\n", "table")
    text = f"a\n{data_index.START}\nold\n{data_index.END}\nb\n"
    assert data_index.readme_with_table(text, "new") == "a\nnew\nb\n"


def test_the_table_holds_both_gpus_first_run_traversals():
    table = data_index.validation_table()
    row = next(line for line in table.splitlines() if line.startswith("| `traversal/zerocopy`"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1] == "15%"
    for cell in cells[2:]:
        mape = float(cell.split("%")[0])
        assert 0 < mape < 15 and "(286)" in cell
