"""The results store of sweeps: a folder of Parquet files that only ever grows.

Layout of a results folder::

    DIR/results/part-<writer>-<seq>.parquet   tidy rows: run_id, experiment, case,
                                              model_kind, metric, value, unit, rep
    DIR/points/part-<writer>-<seq>.parquet    one row per (run_id, experiment, case):
                                              the sweep's parameters as columns, the
                                              resolved config and workload as JSON,
                                              git SHA, host and time of the run
    DIR/sweeps/<name>-<hash>.toml             each sweep file that wrote here, as written
    DIR/.lock                                 the commit lock

Writing: a finished batch becomes one points file and one results file, each
written to a hidden temporary name in its folder, flushed to disk and renamed
into place (a rename is atomic), under an exclusive ``flock`` on ``DIR/.lock``.
File names carry a writer id (time, host, process id and a random part) and
a sequence number, so writers never share a name. The results file is the
commit: a run id is finished once a results file holds it. Before it
commits, a writer rereads what others committed and drops the results of any
run id already there (keeping its points rows), so two sweeps sharing points
never store a point twice. A points file
whose results never arrived (a crash between the two renames) is harmless:
readers keep only points with results.

Reading (:func:`load_results`) joins results to points by run id, so a point
shared by several sweeps appears under each sweep's experiment and case.
Assumption: the folder is on a file system with working ``flock`` and atomic
rename (any local file system; NFS with lock support).
"""
from __future__ import annotations

import contextlib
import datetime as _dt
import fcntl
import json
import os
import socket
import subprocess
import uuid
from pathlib import Path
from typing import Any, Iterable

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from hostlink.model.errors import HostlinkError

TIDY_COLUMNS = ("run_id", "experiment", "case", "model_kind", "metric", "value", "unit", "rep")
TIDY_SCHEMA = pa.schema([("run_id", pa.string()), ("experiment", pa.string()),
                         ("case", pa.string()), ("model_kind", pa.string()),
                         ("metric", pa.string()), ("value", pa.float64()),
                         ("unit", pa.string()), ("rep", pa.int32())])
POINT_META = ("run_id", "experiment", "case", "fidelity", "system", "config_json",
              "workload_json", "axes", "git_sha", "host", "created_utc")
PARQUET_OPTIONS = dict(compression="zstd")


class StoreError(HostlinkError):
    """A results folder that cannot be read or written."""


def _git_sha() -> str:
    here = Path(__file__).resolve().parent
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True,
                             text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return out.stdout.strip() if out.returncode == 0 else ""


def _write_atomic(table: pa.Table, folder: Path, name: str) -> Path:
    final = folder / name
    tmp = folder / f".tmp-{name}"
    with open(tmp, "wb") as fh:
        pq.write_table(table, fh, **PARQUET_OPTIONS)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, final)
    return final


def _parts(folder: Path) -> list[Path]:
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.glob("part-*.parquet"))


def _unreadable(path: Path, exc: Exception) -> StoreError:
    """The one-line error for a part file that cannot be read, and what to do about it:
    a part holds only committed rows, so deleting it loses nothing a rerun of the
    sweep with the same --out does not compute again."""
    detail = " ".join(str(exc).split()) or type(exc).__name__
    return StoreError(f"{path}: cannot read results ({detail}); the file is truncated or "
                      f"corrupt: delete it and run the sweep again with the same --out to "
                      f"recompute the points it held")


def _read(path: Path, columns: list[str] | None = None) -> pa.Table:
    try:
        table = pq.read_table(path, columns=columns)
        table.validate(full=True)  # strings that are not UTF-8 fail here, not later
        return table
    except (OSError, pa.ArrowException, ValueError) as exc:
        raise _unreadable(path, exc) from None


def tidy_table(rows: pd.DataFrame | pa.Table | dict[str, Any]) -> pa.Table:
    """Rows in the tidy schema (a missing ``rep`` is 0), checked."""
    if isinstance(rows, pa.Table):
        return rows.select(list(TIDY_COLUMNS)).cast(TIDY_SCHEMA)
    if isinstance(rows, pd.DataFrame):
        rows = {c: rows[c].to_numpy() for c in rows.columns}
    missing = [c for c in TIDY_COLUMNS if c not in rows and c != "rep"]
    if missing:
        raise StoreError(f"result rows lack the column(s) {', '.join(missing)}")
    n = len(rows["run_id"])
    arrays = []
    for f in TIDY_SCHEMA:
        col = rows.get(f.name)
        if col is None:
            col = np.zeros(n, dtype=np.int32)
        arrays.append(pa.array(col, type=f.type))
    return pa.Table.from_arrays(arrays, schema=TIDY_SCHEMA)


