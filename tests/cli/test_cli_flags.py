"""Command-line friction: --version, bad counts refused, --set where the README
promises it, and where ``config show`` says a value came from."""
from __future__ import annotations

import json
from importlib.metadata import version

import pytest

from hostlink.model.cli.main import main

LINK = ["link", "--system", "h200-pcie5"]


def test_version_prints_the_installed_version(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == f"hostlink {version('hostlink')}"


@pytest.mark.parametrize("argv", [
    ["trace", "gen", "--kernel", "bfs", "--variant", "naive", "--graph", "g", "--out", "o",
     "--chunk-rows", "0"],
    ["trace", "gen", "--kernel", "bfs", "--variant", "naive", "--graph", "g", "--out", "o",
     "--chunk-rows", "63"],          # the emulator's least chunk is 64 rows
    ["trace", "gen", "--kernel", "pagerank", "--variant", "naive", "--graph", "g", "--out", "o",
     "--iterations", "0"],
    ["trace", "convert", "src", "dst", "--chunk-insts", "0"],
    ["trace", "stats", "dir", "--sm-count", "0"],
    ["trace", "stats", "dir", "--l1-ways", "x"],
])
def test_counts_below_their_least_are_refused_before_any_work(capsys, argv):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "error: argument --" in err


def test_chunk_rows_at_the_least_is_accepted(tmp_path, capsys):
    prefix = tmp_path / "k"
    assert main(["graph", "gen", "kron", "--scale", "5", "--out", str(prefix)]) == 0
    assert main(["trace", "gen", "--kernel", "bfs", "--variant", "naive", "--graph", str(prefix),
                 "--out", str(tmp_path / "t"), "--chunk-rows", "64", "--json"]) == 0


@pytest.mark.parametrize("size_B", ["0", "4097", "100000"])
def test_link_refuses_a_request_larger_than_pcie_allows(capsys, size_B):
    assert main(LINK + ["--request-bytes", size_B]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "1..4096 B" in err


def test_link_prints_whole_reads_in_flight(capsys):
    # 4096 B reads at MRRS 512 take 8 tags each: 100 tags hold 12 whole reads, not 12.5
    assert main(LINK + ["--request-bytes", "4096", "--set", "link.tags=100",
                        "--set", "link.mrrs_B=512"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "outstanding reads: 12 allowed" in out
    assert main(LINK + ["--request-bytes", "4096", "--set", "link.tags=100",
                        "--set", "link.mrrs_B=512", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["outstanding_limit"] == pytest.approx(12.5)


def test_link_accepts_set_and_its_own_flags_win(capsys):
    assert main(LINK + ["--set", "link.rtt_ns=2us", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["config"]["rtt_ns"] == 2000
    assert main(LINK + ["--set", "link.rtt_ns=2us", "--rtt-ns", "3000", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["config"]["rtt_ns"] == 3000
    assert main(LINK + ["--set", "link.nonsense=1"]) == 2
    assert "link.nonsense" in capsys.readouterr().err
    assert main(["link", "--set", "link.tags=3", "--gen", "3", "--lanes", "16",
                 "--request-bytes", "32", "--tags", "8", "--rtt-ns", "1000"]) == 2
    assert "--system" in capsys.readouterr().err


def _show(capsys, argv) -> dict[str, str]:
    assert main(["config", "show", *argv]) == 0
    lines = {}
    section = ""
    for line in capsys.readouterr().out.splitlines():
        if line.startswith("["):
            section = line.strip("[]")
        elif line.startswith("  "):
            lines[f"{section}.{line.split()[0]}"] = line
    return lines


def test_config_show_marks_what_the_user_set(tmp_path, capsys):
    base = _show(capsys, ["h200-pcie5"])
    # gpu.loads_in_flight_per_warp is a documented assumption the preset leaves unbacked
    assert "(assumption)" in base["gpu.loads_in_flight_per_warp"]
    line = _show(capsys, ["h200-pcie5", "--set", "gpu.loads_in_flight_per_warp=2"])[
        "gpu.loads_in_flight_per_warp"]
    assert "(assumption)" not in line and "set by the user (--set)" in line
    mine = tmp_path / "mine.toml"
    mine.write_text('[system]\nname = "mine"\nlink = "pcie/gen5_x16"\n'
                    'host = "host/ddr5_4800_8ch"\ngpu = "gpu/h200_sxm"\n'
                    'uvm = "uvm/driver_default"\ntranslation = "translation/gpu_default"\n'
                    '[gpu]\nhost_path_ns = 300\n', encoding="utf-8")
    shown = _show(capsys, [str(mine)])
    assert "(assumption)" not in shown["gpu.host_path_ns"]
    assert f"set in {mine}" in shown["gpu.host_path_ns"]
    # a key the file leaves to its presets keeps the presets' mark
    assert "(assumption)" in shown["gpu.device_lat_ns"]
