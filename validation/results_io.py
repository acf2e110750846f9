"""The tidy results table shared by measured and predicted runs, and the
parser of the JSON lines the gpu_kernels programs print.

Results are one row per (case, metric, repetition)::

    run_id, experiment, case, model_kind, metric, value, unit, rep

``model_kind`` is ``measured`` for the harness, ``analytic`` or ``des`` for
the predictors. ``metric`` keeps its unit in its name (``time_ms``,
``bw_GBps``, ``lat_ns``), and ``unit`` repeats it as a unit string (``ms``,
``GB/s``, ``ns``); metrics with no unit suffix are counts or ratios with unit
``1``, except ``check_pass`` (``bool``: 1 passed, 0 failed) and ``source``
(``vertex``: the source vertex of a traversal repetition). ``rep`` numbers the
repetitions of a case from 0; for traversal cases it runs over sources, then
repetitions (rep = source_index * reps + repetition). Tables are written as
CSV and Parquet with the same columns.

JSON lines (gpu_kernels/common/json.hpp): objects with ``type`` device,
measurement, trace, error or done; a measurement carries ``benchmark``,
``params``, ``rep`` and ``metrics``. Anything else on a line is an error
naming the file and line; lines that are not JSON objects at all (a stray
message) are errors too, never skipped silently.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

import numpy as np
import pandas as pd
import pyarrow as pa

from hostlink.model.errors import HostlinkError
from hostlink.model.textfile import decode_utf8

RESULT_COLUMNS = ("run_id", "experiment", "case", "model_kind", "metric", "value", "unit", "rep")
MODEL_KINDS = ("analytic", "des", "measured")
LINE_TYPES = ("device", "measurement", "trace", "error", "done")

# Metric-name suffix -> unit string (longest suffix wins).
_SUFFIX_UNITS = {
    "_ms": "ms", "_us": "us", "_ns": "ns", "_s": "s",
    "_GBps": "GB/s", "_MBps": "MB/s",
    "_B": "B", "_KiB": "KiB", "_MiB": "MiB", "_GiB": "GiB", "_KB": "KB", "_MB": "MB", "_GB": "GB",
    "_MHz": "MHz", "_GTps": "GT/s", "_pct": "%",
}
_NAMED_UNITS = {"check_pass": "bool", "source": "vertex"}


class ResultsError(HostlinkError):
    """Program output or a results table that cannot be read; names the file and line."""


def unit_of(metric: str) -> str:
    """The unit string of a metric name (``bw_GBps`` -> ``GB/s``; ``iterations`` -> ``1``)."""
    if metric in _NAMED_UNITS:
        return _NAMED_UNITS[metric]
    for suffix in sorted(_SUFFIX_UNITS, key=len, reverse=True):
        if metric.endswith(suffix) and len(metric) > len(suffix):
            return _SUFFIX_UNITS[suffix]
    return "1"


@dataclass
class Measurement:
    benchmark: str
    params: dict
    rep: int
    metrics: dict
    kind: str = "measurement"  # or "trace"
    detail: dict = field(default_factory=dict)
    line: int = 0


@dataclass
class ProgramOutput:
    """What one program run printed, parsed."""
    source: str
    device: dict | None = None
    measurements: list[Measurement] = field(default_factory=list)
    errors: list[dict] = field(default_factory=list)
    done: dict | None = None

    @property
    def finished(self) -> bool:
        return self.done is not None


def parse_lines(lines: Iterable[str], source: str = "<output>") -> ProgramOutput:
    """Parse a program's JSON lines; ``source`` names the file in errors."""
    out = ProgramOutput(source=source)
    for no, raw in enumerate(lines, start=1):
        text = raw.strip()
        if not text:
            continue
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ResultsError(f"{source}:{no}: not a JSON line ({exc.msg}): {text[:80]!r}") from None
        if not isinstance(obj, dict) or obj.get("type") not in LINE_TYPES:
            raise ResultsError(f"{source}:{no}: expected an object with 'type' one of "
                               f"{', '.join(LINE_TYPES)}: {text[:80]!r}")
        kind = obj["type"]
        if kind == "device":
            out.device = obj
        elif kind == "error":
            out.errors.append(obj)
        elif kind == "done":
            out.done = obj
        else:
            out.measurements.append(_measurement(obj, source, no))
    return out