def _column_safe(values: list) -> list:
    """A column Parquet can hold: lists and dicts as JSON, mixed types as strings."""
    kinds = set(map(type, values))
    if kinds & {list, dict, tuple}:
        memo: dict[int, str] = {}
        out = []
        for v in values:
            if isinstance(v, (list, dict, tuple)):
                text = memo.get(id(v))
                if text is None:
                    text = memo[id(v)] = json.dumps(v)
                v = text
            out.append(v)
        values = out
        kinds = set(map(type, values))
    kinds.discard(type(None))
    if len(kinds) > 1 and not kinds <= {int, float}:
        values = [None if v is None else str(v) for v in values]
    return values


def _as_columns(points: pd.DataFrame | dict[str, list]) -> dict[str, list]:
    if isinstance(points, pd.DataFrame):
        return {c: points[c].tolist() for c in points.columns}
    return dict(points)


class ResultStore:
    """One writer's handle on a results folder (see the module docstring)."""

    def __init__(self, root: str | Path):
        self.root = Path(root)
        try:
            for sub in ("results", "points", "sweeps"):
                (self.root / sub).mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"{self.root}: cannot create the results folder: {exc.strerror}") from None
        stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%S")
        host = "".join(c if c.isalnum() else "-" for c in socket.gethostname())[:24]
        self.writer_id = f"{stamp}-{host}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self._seq = 0
        self._seen: set[str] = set()
        self._done: set[str] = set()
        self._git_sha: str | None = None

    # ---------------------------------------------------------------- locking
    @contextlib.contextmanager
    def lock(self):
        """Exclusive lock on the folder's commit step (blocks until free)."""
        with open(self.root / ".lock", "a+") as fh:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh.fileno(), fcntl.LOCK_UN)

    # ---------------------------------------------------------------- reading
    def refresh(self) -> set[str]:
        """Run ids committed so far (by any writer); reads only files not seen before."""
        for path in _parts(self.root / "results"):
            if path.name in self._seen:
                continue
            ids = _read(path, ["run_id"]).column("run_id").unique().to_pylist()
            self._done.update(ids)
            self._seen.add(path.name)
        return self._done

    def finished(self) -> set[str]:
        with self.lock():
            return set(self.refresh())

    def memberships(self) -> set[tuple[str, str, str]]:
        """(run_id, experiment, case) triples recorded in the points files."""
        out: set[tuple[str, str, str]] = set()
        for path in _parts(self.root / "points"):
            t = _read(path, ["run_id", "experiment", "case"])
            out.update(zip(*(t.column(c).to_pylist() for c in ("run_id", "experiment", "case"))))
        return out

    # ---------------------------------------------------------------- writing
    @property
    def git_sha(self) -> str:
        if self._git_sha is None:
            self._git_sha = _git_sha()
        return self._git_sha

    def save_sweep_file(self, name: str, text: str) -> Path | None:
        """Keep the sweep file as written beside its results (once per distinct text)."""
        if not text:
            return None
        import hashlib
        digest = hashlib.sha256(text.encode()).hexdigest()[:8]
        safe = "".join(c if c.isalnum() or c in "-_." else "-" for c in name)
        path = self.root / "sweeps" / f"{safe}-{digest}.toml"
        if not path.exists():
            tmp = path.with_name(f".tmp-{self.writer_id}-{path.name}")
            tmp.write_text(text)
            os.replace(tmp, path)
        return path

    def _next_name(self) -> str:
        self._seq += 1
        return f"part-{self.writer_id}-{self._seq:06d}.parquet"

    def points_table(self, points: pd.DataFrame | dict[str, list]) -> pa.Table:
        cols = _as_columns(points)
        n = len(cols["run_id"])
        now = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
        cols["git_sha"] = [self.git_sha] * n
        cols["host"] = [socket.gethostname()] * n
        cols["created_utc"] = [now] * n
        arrays = {}
        for name, values in cols.items():
            values = _column_safe(list(values))
            try:
                arrays[name] = pa.array(values)
            except (pa.ArrowInvalid, pa.ArrowTypeError):
                arrays[name] = pa.array([None if v is None else str(v) for v in values])
        return pa.table(arrays)

    def commit(self, results: pd.DataFrame | pa.Table | dict[str, Any],
               points: pd.DataFrame | dict[str, list]) -> int:
        """Store one finished batch; returns how many of its run ids were new.

        Results of run ids that another writer committed meanwhile are dropped
        (their points rows are kept: the batch's experiment and cases still
        name them).
        """
        table = tidy_table(results)
        cols = _as_columns(points)
        with self.lock():
            done = self.refresh()
            ids = set(cols["run_id"])
            clash = ids & done
            if clash:
                keep = pc.invert(pc.is_in(table.column("run_id"),
                                          value_set=pa.array(sorted(clash))))
                table = table.filter(keep)
                ids -= clash
            name = self._next_name()
            _write_atomic(self.points_table(cols), self.root / "points", name)
            if ids:
                _write_atomic(table, self.root / "results", name)
                self._seen.add(name)
                self._done.update(ids)
            return len(ids)

    def add_memberships(self, points: pd.DataFrame | dict[str, list]) -> None:
        """Record that finished run ids also belong to another experiment or case."""
        cols = _as_columns(points)
        if not cols.get("run_id"):
            return
        with self.lock():
            _write_atomic(self.points_table(cols), self.root / "points", self._next_name())


