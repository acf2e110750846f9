"""Several GPUs sharing one host: each run's own prediction, then the max-min share."""
from __future__ import annotations

import json

import pytest

from hostlink.model.cli.main import main
from hostlink.model.config import load_system
from hostlink.model.copy_engine import COPY_ENGINE_REQUEST_B
from hostlink.model.des.inputs import tlp_format
from hostlink.model.dram import served_GBps
from hostlink.model.pcie.spec import tlp_capacity_GBps
from hostlink.model.pcie.tlp import packetize_reads
from hostlink.model.predict import predict
from hostlink.model.shared_host import GpuRun, gpu_system, max_min_share, predict_shared
from hostlink.model.workload import Copy

COPY = Copy(256 * 2**20)


def _system(tmp_path, topology: str, link: str = ""):
    path = tmp_path / "t.toml"
    path.write_text(f"""[system]
name = "t"
link = "pcie/gen3_x16"
host = "host/ddr4_2933_4ch"
gpu = "gpu/v100_sxm2"
{link}
[topology]
{topology}
""")
    return load_system(str(path))


def test_max_min_share_fills_fairly():
    # one resource of 10 shared by demands 2, 8, 8: 2 meets its demand, the others split 8
    rate, frozen = max_min_share([2.0, 8.0, 8.0], {"r": (10.0, {0: 1.0, 1: 1.0, 2: 1.0})})
    assert rate == pytest.approx([2.0, 4.0, 4.0])
    assert frozen == [None, "r", "r"]
    # costs weigh the share: run 1 costs twice per byte
    rate, _ = max_min_share([9.0, 9.0], {"r": (9.0, {0: 1.0, 1: 2.0})})
    assert rate == pytest.approx([3.0, 3.0])


def test_nothing_shared_leaves_each_gpu_alone(tmp_path):
    s = _system(tmp_path, 'sockets = [{}, {}]\ngpus = [{socket = 0}, {socket = 1}]')
    res = predict_shared([GpuRun(0, COPY), GpuRun(1, COPY)], s)
    alone = predict(COPY, gpu_system(s, 0, 0)).bw_GBps
    assert [r.shared_GBps for r in res.runs] == pytest.approx([alone, alone])
    assert res.bound == "none" and res.total_GBps == pytest.approx(2 * alone)


def test_switch_uplink_binds_its_gpus(tmp_path):
    s = _system(tmp_path, 'sockets = [{}]\n'
                'switches = [{name = "sw", socket = 0, uplink = "pcie/gen3_x16"}]\n'
                'gpus = [{switch = "sw"}, {switch = "sw"}]')
    res = predict_shared([GpuRun(0, COPY), GpuRun(1, COPY)], s)
    up = s.topology.switch("sw").uplink
    cap = float(tlp_capacity_GBps(up.gen, up.lanes, up.mps_B))
    wire_per_B = float(packetize_reads(0, COPY_ENGINE_REQUEST_B, tlp_format(s)).down_wire_B) \
        / COPY_ENGINE_REQUEST_B
    for r in res.runs:  # the uplink's wire capacity split in two
        assert r.shared_GBps == pytest.approx(cap / wire_per_B / 2, rel=1e-6)
        assert r.bound == "uplink:sw:down"
    assert res.utilisation["uplink:sw:down"] == pytest.approx(1.0)


def test_one_channel_of_dram_binds_two_local_gpus(tmp_path):
    s = _system(tmp_path, 'sockets = [{host = "host/ddr4_2400_1ch"}]\ngpus = [{}, {}]')
    res = predict_shared([GpuRun(0, COPY), GpuRun(1, COPY)], s)
    dram = served_GBps(s.topology.sockets[0].host)   # 19.2 GB/s: 2400 MT/s x 8 B
    assert [r.shared_GBps for r in res.runs] == pytest.approx([dram / 2] * 2)
    assert res.bound == "dram:0"


