"""``hostlink link``: JSON and table output, presets with overrides, one-line errors."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from hostlink.model.cli.main import main

SEED = ["link", "--gen", "3", "--lanes", "16", "--request-bytes", "32", "--tags", "256",
        "--rtt-ns", "1000"]


def _json(capsys, argv):
    assert main(argv + ["--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_json_has_the_documented_keys(capsys):
    out = _json(capsys, SEED)
    for key in ("bw_GBps", "bound", "bw_link_GBps", "bw_tags_GBps", "bw_dram_GBps",
                "wire_efficiency", "outstanding_to_saturate"):
        assert key in out
    assert out["bound"] == "tags"
    assert out["bw_GBps"] == pytest.approx(32 * 256 / 1000)
    assert out["bw_dram_GBps"] is None            # no DRAM bound without --dram-gbps
    assert out["config"]["gen"] == 3


def test_units_and_dram_flags(capsys):
    out = _json(capsys, SEED[:-1] + ["1.6 us", "--dram-gbps", "19.2", "--dram-burst-bytes", "64"])
    assert out["bw_tags_GBps"] == pytest.approx(32 * 256 / 1600)
    assert out["bw_dram_GBps"] == pytest.approx(9.6)
    assert out["config"]["rtt_ns"] == 1600


def test_system_preset_with_overrides(capsys):
    base = _json(capsys, ["link", "--system", "v100-pcie3"])
    assert base["config"]["system"] == "v100-pcie3"
    assert base["bw_dram_GBps"] is not None
    faster = _json(capsys, ["link", "--system", "v100-pcie3", "--gen", "4", "--tags", "768",
                            "--request-bytes", "128"])
    assert faster["config"]["gen"] == 4
    assert faster["bw_link_GBps"] > base["bw_link_GBps"]


def test_table_output(capsys):
    assert main(SEED + ["--dram-gbps", "19.2"]) == 0
    out = capsys.readouterr().out
    assert "predicted" in out and "binds" in out and "tags" in out


@pytest.mark.parametrize("argv, message", [
    (["link", "--gen", "3", "--lanes", "16"], "give --request-bytes, --tags, --rtt-ns"),
    (SEED[:4] + ["3"] + SEED[5:], "link.lanes: 3 is not one of"),
    (SEED[:8] + ["1000"] + SEED[9:], "link.tags: 1000 is outside 1..256"),
    (SEED[:-1] + ["-5"], "link.rtt_ns"),
    (SEED + ["--mps-bytes", "100"], "link.mps_B: 100"),
    (SEED + ["--offset-bytes", "5000"], "link.offset_B"),
    (["link", "--system", "no-such-system"], "no-such-system"),
    (["link", "--system", "v100-pcie3", "--lanes", "3"], "link.lanes"),
])
def test_bad_arguments_give_one_line(capsys, argv, message):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_bad_unit_is_an_argparse_error(capsys):
    with pytest.raises(SystemExit) as exc:
        main(SEED[:-1] + ["5 GB"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "rtt_ns" in err and err.count("\n") == 1


def test_console_command_exit_status():
    proc = subprocess.run([sys.executable, "-m", "hostlink.model.cli.main", *SEED[:-1], "x"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1
