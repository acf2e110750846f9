"""hostlink.validation.uvm_counters: the CSV of libuvm_counters.so, read and summarised per launch."""
from __future__ import annotations

import json

import pytest

from hostlink.model.cli.main import main
from hostlink.model.errors import HostlinkError
from hostlink.validation import uvm_counters as uc

HEADER = "record,kind,start_ns,end_ns,value,address,name\n"

# Two launches of one kernel and one of another; records inside, between and after them.
RUN = HEADER + """\
# incomplete records skipped: 1
memcpy,htod,100,300,4096,,
uvm,htod,400,450,2097152,0x7f0000000000,user
kernel,kernel,1000,2000,264,,"void hl::walk<unsigned int, 1>(hl::GraphView<unsigned int>, int)"
uvm,gpu_fault,1100,1300,5,0x7f0000200000,read
uvm,htod,1200,1250,4096,0x7f0000200000,coherence
uvm,htod,1260,1300,65536,0x7f0000210000,prefetch
uvm,gpu_fault,2000,2100,2,0x7f0000220000,read
uvm,htod,1990,2005,12288,0x7f0000220000,coherence
kernel,kernel,3000,3500,132,,other_kernel
uvm,gpu_fault,3100,3400,7,0x7f0000300000,read
uvm,htod,3150,3200,8192,0x7f0000300000,coherence
uvm,htod,3210,3260,8192,0x7f0000302000,coherence
uvm,dtoh,3300,3310,4096,0x7f0000304000,coherence
kernel,kernel,5000,5400,264,,"void hl::walk<unsigned int, 1>(hl::GraphView<unsigned int>, int)"
uvm,htod,5100,5200,2097152,0x7f0000400000,prefetch
uvm,cpu_fault,6000,0,4198400,0x7f0000000000,write
uvm,cpu_fault,6100,0,4198400,0x7f0000001000,read
uvm,gpu_fault,2500,2600,3,0x7f0000500000,write
"""


@pytest.fixture
def run_csv(tmp_path):
    p = tmp_path / "run.csv"
    p.write_text(RUN)
    return p


def write(tmp_path, text, name="bad.csv"):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_reads_every_row_and_note(run_csv):
    c = uc.read_uvm_counters(run_csv)
    assert len(c.records) == 18
    assert c.notes == ("incomplete records skipped: 1",)
    k = c.kernels
    assert list(k["start_ns"]) == [1000, 3000, 5000]
    assert k["name"][0] == "void hl::walk<unsigned int, 1>(hl::GraphView<unsigned int>, int)"
    u = c.of("uvm")
    assert u["address"].iloc[0] == 0x7F0000000000
    assert u["line"].iloc[0] == 4  # header, note, memcpy, then this row
    assert c.records["address"].isna().sum() == 4  # the memcpy and the three kernels


def test_per_launch_exact_aggregates(run_csv):
    pl = uc.per_launch(run_csv).set_index("launch")
    assert list(pl.index) == [0, 1, 2, -1]
    assert list(pl["kernel"]) == ["void hl::walk<unsigned int, 1>(hl::GraphView<unsigned int>, int)", "other_kernel",
                                  "void hl::walk<unsigned int, 1>(hl::GraphView<unsigned int>, int)", "outside"]
    assert list(pl["kernel_ns"].iloc[:3]) == [1000, 500, 400]
    assert list(pl["grid_ctas"].iloc[:3]) == [264, 132, 264]
    assert pl.loc[-1, ["start_ns", "kernel_ns", "grid_ctas"]].isna().all()
    # launch 0: the fault group at its end (2000) is inside: both ends count
    r = pl.loc[0]
    assert (r.fault_groups, r.faults, r.fault_group_ns) == (2, 7, 300)
    assert (r.htod_transfers, r.htod_B, r.htod_ns) == (3, 4096 + 65536 + 12288, 50 + 40 + 15)
    assert (r.dtoh_transfers, r.dtoh_B, r.cpu_faults) == (0, 0, 0)
    r = pl.loc[1]
    assert (r.fault_groups, r.faults, r.fault_group_ns) == (1, 7, 300)
    assert (r.htod_transfers, r.htod_B, r.htod_ns) == (2, 16384, 100)
    assert (r.dtoh_transfers, r.dtoh_B, r.dtoh_ns) == (1, 4096, 10)
    r = pl.loc[2]
    assert (r.fault_groups, r.htod_transfers, r.htod_B, r.htod_ns) == (0, 1, 2097152, 100)
    # outside: the migration before the first launch, the fault group between launches 0 and 1,
    # and the CPU faults after the last
    r = pl.loc[-1]
    assert (r.fault_groups, r.faults, r.fault_group_ns) == (1, 3, 100)
    assert (r.htod_transfers, r.htod_B, r.htod_ns) == (1, 2097152, 50)
    assert r.cpu_faults == 2