def test_inter_socket_bandwidth_binds_remote_reads(tmp_path):
    s = _system(tmp_path, 'sockets = [{}, {}]\ninter_socket = {bandwidth_GBps = 5.0}\n'
                'gpus = [{socket = 0}, {socket = 0}]')
    res = predict_shared([GpuRun(0, COPY, node=1), GpuRun(1, COPY, node=1)], s)
    assert [r.shared_GBps for r in res.runs] == pytest.approx([2.5, 2.5])
    assert all(r.remote and r.bound == "inter_socket:1->0" for r in res.runs)
    local = predict_shared([GpuRun(0, COPY, node=0), GpuRun(1, COPY, node=0)], s)
    assert "inter_socket:1->0" not in local.utilisation


def test_remote_round_trip_lowers_a_tag_limited_rate(tmp_path):
    # 16 tags of 128 B reads: the rate is tags x size / round trip, so the remote
    # one is lower by rtt / (rtt + lat)
    from hostlink.model.cli.predict_multi import _read_run
    s = _system(tmp_path, 'sockets = [{}, {}]\ninter_socket = {lat_ns = 1000.0}\n'
                'gpus = [{socket = 0}]', link="[link]\ntags = 16\nrtt_ns = 1000.0\n")
    assert gpu_system(s, 0, 1).link.rtt_ns == 2000.0
    run = _read_run(64 * 2**20, s.gpu)
    local, remote = (predict_shared([GpuRun(0, run, node=n)], s).runs[0] for n in (0, 1))
    assert local.shared_GBps == pytest.approx(16 * 128 / 1000.0, rel=0.05)
    assert remote.shared_GBps / local.shared_GBps == pytest.approx(0.5, rel=0.05)


def test_bad_runs_are_config_errors(tmp_path):
    from hostlink.model.errors import ConfigError, HostlinkError
    s = _system(tmp_path, 'sockets = [{}]\ngpus = [{}]')
    with pytest.raises(ConfigError, match="GPU 3"):
        predict_shared([GpuRun(3, COPY)], s)
    with pytest.raises(ConfigError, match="NUMA node 2"):
        predict_shared([GpuRun(0, COPY, node=2)], s)
    with pytest.raises(HostlinkError):
        predict_shared([], s)
    with pytest.raises(ConfigError, match="no \\[topology\\]"):
        predict_shared([GpuRun(0, COPY)], "v100-pcie3")


def test_cli_json_matches_python(capsys):
    rc = main(["predict-multi", "--system", "firepro-s9150-2s-pcie3", "--json",
               "--run", "0:local:copy:512MiB", "--run", "2:0:copy:512MiB"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0
    res = predict_shared([GpuRun(0, Copy(512 * 2**20)), GpuRun(2, Copy(512 * 2**20), node=0)],
                         "firepro-s9150-2s-pcie3")
    assert out["total_GBps"] == pytest.approx(res.total_GBps)
    assert [r["remote"] for r in out["runs"]] == [False, True]


@pytest.mark.parametrize("run", ["0:0", "0:0:copy", "0:0:fly:1", "0:0:copy:-3", "a:0:copy:1"])
def test_cli_bad_run_is_one_line_exit_2(run, capsys):
    rc = main(["predict-multi", "--system", "firepro-s9150-2s-pcie3", "--run", run])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and run in err


def test_a_gpu_with_its_own_system_keeps_its_calibration(tmp_path):
    s = _system(tmp_path, 'sockets = [{}, {}]\ngpus = [{socket = 0, system = "h200-pcie5"}, '
                '{socket = 1}]')
    own, other = gpu_system(s, 0, 0), gpu_system(s, 1, 1)
    h200 = load_system("h200-pcie5")
    assert (own.link, own.gpu, own.host) == (h200.link, h200.gpu, h200.host)
    assert other.link.gen == 3 and own.topology is None
    # remote: its own round trip plus the inter-socket latency (60 ns by default)
    assert gpu_system(s, 0, 1).link.rtt_ns == pytest.approx(h200.link.rtt_ns + 60.0)
