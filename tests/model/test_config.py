"""Config loading: presets, overrides, unit strings, errors that name file and key."""
from __future__ import annotations

import subprocess
import sys

import pytest

from hostlink.model.config import (list_presets, load_any_system, load_component, load_system,
                                   write_resolved)
from hostlink.model.errors import ConfigError

REQUIRED_SYSTEMS = ("v100-pcie3", "a100-pcie4", "h100-pcie5", "h200-pcie5")


def test_required_system_presets_exist_and_load():
    names = list_presets("system")
    for name in REQUIRED_SYSTEMS:
        assert name in names
        system = load_system(name)
        assert system.name == name
        assert system.gpu.sm_count > 0


def test_every_preset_of_every_kind_loads():
    for name in list_presets("system"):
        load_system(name)
    pcie = list_presets("pcie")
    assert {f"gen{g}_x{l}" for g in range(1, 7) for l in (1, 4, 8, 16)} <= set(pcie)
    for name in pcie:
        values, _, _ = load_component("link", name)
        gen, lanes = name.removeprefix("gen").split("_x")
        assert (values["gen"], values["lanes"]) == (int(gen), int(lanes))
    for section, kind in (("host", "host"), ("gpu", "gpu"), ("uvm", "uvm"),
                          ("translation", "translation")):
        assert list_presets(kind)
        for name in list_presets(kind):
            load_component(section, name)


def test_seed_system_values_come_from_the_seed():
    s = load_system("v100-pcie3")
    assert (s.link.gen, s.link.lanes, s.link.tags) == (3, 16, 256)  # emogi §3.3: 8-bit tags
    assert s.link.rtt_ns == 1000.0                                    # emogi §3.3: 1.0-1.6 us
    assert s.host.transfer_rate_MTps == 2933 and s.host.channels == 4  # emogi Table 1
    assert "seed" in s.provenance["link.rtt_ns"]


def test_overrides_with_unit_strings_and_literals():
    s = load_system("h100-pcie5", ["link.rtt_ns=1.2 us", "gpu.sm_count=100", "link.ecrc=true"])
    assert s.link.rtt_ns == 1200.0
    assert s.gpu.sm_count == 100
    assert s.link.ecrc is True
    assert s.provenance["link.rtt_ns"] == "user override"
    s = load_system("h100-pcie5", {"uvm.va_block_B": "2 MiB", "host.transfer_rate_MTps": "5.6 GT/s"})
    assert s.uvm.va_block_B == 2 * 1024**2
    assert s.host.transfer_rate_MTps == 5600


@pytest.mark.parametrize("override, message", [
    ("link.lanes=3", "'link.lanes' = 3 is not allowed"),
    ("link.mps_B=100", "'link.mps_B' = 100 must be >= 128"),
    ("link.mps_B=384", "not a power of two"),
    ("link.rtt_ns=-5", "'link.rtt_ns' = -5 must be > 0"),
    ("link.tags=1024", "exceed the 768"),
    ("link.nope=1", "unknown key 'link.nope'"),
    ("link.gen='three'", "'link.gen' must be an integer"),
    ("link.rtt_ns='3 GB'", "unit 'GB' does not fit key 'rtt_ns'"),
    ("link.ecrc=1", "must be true or false"),
    ("warp.x=1", "unknown key 'warp.x'"),
])
def test_bad_overrides_name_the_key(override, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        load_system("h100-pcie5", [override])


def test_tag_limit_follows_generation_and_flit_mode():
    with pytest.raises(ConfigError, match="256 that PCIe gen 3"):
        load_system("v100-pcie3", {"link.tags": 512})
    s = load_system("h200-pcie6")
    assert s.link.uses_flit_mode and s.link.tags == 16384
    with pytest.raises(ConfigError, match="flit mode needs PCIe 6"):
        load_system("h100-pcie5", {"link.flit_mode": True})


def _write(tmp_path, rel, text):
    p = tmp_path / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    return p


def test_errors_in_preset_files_name_the_file_and_key(tmp_path, monkeypatch):
    monkeypatch.setenv("HOSTLINK_CONFIG_PATH", str(tmp_path))
    bad_link = _write(tmp_path, "pcie/bad.toml", "[link]\ngen = 3\nlanes = 3\n")
    _write(tmp_path, "system/s1.toml", '[system]\nname = "s1"\nlink = "pcie/bad"\n')
    with pytest.raises(ConfigError) as err:
        load_system("s1")
    assert str(bad_link) in str(err.value) and "link.lanes" in str(err.value)

    sys_file = _write(tmp_path, "system/s2.toml", '[system]\nname = "s2"\n[gpu]\nsm_cnt = 4\n')
    with pytest.raises(ConfigError) as err:
        load_system("s2")
    assert str(sys_file) in str(err.value) and "gpu.sm_cnt" in str(err.value)

    broken = _write(tmp_path, "system/s3.toml", "[system\nname=")
    with pytest.raises(ConfigError, match="not valid TOML") as err:
        load_system("s3")
    assert str(broken) in str(err.value)

    _write(tmp_path, "system/s4.toml", '[system]\nname = "s4"\n[link]\nrtt_ns = -1\n')
    with pytest.raises(ConfigError, match=r"s4.toml: 'link.rtt_ns' = -1 must be > 0"):
        load_system("s4")


def test_resolved_config_round_trips(tmp_path):
    s = load_system("a100-pcie4", ["link.rtt_ns=1.6 us"])
    path = write_resolved(s, tmp_path / "resolved.toml")
    assert load_any_system(path) == s
    assert load_any_system(path, ["link.lanes=8"]).link.lanes == 8


def test_cli_reports_bad_config_in_one_line():
    proc = subprocess.run([sys.executable, "-m", "hostlink.model.cli.main", "config", "show",
                           "v100-pcie3", "--set", "link.lanes=3"], capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0
    assert "link.lanes" in proc.stderr and "Traceback" not in proc.stderr