def load_points(root: str | Path, experiment: str | None = None,
                with_config: bool = False) -> pd.DataFrame:
    """The points table: one row per (run_id, experiment, case) with the sweep's
    parameters as columns (``with_config`` keeps the config and workload JSON)."""
    root = Path(root)
    files = _parts(root / "points")
    if not files:
        if not (root / "points").is_dir():
            raise StoreError(f"{root}: not a sweep results folder (no points/ inside)")
        return pd.DataFrame(columns=list(POINT_META))
    frames = []
    drop = [] if with_config else ["config_json", "workload_json"]
    for path in files:
        try:
            names = pq.read_schema(path).names
        except (OSError, pa.ArrowException, ValueError) as exc:
            raise _unreadable(path, exc) from None
        df = _read(path, [c for c in names if c not in drop]).to_pandas()
        if experiment is not None:
            df = df[df["experiment"] == experiment]
        frames.append(df)
    frames = [f for f in frames if len(f)] or frames[:1]
    points = pd.concat(frames, ignore_index=True)
    return points.drop_duplicates(["run_id", "experiment", "case"], keep="first").reset_index(drop=True)


def load_configs(root: str | Path) -> dict[str, dict]:
    """Resolved config (as a dict) of every run id in a results folder."""
    points = load_points(root, with_config=True)
    out: dict[str, dict] = {}
    for rid, text in zip(points["run_id"], points["config_json"]):
        if rid not in out:
            out[rid] = json.loads(text)
    return out


BOUND_PREFIX = "bound."


def _read_results(root: Path, run_ids: set[str] | None) -> pa.Table:
    """All committed result rows (a run id found in two files: the first file's rows),
    only of ``run_ids`` when given."""
    tables, seen = [], set()
    for path in _parts(root / "results"):
        t = _read(path)
        if "run_id" not in t.column_names:
            raise _unreadable(path, ValueError("no run_id column"))
        ids = set(pc.unique(t.column("run_id")).to_pylist())
        drop = ids & seen
        if run_ids is not None:
            drop |= ids - run_ids
        if drop:
            t = t.filter(pc.invert(pc.is_in(t.column("run_id"), value_set=pa.array(sorted(drop)))))
        seen |= ids
        if t.num_rows:
            try:
                tables.append(t.cast(TIDY_SCHEMA))
            except (pa.ArrowException, ValueError, KeyError) as exc:  # another schema
                raise _unreadable(path, exc) from None
    return pa.concat_tables(tables) if tables else TIDY_SCHEMA.empty_table()


def _attach(frame: pd.DataFrame, points: pd.DataFrame) -> pd.DataFrame:
    """Join the points (membership and parameters) to rows keyed by run_id."""
    params = points.drop(columns=[c for c in ("git_sha", "host", "created_utc") if c in points])
    if params["run_id"].is_unique:   # the usual case: a take per column, no hash join
        idx = pd.Index(params["run_id"]).get_indexer(frame["run_id"])
        keep = idx >= 0
        frame = frame[keep].reset_index(drop=True)
        idx = idx[keep]
        extra = {c: params[c].array.take(idx) for c in params.columns if c != "run_id"}
        return pd.concat([frame, pd.DataFrame(extra, index=frame.index)], axis=1)
    return frame.merge(params, on="run_id", how="inner")


