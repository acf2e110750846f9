"""Run a sweep: resolve and check every point, skip finished ones, evaluate the rest
in batches on local processes or a Dask cluster, commit each batch as it finishes.

Order of work:
1. every point is expanded and resolved (config checked, run id computed);
   any bad point stops the sweep before anything runs;
2. run ids already in the results folder are skipped (resume); points of this
   sweep that share a finished run id only gain a membership row;
3. the rest is grouped by (fidelity, workload) into tasks (see
   :mod:`hostlink.model.sweep.evaluate`), which run in-process (``jobs=1``),
   on a process pool (``jobs`` processes, default: the usable cores) or on an
   existing Dask cluster (``dask=ADDRESS``); at most a few tasks per worker are
   in flight, so an interrupt loses little and memory stays bounded;
4. each finished task is committed at once (one points file, one results
   file); a failing task stops the sweep, and what was committed stays.

Only this process writes to the results folder; workers return rows. Local
workers end with the process that started them, even one killed with SIGKILL
(no clean-up of its own runs): Linux's ``prctl(PR_SET_PDEATHSIG)`` (prctl(2))
sends them SIGKILL, and elsewhere a thread in each worker sees its parent gone
within a second.
"""
from __future__ import annotations

import concurrent.futures as cf
import contextlib
import gc
import json
import math
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hostlink.model.errors import ConfigError, HostlinkError
from hostlink.model.sweep import evaluate as _evaluate
from hostlink.model.sweep.resolve import ResolvedPoint, Resolver
from hostlink.model.sweep.spec import SweepSpec, load_sweep
from hostlink.model.sweep.store import ResultStore

# Resolved config values written as columns of every point (for plotting),
# besides the keys the sweep sets or varies.
KEY_COLUMNS = ("link.gen", "link.lanes", "link.tags", "link.rtt_ns", "link.mps_B", "link.rcb_B",
               "host.burst_B", "gpu.name", "gpu.max_outstanding_host_reads")
SIZES_BATCH = 10_000
STREAM_BATCH_MAX = 16
IN_FLIGHT_PER_WORKER = 2


@dataclass
class SweepReport:
    name: str
    out: Path
    points: int          # points of the sweep
    unique: int          # distinct run ids among them
    skipped: int         # run ids finished before this run started
    computed: int        # run ids evaluated and committed by this run
    dropped: int         # evaluated, but another writer committed them first
    tasks: int
    executor: str
    elapsed_s: float
    run_ids: frozenset = frozenset()   # the sweep's own points' run ids (a folder may hold more)

    def summary(self) -> str:
        return (f"sweep '{self.name}': {self.points} points ({self.unique} distinct), "
                f"{self.computed} computed, {self.skipped} already done"
                + (f", {self.dropped} committed meanwhile by another sweep" if self.dropped else "")
                + f"; {self.tasks} batches on {self.executor} in {self.elapsed_s:.1f} s; "
                f"results in {self.out}")


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


