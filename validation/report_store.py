"""The prediction store of a report: its predictions kept as each case finishes.

A full report predicts hundreds of twins (tens of minutes on a small machine),
so predictions are kept as each case finishes (:class:`PredictionStore`:
``OUT/predictions.parquet`` with the tidy rows, ``OUT/predictions.json`` with what
they were made with): a report interrupted by an exception, Ctrl-C or a kill
resumes where it stopped when started again with the same system values,
fidelity, request and source limits and twin version
(:data:`TWIN_VERSION`); anything else starts afresh and keeps the old
predictions as ``predictions.stale.*``. A stored case is reused only while the
source code its twin runs on is unchanged (:func:`kind_code_hash`: the model,
the traces and the twins of its kind), so an edit of the microbenchmark twins
predicts the microbenchmarks again and keeps the traversals, and the other way
round. Hashes are SHA-256 of canonical JSON (sorted keys).
"""
from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

import pandas as pd

from hostlink.model.errors import HostlinkError
from hostlink.validation import twins as _twins


#: Version of the twins' predictions: bumped when a change of the twins changes
#: what they predict (``hostlink.validation.twins.TWINS_VERSION`` where the twins
#: define it). Stored predictions of another version are recomputed.
_OWN_TWIN_VERSION = "1"
TWIN_VERSION = str(getattr(_twins, "TWINS_VERSION", _OWN_TWIN_VERSION))

PREDICTIONS_PARQUET = "predictions.parquet"
PREDICTIONS_JSON = "predictions.json"
STALE_PARQUET = "predictions.stale.parquet"
STALE_JSON = "predictions.stale.json"
STORE_FORMAT = 2                  # 2: the code hash per case kind, not per store
#: The store is rewritten when this many cases finished since the last write, or
#: this many seconds passed, and at the end (a choice: a crash loses at most that much).
FLUSH_EVERY_CASES = 20
FLUSH_EVERY_S = 5.0
_SYSTEM_LABELS = ("name", "description", "provenance")   # no effect on predictions


