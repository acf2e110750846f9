"""predict(): one entry point for every mode and fidelity, the Prediction type,
and the ``hostlink predict`` command."""
from __future__ import annotations

import json

import numpy as np
import pytest

from hostlink.model.cli.main import main
from hostlink.model.config import load_system
from hostlink.model.errors import ConfigError, HostlinkError
from hostlink.model.predict import MODES, critical_path_ns, predict, unique_useful_B
from hostlink.model.result import Prediction
from hostlink.model.workload import SPACE_DEVICE, SPACE_HOST, LaunchInfo, RequestStream

REQUIRED_JSON = ("time_s", "bw_GBps", "requests_by_size_B", "outstanding_mean",
                 "outstanding_peak", "read_amplification")
TIDY = ["run_id", "experiment", "case", "model_kind", "metric", "value", "unit", "rep"]


def quiet(**extra):
    return load_system("v100-pcie3", {"translation.enabled": False, **extra})


def lists_stream(n_lists=4000, degree=24, launches=3, seed=0, device_every=0):
    """Warp-per-list reads of 8 B elements (merged-style): a list of ``degree``
    elements at a random 8 B-aligned place, read 16 elements (128 B) per trip."""
    rng = np.random.default_rng(seed)
    rows = []
    per_launch = n_lists // launches
    for la in range(launches):
        for w in range(per_launch):
            start = int(rng.integers(0, 1 << 22)) * 8
            inst = 0
            if device_every:
                rows.append((la, w, inst, (1 << 40) + w * 4, 32, 4, SPACE_DEVICE))
                inst += 1
            for lo in range(start, start + degree * 8, 128):
                hi = min(lo + 128, start + degree * 8)
                a = lo // 32 * 32
                while a < hi:  # one request per run of sectors within a line
                    line_end = (a // 128 + 1) * 128
                    e = min(line_end, -(-hi // 32) * 32)
                    rows.append((la, w, inst, a, e - a, min(e, hi) - max(a, lo), SPACE_HOST))
                    a = e
                inst += 1
    c = list(zip(*rows))
    info = LaunchInfo("lists", -(-per_launch // 8), 8, 256)
    return RequestStream(launch=np.array(c[0]), warp=np.array(c[1]), inst=np.array(c[2]),
                         addr=np.array(c[3], dtype=np.uint64), size_B=np.array(c[4]),
                         useful_B=np.array(c[5]), space=np.array(c[6], dtype=np.uint8),
                         is_write=np.zeros(len(rows), bool), launches=(info,) * launches)


@pytest.fixture(scope="module")
def s():
    return lists_stream(device_every=1)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("fidelity", ["analytic", "des"])
def test_every_mode_and_fidelity_gives_a_consistent_prediction(s, mode, fidelity):
    p = predict(s, quiet(), mode=mode, fidelity=fidelity)
    assert isinstance(p, Prediction) and (p.mode, p.fidelity, p.system) == (mode, fidelity,
                                                                            "v100-pcie3")
    assert p.launches == 3 and len(p.per_launch_kernel_s) == 3
    assert p.time_s == pytest.approx(sum(p.per_launch_time_s))
    overheads = 3 * 5e-6 + 2 * 10e-6
    assert p.time_s == pytest.approx(p.kernel_time_s + overheads)
    host = s.space == SPACE_HOST
    assert p.requests == int(host.sum()) and p.requested_B == int(s.size_B[host].sum())
    assert p.useful_B == int(s.useful_B[host].sum())
    assert sum(p.requests_by_size_B.values()) == p.requests
    assert p.bw_GBps == pytest.approx(p.useful_B / p.time_s / 1e9)
    d = json.loads(p.to_json())
    assert all(k in d for k in REQUIRED_JSON)
    rows = p.to_rows("r1", "exp", "case")
    assert rows and all(list(r) == TIDY for r in rows)
    assert {r["model_kind"] for r in rows} == {fidelity}
    metrics = {r["metric"]: r for r in rows}
    assert metrics["time_s"]["unit"] == "s" and metrics["bw_GBps"]["unit"] == "GB/s"
    assert metrics["requests_128B"]["value"] == p.requests_by_size_B[128]
    if mode in ("zerocopy", "uvm_accessedby"):
        assert p.dram_B >= p.requested_B and p.wire_B_down > p.requested_B > 0
        assert 1.0 <= p.read_amplification < 1.6
        assert 0 < p.outstanding_mean <= p.outstanding_peak <= 256
        assert p.link_bw_GBps == pytest.approx(p.requested_B / p.time_s / 1e9)
    elif mode == "device":
        assert p.link_bw_GBps == 0 and p.dram_B == 0 and np.isnan(p.outstanding_mean)
        assert d["outstanding_mean"] is None
    else:
        assert p.read_amplification > 4     # whole pages for 192 B lists
        assert "uvm" in p.extra and p.dram_B == p.extra["uvm"]["h2d_B"]


def test_device_memory_is_faster_than_zero_copy(s):
    for fidelity in ("analytic", "des"):
        zc = predict(s, quiet(), fidelity=fidelity)
        dev = predict(s, quiet(), mode="device", fidelity=fidelity)
        assert dev.kernel_time_s < zc.kernel_time_s / 2


def test_analytic_and_des_agree_on_a_link_bound_stream():
    """Plenty of independent lists in few launches: both fidelities are link bound."""
    big = lists_stream(n_lists=20000, degree=64, launches=1)
    sysc = quiet(launch_overhead_us=0.0, level_sync_us=0.0)
    a = predict(big, sysc, fidelity="analytic")
    d = predict(big, sysc, fidelity="des")
    assert a.bound == "link_down" and d.bound == "link_down"
    assert d.time_s == pytest.approx(a.time_s, rel=0.03)
    assert d.time_s >= a.time_s * 0.999


def test_critical_path_counts_dependent_round_trips():
    st = lists_stream(n_lists=3, degree=64, launches=1, device_every=1)
    # each warp: one device load then 4 host trips of 128 B
    path = critical_path_ns(st, 1000.0, 450.0, 1)
    assert path[0] == pytest.approx(450.0 + 4 * 1000.0)
    assert critical_path_ns(st, 1000.0, 450.0, 2)[0] == pytest.approx((450.0 + 4000.0) / 2)


def test_critical_path_charges_an_atomic_its_extra_and_its_lines():
    st = lists_stream(n_lists=3, degree=64, launches=1, device_every=1)
    dev = st.space == SPACE_DEVICE
    marked = st.with_atomic(dev)
    # without atomic costs the marks change nothing
    assert critical_path_ns(marked, 1000.0, 450.0, 1)[0] == pytest.approx(450.0 + 4000.0)
    # the device load is an atomic of one line: 50 ns more; a spread adds log2(lines)
    assert critical_path_ns(marked, 1000.0, 450.0, 1, atomic_extra_ns=50.0)[0] == pytest.approx(
        500.0 + 4000.0)
    # an atomic of 4 lines (8 sectors, two per line) then a host read: log2(4) x 20 ns more
    addr = np.array([0, 32, 128, 160, 256, 288, 384, 416, 1 << 20], dtype=np.uint64)
    n = len(addr)
    four = RequestStream(launch=np.zeros(n), warp=np.zeros(n), inst=np.r_[np.zeros(8), 1],
                         addr=addr, size_B=np.full(n, 32), useful_B=np.full(n, 4),
                         space=np.r_[np.full(8, SPACE_DEVICE), SPACE_HOST].astype(np.uint8),
                         is_write=np.zeros(n, bool), atomic=np.r_[np.ones(8, bool), False])
    got = critical_path_ns(four, 1000.0, 450.0, 1, atomic_extra_ns=50.0, atomic_spread_ns=20.0)
    assert got[0] == pytest.approx(450.0 + 50.0 + 2 * 20.0 + 1000.0)
    # host requests are never atomics of the device
    assert critical_path_ns(st.with_atomic(~dev), 1000.0, 450.0, 1,
                            atomic_extra_ns=50.0)[0] == pytest.approx(450.0 + 4000.0)


def test_unique_useful_bytes_count_a_list_read_twice_once():
    """Read once, the distinct useful bytes are the useful bytes; read twice, they are
    the distinct bytes the requests cover (the useful ones plus sector padding)."""
    from hostlink.model.uvm.model import unique_bytes
    one = lists_stream(n_lists=50, launches=1, seed=3)
    twice = RequestStream.concat([one, one])
    covered = unique_bytes(one.addr, one.size_B)
    assert unique_useful_B(one, one.space == SPACE_HOST) == int(one.useful_B.sum()) < covered
    assert unique_useful_B(twice, twice.space == SPACE_HOST) == covered
    p1 = predict(one, quiet())
    p2 = predict(twice, quiet())
    assert p2.dram_B == 2 * p1.dram_B
    assert p2.read_amplification == pytest.approx(p2.dram_B / covered)


def test_system_by_name_with_overrides(s):
    slow = predict(s, "v100-pcie3", overrides=["link.rtt_ns=3us", "translation.enabled=false"],
                   fidelity="des")
    fast = predict(s, quiet(), fidelity="des")
    assert slow.time_s > fast.time_s


def test_des_series_and_utilisation(s):
    p = predict(s, quiet(), fidelity="des")
    des = p.extra["des"]
    series = np.asarray(des["bw_series_GBps"])
    assert series.sum() * des["bw_series_bin_s"] * 1e9 == pytest.approx(p.requested_B)
    assert 0 < max(des["utilisation"].values()) <= 1.0 + 1e-9


def test_bad_arguments_are_clear_errors(s, tmp_path):
    with pytest.raises(ConfigError, match="mode"):
        predict(s, quiet(), mode="nvlink")
    with pytest.raises(ConfigError, match="fidelity"):
        predict(s, quiet(), fidelity="exact")
    with pytest.raises(HostlinkError, match="RequestStream"):
        predict([1, 2, 3], quiet())
    with pytest.raises(HostlinkError, match="no such"):
        predict(tmp_path / "missing", quiet())
    with pytest.raises(ConfigError, match="system"):
        predict(s, 42)


def test_a_trace_folder_is_coalesced_and_predicted(accelsim_data):
    from hostlink.traces.coalescer import coalesce
    from hostlink.traces.store import open_trace
    folder = accelsim_data / "vectoradd"
    p = predict(folder, quiet(), trace_options={"memcpy_location": "host"}, fidelity="des")
    st = coalesce(open_trace(folder, memcpy_location="host"), include_device=True)
    q = predict(st, quiet(), fidelity="des")
    assert p.to_dict() == q.to_dict()
    assert p.requests == 8 and p.requests_by_size_B == {32: 2, 128: 6}


# ---------------------------------------------------------------- the command

def test_cli_json_and_out(accelsim_data, tmp_path, capsys):
    out = tmp_path / "run"
    rc = main(["predict", "--system", "v100-pcie3", "--trace", str(accelsim_data / "vectoradd"),
               "--memcpy-location", "host", "--fidelity", "des", "--set",
               "translation.enabled=false", "--json", "--out", str(out)])
    assert rc == 0
    d = json.loads(capsys.readouterr().out)
    assert all(k in d for k in REQUIRED_JSON) and d["requests_by_size_B"] == {"32": 2, "128": 6}
    assert json.loads((out / "prediction.json").read_text()) == d
    import pandas as pd
    rows = pd.read_csv(out / "rows.csv")
    assert list(rows.columns) == TIDY and set(rows.model_kind) == {"des"}
    # every metric as the JSON holds it, a missing one empty (read back as NaN)
    value = rows.set_index("metric")["value"]
    assert value["time_s"] == d["time_s"] and value["requests_128B"] == 6
    assert np.isnan(value["outstanding_mean"]) == (d["outstanding_mean"] is None)
    assert len(rows) == len(value.index.unique())
    from hostlink.model.config import load_resolved
    assert load_resolved(out / "system.toml").translation.enabled is False


def test_cli_text_summary(accelsim_data, capsys):
    rc = main(["predict", "--system", "v100-pcie3", "--trace", str(accelsim_data / "matrixmul"),
               "--mode", "uvm"])
    assert rc == 0
    text = capsys.readouterr().out
    # the default fidelity is the validated one, and the summary says so
    assert "uvm (des) on v100-pcie3" in text and "outstanding_mean: n/a" in text
    assert "fidelity: des, the discrete-event model the validation reports" in text


@pytest.mark.parametrize("argv, message", [
    (["--trace", "X", "--system", "nosuch"], "no system preset 'nosuch'"),
    (["--trace", "/nonexistent/trace", "--system", "v100-pcie3"], "/nonexistent/trace"),
    (["--trace", "X", "--system", "v100-pcie3", "--set", "link.lanes=3"], "link.lanes"),
    (["--trace", "X", "--system", "v100-pcie3", "--cache-host"], "--cache-host needs --caches"),
])
def test_cli_errors_are_one_line(argv, message, capsys):
    assert main(["predict", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_cli_needs_its_arguments(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["predict", "--trace", "X"])
    assert exc.value.code == 2
    assert "--system" in capsys.readouterr().err


def test_cli_and_sweeps_offer_every_mode_of_the_model():
    """The CLI, sweep workloads and plots keep their own copies of the mode names (none
    imports the model's engine for them): they are the model's, in its order."""
    from hostlink.model.cli.predict import MODES as CLI_MODES
    from hostlink.model.plots import MODE_ORDER, MODE_STYLES
    from hostlink.model.sweep.workloads import MODES as SWEEP_MODES
    assert CLI_MODES == MODES and SWEEP_MODES == MODES and MODE_ORDER == MODES
    assert set(MODE_STYLES) == set(MODES)


def test_cli_predicts_managed_memory_on_the_host(accelsim_data, capsys):
    """--mode uvm_accessedby reads the host buffers as zero-copy does (eight requests,
    no migration); a trace this small misses the TLB once a page, so the walks in
    flight cannot tell the two apart."""
    outs = {}
    for mode in ("zerocopy", "uvm_accessedby"):
        rc = main(["predict", "--system", "h100-pcie5", "--trace", str(accelsim_data / "vectoradd"),
                   "--memcpy-location", "host", "--mode", mode, "--json"])
        assert rc == 0
        outs[mode] = json.loads(capsys.readouterr().out)
    managed = outs["uvm_accessedby"]
    assert managed["requests_by_size_B"] == {"32": 2, "128": 6} and managed["bw_GBps"] > 0
    assert managed["time_s"] == pytest.approx(outs["zerocopy"]["time_s"])