def _measurement(obj: dict, source: str, no: int) -> Measurement:
    where = f"{source}:{no}"
    for key, typ in (("benchmark", str), ("params", dict), ("rep", int), ("metrics", dict)):
        if not isinstance(obj.get(key), typ) or isinstance(obj.get(key), bool):
            raise ResultsError(f"{where}: key '{key}' missing or not a {typ.__name__}")
    metrics = {}
    for k, v in obj["metrics"].items():
        if v is None:
            metrics[k] = math.nan
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            metrics[k] = float(v)
        else:
            raise ResultsError(f"{where}: metric '{k}' is not a number: {v!r}")
    detail = obj.get("detail", {})
    if obj["benchmark"] == "uvm_touch" and "first_launch_ms" not in metrics:
        _launch_metrics(metrics, detail, where)
    return Measurement(benchmark=obj["benchmark"], params=obj["params"], rep=obj["rep"], metrics=metrics,
                       kind=obj["type"], detail=detail, line=no)


def _launch_metrics(metrics: dict, detail: dict, where: str) -> None:
    """``first_launch_ms`` and ``later_launch_ms`` of a uvm_touch point split over
    launches, from its ``detail.launch_ms`` as gpu_kernels/micro/uvm_touch.cu computes
    them (the first launch; the mean of the later ones): builds before those two
    metrics printed the per-launch times only (validation/experiments/uvm_launches/runs/h200)."""
    launch_ms = detail.get("launch_ms") if isinstance(detail, dict) else None
    if launch_ms is None:
        return
    if (not isinstance(launch_ms, list) or len(launch_ms) < 2
            or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in launch_ms)):
        raise ResultsError(f"{where}: detail 'launch_ms' is not a list of two or more numbers")
    metrics["first_launch_ms"] = float(launch_ms[0])
    metrics["later_launch_ms"] = float(sum(launch_ms[1:])) / (len(launch_ms) - 1)


def read_output(path: str | Path) -> ProgramOutput:
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ResultsError(f"{path}: cannot read ({exc.strerror or exc})") from None
    return parse_lines(decode_utf8(raw, path, ResultsError).split("\n"), source=str(path))


def rows_from_output(output: ProgramOutput, run_id: str, experiment: str,
                     case_of: Callable[[Measurement], str | None]) -> pd.DataFrame:
    """Tidy rows of every measurement; ``case_of`` names each (None drops it)."""
    rows = []
    for m in output.measurements:
        case = case_of(m)
        if case is None:
            continue
        for metric, value in m.metrics.items():
            rows.append((run_id, experiment, case, "measured", metric, value, unit_of(metric), m.rep))
    return make_table(rows)


def make_table(rows) -> pd.DataFrame:
    """A results table with the standard columns and dtypes."""
    df = pd.DataFrame(list(rows), columns=list(RESULT_COLUMNS))
    return _coerce(df)


def _coerce(df: pd.DataFrame) -> pd.DataFrame:
    for col in ("run_id", "experiment", "case", "model_kind", "metric", "unit"):
        df[col] = df[col].astype(str)
    df["value"] = df["value"].astype(np.float64)
    df["rep"] = df["rep"].astype(np.int64)
    return df


def check_table(df: pd.DataFrame, source: str = "<table>") -> pd.DataFrame:
    """Check a results table's columns and values; returns it with standard dtypes."""
    missing = [c for c in RESULT_COLUMNS if c not in df.columns]
    if missing:
        raise ResultsError(f"{source}: missing column(s): {', '.join(missing)}")
    extra = [c for c in df.columns if c not in RESULT_COLUMNS]
    if extra:
        raise ResultsError(f"{source}: unexpected column(s): {', '.join(map(str, extra))}")
    df = df[list(RESULT_COLUMNS)].copy()
    bad = ~df["model_kind"].isin(MODEL_KINDS)
    if bad.any():
        i = int(np.flatnonzero(bad.to_numpy())[0])
        raise ResultsError(f"{source}: row {i + 1}: model_kind '{df['model_kind'].iloc[i]}' is not one of "
                           f"{', '.join(MODEL_KINDS)}")
    try:
        df = _coerce(df)
    except (TypeError, ValueError) as exc:
        raise ResultsError(f"{source}: bad value type: {exc}") from None
    if (df["rep"] < 0).any():
        raise ResultsError(f"{source}: negative rep")
    dup = df.duplicated(["run_id", "case", "model_kind", "metric", "rep"])
    if dup.any():
        r = df[dup].iloc[0]
        raise ResultsError(f"{source}: duplicate row for case '{r['case']}', metric '{r['metric']}', rep {r['rep']}")
    return df


