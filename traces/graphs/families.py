"""One entry point for every graph family a manifest, a sweep or ``hostlink graph gen`` names.

``build_graph(kind, **params)`` makes the graph; ``graph_params(kind, ...)``
checks a family's parameters and returns the canonical ones (those the
family uses, defaults filled in), so that two spellings of one graph compare
equal and a child process can rebuild it from JSON.

Families and their parameters:

- ``kron``, ``rmat``, ``urand`` (:mod:`hostlink.traces.graphs.generators`):
  ``scale`` (2**scale vertices), ``degree`` (sampled edges per vertex),
  ``seed``. A dense random graph is ``urand`` with a high degree (128: an
  average of about 256 directed edges per vertex);
- ``grid`` (:mod:`hostlink.traces.graphs.grid`): ``dims`` "WxH" or "XxYxZ",
  ``ids`` "shuffled" (default) or "local" (locality order), ``seed``;
- ``road`` (:mod:`hostlink.traces.graphs.road`): ``dims`` "WxH", ``ids``,
  ``mean_degree`` (default 2.5), ``seed``;
- ``dataset`` (:mod:`hostlink.traces.graphs.datasets`): ``name`` of a graph
  carried in ``traces/graphs/data/``; ``seed`` only draws the hash weights.

Assumption: every family is symmetric, without self-loops or duplicate
edges, with sorted neighbour lists; weights, when asked for, are the
generators' hash of the edge's ends.
"""
from __future__ import annotations

from typing import Any

from hostlink.traces.graphs.csr import CSR, GraphError
from hostlink.traces.graphs.generators import DEFAULT_SEED
from hostlink.traces.graphs.generators import KINDS as SAMPLED

KINDS = SAMPLED + ("grid", "road", "dataset")


class GraphParamError(GraphError):
    """A bad or missing parameter of a graph family; ``key`` names it."""

    def __init__(self, key: str, message: str):
        super().__init__(message)
        self.key = key


IDS = ("shuffled", "local")
#: the parameters each family uses, besides ``seed``
PARAMS: dict[str, tuple[str, ...]] = {
    **{k: ("scale", "degree") for k in SAMPLED},
    "grid": ("dims", "ids"),
    "road": ("dims", "ids", "mean_degree"),
    "dataset": ("name",),
}


def dims_text(dims: Any) -> str:
    """``dims`` ("2000x2000", [2000, 2000] or (2000, 2000)) as "2000x2000", checked."""
    from hostlink.traces.graphs.grid import parse_dims
    if isinstance(dims, (list, tuple)):
        if not all(isinstance(d, int) and not isinstance(d, bool) for d in dims):
            raise GraphError(f"grid dimensions {list(dims)}: expected integers")
        dims = "x".join(str(d) for d in dims)
    return "x".join(str(d) for d in parse_dims(str(dims)))


def graph_params(kind: str, *, scale: int | None = None, degree: int | None = None,
                 seed: int | None = None, dims: Any = None, ids: str | None = None,
                 mean_degree: float | None = None, name: str | None = None) -> dict:
    """The canonical parameters of a ``kind`` graph (GraphError names a missing or bad one)."""
    from hostlink.traces.graphs.road import DEFAULT_MEAN_DEGREE, degree_range
    if kind not in KINDS:
        raise GraphParamError("kind", f"unknown graph kind '{kind}' (expected {', '.join(KINDS)})")
    out: dict[str, Any] = {"seed": DEFAULT_SEED if seed is None else int(seed)}
    if kind in SAMPLED:
        if scale is None:
            raise GraphParamError("scale", f"a {kind} graph needs a scale")
        out.update(scale=int(scale), degree=16 if degree is None else int(degree))
    elif kind in ("grid", "road"):
        if dims is None:
            raise GraphParamError("dims", f"a {kind} graph needs dims "
                                          f"(WxH{'' if kind == 'road' else ' or XxYxZ'})")
        try:
            out["dims"] = dims_text(dims)
        except GraphError as exc:
            raise GraphParamError("dims", str(exc)) from None
        ids = ids or "shuffled"
        if ids not in IDS:
            raise GraphParamError("ids", f"ids '{ids}': expected {' or '.join(IDS)}")
        out["ids"] = ids
        if kind == "road":
            shape = tuple(int(d) for d in out["dims"].split("x"))
            if len(shape) != 2:
                raise GraphParamError("dims", f"road dimensions {out['dims']}: expected WxH")
            md = DEFAULT_MEAN_DEGREE if mean_degree is None else float(mean_degree)
            lo, hi = degree_range(shape)
            if not lo <= md <= hi:
                raise GraphParamError("mean_degree", f"road mean_degree {md}: a {out['dims']} "
                                      f"road graph has an average degree in [{lo:.3f}, {hi:.3f}]")
            out["mean_degree"] = md
    else:
        from hostlink.traces.graphs.datasets import DATASETS
        if name not in DATASETS:
            raise GraphParamError("name", f"dataset name {name!r}: expected one of "
                                          f"{', '.join(DATASETS)}")
        out["name"] = name
    return out


def build_graph(kind: str, *, weighted: bool = True, id_bytes: int = 4,
                label: str | None = None, **params) -> CSR:
    """The ``kind`` graph of ``params`` (see :func:`graph_params`), named ``label``."""
    p = graph_params(kind, **params)
    seed = p["seed"]
    if kind in SAMPLED:
        from hostlink.traces.graphs.generators import generate
        return generate(kind, p["scale"], p["degree"], seed, weighted=weighted,
                        id_bytes=id_bytes, name=label)
    if kind in ("grid", "road"):
        dims = tuple(int(d) for d in p["dims"].split("x"))
        shuffle = p["ids"] == "shuffled"
        if kind == "grid":
            from hostlink.traces.graphs.grid import grid
            return grid(dims, shuffle=shuffle, seed=seed, weighted=weighted,
                        id_bytes=id_bytes, name=label)
        from hostlink.traces.graphs.road import road
        return road(dims, mean_degree=p["mean_degree"], shuffle=shuffle, seed=seed,
                    weighted=weighted, id_bytes=id_bytes, name=label)
    from hostlink.traces.graphs.datasets import read_dataset
    return read_dataset(p["name"], weighted=weighted, seed=seed, id_bytes=id_bytes,
                        label=label)