def test_totals(run_csv):
    t = uc.totals(run_csv).iloc[0].to_dict()
    assert t == {
        "launches": 3, "kernel_ns": 1900,
        "fault_groups": 4, "faults": 17, "fault_group_ns": 700,
        "htod_transfers": 7, "htod_B": 2 * 2097152 + 4096 + 65536 + 12288 + 16384, "htod_ns": 355,
        "dtoh_transfers": 1, "dtoh_B": 4096, "dtoh_ns": 10, "cpu_faults": 2,
        "outside_fault_groups": 1, "outside_faults": 3, "outside_htod_transfers": 1, "outside_htod_B": 2097152,
        "memcpys": 1, "memcpy_B": 4096,
    }


def test_htod_histogram_power_of_two_buckets(run_csv):
    h = uc.htod_histogram(run_csv)
    assert h.to_dict(orient="list") == {
        "size_B": [4096, 8192, 65536, 2097152],
        # 12288 B falls in the 8 KiB bucket (8192..16383)
        "transfers": [1, 3, 1, 2],
        "htod_B": [4096, 8192 * 2 + 12288, 65536, 2 * 2097152],
    }
    hl = uc.htod_histogram(run_csv, by_launch=True)
    assert hl.to_dict(orient="records") == [
        {"launch": -1, "size_B": 2097152, "transfers": 1, "htod_B": 2097152},
        {"launch": 0, "size_B": 4096, "transfers": 1, "htod_B": 4096},
        {"launch": 0, "size_B": 8192, "transfers": 1, "htod_B": 12288},
        {"launch": 0, "size_B": 65536, "transfers": 1, "htod_B": 65536},
        {"launch": 1, "size_B": 8192, "transfers": 2, "htod_B": 16384},
        {"launch": 2, "size_B": 2097152, "transfers": 1, "htod_B": 2097152},
    ]


def test_by_kernel_sums_launches(run_csv):
    bk = uc.by_kernel(run_csv).set_index("kernel")
    walk = bk.loc["void hl::walk<unsigned int, 1>(hl::GraphView<unsigned int>, int)"]
    assert (walk.launches, walk.kernel_ns, walk.faults, walk.htod_B) == (2, 1400, 7, 4096 + 65536 + 12288 + 2097152)
    assert bk.loc["other_kernel"].launches == 1


def test_summary_json(run_csv, tmp_path):
    out = uc.write_summary_json(run_csv, tmp_path / "s.json")
    s = json.loads(out.read_text())
    assert s["file"] == str(run_csv)
    assert s["totals"]["faults"] == 17 and s["totals"]["launches"] == 3
    assert [b["size_B"] for b in s["htod_size_histogram"]] == [4096, 8192, 65536, 2097152]
    assert len(s["by_kernel"]) == 2 and s["notes"] == ["incomplete records skipped: 1"]


def test_overlapping_launches_take_the_latest_started():
    # launches [0, 100] and [50, 70]: 60 is in both (the later one), 80 only in the first
    got = uc.assign_launches([0, 50], [100, 70], [60, 80, 120, -5, 100])
    assert list(got) == [1, 0, -1, -1, 0]
    assert list(uc.assign_launches([], [], [1, 2])) == [-1, -1]