def write_results(df: pd.DataFrame, out_dir: str | Path, stem: str = "results") -> tuple[Path, Path]:
    """Write ``<stem>.csv`` and ``<stem>.parquet`` into ``out_dir``."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    df = check_table(df, str(out_dir / stem))
    csv, parquet = out_dir / f"{stem}.csv", out_dir / f"{stem}.parquet"
    df.to_csv(csv, index=False, float_format="%.9g")
    df.to_parquet(parquet, index=False)
    return csv, parquet


def read_results(path: str | Path) -> pd.DataFrame:
    """Read a results table written by :func:`write_results` (CSV or Parquet)."""
    path = Path(path)
    try:
        if path.suffix == ".parquet":
            import pyarrow.parquet as pq
            table = pq.read_table(path)
            table.validate(full=True)  # strings that are not UTF-8 fail here, not later
            df = table.to_pandas()
        else:
            df = pd.read_csv(path, dtype={"run_id": str, "experiment": str, "case": str, "model_kind": str,
                                          "metric": str, "unit": str}, keep_default_na=False,
                             na_values={"value": ["", "nan", "NaN"]})
    except (OSError, ValueError, pa.ArrowException) as exc:
        detail = " ".join(str(exc).split()) or type(exc).__name__
        hint = ""
        if path.suffix == ".parquet":
            twin = path.with_suffix(".csv")
            hint = ("; the file is truncated or corrupt: delete it and run the step that wrote it "
                    "again" + (f" ({twin.name} beside it holds the same rows)" if twin.is_file()
                               else ""))
        raise ResultsError(f"{path}: cannot read results ({detail}){hint}") from None
    return with_loop_gap(check_table(df, str(path)))


def with_loop_gap(df: pd.DataFrame) -> pd.DataFrame:
    """The table with ``loop_gap_us`` for every measured traversal run that has none:
    its time outside its walks' events per iteration, ``(time_ms - kernel_time_ms) /
    iterations``, what its host loop costs (:mod:`hostlink.model.host_loop`). Derived
    on reading, so that a run's results hold only what its programs printed."""
    from hostlink.validation.manifest import KERNELS
    kernel = df["case"].str.split("/", n=1).str[0]
    trav = df[(df["model_kind"] == "measured") & kernel.isin(KERNELS)
              & (df["case"].str.count("/") == 4)]
    if trav.empty:
        return df
    keys = ["run_id", "experiment", "case", "rep"]
    wide = trav.pivot_table(index=keys, columns="metric", values="value", aggfunc="first")
    need = {"time_ms", "kernel_time_ms", "iterations"}
    if not need <= set(wide.columns):
        return df
    if "loop_gap_us" in wide.columns:
        wide = wide[wide["loop_gap_us"].isna()]
    wide = wide[wide["iterations"] > 0].dropna(subset=list(need))
    if wide.empty:
        return df
    gap = ((wide["time_ms"] - wide["kernel_time_ms"]) * 1e3 / wide["iterations"]).rename("value")
    rows = gap.reset_index()
    rows["model_kind"] = "measured"
    rows["metric"] = "loop_gap_us"
    rows["unit"] = unit_of("loop_gap_us")
    rows = rows[list(df.columns)].astype(df.dtypes.to_dict())
    return pd.concat([df, rows], ignore_index=True)


def summarise(df: pd.DataFrame) -> pd.DataFrame:
    """Median and spread of every (run, case, model_kind, metric) over its reps.

    Columns: run_id, experiment, case, model_kind, metric, unit, n, median,
    mean, min, max, std, iqr (interquartile range), spread_pct
    (iqr / median * 100).
    """
    keys = ["run_id", "experiment", "case", "model_kind", "metric", "unit"]
    g = df.groupby(keys, sort=False)["value"]
    out = g.agg(n="count", median="median", mean="mean", min="min", max="max", std="std").reset_index()
    q = g.quantile([0.25, 0.75]).unstack().reset_index()
    q["iqr"] = q[0.75] - q[0.25]
    out = out.merge(q[keys + ["iqr"]], on=keys, how="left", sort=False)
    with np.errstate(divide="ignore", invalid="ignore"):
        out["spread_pct"] = np.where(out["median"] != 0, out["iqr"] / out["median"] * 100.0, np.nan)
    return out
