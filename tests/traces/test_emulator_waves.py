"""SSSP and CC launches in waves of resident warps (``resident_warps``): later waves
see the updates of earlier ones, so the runs converge in no more launches than the
Jacobi step, with the same results (checked against the references of
test_emulator.py), and the device-array trace stays consistent with the run."""
from __future__ import annotations

import numpy as np
import pytest

from hostlink.model.errors import ConfigError
from hostlink.traces.emulator import algorithms, emulate
from hostlink.traces.graphs import kron, urand

from test_emulator import ref_components, ref_dijkstra


@pytest.fixture(scope="module")
def kgraph():
    return kron(10, 8, seed=21)


@pytest.fixture(scope="module")
def ugraph():
    return urand(10, 8, seed=22)


@pytest.mark.parametrize("graph", ["kgraph", "ugraph"])
@pytest.mark.parametrize("variant", ["naive", "merged", "chunked"])
def test_waves_give_the_same_results_in_no_more_launches(graph, variant, request):
    g = request.getfixturevalue(graph)
    src = int(np.argmax(g.degrees()))
    for kernel, ref in (("cc", ref_components(g)), ("sssp", ref_dijkstra(g, src))):
        jac = emulate(g, kernel, variant, source=src)
        wav = emulate(g, kernel, variant, source=src, resident_warps=4)
        assert np.array_equal(wav.result, ref) and np.array_equal(jac.result, ref)
        assert len(wav.active) <= len(jac.active)
        assert wav.run.read is not None and jac.run.read is None
        assert [len(r) for r in wav.run.read] == [len(a) for a in wav.active]


def test_cc_propagates_within_a_launch_across_waves():
    # a path 0-1-2-3: one wave per vertex (merged, 1 resident warp) carries label 0
    # to every vertex in the first launch; the Jacobi step moves it one hop a launch
    from hostlink.traces.graphs import from_edges
    g = from_edges([0, 1, 2, 1, 2, 3], [1, 2, 3, 0, 1, 2], 4, name="path4")
    jac = emulate(g, "cc", "merged")
    wav = emulate(g, "cc", "merged", resident_warps=1)
    assert len(jac.active) == 4 and len(wav.active) == 2
    assert wav.run.read[0].tolist() == [0, 0, 0, 0]        # each read its new label
    # one wave for the whole graph is the Jacobi step
    one = emulate(g, "cc", "merged", resident_warps=64)
    assert [a.tolist() for a in one.active] == [a.tolist() for a in jac.active]


def test_chunked_warps_visit_their_vertices_one_after_another():
    assert algorithms.wave_vertices_of("chunked", 10) == 80
    assert algorithms.wave_vertices_of("naive", 10) == 320
    assert algorithms.wave_vertices_of("merged_aligned", 10) == 10
    assert algorithms.serial_steps_of("chunked") == 8
    assert algorithms.serial_steps_of("merged") == 1


@pytest.mark.parametrize("kernel", ["sssp", "cc"])
@pytest.mark.parametrize("variant", ["naive", "merged_aligned", "chunked", "balanced"])
def test_device_trace_of_waves_matches_the_run(kgraph, kernel, variant):
    # the emitter's device state reaches the run's next active sets (it raises otherwise)
    src = int(np.argmax(kgraph.degrees()))
    em = emulate(kgraph, kernel, variant, source=src, include_device=True, resident_warps=3)
    rows = sum(len(c) for c in em.chunks())
    assert rows > 0


def test_bad_resident_warps(kgraph):
    with pytest.raises(ConfigError, match="resident_warps"):
        emulate(kgraph, "cc", "merged", resident_warps=0)
