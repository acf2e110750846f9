"""Graphs for the traversal kernels: the CSR type, GAP-style generators, readers and writers.

Every family a manifest or a sweep names (kron, rmat, urand, grid, road and the
carried datasets) is built by :func:`hostlink.traces.graphs.families.build_graph`.

Only NumPy (pandas for text files, SciPy for Matrix Market and road graphs)
is needed, so the GPU host can build the same graphs as this machine.
"""
from hostlink.traces.graphs.csr import CSR, GraphError, from_edges
from hostlink.traces.graphs.generators import (DEFAULT_SEED, edge_weights, generate, kron, rmat,
                                               urand)
from hostlink.traces.graphs.readers import (bel_paths, bel_prefix, read_bel, read_el, read_graph,
                                            read_mtx, read_snap, read_wel)
from hostlink.traces.graphs.writers import write_bel, write_el

__all__ = ["CSR", "GraphError", "from_edges", "DEFAULT_SEED", "edge_weights", "generate",
           "kron", "rmat", "urand", "bel_paths", "bel_prefix", "read_bel", "read_el", "read_graph",
           "read_mtx", "read_snap", "read_wel", "write_bel", "write_el"]
