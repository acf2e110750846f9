"""Emulated traces against recorded traces of the same kernels (the GPU self-trace).

The harness records each host load as an Accel-Sim line (address mode 0)
with its arrays at addresses the driver chose, and names them in
``regions.json`` (gpu_kernels/traversal/trace_format.hpp). Here a recorded
trace is first imitated (an emulated trace moved to other page-aligned bases
and written in that format) to test the comparison; then every self-trace
committed under validation/experiments/ is compared with its emulation (skipped,
visibly, while none is committed).
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from hostlink.traces.accelsim import write_accelsim
from hostlink.traces.coalescer import coalesce
from hostlink.traces.emulator import emulate
from hostlink.traces.emulator.compare import (compare_recorded, open_recorded,
                                              timing_independent_launches)
from hostlink.traces.graphs import generate, kron, read_bel
from hostlink.traces.schema import InstTable, Region, WarpTrace
from hostlink.validation.data_tree import EXPERIMENTS, run_dir
from hostlink.validation.raw_store import traces_dir

REPO = Path(__file__).resolve().parents[2]


def _imitate_recording(emu, folder: Path, shift_B: int, corrupt: bool = False) -> None:
    """Write ``emu``'s host loads as the harness would: other bases, mode-0 lines, regions.json."""
    moved = {r.name: Region(r.name, r.start + shift_B, r.size_B, r.location) for r in emu.regions}
    rows = []
    for chunk in emu.chunks():
        addrs = chunk.addrs.copy()
        addrs[addrs != 0] += np.uint64(shift_B)
        rows.append(InstTable(chunk.launch, chunk.cta, chunk.warp, chunk.pc, chunk.opcode,
                              chunk.op, chunk.space, chunk.width_B, chunk.mask, addrs))
    table = InstTable.concat(rows)
    if corrupt:
        lane = int(np.argmax(((int(table.mask[len(table) // 2]) >> np.arange(32)) & 1) == 1))
        table.addrs[len(table) // 2, lane] += np.uint64(table.width_B[len(table) // 2])
    trace = WarpTrace(emu.launches, emu.opcodes, list(moved.values()), [table])
    write_accelsim(trace, folder, compress=False)
    (folder / "regions.json").write_text(json.dumps({"regions": [
        {"name": r.name, "start": r.start, "size_B": r.size_B, "location": r.location}
        for r in moved.values()]}))


@pytest.mark.parametrize("variant", ["naive", "merged", "merged_aligned", "chunked", "balanced"])
def test_imitated_recording_matches(tmp_path, variant):
    g = kron(9, 8, seed=41)
    src = int(np.argmax(g.degrees()))
    emu = emulate(g, "sssp", variant, source=src, id_bytes=8)
    _imitate_recording(emu, tmp_path / "rec", shift_B=0x1234_5000)
    cmp = compare_recorded(open_recorded(tmp_path / "rec"), emu)
    assert cmp.equal, cmp.summary()
    assert cmp.rows[0] == cmp.rows[1] > 0


def test_comparison_of_leading_launches(tmp_path):
    """An SSSP run whose later launches differ (other warp timing) still matches
    in the launches every run shares."""
    g = kron(9, 8, seed=43)
    src = int(np.argmax(g.degrees()))
    emu = emulate(g, "sssp", "merged", source=src)
    _imitate_recording(emu, tmp_path / "rec", shift_B=0x2000)
    rec = open_recorded(tmp_path / "rec")
    rec.launches = rec.launches[:3]  # as if the GPU run had finished earlier
    rec_chunks = [c.select(c.launch < 3) for c in rec.iter_chunks()]
    rec.chunks = rec_chunks
    assert not compare_recorded(rec, emu).equal
    assert timing_independent_launches("sssp") == 2
    assert compare_recorded(rec, emu, max_launches=2).equal
    assert timing_independent_launches("bfs") is None


def test_imitated_recording_difference_is_found(tmp_path):
    g = kron(9, 8, seed=41)
    emu = emulate(g, "bfs", "merged_aligned", source=int(np.argmax(g.degrees())))
    _imitate_recording(emu, tmp_path / "rec", shift_B=0x1000, corrupt=True)
    cmp = compare_recorded(open_recorded(tmp_path / "rec"), emu)
    assert not cmp.equal and not cmp.rows_equal
    assert "offset" in cmp.first_difference
    other = emulate(g, "bfs", "merged", source=int(np.argmax(g.degrees())))
    assert not compare_recorded(open_recorded(tmp_path / "rec"), other).equal


def _committed_self_traces():
    """(run folder, case params, trace folder) of every committed self-trace."""
    found = []
    for meta_path in sorted(EXPERIMENTS.glob("*/runs/*/metadata.json")):
        try:
            meta = json.loads(meta_path.read_text())
        except (OSError, json.JSONDecodeError):
            continue
        for case, p in (meta.get("cases") or {}).items():
            if not isinstance(p, dict) or p.get("kind") != "trace":
                continue
            slug = "__".join(str(x) for x in (p.get("kernel"), p.get("graph"), p.get("variant"),
                                               p.get("memory_mode"), f"{p.get('id_bytes')}B"))
            folder = traces_dir(meta_path.parent) / slug
            if (folder / "kernelslist.g").is_file():
                found.append(pytest.param(meta, p, folder, id=case))
    return found


_RECORDED = _committed_self_traces()


@pytest.mark.skipif(not _RECORDED, reason="no self-trace committed under validation/experiments/ yet")
@pytest.mark.parametrize("meta,case,folder", _RECORDED or [pytest.param(None, None, None, id="none")])
def test_committed_self_traces_match_emulation(meta, case, folder):
    spec = meta["graphs"][case["graph"]]
    committed = folder.parent / "graphs" / case["graph"]
    if spec.get("kind") in ("kron", "urand"):
        g = generate(spec["kind"], int(spec["scale"]), int(spec["degree"]), int(spec["seed"]))
    elif committed.with_suffix(".bel.col").is_file():
        g = read_bel(committed)  # the very graph the GPU ran on, committed beside its traces
    else:
        pytest.skip(f"graph {case['graph']} is neither generated nor committed")
    assert g.num_vertices == spec.get("vertices", g.num_vertices)
    assert g.num_edges == spec.get("edges", g.num_edges)
    source = case.get("source")
    emu = emulate(g, case["kernel"], case["variant"], source=int(source or 0),
                  id_bytes=int(case["id_bytes"]), memory=case.get("memory_mode", "zerocopy"))
    cmp = compare_recorded(open_recorded(folder), emu,
                           max_launches=timing_independent_launches(case["kernel"]))
    assert cmp.equal, cmp.summary()
    if timing_independent_launches(case["kernel"]) is None:
        # The PCIe request histograms agree too (issue: emulator vs self-trace).
        recorded = coalesce(open_recorded(folder)).size_histogram()
        assert recorded == emu.requests().size_histogram()


def _self_trace_cases(run: str):
    meta_path = run_dir(run, "h200") / "metadata.json"
    if not meta_path.is_file():
        return []
    meta = json.loads(meta_path.read_text())
    return [(meta, p) for p in (meta.get("cases") or {}).values()
            if isinstance(p, dict) and p.get("kind") == "trace"]


@pytest.mark.parametrize("kernel", ["sssp", "cc"])
@pytest.mark.parametrize("variant", ["naive", "balanced"])
def test_whole_sssp_and_cc_runs_match_where_warps_read_their_values_first(kernel, variant):
    """A naive thread, and a balanced warp for its 8 vertices, read their values before
    their walk; on kron10 every warp is resident at once, so the GPU's SSSP and CC make
    the emulator's Jacobi steps: every launch of the self-trace matches, not only the
    ones timing cannot change (validation/experiments/self_traces/runs/h200)."""
    found = [(m, p) for m, p in _self_trace_cases("self_traces")
             if p["kernel"] == kernel and p["variant"] == variant]
    if not found:
        pytest.skip("validation/experiments/self_traces/runs/h200 is not committed")
    for meta, p in found:
        spec = meta["graphs"][p["graph"]]
        g = generate(spec["kind"], int(spec["scale"]), int(spec["degree"]), int(spec["seed"]))
        emu = emulate(g, kernel, variant, source=int(p.get("source") or 0),
                      id_bytes=int(p["id_bytes"]), resident_warps=132 * 64)
        folder = (traces_dir(run_dir("self_traces", "h200"))
                  / f"{kernel}__{p['graph']}__{variant}__zerocopy__{p['id_bytes']}B")
        cmp = compare_recorded(open_recorded(folder), emu)
        assert cmp.equal, cmp.summary()
        assert len(emu.active) > timing_independent_launches(kernel)
