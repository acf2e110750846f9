"""Fuzz every graph reader (.el, .wel, .mtx, SNAP .txt, .csv, EMOGI .bel): every fault
is a one-line error, never a traceback or a graph of absurd size."""
from __future__ import annotations

import pytest
from fuzz_inputs import check_clean, fuzz_settings, inputs
from hypothesis import given
from hypothesis import strategies as st

from hostlink.traces.graphs import read_graph, write_bel
from hostlink.traces.graphs.csr import from_edges

SEEDS = {
    "g.el": b"0 1\n1 2\n2 0\n2 3\n",
    "g.wel": b"0 1 5\n1 2 7\n2 0 1\n",
    "g.mtx": b"%%MatrixMarket matrix coordinate real symmetric\n% netscience-like\n"
             b"4 4 4\n2 1 0.25\n3 1 2.5\n4 2 1.0\n4 3 7\n",
    "p.mtx": b"%%MatrixMarket matrix coordinate pattern general\n3 3 3\n1 2\n2 3\n3 1\n",
    "g.txt": b"# FromNodeId ToNodeId\n10 20\n20 30\n30 10\n",
    "w.txt": b"# src dst weight\n10 20 0.5\n20 30 2\n",
    "g.csv": b"source,target,weight\n1,2,3\n2,3,0.1\n3,1,4\n",
}


@pytest.mark.parametrize("name", sorted(SEEDS))
@fuzz_settings(250)
@given(data=st.data(), pattern_only=st.booleans())
def test_text_graphs(tmp_path, name, data, pattern_only):
    path = tmp_path / name
    path.write_bytes(data.draw(inputs(SEEDS[name])))
    check_clean(read_graph, path, pattern_only=pattern_only)


@pytest.mark.parametrize("part", ["col", "dst", "val"])
@fuzz_settings(200)
@given(data=st.data())
def test_binary_csr(tmp_path, part, data):
    import numpy as np
    prefix = tmp_path / "g"
    csr = from_edges(np.array([0, 1, 2, 2]), np.array([1, 2, 0, 3]), 4,
                     np.array([5, 6, 7, 8]), name="g")
    paths = write_bel(csr, prefix)
    seed = paths[part].read_bytes()
    paths[part].write_bytes(data.draw(inputs(seed, max_size=200)))
    check_clean(read_graph, f"{prefix}.bel")
