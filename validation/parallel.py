"""A report's twins predicted in worker processes (``hostlink validate report --jobs N``).

:func:`predict_parallel` predicts the cases :func:`hostlink.validation.twins.predict_run`
would predict, in ``jobs`` worker processes, and hands each finished case to the
caller's ``on_case`` in the parent process as it arrives (the parent alone keeps
them: :class:`hostlink.validation.report_store.PredictionStore`).

The unit of work is what :func:`~hostlink.validation.twins.predict_run` shares
between cases: a microbenchmark case alone; a traversal configuration (graph,
kernel, variant, id width) with all its memory modes, which share one emulated
request stream per source. A worker predicts a unit with
:func:`~hostlink.validation.twins.predict_run` itself (every other case skipped),
so a case's numbers are those of a one-process report, bit for bit.

The units run in phases, in the one-process order: first those without a graph
(microbenchmarks, trace cases), then one phase per graph. Before a graph's phase
the parent builds the graph once (:class:`~hostlink.validation.twins.GraphSource`)
and forks the workers after it: they share its arrays copy-on-write, so memory
stays near one graph plus ``jobs`` working sets (emulated streams, the model's
state), not ``jobs`` graphs. A worker reaches the shared graph through a
:class:`~hostlink.validation.twins.GraphSource` subclass installed in the worker
process only.

Failures: a twin that raises a :class:`~hostlink.model.errors.HostlinkError` is a
failed case, as in one process. Any other exception in a worker, or a worker that
dies (a signal, the kernel's out-of-memory killer), stops the report: the other
workers are terminated and :class:`WorkerError` names the case and the error on
one line; the cases that arrived before are kept by the caller. Each worker
answers on a pipe of its own and writes each message before it goes on, so the
parent reads everything a worker sent, in order, before the end of its pipe: a
worker that dies is known to have died in the case it last started. Workers ignore
Ctrl-C (the parent stops them) and die with the parent (Linux ``PR_SET_PDEATHSIG``).
Needs the ``fork`` start method (Linux, macOS).
"""
from __future__ import annotations

import multiprocessing as mp
import multiprocessing.connection as mp_connection
import os
import signal
import sys
from dataclasses import dataclass
from typing import Callable

import pandas as pd

from hostlink.model.errors import HostlinkError
from hostlink.validation import twins
from hostlink.validation.report_common import ReportError, case_order

#: Seconds the parent waits on the workers' pipes at a time.
POLL_S = 0.25


class WorkerError(HostlinkError):
    """A worker process raised an unexpected exception or died."""


def resolve_jobs(jobs: int | None) -> int:
    """Worker processes for ``--jobs``: N as given, 0 = one per CPU (``os.cpu_count()``);
    anything else is a :class:`hostlink.validation.report_common.ReportError`."""
    if jobs is None:
        return 1
    try:
        n = int(jobs)
    except (TypeError, ValueError):
        n = -1
    if n < 0 or isinstance(jobs, bool) or n != jobs:
        raise ReportError(f"--jobs must be 0 (one per CPU) or a positive number, not {jobs}")
    return n if n > 0 else max(1, os.cpu_count() or 1)


@dataclass(frozen=True)
class Unit:
    """Cases a worker predicts together (in predict_run's order) and the graph they need."""
    graph: str | None
    cases: tuple[str, ...]


def work_units(run, cases) -> list[Unit]:
    """The cases as units of work, in predict_run's order: a microbenchmark (or any
    case without a graph) alone, a traversal configuration with all its memory modes."""
    units: list[Unit] = []
    last_key = None
    for case in sorted(cases, key=lambda c: case_order(run, c)):
        p = run.cases.get(case) or {}
        if p.get("kind") == "traversal":
            key = ("traversal", str(p.get("graph", "")), str(p.get("kernel", "")),
                   str(p.get("variant", "")), int(p.get("id_bytes", 0) or 0),
                   p.get("iterations"))
            if key == last_key:
                units[-1] = Unit(units[-1].graph, units[-1].cases + (case,))
                continue
            units.append(Unit(str(p.get("graph", "")), (case,)))
        else:
            key = None
            units.append(Unit(None, (case,)))
        last_key = key
    return units