def test_empty_run_has_zero_totals(tmp_path):
    p = write(tmp_path, HEADER, "empty.csv")
    pl = uc.per_launch(p)
    assert list(pl["launch"]) == [-1] and pl["faults"].iloc[0] == 0
    t = uc.totals(p).iloc[0]
    assert t["launches"] == 0 and t["htod_B"] == 0
    assert uc.htod_histogram(p).empty


def test_hex_or_decimal_addresses(tmp_path):
    p = write(tmp_path, HEADER + "uvm,htod,1,2,4096,4096,coherence\nuvm,htod,3,4,4096,0X1000,coherence\n")
    assert list(uc.read_uvm_counters(p).records["address"]) == [4096, 4096]


@pytest.mark.parametrize("text, message", [
    ("", ":1: missing header"),
    ("uvm,htod,1,2,4096,0x0,coherence\n", ":1: expected the header"),
    ("record,kind,start_ns,end_ns,value\n", ":1: expected the header"),
    (HEADER + "uvm,htod,1,2,4096,0x0\n", ":2: expected 7 fields"),
    (HEADER + "uvm,htod,1,2,4096,0x0,a,b\n", ":2: expected 7 fields"),
    (HEADER + "kernel,kernel,1,2,3,,k\nuvm,htod,abc,2,4096,0x0,coherence\n", ":3: start_ns 'abc' is not"),
    (HEADER + "uvm,htod,1,2,4.5,0x0,coherence\n", ":2: value '4.5' is not"),
    (HEADER + "uvm,htod,1,2,-1,0x0,coherence\n", ":2: value '-1' is not"),
    (HEADER + "uvm,htod,1,2,4096,0xzz,coherence\n", ":2: address '0xzz' is not"),
    (HEADER + "uvm,htod,1,2,99999999999999999999,0x0,coherence\n", ":2: value '99999999999999999999' is out of range"),
    (HEADER + "gpu,htod,1,2,4096,0x0,coherence\n", ":2: unknown record 'gpu'"),
    (HEADER + "uvm,,1,2,4096,0x0,coherence\n", ":2: empty kind"),
    (HEADER + "kernel,kernel,10,5,1,,k\n", ":2: end_ns 5 is before start_ns 10"),
    (HEADER + 'kernel,kernel,1,2,1,,"unterminated\n', ":2: not a CSV row"),
])
def test_malformed_input_names_file_and_line(tmp_path, text, message):
    p = write(tmp_path, text)
    with pytest.raises(uc.UvmCountersError) as err:
        uc.read_uvm_counters(p)
    assert isinstance(err.value, HostlinkError)
    assert str(err.value).startswith(str(p)) and message in str(err.value)


def test_missing_file(tmp_path):
    with pytest.raises(uc.UvmCountersError, match="cannot read"):
        uc.read_uvm_counters(tmp_path / "nope.csv")


def test_cli_prints_totals_and_launches(run_csv, capsys):
    assert main(["validate", "uvm-counters", str(run_csv)]) == 0
    out = capsys.readouterr().out
    assert "3 kernel launches" in out and "faults 17" in out and "2 MiB x2" in out
    assert "note: incomplete records skipped: 1" in out and "other_kernel" not in out
    assert main(["validate", "uvm-counters", str(run_csv), "--per-launch"]) == 0
    out = capsys.readouterr().out
    assert "other_kernel" in out and "outside" in out


def test_cli_json(run_csv, capsys):
    assert main(["validate", "uvm-counters", str(run_csv), "--json", "--per-launch"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["totals"]["htod_transfers"] == 7
    assert [r["launch"] for r in s["per_launch"]] == [0, 1, 2, -1]
    assert s["per_launch"][-1]["kernel_ns"] is None and s["per_launch"][0]["faults"] == 7


def test_cli_bad_input_is_one_line_and_status_2(tmp_path, capsys):
    p = write(tmp_path, HEADER + "uvm,htod,x,2,4096,0x0,coherence\n")
    assert main(["validate", "uvm-counters", str(p)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{p}:2: start_ns 'x'" in err[0]
    assert main(["validate", "uvm-counters", str(tmp_path / "nope.csv")]) == 2
    assert "cannot read" in capsys.readouterr().err
