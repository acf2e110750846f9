"""The walk kernels' order at a load-ahead (host loads of a group before its visits) and
the waits of their request streams."""
from __future__ import annotations

import numpy as np
import pytest

from hostlink.model.workload import SPACE_DEVICE, SPACE_HOST, RequestStream
from hostlink.traces.coalescer import coalesce
from hostlink.traces.emulator import emulate
from hostlink.traces.emulator.issue_order import issue_order, walk_waits
from hostlink.traces.emulator.program import program
from hostlink.traces.graphs.generators import generate
from hostlink.traces.schema import InstTable


@pytest.fixture(scope="module")
def kron():
    return generate("kron", 10, 16, 1, weighted=True, id_bytes=8, name="k10")


def rows_of(trace):
    return InstTable.concat(list(trace.iter_chunks()))


def names_by_warp(table, prog):
    names = {i.pc: i.name for i in prog.all}
    out = {}
    for k in range(len(table)):
        key = (int(table.launch[k]), int(table.cta[k]), int(table.warp[k]))
        out.setdefault(key, []).append(names[int(table.pc[k])])
    return out


@pytest.mark.parametrize("kernel,variant", [("bfs", "merged"), ("sssp", "merged_aligned"),
                                            ("bfs", "chunked"), ("cc", "naive")])
def test_a_group_issues_its_host_loads_before_its_visits(kron, kernel, variant):
    hub = int(np.argmax(np.diff(kron.offsets)))
    em = emulate(kron, kernel, variant, source=hub, id_bytes=8, include_device=True)
    prog = program(kernel, 8, True)
    host = {i.name for i in prog.trip if i.is_host_array}
    pro = {i.name for i in prog.prologue}
    before, after = rows_of(em.trace()), rows_of(issue_order(em.trace(), prog, 4))
    assert len(before) == len(after)
    key = lambda t: np.lexsort((t.addrs[:, 0], t.pc, t.warp, t.cta, t.launch))
    np.testing.assert_array_equal(before.addrs[key(before)], after.addrs[key(after)])
    seen_group = False
    for seq in names_by_warp(after, prog).values():
        # between two prologues (a unit) the trips come in runs: <= 4 trips' host loads,
        # then their visits; a unit's prologue comes first
        units, cur = [], []
        for name in seq:
            if name in pro and cur and cur[-1] not in pro:
                units.append(cur)
                cur = []
            cur.append(name)
        units.append(cur)
        for unit in units:
            body = [n for n in unit if n not in pro]
            assert all(n in pro for n in unit[:len(unit) - len(body)])
            runs, k = [], 0
            while k < len(body):              # a run of host loads, then visits
                h = k
                while h < len(body) and body[h] in host:
                    h += 1
                v = h
                while v < len(body) and body[v] not in host:
                    v += 1
                runs.append(h - k)
                k = v
            per_trip = len(host)
            assert all(r <= 4 * per_trip for r in runs)
            seen_group |= any(r > per_trip for r in runs)
    assert seen_group
    assert issue_order(em.trace(), prog, 1) is not None
    assert len(rows_of(issue_order(em.trace(), prog, 1))) == len(before)


def test_waits_mark_visits_and_the_loads_after_them(kron):
    hub = int(np.argmax(np.diff(kron.offsets)))
    em = emulate(kron, "bfs", "merged", source=hub, id_bytes=8, include_device=True)
    s = coalesce(issue_order(em.trace(), program("bfs", 8, True), 4), include_device=True)
    w = walk_waits(s)
    dev = s.space == SPACE_DEVICE
    assert w[dev].all()
    # a host load waits exactly when the instruction before it in its warp touched
    # device memory (or it is the warp's first)
    host_inst = {}
    order = np.lexsort((s.inst, s.warp, s.launch))
    prev = None
    for r in order:
        key = (int(s.launch[r]), int(s.warp[r]), int(s.inst[r]))
        if prev is not None and key[:2] == prev[0][:2] and key != prev[0] and not dev[r]:
            host_inst[key] = (prev[1], bool(w[r]))
        if prev is None or key != prev[0]:
            prev = (key, bool(dev[r]))
        else:
            prev = (key, prev[1] or bool(dev[r]))
    assert host_inst and all(after_dev == waits for after_dev, waits in host_inst.values())
    assert any(not waits for _, waits in host_inst.values())


def test_waits_by_hand():
    space = np.array([SPACE_DEVICE, SPACE_HOST, SPACE_HOST, SPACE_DEVICE, SPACE_DEVICE,
                      SPACE_HOST, SPACE_HOST])
    warp = np.array([0, 0, 0, 0, 0, 0, 1])
    inst = np.array([0, 1, 2, 3, 3, 4, 0])
    n = len(space)
    s = RequestStream(launch=np.zeros(n), warp=warp, inst=inst, addr=np.arange(n) * 128,
                      size_B=np.full(n, 32), useful_B=np.full(n, 32), space=space,
                      is_write=np.zeros(n, bool))
    assert walk_waits(s).tolist() == [True, True, False, True, True, True, False]
    perm = np.array([6, 3, 0, 5, 1, 4, 2])
    shuffled = RequestStream(**{k: getattr(s, k)[perm] for k in
                                ("launch", "warp", "inst", "addr", "size_B", "useful_B",
                                 "space", "is_write")})
    assert walk_waits(shuffled).tolist() == [walk_waits(s)[p] for p in perm]
    assert walk_waits(s.select(np.zeros(n, bool))).tolist() == []


def test_an_unknown_instruction_is_an_error(kron):
    from hostlink.traces.schema import WarpTrace
    em = emulate(kron, "bfs", "merged", source=0, id_bytes=8, include_device=True)
    table = rows_of(em.trace())
    table.pc[0] = 0xDEAD0
    trace = WarpTrace(em.launches, em.opcodes, em.regions, [table])
    with pytest.raises(ValueError, match="0xdead0 is not an instruction"):
        rows_of(issue_order(trace, program("bfs", 8, True), 4))


@pytest.mark.parametrize("kernel,variant", [("bfs", "naive"), ("sssp", "merged_aligned"),
                                            ("cc", "naive"), ("bfs", "balanced")])
def test_small_chunks_order_as_whole_launches_do(kron, kernel, variant):
    """Chunks cut where a unit or a group of trips starts give the rows that ordering each
    launch whole gives, and no chunk holds much more than the emitter's."""
    from hostlink.traces.emulator.issue_order import _row_keys
    hub = int(np.argmax(np.diff(kron.offsets)))
    em = emulate(kron, kernel, variant, source=hub, id_bytes=8, include_device=True)
    em.chunk_rows = 64
    prog = program(kernel, 8, True)
    table = rows_of(em.trace())
    whole = InstTable.concat([
        t.select(_row_keys(t, prog, 4)[0])
        for t in (table.select(np.flatnonzero(table.launch == lv))
                  for lv in np.unique(table.launch))])
    chunks = list(issue_order(em.trace(), prog, 4).iter_chunks())
    assert len(chunks) > 2 * len(np.unique(table.launch))
    after = InstTable.concat(chunks)
    for name, col in whole.columns().items():
        np.testing.assert_array_equal(col, getattr(after, name), err_msg=name)
    group_rows = 4 * len(prog.trip) + len(prog.prologue)
    assert max(len(c) for c in chunks) <= 2 * 64 + group_rows
