"""Small real graphs carried in the repository (``traces/graphs/data/``), by name.

``read_dataset("luxembourg_osm")`` reads one as a symmetric CSR. Each file
is compressed with xz and read by :func:`hostlink.traces.graphs.read_graph`;
``data/README.md`` gives each graph's origin, terms, counts and sha256.

The graphs (one of each family the generators do not reach):

- ``luxembourg_osm``: the road network of Luxembourg from OpenStreetMap
  (SuiteSparse Matrix Collection, ``DIMACS10/luxembourg_osm``; 10th DIMACS
  Implementation Challenge): a road graph in its file order;
- ``ca-GrQc``: the arXiv General Relativity co-authorship graph (SNAP;
  Leskovec, Kleinberg and Faloutsos, "Graph Evolution: Densification and
  Shrinking Diameters", ACM TKDD 2007): a collaboration graph;
- ``web-edu``: a web crawl of .edu pages (Network Repository; Rossi and
  Ahmed, "The Network Data Repository with Interactive Graph Analytics and
  Visualization", AAAI 2015), ids in the crawl's order.

Assumptions: every graph is read as undirected (SNAP's ca-GrQc lists both
directions already); self-loops and duplicates are dropped by the readers,
so the edge counts are those of :data:`DATASETS`, not the files' headers.
The files carry no weights: ``weighted=True`` gives the generators' hash
weights (:func:`hostlink.traces.graphs.generators.edge_weights`).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from hostlink.traces.graphs.csr import CSR, GraphError
from hostlink.traces.graphs.generators import DEFAULT_SEED, edge_weights

DATA_DIR = Path(__file__).resolve().parent / "data"


@dataclass(frozen=True)
class Dataset:
    file: str
    family: str
    vertices: int
    edges: int      # directed edges of the symmetric CSR (each undirected edge twice)


#: name -> file and the counts the reader gives (data/README.md lists their sources)
DATASETS: dict[str, Dataset] = {
    "luxembourg_osm": Dataset("luxembourg_osm.mtx.xz", "road", 114_599, 239_332),
    "ca-GrQc": Dataset("ca-GrQc.txt.xz", "collaboration", 5_242, 28_968),
    "web-edu": Dataset("web-edu.mtx.xz", "web", 3_031, 12_948),
}


def dataset_path(name: str) -> Path:
    """The file of dataset ``name`` (GraphError for an unknown name or a missing file)."""
    if name not in DATASETS:
        raise GraphError(f"unknown dataset '{name}' (known: {', '.join(DATASETS)})")
    path = DATA_DIR / DATASETS[name].file
    if not path.is_file():
        raise GraphError(f"{path}: dataset '{name}' is missing from this installation")
    return path


def read_dataset(name: str, *, weighted: bool = False, seed: int = DEFAULT_SEED,
                 id_bytes: int = 4, label: str | None = None) -> CSR:
    """Dataset ``name`` as a symmetric CSR named ``label`` (default: the dataset's name)."""
    from hostlink.traces.graphs.readers import read_graph
    csr = read_graph(dataset_path(name), symmetrize=True, name=label or name,
                     pattern_only=True)
    weights = edge_weights(csr.offsets, csr.dst, int(seed)) if weighted else None
    return CSR(csr.offsets, csr.dst, weights, csr.name, directed=False).with_id_bytes(id_bytes)