def _sha256(obj) -> str:
    blob = json.dumps(obj, sort_keys=True, default=repr, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


def _plain(obj):
    """``obj`` as it reads back from JSON (tuples as lists, keys as strings)."""
    return json.loads(json.dumps(obj, sort_keys=True, default=repr))


def system_hash(system) -> str:
    """SHA-256 of the resolved system config's values (its name, description and
    provenance left out: they do not change a prediction)."""
    from hostlink.model.config import system_to_dict
    d = system_to_dict(system)
    for k in _SYSTEM_LABELS:
        d.pop(k, None)
    return _sha256(d)


#: The code whose edits can change a prediction, per kind of case: every Python file
#: of these packages (or the module's own file).
PREDICTION_CODE = {
    "micro": ("hostlink.model", "hostlink.traces", "hostlink.validation.twin_common",
              "hostlink.validation.twin_micro", "hostlink.validation.twins",
              "hostlink.validation.sass", "hostlink.validation.twin_gather",
              "hostlink.validation.manifest", "hostlink.validation.results_io"),
    "traversal": ("hostlink.model", "hostlink.traces", "hostlink.validation.twin_common",
                  "hostlink.validation.twin_traversal", "hostlink.validation.twins",
                  "hostlink.validation.manifest", "hostlink.validation.results_io"),
}

#: Measured tables a kind's twins read, hashed with its code: the L1's losses of
#: strided reads (:mod:`hostlink.model.l1_losses`) and the read kernels' loads in flight.
PREDICTION_DATA = {
    "micro": ("hostlink.model.l1_losses:TABLE_CSV",
              "hostlink.validation.twin_micro:REFERENCE_LOADS_IN_FLIGHT"),
}


def code_hash(modules: tuple[str, ...] | None = None, data: tuple[str, ...] | None = None) -> str:
    """SHA-256 of the source of the code behind the predictions (file names and bytes):
    of ``modules`` and of the tables ``data`` (``module:ATTRIBUTE`` naming a path, whose
    bytes are hashed too); by default every module of :data:`PREDICTION_CODE`, and
    every table of :data:`PREDICTION_DATA` where ``modules`` is not given either.

    Any edit of that code makes stored predictions made with it stale, whether or
    not it changes a number: reuse never mixes predictions of two versions of the
    code (the twin version alone would miss edits of the model)."""
    import importlib
    if data is None:
        data = (tuple(dict.fromkeys(d for ds in PREDICTION_DATA.values() for d in ds))
                if modules is None else ())
    if modules is None:
        modules = tuple(dict.fromkeys(m for mods in PREDICTION_CODE.values() for m in mods))
    h = hashlib.sha256()
    for ref in data:
        name, _, attr = ref.partition(":")
        path = Path(getattr(importlib.import_module(name), attr))
        h.update(f"{ref}\0".encode())
        h.update(path.read_bytes() if path.is_file() else b"<missing>")
        h.update(b"\0")
    for name in modules:
        mod = importlib.import_module(name)
        roots = list(getattr(mod, "__path__", []) or [])
        files = ([(f, f.relative_to(r)) for r in map(Path, roots) for f in sorted(r.rglob("*.py"))
                  if "__pycache__" not in f.parts]
                 if roots else [(Path(mod.__file__), Path(Path(mod.__file__).name))])
        for f, rel in files:
            h.update(f"{name}/{rel.as_posix()}\0".encode())
            h.update(f.read_bytes())
            h.update(b"\0")
    return h.hexdigest()


def kind_code_hash(kind: str) -> str:
    """:func:`code_hash` of the code and tables a case of ``kind`` (micro, traversal)
    is predicted with; a kind not in :data:`PREDICTION_CODE` takes all of it."""
    if kind not in PREDICTION_CODE:
        return code_hash()
    return code_hash(PREDICTION_CODE[kind], PREDICTION_DATA.get(kind, ()))


def case_options(params: dict, uvm: dict | None) -> dict:
    """The part of the system's ``uvm`` section a case's twin reads: all of it for the
    traversals in managed memory that migrates (``uvm``, ``uvm_readmostly``) and the UVM
    first-touch microbenchmarks, none for the others (their predictions read no UVM
    cost: :mod:`hostlink.model.stream_memo` keys engine runs the same way)."""
    from hostlink.validation.twin_common import UVM_MODES
    kind = params.get("kind")
    if ((kind == "traversal" and params.get("memory_mode") in UVM_MODES)
            or (kind == "micro" and params.get("benchmark") == "uvm_touch")):
        return {"uvm": dict(uvm or {})}
    return {}


def case_options_hash(params: dict, uvm: dict | None) -> str:
    """SHA-256 of :func:`case_options`."""
    return _sha256(_plain(case_options(params, uvm)))


def uvm_section(system) -> dict:
    """The system's ``uvm`` section as plain values."""
    from hostlink.model.config import system_to_dict
    return dict(system_to_dict(system).get("uvm") or {})


def prediction_key(system, *, fidelity: str, max_requests: int | None,
                   max_sources: int | None) -> dict:
    """What stored predictions were made with; predictions are reused only under an equal
    key, the system's ``uvm`` section aside: each stored case records the hash of the
    part of it its twin reads (:func:`case_options_hash`), and a case is predicted again
    when that changed, so a new UVM cost leaves the other cases' predictions in place."""
    from dataclasses import replace

    from hostlink.model.config.schema import UvmConfig
    return _plain({
        "system_sha256": system_hash(replace(system, uvm=UvmConfig())),
        "uvm": uvm_section(system),
        "fidelity": fidelity,
        "max_requests": int(_twins.DEFAULT_MAX_REQUESTS if max_requests is None else max_requests),
        "max_sources": None if max_sources is None else max(1, int(max_sources)),
        "twin_version": TWIN_VERSION,
    })


def case_inputs_hash(run, case: str) -> str:
    """SHA-256 of what a case's twin is built from in the measured run: its parameters,
    the measured launch facts a microbenchmark twin reads, a traversal's graph."""
    params = run.cases.get(case) or {}
    extra: dict = {}
    if params.get("kind") == "micro":
        extra = {m: run.hint(case, m) for m in ("warps_launched", "revisits")}
    elif params.get("kind") == "traversal":
        info = (run.metadata.get("graphs") or {}).get(params.get("graph")) or {}
        extra = {"graph": {k: v for k, v in info.items() if k not in ("prefix", "path")}}
    return _sha256({"params": params, "hints": extra})


class PredictionStore:
    """A report's predictions kept as each case finishes.

    ``OUT/predictions.parquet`` holds the tidy predicted rows (results_io columns)
    and ``OUT/predictions.json`` the key they were made with (:func:`prediction_key`)
    and, per finished case, the hash of its inputs (:func:`case_inputs_hash`), of
    the code of its kind (:func:`kind_code_hash`) and of the part of the system's
    ``uvm`` section its twin reads (:func:`case_options_hash`), its row count, its failure message or null, and its run time
    (traversal twins).
    Both are written to a temporary file and moved into place (the Parquet file
    first: the JSON never names a case the Parquet file lacks). A case counts as
    done only when the JSON names it with the same inputs and the Parquet file
    holds its rows; a case whose inputs or code changed is predicted again; stored
    predictions made under another key are moved to ``predictions.stale.*``, never
    mixed with new ones."""

    def __init__(self, out: str | Path, key: dict, *, flush_every_cases: int | None = None,
                 flush_every_s: float | None = None):
        self.out = Path(out)
        self.key = _plain(key)
        self.parquet = self.out / PREDICTIONS_PARQUET
        self.json = self.out / PREDICTIONS_JSON
        self.flush_every_cases = FLUSH_EVERY_CASES if flush_every_cases is None else flush_every_cases
        self.flush_every_s = FLUSH_EVERY_S if flush_every_s is None else flush_every_s
        self.uvm = dict(self.key.get("uvm") or {})
        self.cases: dict[str, dict] = {}
        self._code: dict[str, str] = {}
        self._frames: list[pd.DataFrame] = []
        self._pending = 0
        self._last_flush = time.monotonic()
        self.messages: list[str] = []

    def code_for(self, run, case: str) -> str:
        """The code hash of ``case``'s kind (computed once per kind)."""
        kind = str((run.cases.get(case) or {}).get("kind", ""))
        if kind not in self._code:
            self._code[kind] = kind_code_hash(kind)
        return self._code[kind]

    def options_for(self, run, case: str) -> str:
        """The hash of the part of the ``uvm`` section ``case``'s twin reads
        (:func:`case_options_hash`)."""
        return case_options_hash(run.cases.get(case) or {}, self.uvm)

    # -- reading

    def open(self, run, *, fresh: bool = False) -> set[str]:
        """Load what is stored for ``run``; returns the cases already done."""
        from hostlink.validation.results_io import read_results

        if not self.parquet.exists() and not self.json.exists():
            return set()
        if fresh:
            self._retire("--fresh")
            return set()
        if not self.json.is_file():
            self._retire(f"{self.parquet} has no {PREDICTIONS_JSON} naming what it was made with")
            return set()
        try:
            meta = json.loads(self.json.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            self._retire(f"{self.json} cannot be read ({exc})")
            return set()
        if not isinstance(meta, dict) or meta.get("format") != STORE_FORMAT:
            self._retire(f"{self.json} is not a format-{STORE_FORMAT} prediction record")
            return set()
        old = meta.get("key") if isinstance(meta.get("key"), dict) else {}
        diff = sorted(k for k in set(old) | set(self.key)
                      if k != "uvm" and old.get(k) != self.key.get(k))
        if diff:
            self._retire(f"made with another {', '.join(diff)}")
            return set()
        old_uvm = old.get("uvm") if isinstance(old.get("uvm"), dict) else {}
        entries = meta.get("cases") if isinstance(meta.get("cases"), dict) else {}
        table = None
        if self.parquet.is_file():
            try:
                table = read_results(self.parquet)
            except HostlinkError as exc:
                self._retire(str(exc))
                return set()
        counts = table["case"].value_counts().to_dict() if table is not None else {}
        keep, changed, recoded, reoptioned = {}, [], {}, 0
        for case, entry in entries.items():
            ok = (isinstance(entry, dict) and case in run.cases
                  and entry.get("inputs") == case_inputs_hash(run, case)
                  and int(counts.get(case, 0)) == int(entry.get("rows", -1)))
            if not ok:
                changed.append(case)
            elif entry.get("code") != self.code_for(run, case):
                kind = str(run.cases[case].get("kind", ""))
                recoded[kind] = recoded.get(kind, 0) + 1
            elif (entry.get("options") or case_options_hash(run.cases[case], old_uvm)) \
                    != self.options_for(run, case):
                reoptioned += 1
            else:
                keep[case] = {**entry, "options": self.options_for(run, case)}
        if changed:
            self.messages.append(f"{len(changed)} stored case(s) whose inputs changed or whose "
                                 "rows are incomplete are predicted again")
        for kind, n in sorted(recoded.items()):
            self.messages.append(f"{n} stored {kind} case(s) made with other code of the model "
                                 f"or the {kind} twins are predicted again")
        if reoptioned:
            self.messages.append(f"{reoptioned} stored case(s) made with other UVM costs "
                                 "that their twins read are predicted again")
        if changed or recoded or reoptioned or old_uvm != self.uvm:
            self._pending += 1                      # the next write leaves them out
        self.cases = keep
        if table is not None and len(table):
            self._frames = [table[table["case"].isin(set(keep))].reset_index(drop=True)]
        return set(keep)

    def _retire(self, why: str) -> None:
        moved = []
        for src, dst in ((self.parquet, STALE_PARQUET), (self.json, STALE_JSON)):
            if src.exists():
                os.replace(src, self.out / dst)
                moved.append(dst)
        self.messages.append(f"stored predictions not reused ({why}); kept as "
                             f"{' and '.join(moved)}, predicting afresh")

    # -- writing

    def add(self, case: str, rows: pd.DataFrame, failure: str | None, inputs: str,
            timing: dict | None = None, code: str | None = None,
            options: str | None = None) -> None:
        """Keep a finished case (its rows, failure or None, inputs hash, run time, the
        code hash of its kind, :meth:`code_for`, and of the UVM costs its twin reads,
        :meth:`options_for`)."""
        self.cases[case] = {"inputs": inputs, "code": code, "options": options,
                            "rows": int(len(rows)), "failure": failure,
                            "timing": _plain(timing) if timing else None}
        if len(rows):
            self._frames.append(rows)
        self._pending += 1
        if (self._pending >= self.flush_every_cases
                or time.monotonic() - self._last_flush >= self.flush_every_s):
            self.flush()

    def table(self) -> pd.DataFrame:
        from hostlink.validation.results_io import make_table
        frames = [f for f in self._frames if len(f)]
        if not frames:
            return make_table([])
        if len(frames) > 1:
            self._frames = [pd.concat(frames, ignore_index=True)]
        return self._frames[0]

    def failures(self) -> dict[str, str]:
        return {c: e["failure"] for c, e in self.cases.items() if e.get("failure")}

    def timings(self) -> dict[str, dict]:
        return {c: dict(e["timing"]) for c, e in self.cases.items() if e.get("timing")}

    def flush(self, force: bool = False) -> None:
        """Write both files (temporary file, then os.replace) if anything changed."""
        if not self._pending and not force:
            return
        self.out.mkdir(parents=True, exist_ok=True)
        table = self.table()
        tmp = self.out / f".{PREDICTIONS_PARQUET}.{os.getpid()}.tmp"
        table.to_parquet(tmp, index=False)
        os.replace(tmp, self.parquet)
        meta = {"format": STORE_FORMAT, "key": self.key, "code": dict(sorted(self._code.items())),
                "cases": self.cases}
        tmp = self.out / f".{PREDICTIONS_JSON}.{os.getpid()}.tmp"
        tmp.write_text(json.dumps(meta, indent=1, sort_keys=True, default=repr) + "\n")
        os.replace(tmp, self.json)
        self._pending = 0
        self._last_flush = time.monotonic()


def stored_record(out: str | Path) -> dict | None:
    """The prediction record (``OUT/predictions.json``) as stored, whatever its key;
    None when absent or unreadable. Read only: nothing is retired."""
    path = Path(out) / PREDICTIONS_JSON
    try:
        meta = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None
    if not isinstance(meta, dict) or meta.get("format") != STORE_FORMAT \
            or not isinstance(meta.get("cases"), dict):
        return None
    return meta
