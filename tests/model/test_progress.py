"""The stages a long prediction names while it works (hostlink.model.progress), which
the command line shows beside its spinner."""
from __future__ import annotations

import pytest

from hostlink.model.cli.progress import step, step_with_stages
from hostlink.model.config import load_system
from hostlink.model.predict import predict
from hostlink.model.progress import PART, RUN, StageLine, listening, stage
from hostlink.traces.graphs.generators import generate
from hostlink.traces.sampled import sampled_prediction
from hostlink.traces.traversal import traversal_workload


@pytest.fixture(scope="module")
def kron11():
    return generate("kron", 11, 16, 27491095, weighted=False, id_bytes=8, name="kron11")


def test_a_stage_replaces_its_levels_and_ends_the_deeper_ones():
    shown = []
    line = StageLine(shown.append)
    line(RUN, "pass 1")
    line(PART, "launches 1-3 of 6")
    line(PART, "launches 4-6 of 6")
    line(RUN, "pass 2")
    line(PART, "launches 1-3 of 6")
    assert shown == ["pass 1", "pass 1, launches 1-3 of 6", "pass 1, launches 4-6 of 6",
                     "pass 2", "pass 2, launches 1-3 of 6"]
    StageLine(shown.append)(PART, "alone")          # no stage above it yet
    assert shown[-1] == "alone"


def test_stages_reach_only_a_listener_and_only_in_its_block():
    heard = []
    stage(RUN, "nobody listens")
    with listening(lambda level, text: heard.append((level, text))):
        stage(RUN, "heard")
    stage(RUN, "not heard")
    assert heard == [(RUN, "heard")]


def test_a_traversal_names_its_steps_and_each_pass_of_the_round_trip(kron11):
    system = load_system("h200-pcie5")
    shown = []
    with listening(StageLine(shown.append)):
        work = traversal_workload(kron11, "bfs", "merged_aligned", system.gpu, source=3)
        pred = predict(work, system, mode="zerocopy", fidelity="des")
    passes = [s for s in shown if s.startswith("round trip, pass ")]
    assert shown[0] == "emulating bfs (merged_aligned)"
    assert shown[1].startswith("coalescing the reads of its ")
    assert shown[2] == "round trip, pass 1: 638 ns"
    rtt = pred.extra["loaded_rtt_ns"]["loaded"]
    assert passes[-1].endswith(f": {rtt:.0f} ns") and len(passes) >= 2


def test_a_sampled_bfs_names_its_levels_and_passes(kron11):
    system = load_system("h200-pcie5")
    shown = []
    with listening(StageLine(shown.append)):
        sampled_prediction(kron11, "merged_aligned", system, source=3, fraction=0.5)
    assert shown[0] == "finding the BFS's levels"
    assert any(s.startswith("round trip, pass 1: ") for s in shown)


def test_off_a_terminal_the_spinner_shows_nothing_and_hears_no_stage(capsys):
    with step("working") as detail:
        detail("still working")
    with step_with_stages("working"):
        stage(RUN, "a stage")
    captured = capsys.readouterr()
    assert captured.out == captured.err == ""


def test_a_run_without_the_loaded_round_trip_names_its_mode(kron11):
    system = load_system("h200-pcie5")
    shown = []
    with listening(StageLine(shown.append)):
        work = traversal_workload(kron11, "bfs", "merged_aligned", system.gpu, source=3)
        predict(work, system, mode="device", fidelity="des")
    assert shown[-1].startswith("predicting device (des)")
    assert not any(s.startswith("round trip") for s in shown)
