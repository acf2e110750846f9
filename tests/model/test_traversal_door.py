"""A traversal program's whole run through `predict`: from a graph, from a trace
that `trace gen` wrote, and as the validation twins build it."""
from __future__ import annotations

import re

import pytest

from hostlink.model.cli.main import main
from hostlink.model.config import load_system, system_with
from hostlink.model.predict import predict
from hostlink.traces.graphs.generators import generate
from hostlink.traces.graphs.writers import write_bel
from hostlink.traces.traversal import requests_ahead, traversal_workload


@pytest.fixture(scope="module")
def graph(tmp_path_factory):
    csr = generate("kron", 11, 16, 27491095, weighted=False, id_bytes=8, name="kron11")
    prefix = tmp_path_factory.mktemp("g") / "kron11"
    write_bel(csr, prefix)
    return csr, prefix


def _ms(text: str) -> float:
    return float(re.search(r": ([0-9.e+]+) ms over", text).group(1))


def test_a_workload_is_its_stream_with_the_programs_loop_and_loads_in_flight(graph):
    csr, _ = graph
    system = load_system("h200-pcie5")
    work = traversal_workload(csr, "bfs", "merged_aligned", system.gpu, source=1, id_bytes=8,
                              load_ahead=4)
    assert work.loads_in_flight == requests_ahead("merged_aligned", 4, 8) == 4
    assert work.iterations == len(work.stream.launches) and work.edges_read > 0
    assert work.bytes_read_B == 8 * work.edges_read
    by_hand = predict(work.stream, system_with(system, {"gpu.loads_in_flight_per_warp": 4}),
                      fidelity="des", host_loop="bfs", vertices=csr.num_vertices,
                      back_to_back=True)
    for mode in ("zerocopy", "uvm"):
        got = predict(work, system, mode=mode, fidelity="des")
        want = (by_hand if mode == "zerocopy" else
                predict(work.stream, system_with(system, {"gpu.loads_in_flight_per_warp": 4}),
                        mode=mode, fidelity="des", host_loop="bfs", vertices=csr.num_vertices,
                        back_to_back=True, managed=work.managed))
        assert got.time_s == pytest.approx(want.time_s, rel=1e-12)
    # the host loop is the program's: its time between launches is not the plain overhead
    plain = predict(work.stream, system_with(system, {"gpu.loads_in_flight_per_warp": 4}),
                    fidelity="des")
    assert plain.time_s != pytest.approx(by_hand.time_s, rel=1e-3)
    assert len(by_hand.extra["launch_bounds"]) == by_hand.launches


def test_graph_and_trace_doors_agree(graph, tmp_path, capsys):
    _, prefix = graph
    trace = tmp_path / "trace"
    assert main(["trace", "gen", "--kernel", "bfs", "--variant", "merged_aligned", "--graph",
                 str(prefix), "--id-bytes", "8", "--source", "1", "--out", str(trace)]) == 0
    assert (trace / "workload.toml").is_file()
    capsys.readouterr()
    got = {}
    for mode in ("zerocopy", "uvm"):
        for door in (["--graph", str(prefix), "--source", "1"], ["--trace", str(trace)]):
            assert main(["predict", "--system", "h200-pcie5", "--fidelity", "des", "--mode",
                         mode, *door]) == 0
            text = capsys.readouterr().out
            assert "bound per launch:" in text
            got[(mode, door[0])] = _ms(text)
    zc, uvm = got[("zerocopy", "--graph")], got[("uvm", "--graph")]
    assert got[("zerocopy", "--trace")] == pytest.approx(zc, rel=0.15)
    assert got[("uvm", "--trace")] == pytest.approx(uvm, rel=0.25)
    assert got[("uvm", "--trace")] / got[("zerocopy", "--trace")] == pytest.approx(uvm / zc,
                                                                                   rel=0.20)


def test_a_trace_without_its_record_is_a_plain_trace(graph, tmp_path, capsys):
    _, prefix = graph
    trace = tmp_path / "trace"
    main(["trace", "gen", "--kernel", "bfs", "--variant", "merged_aligned", "--graph",
          str(prefix), "--id-bytes", "8", "--source", "1", "--out", str(trace)])
    capsys.readouterr()
    main(["predict", "--system", "h200-pcie5", "--trace", str(trace), "--fidelity", "des"])
    with_loop = _ms(capsys.readouterr().out)
    (trace / "workload.toml").unlink()
    main(["predict", "--system", "h200-pcie5", "--trace", str(trace), "--fidelity", "des"])
    assert _ms(capsys.readouterr().out) != pytest.approx(with_loop, rel=1e-3)


def test_bad_doors_are_one_line_and_status_2(graph, tmp_path, capsys):
    _, prefix = graph
    assert main(["predict", "--system", "h200-pcie5", "--graph", str(prefix),
                 "--source", "999999"]) == 2
    assert "--source 999999" in capsys.readouterr().err
    trace = tmp_path / "trace"
    main(["trace", "gen", "--kernel", "bfs", "--variant", "merged", "--graph", str(prefix),
          "--out", str(trace)])
    (trace / "workload.toml").write_text("[workload]\nkernel = 3\n")
    capsys.readouterr()
    assert main(["predict", "--system", "h200-pcie5", "--trace", str(trace)]) == 2
    err = capsys.readouterr().err
    assert "workload.toml" in err and len(err.strip().splitlines()) == 1
    with pytest.raises(SystemExit) as exc:
        main(["predict", "--system", "h200-pcie5", "--trace", str(trace), "--graph", str(prefix)])
    assert exc.value.code == 2


def test_both_doors_default_to_the_same_id_width(graph, tmp_path, capsys):
    """`trace gen` and `predict --graph` read 8 B ids unless told otherwise, so a trace
    made with the defaults stands for the graph's default prediction."""
    import tomllib
    _, prefix = graph
    trace = tmp_path / "trace"
    assert main(["trace", "gen", "--kernel", "bfs", "--variant", "naive", "--graph",
                 str(prefix), "--source", "1", "--out", str(trace)]) == 0
    record = tomllib.loads((trace / "workload.toml").read_text())
    assert record["workload"]["id_bytes"] == 8
