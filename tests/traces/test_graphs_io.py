"""Graph readers and writers: Matrix Market, SNAP, GAP .el/.wel, EMOGI binary CSR.

Expected CSRs are written out by hand from the small files below. The binary
layout (16 B header: u64 count, u64 unused; u64 offsets, u64 ids, u32
weights) is illinois-impact/EMOGI bfs.cu's.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

from hostlink.traces.graphs import (GraphError, kron, read_bel, read_el, read_graph, read_mtx,
                                    read_snap, read_wel, write_bel, write_el)


def _w(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return p


# ---------------------------------------------------------------- Matrix Market
def test_mtx_integer_symmetric(tmp_path):
    p = _w(tmp_path, "a.mtx", "%%MatrixMarket matrix coordinate integer symmetric\n"
           "% a comment\n4 4 4\n2 1 5\n3 1 7\n4 3 9\n2 2 1\n")
    g = read_mtx(p)
    # edges {0-1: 5, 0-2: 7, 2-3: 9}; the diagonal entry (2,2) is a self-loop and goes
    assert g.offsets.tolist() == [0, 2, 3, 5, 6]
    assert g.dst.tolist() == [1, 2, 0, 0, 3, 2]
    assert g.weights.tolist() == [5, 7, 5, 7, 9, 9]
    assert not g.directed


def test_mtx_pattern_general_is_directed(tmp_path):
    p = _w(tmp_path, "b.mtx", "%%MatrixMarket matrix coordinate pattern general\n3 3 2\n1 2\n3 1\n")
    g = read_mtx(p)
    assert g.directed and g.weights is None
    assert g.offsets.tolist() == [0, 1, 1, 2]
    assert g.dst.tolist() == [1, 0]


def test_mtx_real_rounds_to_u32(tmp_path):
    p = _w(tmp_path, "c.mtx", "%%MatrixMarket matrix coordinate real general\n2 3 2\n1 2 2.4\n2 3 7.6\n")
    g = read_mtx(p)
    # V = max(rows, cols) = 3; 2.4 -> 2, 7.6 -> 8
    assert g.num_vertices == 3
    assert g.weights.tolist() == [2, 8]


@pytest.mark.parametrize("text,where,what", [
    ("%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n4\n", ":1:", "coordinate"),
    ("%%MatrixMarket matrix coordinate complex general\n1 1 1\n1 1 1 0\n", ":1:", "complex"),
    ("%%MatrixMarket matrix coordinate real skew-symmetric\n2 2 1\n2 1 1\n", ":1:", "skew"),
    ("not a header\n", ":1:", "header"),
    ("%%MatrixMarket matrix coordinate pattern general\n% only comments\n", ":2:", "size line"),
    ("%%MatrixMarket matrix coordinate pattern general\n3 x 2\n1 2\n", ":2:", "size line"),
    ("%%MatrixMarket matrix coordinate pattern general\n3 3 2\n1 2\n1 x\n", ":4:",
     "invalid integer value in '1 x'"),
    ("%%MatrixMarket matrix coordinate pattern general\n3 3 2\n1 2\n4 1\n", ":4:",
     "row index out of bounds (rows 1 to 3"),
    ("%%MatrixMarket matrix coordinate pattern general\n3 3 2\n1 2\n0 1\n", ":4:",
     "row index out of bounds (rows 1 to 3"),
    ("%%MatrixMarket matrix coordinate integer general\n3 3 2\n1 2 1\n2 3\n", ":4:",
     "invalid integer value in '2 3'"),
    ("%%MatrixMarket matrix coordinate integer general\n3 3 1\n1 2 -4\n", ":3:", "weight"),
    ("%%MatrixMarket matrix coordinate pattern general\n3 3 3\n1 2\n2 3\n", "", "announces 3"),
])
def test_mtx_errors_name_file_and_line(tmp_path, text, where, what):
    p = _w(tmp_path, "bad.mtx", text)
    with pytest.raises(GraphError) as exc:
        read_mtx(p)
    msg = str(exc.value)
    assert str(p) in msg and where in msg and what in msg


# ----------------------------------------------------------------------- SNAP
def test_snap_comments_and_renumbering(tmp_path):
    p = _w(tmp_path, "s.txt", "# Directed graph\n# FromNodeId\tToNodeId\n10\t20\n20\t30\n"
           "\n30\t10\n30\t30\n")
    g = read_snap(p)
    # ids 10, 20, 30 -> 0, 1, 2; the self-loop 30-30 goes
    assert g.num_vertices == 3 and g.directed
    assert g.offsets.tolist() == [0, 1, 2, 3]
    assert g.dst.tolist() == [1, 2, 0]
    sym = read_snap(p, symmetrize=True)
    assert sym.num_edges == 6 and sym.is_symmetric()


def test_snap_bad_line(tmp_path):
    p = _w(tmp_path, "s.txt", "# c\n1 2\n2 3 4\n")
    with pytest.raises(GraphError, match=r"s\.txt:3: expected 2 fields, found 3"):
        read_snap(p)


def test_snap_negative_id(tmp_path):
    p = _w(tmp_path, "s.txt", "1 2\n-2 3\n")
    with pytest.raises(GraphError, match=r"s\.txt:2: vertex id -2 is below 0"):
        read_snap(p)


# -------------------------------------------------------------------- GAP text
def test_el_and_wel(tmp_path):
    g = read_el(_w(tmp_path, "g.el", "0 1\n1 2\n1 2\n"))
    assert g.num_vertices == 3 and g.dst.tolist() == [1, 2]
    w = read_wel(_w(tmp_path, "g.wel", "0 1 3\n2 0 4\n"))
    assert w.offsets.tolist() == [0, 1, 1, 2] and w.weights.tolist() == [3, 4]


def test_wel_bad_weight(tmp_path):
    p = _w(tmp_path, "g.wel", "0 1 3\n1 2 2.5\n")
    with pytest.raises(GraphError, match=r"g\.wel:2: weight '2\.5' is not an integer"):
        read_wel(p)


def test_el_round_trip(tmp_path):
    g = kron(8, 4, seed=3)
    back = read_wel(write_el(g, tmp_path / "k.wel"))
    assert back.equals(g)
    back_el = read_el(write_el(g, tmp_path / "k.el", weighted=False))
    assert back_el.equals(g.without_weights())


def test_missing_file(tmp_path):
    with pytest.raises(GraphError, match="no such file"):
        read_el(tmp_path / "none.el")


# --------------------------------------------------------------- EMOGI binary
def test_bel_round_trip_and_layout(tmp_path):
    g = kron(9, 8, seed=4)
    paths = write_bel(g, tmp_path / "k9")
    V, E = g.num_vertices, g.num_edges
    # sizes from the format: 16 B header + elements
    assert paths["col"].stat().st_size == 16 + 8 * (V + 1)
    assert paths["dst"].stat().st_size == 16 + 8 * E
    assert paths["val"].stat().st_size == 16 + 4 * E
    header = np.fromfile(paths["col"], dtype="<u8", count=2)
    assert header.tolist() == [V + 1, 0]
    assert np.array_equal(np.fromfile(paths["dst"], dtype="<u8", offset=16), g.dst.astype(np.uint64))
    back = read_bel(tmp_path / "k9")
    assert back.equals(g) and back.dst.dtype == np.uint32
    back8 = read_bel(str(tmp_path / "k9") + ".bel", id_bytes=8)
    assert back8.dst.dtype == np.uint64 and back8.equals(g)
    assert read_graph(paths["col"]).equals(g)


def _file_backed(a: np.ndarray) -> bool:
    import mmap
    while a is not None and not isinstance(a, mmap.mmap):
        a = getattr(a, "base", None)
    return a is not None


def test_bel_mapped_from_its_files(tmp_path):
    # mmap=True: the same graph, its arrays mapped read-only from the files (pages the
    # OS may drop and read again), not copies; a narrowed 4 B id list is a copy
    g = kron(9, 8, seed=4)
    write_bel(g, tmp_path / "k9")
    mapped = read_bel(tmp_path / "k9", id_bytes=8, mmap=True)
    assert mapped.equals(read_bel(tmp_path / "k9", id_bytes=8)) and mapped.equals(g)
    assert all(_file_backed(a) for a in (mapped.offsets, mapped.dst, mapped.weights))
    assert not _file_backed(read_bel(tmp_path / "k9", id_bytes=8).dst)
    with pytest.raises(ValueError):
        mapped.dst[0] = 1                      # read-only
    narrow = read_bel(tmp_path / "k9", id_bytes=4, mmap=True)
    assert narrow.dst.dtype == np.uint32 and not _file_backed(narrow.dst) and narrow.equals(g)
    assert read_bel(tmp_path / "k9", id_bytes=8, mmap=True, weights=False).weights is None


def test_bel_without_weights(tmp_path):
    g = kron(7, 4, seed=1, weighted=False)
    paths = write_bel(g, tmp_path / "nw")
    assert "val" not in paths and not (tmp_path / "nw.bel.val").exists()
    assert read_bel(tmp_path / "nw").weights is None


def test_bel_truncated(tmp_path):
    g = kron(7, 4, seed=1)
    paths = write_bel(g, tmp_path / "t")
    data = paths["dst"].read_bytes()
    paths["dst"].write_bytes(data[:-5])
    with pytest.raises(GraphError, match=r"t\.bel\.dst: header announces .* \(truncated\)"):
        read_bel(tmp_path / "t")
    paths["dst"].write_bytes(data[:10])
    with pytest.raises(GraphError, match="shorter than the 16 B header"):
        read_bel(tmp_path / "t")


def _raw_bel(tmp_path, offsets, dst, vals=None):
    for suffix, arr, dt in (("col", offsets, "<u8"), ("dst", dst, "<u8"), ("val", vals, "<u4")):
        if arr is None:
            continue
        with open(tmp_path / f"r.bel.{suffix}", "wb") as f:
            np.array([len(arr), 0], dtype="<u8").tofile(f)
            np.asarray(arr, dtype=dt).tofile(f)
    return tmp_path / "r"


@pytest.mark.parametrize("offsets,dst,vals,what", [
    ([0, 2, 1, 3], [1, 2, 0], None, "decrease at vertex 1"),
    ([0, 1, 3], [1, 0], None, "expected 0 to the edge count 2"),
    ([0, 1, 2], [1, 7], None, "element 1 is vertex 7"),
    ([0, 1, 2], [1, 0], [3], "1 weights for 2 edges"),
])
def test_bel_inconsistent(tmp_path, offsets, dst, vals, what):
    prefix = _raw_bel(tmp_path, offsets, dst, vals)
    with pytest.raises(GraphError, match=what):
        read_bel(prefix)


def test_read_graph_unknown_format(tmp_path):
    p = _w(tmp_path, "g.xyz", "0 1\n")
    with pytest.raises(GraphError, match="unknown graph format"):
        read_graph(p)


# ------------------------------------------------------- empty, CSV, weights, pattern
@pytest.mark.parametrize("name,text", [
    ("e.el", ""), ("e.el", "\n\n"), ("e.wel", ""), ("e.txt", "# only a comment\n"),
    ("e.csv", "src,dst\n"), ("e.mtx", "%%MatrixMarket matrix coordinate pattern general\n3 3 0\n"),
])
def test_no_edges_is_an_error(tmp_path, name, text):
    p = _w(tmp_path, name, text)
    with pytest.raises(GraphError, match=f"{name}: holds no edges"):
        read_graph(p)


def test_cli_empty_el_is_one_line_exit_2(tmp_path, capsys):
    from hostlink.model.cli.main import main
    p = _w(tmp_path, "e.el", "")
    assert main(["trace", "gen", "--kernel", "bfs", "--variant", "naive", "--graph", str(p),
                 "--out", str(tmp_path / "out")]) == 2
    assert "holds no edges" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_txt_three_columns_read_weights(tmp_path):
    p = _w(tmp_path, "w.txt", "# src dst weight\n10 20 3\n20 30 5\n")
    g = read_graph(p)
    # ids 10, 20, 30 -> 0, 1, 2; edges 0->1 (3), 1->2 (5)
    assert g.offsets.tolist() == [0, 1, 2, 2]
    assert g.dst.tolist() == [1, 2] and g.weights.tolist() == [3, 5]
    assert read_graph(p, pattern_only=True).weights is None


def test_csv_with_and_without_header(tmp_path):
    with_header = _w(tmp_path, "h.csv", "source,target,weight\n1,2,4\n2,3,6\n")
    bare = _w(tmp_path, "b.csv", "1, 2\n2, 3\n")
    g = read_graph(with_header)
    assert g.offsets.tolist() == [0, 1, 2, 2] and g.dst.tolist() == [1, 2]
    assert g.weights.tolist() == [4, 6]
    h = read_graph(bare)
    assert h.dst.tolist() == [1, 2] and h.weights is None
    bad = _w(tmp_path, "x.csv", "1,2\n2,x\n")
    with pytest.raises(GraphError, match=r"x.csv:2: vertex id 'x'"):
        read_graph(bad)


def test_weights_below_one_are_not_zero(tmp_path, capsys):
    """As netscience (SuiteSparse Newman/netscience, real weights, most below 1): a
    positive weight that rounds to 0 is read as 1, with a warning giving the count."""
    p = _w(tmp_path, "n.mtx", "%%MatrixMarket matrix coordinate real symmetric\n"
           "4 4 4\n2 1 0.25\n3 1 0.333333\n4 2 1.7\n4 3 0.0\n")
    g = read_mtx(p)
    # edges 0-1 0.25 -> 1, 0-2 0.33 -> 1, 1-3 1.7 -> 2, 2-3 0.0 -> 0 (zero stays zero)
    assert g.dst.tolist() == [1, 2, 0, 3, 0, 3, 1, 2]
    assert g.weights.tolist() == [1, 1, 1, 2, 1, 0, 2, 0]
    err = capsys.readouterr().err
    assert "n.mtx: 2 of 4 weights are positive but below 0.5; they are read as 1" in err
    assert err.count("\n") == 1


def test_negative_values_read_as_pattern(tmp_path, capsys):
    from hostlink.model.cli.main import main
    p = _w(tmp_path, "neg.mtx", "%%MatrixMarket matrix coordinate real general\n"
           "3 3 2\n1 2 -1.5\n2 3 2\n")
    with pytest.raises(GraphError, match=r"neg.mtx:3: value -1.5 is outside .*--pattern-only"):
        read_mtx(p)
    g = read_mtx(p, pattern_only=True)
    assert g.dst.tolist() == [1, 2] and g.weights is None
    q = _w(tmp_path, "negi.mtx", "%%MatrixMarket matrix coordinate integer general\n"
           "3 3 2\n1 2 -4\n2 3 2\n")
    assert read_mtx(q, pattern_only=True).dst.tolist() == [1, 2]
    assert main(["graph", "info", str(p)]) == 2
    assert "--pattern-only" in capsys.readouterr().err
    assert main(["graph", "info", str(p), "--pattern-only", "--json"]) == 0
    assert main(["trace", "gen", "--kernel", "bfs", "--variant", "naive", "--graph", str(p),
                 "--pattern-only", "--out", str(tmp_path / "t"), "--json"]) == 0


@pytest.mark.parametrize("name,raw,where", [
    ("l.el", b"0 1\n1 \xb5\n", "l.el:2: byte 0xb5"),
    ("l.txt", b"# caf\xe9\n0 1\n", "l.txt:1: byte 0xe9"),
    ("l.mtx", b"%%MatrixMarket matrix coordinate pattern general\n2 2 1\n1 \xff\n", "l.mtx:3:"),
    ("l.wel", b"0 1 \x00\n", "l.wel:1:"),
])
def test_bad_bytes_name_the_line(tmp_path, name, raw, where):
    p = tmp_path / name
    p.write_bytes(raw)
    with pytest.raises(GraphError, match=re.escape(where)):
        read_graph(p)


@pytest.mark.parametrize("name,text", [
    ("s.el", "0 1\n1 4294967295\n"),
    ("s.wel", "0 1 1\n1 99999999 1\n"),
    ("s.mtx", "%%MatrixMarket matrix coordinate pattern general\n99999999 3 1\n1 2\n"),
])
def test_ids_too_sparse_are_refused(tmp_path, name, text):
    """2 edges cannot need 10**8 vertices (64 per edge past 2**20 is the limit)."""
    with pytest.raises(GraphError, match=f"{name}: the largest vertex id gives"):
        read_graph(_w(tmp_path, name, text))
    dense = _w(tmp_path, "d.el", "0 1\n1 1048575\n")  # 2**20 vertices: allowed
    assert read_graph(dense).num_vertices == 1 << 20
