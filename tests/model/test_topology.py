"""The ``[topology]`` section of a system preset: loaded, checked, kept."""
from __future__ import annotations

import pytest

from hostlink.model.cli.main import main
from hostlink.model.config import load_system, system_with
from hostlink.model.errors import ConfigError

HEAD = """[system]
name = "t"
link = "pcie/gen3_x16"
host = "host/ddr4_2400_1ch"
gpu = "gpu/v100_sxm2"
"""


def _system(tmp_path, topology: str):
    path = tmp_path / "t.toml"
    path.write_text(HEAD + topology)
    return path


def test_the_seed_system_has_two_sockets_of_two_gpus():
    s = load_system("firepro-s9150-2s-pcie3")
    topo = s.topology
    assert [g.socket for g in topo.gpus] == [0, 0, 1, 1]   # seed §3, Fig. 2
    assert [sock.host.channels for sock in topo.sockets] == [4, 4]
    assert topo.sockets[0].host.transfer_rate_MTps == 2133.0
    assert topo.inter_socket.bandwidth_GBps == 30.6
    assert "two sockets" in s.provenance["topology.sockets"]
    assert topo.hops(0, 1) == 1 and topo.hops(2, 1) == 0


def test_overrides_keep_the_topology():
    s = load_system("firepro-s9150-2s-pcie3")
    assert system_with(s, {"link.rtt_ns": 1200.0}).topology == s.topology


def test_a_system_without_topology_has_none():
    assert load_system("v100-pcie3").topology is None


def test_switch_puts_its_gpus_on_its_socket(tmp_path):
    path = _system(tmp_path, """
[topology]
sockets = [{host = "host/ddr4_2400_1ch"}, {host = "host/ddr4_2400_1ch"}]
switches = [{name = "sw", socket = 1, uplink = "pcie/gen4_x16"}]
gpus = [{switch = "sw"}, {switch = "sw"}, {socket = 0}]
""")
    topo = load_system(str(path)).topology
    assert [g.socket for g in topo.gpus] == [1, 1, 0]
    assert topo.switch("sw").uplink.gen == 4
    assert [g.name for g in topo.gpus] == ["gpu0", "gpu1", "gpu2"]


@pytest.mark.parametrize("topology, key", [
    ('sockets = [{}]\ngpus = [{socket = 1}]', "topology.gpus[0].socket"),
    ('sockets = [{}]\ngpus = [{switch = "nope"}]', "topology.gpus[0].switch"),
    ('sockets = [{}]\ngpus = [{}]\ninter_socket = {lat_ns = -1}', "topology.inter_socket.lat_ns"),
    ('sockets = [{}]\ngpus = [{}]\ninter_socket = {bandwidth_GBps = "fast"}',
     "topology.inter_socket.bandwidth_GBps"),
    ('sockets = [{host = "host/nope"}]\ngpus = [{}]', "topology.sockets[0].host"),
    ('sockets = [{}]\ngpus = [{colour = 1}]', "topology.gpus[0].colour"),
    ('sockets = []\ngpus = [{}]', "topology.sockets"),
    ('sockets = [{}]\ngpus = [{}]\nrouters = 2', "topology.routers"),
])
def test_bad_topology_names_file_and_key(tmp_path, topology, key):
    path = _system(tmp_path, "[topology]\n" + topology + "\n")
    with pytest.raises(ConfigError) as err:
        load_system(str(path))
    assert str(path) in str(err.value) and key in str(err.value)


def test_units_convert_in_topology(tmp_path):
    path = _system(tmp_path, '[topology]\nsockets = [{}]\ngpus = [{}]\n'
                             'inter_socket = {lat_ns = "0.1 us"}\n')
    assert load_system(str(path)).topology.inter_socket.lat_ns == pytest.approx(100.0)


def test_cli_bad_topology_is_one_line_exit_2(tmp_path, capsys):
    path = _system(tmp_path, '[topology]\nsockets = [{}]\ngpus = [{socket = 3}]\n')
    rc = main(["predict-multi", "--system", str(path), "--run", "0:0:copy:1MiB"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "topology.gpus[0].socket" in err


def test_config_show_lists_the_topology_and_its_assumptions(capsys):
    assert main(["config", "show", "firepro-s9150-2s-pcie3"]) == 0
    out = capsys.readouterr().out.split("[topology]", 1)[1]
    lines = {ln.split("=")[0].strip(): ln for ln in out.splitlines() if "=" in ln}
    assert "(assumption)" in lines["inter_socket.lat_ns"]
    assert "(assumption)" not in lines["inter_socket.bandwidth_GBps"]
    assert "gpu 3 (gpu3): socket 1" in out