@contextlib.contextmanager
def _no_cyclic_gc():
    """Pause the cyclic garbage collector: resolving builds hundreds of thousands of
    objects without reference cycles, and every collection would walk them all
    (about 40% of the time of a 100,000-point sweep otherwise)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def resolve_points(spec: SweepSpec) -> list[ResolvedPoint]:
    """Every point resolved and checked, or a ConfigError for the first bad one."""
    resolver = Resolver(spec)
    with _no_cyclic_gc():
        resolved = [resolver.resolve(p) for p in spec.points()]
    checked: set[str] = set()
    for rp in resolved:
        if rp.workload_json not in checked:
            _check_runnable(spec, rp)
            checked.add(rp.workload_json)
    return resolved


def _check_runnable(spec: SweepSpec, rp: ResolvedPoint) -> None:
    w = rp.workload
    where = f"{spec.path} (point {rp.point.case})"
    if w["kind"] == "graph" and w.get("graph") == "file":
        path = Path(w["path"])
        if not path.exists() and not Path(str(path) + ".bel.col").exists():
            raise ConfigError(f"{where}: 'workload.path': no graph file {path} "
                              f"(nor {path}.bel.col)")
    if w["kind"] == "trace" and not Path(w["path"]).exists():
        raise ConfigError(f"{where}: 'workload.path': no trace folder {w['path']}")
    if w["kind"] == "trace" and w.get("regions") and not Path(w["regions"]).is_file():
        raise ConfigError(f"{where}: 'workload.regions': no regions file {w['regions']}")


def _batch_size(spec: SweepSpec, kind_fid: tuple[str, str], n_group: int, n_total: int,
                jobs: int, override: int | None) -> int:
    if override:
        return override
    if spec.batch_size:
        return spec.batch_size
    if kind_fid == ("sizes", "analytic"):
        return max(500, min(SIZES_BATCH, math.ceil(n_group / (4 * jobs))))
    # Stream tasks build their stream once: keep a workload's points together
    # unless that leaves workers idle.
    share = math.ceil(n_total / (2 * jobs))
    return max(1, min(STREAM_BATCH_MAX, n_group, share))


def plan_tasks(spec: SweepSpec, pending: list[ResolvedPoint], jobs: int,
               batch_size: int | None = None) -> list[tuple[_evaluate.Task, list[ResolvedPoint]]]:
    """Group pending points (one per run id) into tasks of one workload and fidelity."""
    groups: dict[tuple[str, str], list[ResolvedPoint]] = {}
    for rp in pending:
        groups.setdefault((rp.fidelity, rp.workload_json), []).append(rp)
    tasks = []
    n_stream = sum(len(m) for (fid, _), m in groups.items()
                   if not (m[0].workload["kind"] == "sizes" and fid == "analytic"))
    for (fidelity, wjson), members in groups.items():
        size = _batch_size(spec, (members[0].workload["kind"], fidelity), len(members),
                           n_stream, jobs, batch_size)
        for start in range(0, len(members), size):
            chunk = members[start:start + size]
            task = _evaluate.Task(
                fidelity=fidelity, workload=chunk[0].workload, workload_json=wjson,
                experiment=spec.name, run_ids=[rp.run_id for rp in chunk],
                cases=[rp.point.case for rp in chunk],
                systems=[(rp.parts, rp.scalars) for rp in chunk])
            tasks.append((task, chunk))
    return tasks


def points_frame(spec: SweepSpec, points: list[ResolvedPoint]) -> dict[str, list]:
    """The points rows (as columns): membership, parameters, config and workload JSON."""
    axes = json.dumps(list(spec.axis_keys))
    cols: dict[str, list] = {
        "run_id": [rp.run_id for rp in points],
        "experiment": [spec.name] * len(points),
        "case": [rp.point.case for rp in points],
        "fidelity": [rp.fidelity for rp in points],
        "system": [rp.point.system for rp in points],
        "config_json": [rp.config_json for rp in points],
        "workload_json": [rp.workload_json for rp in points],
        "axes": [axes] * len(points),
    }
    config_keys = list(KEY_COLUMNS)
    for key in (*spec.overrides, *spec.axis_keys):
        if key not in ("system", "fidelity") and not key.startswith("workload.") \
                and key not in config_keys:
            config_keys.append(key)
    for key in config_keys:
        section, _, name = key.partition(".")
        if key == "link":    # a whole link preset: its name
            cols[key] = [rp.parts["link"].name for rp in points]
        elif name:
            cols[key] = [getattr(rp.parts[section], name) for rp in points]
        else:
            cols[key] = [rp.scalars[key] for rp in points]
    wkeys: list[str] = []
    for rp in points:
        for k in rp.workload:
            if k not in wkeys:
                wkeys.append(k)
    for k in wkeys:
        cols[f"workload.{k}"] = [rp.workload.get(k) for rp in points]
    for key in spec.axis_keys:   # axis values as written, where normalising renamed them
        if key.startswith("workload.") and key not in cols:
            cols[key] = [rp.point.params.get(key) for rp in points]
    cols["mode"] = [rp.workload.get("mode", "zerocopy") for rp in points]
    return cols


# ---------------------------------------------------------------- executors
class _Inline:
    name = "this process"

    def __init__(self):
        self.slots = 1

    def submit(self, task):
        fut: cf.Future = cf.Future()
        try:
            fut.set_result(_evaluate.evaluate_task(task))
        except BaseException as exc:  # handed to the caller through the future
            if isinstance(exc, KeyboardInterrupt):
                raise
            fut.set_exception(exc)
        return fut

    def wait(self, futures):
        return cf.wait(futures, return_when=cf.FIRST_COMPLETED)

    def close(self, cancel: bool):
        pass


PR_SET_PDEATHSIG = 1          # linux/prctl.h
ORPHAN_POLL_S = 1.0


def _die_with_parent(parent_pid: int) -> None:
    """Pool initializer: end this worker when ``parent_pid`` (the sweep) dies."""
    import signal
    import threading
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):   # not Linux: the thread below does it
        pass

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(ORPHAN_POLL_S)
        os._exit(1)

    if os.getppid() != parent_pid:      # the parent died before prctl took effect
        os._exit(1)
    threading.Thread(target=watch, name="orphan-watch", daemon=True).start()


class _Pool:
    def __init__(self, jobs: int):
        self.pool = cf.ProcessPoolExecutor(max_workers=jobs, initializer=_die_with_parent,
                                           initargs=(os.getpid(),))
        self.slots = jobs * IN_FLIGHT_PER_WORKER
        self.name = f"{jobs} local processes"

    def submit(self, task):
        return self.pool.submit(_evaluate.evaluate_task, task)

    def wait(self, futures):
        return cf.wait(futures, return_when=cf.FIRST_COMPLETED)

    def close(self, cancel: bool):
        self.pool.shutdown(wait=not cancel, cancel_futures=cancel)


class _Dask:
    def __init__(self, address: str, timeout_s: float):
        try:
            from distributed import Client
        except ImportError:  # pragma: no cover - dask[distributed] is a dependency
            raise HostlinkError("--dask needs the 'distributed' package") from None
        try:
            self.client = Client(address, timeout=f"{timeout_s}s")
        except (OSError, TimeoutError) as exc:
            raise HostlinkError(f"cannot reach the Dask scheduler at {address}: {exc}") from None
        workers = self.client.scheduler_info().get("workers", {})
        threads = sum(w.get("nthreads", 1) for w in workers.values()) or 1
        self.slots = threads * IN_FLIGHT_PER_WORKER
        self.name = f"Dask at {address} ({len(workers)} workers, {threads} threads)"

    def submit(self, task):
        return self.client.submit(_evaluate.evaluate_task, task, pure=False)

    def wait(self, futures):
        from distributed import wait
        res = wait(list(futures), return_when="FIRST_COMPLETED")
        return set(res.done), set(res.not_done)

    def close(self, cancel: bool):
        self.client.close()


def _executor(jobs: int, dask: str | None, n_tasks: int, timeout_s: float):
    if dask:
        return _Dask(dask, timeout_s)
    if jobs <= 1 or n_tasks <= 1:
        return _Inline()
    return _Pool(min(jobs, n_tasks))


class _Progress:
    """A rich progress bar (points done, time left) on stderr; silent when disabled."""

    def __init__(self, enabled: bool, total: int, label: str):
        self.bar = None
        if not enabled or total == 0:
            return
        from rich.console import Console
        from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                                   TimeElapsedColumn, TimeRemainingColumn)
        self.bar = Progress(TextColumn("[bold]{task.description}"), BarColumn(),
                            MofNCompleteColumn(), TextColumn("points"), TimeElapsedColumn(),
                            TextColumn("left"), TimeRemainingColumn(),
                            console=Console(stderr=True), transient=False)
        self.task = self.bar.add_task(label, total=total)
        self.bar.start()

    def advance(self, n: int):
        if self.bar is not None:
            self.bar.advance(self.task, n)

    def stop(self):
        if self.bar is not None:
            self.bar.stop()


def run_sweep(spec: SweepSpec | str | Path, out: str | Path, *, jobs: int | None = None,
              dask: str | None = None, progress: bool = False,
              batch_size: int | None = None, dask_timeout_s: float = 20.0) -> SweepReport:
    """Run (or resume) a sweep into the results folder ``out``.

    ``jobs``: local worker processes (default: the usable cores; 1 runs in this
    process). ``dask``: the address of an existing Dask scheduler (workers
    need hostlink importable); ``dask_timeout_s`` bounds the wait to connect.
    ``batch_size``: points per task (default: from the sweep file, else sized
    from the number of points). ``progress``: a progress bar on stderr.
    """
    t0 = time.perf_counter()
    if not isinstance(spec, SweepSpec):
        spec = load_sweep(spec)
    if batch_size is not None and batch_size < 1:
        raise ConfigError(f"batch size must be >= 1, not {batch_size}")
    jobs = default_jobs() if jobs is None else jobs
    if jobs < 1:
        raise ConfigError(f"--jobs must be >= 1, not {jobs}")
    if progress:
        from rich.console import Console
        with Console(stderr=True).status(f"checking {spec.num_points} points of '{spec.name}'"):
            resolved = resolve_points(spec)
    else:
        resolved = resolve_points(spec)
    # The resolved points live until the end: keep the collector from walking them.
    gc.freeze()
    try:
        return _run(spec, resolved, out, jobs, dask, progress, batch_size, dask_timeout_s, t0)
    finally:
        gc.unfreeze()


def _run(spec, resolved, out, jobs, dask, progress, batch_size, dask_timeout_s, t0):
    store = ResultStore(out)
    store.save_sweep_file(spec.name, spec.text)
    done = store.finished()
    by_id: dict[str, list[ResolvedPoint]] = {}
    for rp in resolved:
        by_id.setdefault(rp.run_id, []).append(rp)
    skipped_ids = [rid for rid in by_id if rid in done]
    if skipped_ids:
        have = store.memberships()
        extra = [rp for rid in skipped_ids for rp in by_id[rid]
                 if (rid, spec.name, rp.point.case) not in have]
        store.add_memberships(points_frame(spec, extra))
    pending = [members[0] for rid, members in by_id.items() if rid not in done]
    tasks = plan_tasks(spec, pending, jobs, batch_size)

    computed = dropped = 0
    executor = _executor(jobs, dask, len(tasks), dask_timeout_s) if tasks else _Inline()
    queue = list(reversed(tasks))
    in_flight: dict[Any, list[ResolvedPoint]] = {}
    # A pool forks its workers at the first submissions: the progress bar's thread
    # starts after them. In this process the bar starts at once.
    bar = _Progress(progress, len(pending), spec.name) if isinstance(executor, _Inline) else None
    cancel = True
    try:
        while queue or in_flight:
            while queue and len(in_flight) < executor.slots:
                task, chunk = queue.pop()
                in_flight[executor.submit(task)] = chunk
            if bar is None:
                bar = _Progress(progress, len(pending), spec.name)
            finished, _ = executor.wait(set(in_flight))
            for fut in finished:
                chunk = in_flight.pop(fut)
                rows = fut.result()
                members = [rp for c in chunk for rp in by_id[c.run_id]]
                new = store.commit(rows, points_frame(spec, members))
                computed += new
                dropped += len(chunk) - new
                bar.advance(len(chunk))
        cancel = False
    finally:
        if bar is not None:
            bar.stop()
        executor.close(cancel)
    return SweepReport(name=spec.name, out=Path(out), points=len(resolved), unique=len(by_id),
                       skipped=len(skipped_ids), computed=computed, dropped=dropped,
                       tasks=len(tasks), executor=executor.name,
                       elapsed_s=time.perf_counter() - t0, run_ids=frozenset(by_id))