def phases(units: list[Unit]) -> list[tuple[str | None, list[Unit]]]:
    """Consecutive units needing the same graph (None: no graph)."""
    out: list[tuple[str | None, list[Unit]]] = []
    for u in units:
        if out and out[-1][0] == u.graph:
            out[-1][1].append(u)
        else:
            out.append((u.graph, [u]))
    return out


# ----------------------------------------------------------------------------
# Worker side (state inherited through fork)


@dataclass
class _State:
    run: object
    system: object
    kwargs: dict
    all_cases: frozenset
    graph: tuple[str, object] | None      # (name, CSR) built by the parent


_STATE: _State | None = None


class _SharedGraphs(twins.GraphSource):
    """A run's graphs, the one the parent built before forking served from memory."""

    def get(self, name: str):
        shared = _STATE.graph if _STATE is not None else None
        if shared is not None and name == shared[0]:
            self._cache = {name: shared[1]}
            return shared[1]
        return super().get(name)


def _die_with_parent(parent_pid: int) -> None:
    if sys.platform.startswith("linux"):
        try:
            import ctypes
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, signal.SIGKILL)           # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent_pid:                  # the parent died before prctl
        os._exit(1)


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _run_unit(index: int, unit: Unit, results) -> None:
    st = _STATE
    results.send(("start", index, os.getpid()))
    reported: list[str] = []
    timings: dict[str, dict] = {}

    def on_case(case: str, rows: pd.DataFrame, failure: str | None) -> None:
        reported.append(case)
        results.send(("case", index, case, rows, failure, timings.get(case)))

    try:
        twins.predict_run(st.run, st.system, progress=False, timings=timings,
                          skip_cases=st.all_cases - set(unit.cases), on_case=on_case,
                          **st.kwargs)
    except Exception as exc:                        # noqa: BLE001 - reported to the parent
        left = [c for c in unit.cases if c not in set(reported)]
        results.send(("error", index, left[0] if left else unit.cases[-1], _one_line(exc)))
        return
    results.send(("done", index))


def _worker_main(parent_pid: int, tasks, results) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _die_with_parent(parent_pid)
    twins.GraphSource = _SharedGraphs              # this process only
    while True:
        task = tasks.get()
        if task is None:
            break
        _run_unit(*task, results)
    results.close()


# ----------------------------------------------------------------------------
# Parent side


OnCase = Callable[[str, pd.DataFrame, "str | None", "dict | None"], None]


def predict_parallel(run, system, cases, *, jobs: int, on_case: OnCase, **kwargs) -> None:
    """Predict ``cases`` of ``run`` in ``jobs`` worker processes.

    ``kwargs`` are :func:`hostlink.validation.twins.predict_run`'s (fidelity,
    graph_dir, only, max_sources, max_requests, ...; not skip_cases,
    on_case, timings or progress). ``on_case(case, rows, failure, timing)`` is
    called in this process as each case arrives (``timing``: the traversal twin's
    wall-clock record, or None). Raises :class:`WorkerError` when a worker raises
    anything but a HostlinkError or dies."""
    global _STATE
    try:
        ctx = mp.get_context("fork")
    except ValueError:
        raise WorkerError("--jobs above 1 needs the 'fork' start method, which this "
                          "platform lacks; use --jobs 1") from None
    n_jobs = resolve_jobs(jobs)
    all_cases = frozenset(run.measured["case"].unique())
    for graph, units in phases(work_units(run, cases)):
        shared = None
        if graph is not None:
            try:
                shared = (graph, twins.GraphSource(run, kwargs.get("graph_dir")).get(graph))
            except HostlinkError:
                shared = None            # each case then fails in its worker, as in one process
        _STATE = _State(run, system, dict(kwargs), all_cases, shared)
        try:
            _run_phase(ctx, units, min(n_jobs, len(units)), on_case)
        finally:
            _STATE = None
            shared = None


