"""Design-space sweeps: sweep files, points and run ids, local or Dask execution,
and the resumable Parquet results store.

Use :func:`run_sweep` (or ``hostlink sweep SWEEP.toml --out DIR``) to run a
sweep file and :func:`load_results` to read a results folder back as a pandas
DataFrame (tidy rows plus the sweep's parameters as columns). The sweep file
format is described in :mod:`hostlink.model.sweep.spec`, the workloads in
:mod:`hostlink.model.sweep.workloads`, the folder layout and its guarantees
(atomic commits, resume, several writers) in :mod:`hostlink.model.sweep.store`.
"""
from hostlink.model.sweep.resolve import ResolvedPoint, Resolver, run_id_for
from hostlink.model.sweep.runner import SweepReport, resolve_points, run_sweep
from hostlink.model.sweep.spec import Axis, Point, SweepSpec, expand, load_sweep, parse_sweep
from hostlink.model.sweep.store import (ResultStore, StoreError, load_configs, load_points,
                                        load_results, to_wide)

__all__ = ["Axis", "Point", "ResolvedPoint", "Resolver", "ResultStore", "StoreError",
           "SweepReport", "SweepSpec", "expand", "load_configs", "load_points", "load_results",
           "load_sweep", "parse_sweep", "resolve_points", "run_id_for", "run_sweep", "to_wide"]