def load_results(root: str | Path, experiment: str | None = None,
                 wide: bool = False, run_ids=None) -> pd.DataFrame:
    """Every result row of a results folder, with the sweep's parameters as columns;
    ``run_ids``: only these runs (a resumed folder keeps the runs of every earlier
    version of its sweep: :attr:`~hostlink.model.sweep.runner.SweepReport.run_ids` names
    the current one's).

    Long form (default): the tidy columns (``run_id, experiment, case,
    model_kind, metric, value, unit, rep``) then the parameter columns
    (``link.gen``, ``workload.variant``, ...). ``wide=True``: one row per
    run, experiment, case, model kind and rep, one column per metric, and the
    binding bound (stored as ``bound.<name>`` flag rows) as a ``bound`` column.
    A run shared by several sweeps appears under each one's experiment and case.
    """
    root = Path(root)
    points = load_points(root, experiment)
    if run_ids is not None:
        points = points[points["run_id"].isin(set(run_ids))].reset_index(drop=True)
    table = _read_results(root, set(points["run_id"])
                          if experiment is not None or run_ids is not None else None)
    if wide:
        return _wide(table, points)
    results = table.drop_columns(["experiment", "case"]).to_pandas()
    merged = _attach(results, points)
    front = list(TIDY_COLUMNS)
    return merged[front + [c for c in merged.columns if c not in front]]


def _wide(table: pa.Table, points: pd.DataFrame) -> pd.DataFrame:
    key_cols = ("run_id", "model_kind", "rep")
    cols = {c: table.column(c).to_numpy(zero_copy_only=False) for c in (*key_cols, "metric")}
    codes = np.zeros(table.num_rows, dtype=np.int64)
    for c in key_cols:
        code, uniq = pd.factorize(cols[c])
        codes = codes * max(len(uniq), 1) + code
    row_codes, row_index = pd.factorize(codes)
    metric_codes, metrics = pd.factorize(cols["metric"])
    matrix = np.full((len(row_index), len(metrics)), np.nan)
    matrix[row_codes, metric_codes] = table.column("value").to_numpy()
    first = np.zeros(len(row_index), dtype=np.int64)
    first[row_codes] = np.arange(table.num_rows)   # a row of each run (its keys are equal)
    frame = pd.DataFrame({c: cols[c][first] for c in key_cols})
    names = [str(m) for m in metrics]
    flags = [i for i, m in enumerate(names) if m.startswith(BOUND_PREFIX)]
    values = {m: matrix[:, i] for i, m in enumerate(names) if i not in flags}
    order = sorted(values)
    frame = pd.concat([frame, pd.DataFrame({m: values[m] for m in order})], axis=1)
    if flags:
        labels = np.asarray([names[i][len(BOUND_PREFIX):] for i in flags], dtype=object)
        sub = matrix[:, flags]
        has = ~np.isnan(sub)
        bound = np.where(has.any(axis=1), labels[np.argmax(has, axis=1)], None)
        frame["bound"] = bound
    frame = _attach(frame, points)
    front = ["run_id", "experiment", "case", "model_kind", "rep"]
    frame = frame[front + [c for c in frame.columns if c not in front]]
    frame.attrs["metrics"] = order
    return frame


def to_wide(long: pd.DataFrame) -> pd.DataFrame:
    """Long tidy rows (as :func:`load_results` gives them) -> the wide form."""
    key = ["run_id", "experiment", "case", "model_kind", "rep"]
    flags = long["metric"].astype(str).str.startswith(BOUND_PREFIX)
    values = (long[~flags].drop_duplicates(key + ["metric"]).set_index(key + ["metric"])["value"]
              .unstack("metric").reset_index())
    values.columns.name = None
    metrics = [c for c in values.columns if c not in key]
    if flags.any():
        b = long[flags].drop_duplicates(key)[key + ["metric"]]
        b = b.assign(bound=b["metric"].str[len(BOUND_PREFIX):]).drop(columns="metric")
        values = values.merge(b, on=key, how="left")
    params = [c for c in long.columns if c not in (*key, "metric", "value", "unit")]
    if params:
        values = values.merge(long[key + params].drop_duplicates(key), on=key, how="left")
    values.attrs["metrics"] = metrics
    return values


def iter_parts(root: str | Path, folder: str = "results") -> Iterable[Path]:
    """The committed part files of ``folder`` (results or points)."""
    return iter(_parts(Path(root) / folder))