def _run_phase(ctx, units: list[Unit], n_procs: int, on_case: OnCase) -> None:
    """Run ``units`` on ``n_procs`` workers, each answering on a pipe of its own.

    A worker's messages are written to its pipe before it goes on (no feeder
    thread), so whatever it sent before it died is read, in order, before the
    end of its pipe: the case it was predicting is known exactly."""
    tasks = ctx.Queue()
    procs: dict[object, object] = {}              # read end -> worker process
    open_units = set(range(len(units)))
    running: dict[int, int] = {}                   # unit -> worker pid
    arrived: dict[int, set[str]] = {i: set() for i in open_units}

    def handle(msg) -> None:
        kind, index = msg[0], msg[1]
        if kind == "start":
            running[index] = msg[2]
        elif kind == "case":
            _, _, case, rows, failure, timing = msg
            arrived[index].add(case)
            on_case(case, rows, failure, timing)
        elif kind == "done":
            open_units.discard(index)
            running.pop(index, None)
        elif kind == "error":
            drain()
            raise WorkerError(f"case '{msg[2]}' failed in a worker process: {msg[3]}")

    def drain() -> None:
        """What the other workers have sent already (their finished cases are kept)."""
        for conn in list(procs):
            try:
                while conn.poll():
                    msg = conn.recv()
                    if msg[0] != "error":
                        handle(msg)
            except (EOFError, OSError):
                continue

    def in_flight(pid: int) -> str:
        cases = []
        for index, owner in sorted(running.items()):
            if owner == pid:
                left = [c for c in units[index].cases if c not in arrived[index]]
                cases.append(left[0] if left else units[index].cases[-1])
        return ", ".join(f"'{c}'" for c in cases) or "no case"

    def ended(conn) -> None:
        """A worker's pipe reached its end: the worker has exited (or is exiting)."""
        p = procs.pop(conn)
        conn.close()
        p.join(timeout=5.0)
        busy = any(owner == p.pid for owner in running.values())
        if p.exitcode != 0 or busy:
            how = _exit_text(p.exitcode) if p.exitcode is not None else "closed its pipe"
            raise WorkerError(f"a worker process ended (pid {p.pid} {how}) while "
                              f"predicting {in_flight(p.pid)}")

    try:
        parent = os.getpid()
        for k in range(n_procs):
            reader, writer = ctx.Pipe(duplex=False)
            p = ctx.Process(target=_worker_main, args=(parent, tasks, writer), daemon=True,
                            name=f"hostlink-report-{k}")
            p.start()
            writer.close()                           # the worker holds the only write end
            procs[reader] = p
        for index, unit in enumerate(units):         # after the forks: no feeder thread
            tasks.put((index, unit))                 # runs while a worker is forked
        for _ in range(n_procs):
            tasks.put(None)
        while open_units:
            if not procs:
                raise WorkerError("every worker process ended early, with cases left: "
                                  + ", ".join(f"'{units[i].cases[0]}'" for i in sorted(open_units)))
            for conn in mp_connection.wait(list(procs), timeout=POLL_S):
                try:
                    msg = conn.recv()
                except (EOFError, OSError):
                    ended(conn)
                    continue
                handle(msg)
    finally:
        workers = list(procs.values())
        for p in workers:
            if p.exitcode is None and open_units:
                p.terminate()
        for p in workers:
            p.join(timeout=5.0)
            if p.exitcode is None:
                p.kill()
                p.join()
        for conn in procs:
            conn.close()
        tasks.cancel_join_thread()
        tasks.close()


def _exit_text(code: int) -> str:
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit status {code}"
