"""A run's raw program output, loose or packed.

``hostlink validate run`` writes each job's JSON lines to ``raw/<job>.jsonl``
(``.jsonl.failed`` for a job that did not finish). A committed run keeps them
packed in one file, ``raw.tar.xz`` (a POSIX tar of ``raw/`` compressed with
xz), so that a run is one file of raw output instead of dozens. Readers go
through this module and see the same files either way; where both forms exist,
a loose file wins over the packed copy of the same name.

Self-traces (``traces/<case>/``) pack alike into ``traces.tar``, unpacked on
demand into a temporary cache (:func:`traces_dir`).

The pack is deterministic (sorted members, zero times and owners), so packing
the same files twice gives the same bytes. Reference: POSIX.1-2001 pax/ustar
archive format, as written by Python's :mod:`tarfile`.
"""
from __future__ import annotations

import fnmatch
import functools
import hashlib
import io
import lzma
import shutil
import tarfile
import tempfile
from pathlib import Path

from hostlink.model.errors import HostlinkError
from hostlink.model.textfile import decode_utf8
from hostlink.validation.results_io import ProgramOutput, ResultsError, parse_lines

RAW = "raw"
PACKED = "raw.tar.xz"


@functools.lru_cache(maxsize=8)
def _unpack(path: str, mtime_ns: int, size_B: int) -> dict[str, bytes]:
    """Every file of one pack (a run's raw output is a few MB at most)."""
    try:
        with tarfile.open(path, "r:xz") as tar:
            return {Path(m.name).name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}
    except (tarfile.TarError, OSError, EOFError, lzma.LZMAError) as exc:
        raise ResultsError(f"{path}: not a readable tar.xz of raw output ({exc})") from None


def _packed_members(run_dir: Path) -> dict[str, bytes]:
    path = run_dir / PACKED
    if not path.is_file():
        return {}
    st = path.stat()
    return _unpack(str(path), st.st_mtime_ns, st.st_size)


def raw_names(run_dir: str | Path, pattern: str = "*.jsonl") -> list[str]:
    """Names of the raw files matching ``pattern``, loose and packed, sorted."""
    run_dir = Path(run_dir)
    names = set(_packed_members(run_dir))
    loose = run_dir / RAW
    if loose.is_dir():
        names |= {p.name for p in loose.iterdir() if p.is_file()}
    return sorted(n for n in names if fnmatch.fnmatchcase(n, pattern))


def has_raw(run_dir: str | Path, name: str) -> bool:
    """Whether ``raw/<name>`` exists, loose or packed."""
    run_dir = Path(run_dir)
    return (run_dir / RAW / name).is_file() or name in _packed_members(run_dir)


def read_raw_bytes(run_dir: str | Path, name: str) -> tuple[str, bytes]:
    """(where, bytes) of ``raw/<name>``: ``where`` names the file for messages."""
    run_dir = Path(run_dir)
    loose = run_dir / RAW / name
    if loose.is_file():
        try:
            return str(loose), loose.read_bytes()
        except OSError as exc:
            raise ResultsError(f"{loose}: cannot read ({exc.strerror or exc})") from None
    packed = _packed_members(run_dir)
    if name in packed:
        return f"{run_dir / PACKED}:{RAW}/{name}", packed[name]
    raise ResultsError(f"{run_dir}: no raw output {name} (neither {RAW}/{name} nor in {PACKED})")


def read_raw_output(run_dir: str | Path, name: str) -> ProgramOutput:
    """One raw file parsed as program output (see :func:`results_io.parse_lines`)."""
    where, data = read_raw_bytes(run_dir, name)
    return parse_lines(decode_utf8(data, where, ResultsError).split("\n"), source=where)


def iter_raw_outputs(run_dir: str | Path, pattern: str = "*.jsonl"):
    """(name, parsed output) of every raw file matching ``pattern``, sorted by name."""
    for name in raw_names(run_dir, pattern):
        yield name, read_raw_output(run_dir, name)


def pack_raw(run_dir: str | Path) -> Path:
    """Pack ``run_dir/raw/`` (with any files already packed) into ``raw.tar.xz`` and
    remove the loose folder. Every file is read back from the pack and compared
    before anything is removed."""
    run_dir = Path(run_dir)
    names = raw_names(run_dir, "*")
    if not names:
        raise HostlinkError(f"{run_dir}: no raw output to pack")
    data = {n: read_raw_bytes(run_dir, n)[1] for n in names}
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:xz", format=tarfile.PAX_FORMAT, preset=9) as tar:
        for n in names:
            info = tarfile.TarInfo(f"{RAW}/{n}")
            info.size, info.mtime, info.mode = len(data[n]), 0, 0o644
            tar.addfile(info, io.BytesIO(data[n]))
    out = run_dir / PACKED
    tmp = out.with_suffix(".tmp")
    tmp.write_bytes(buf.getvalue())
    tmp.replace(out)
    if _packed_members(run_dir) != data:
        raise HostlinkError(f"{out}: the pack differs from {RAW}/ after packing; {RAW}/ kept")
    if (run_dir / RAW).is_dir():
        shutil.rmtree(run_dir / RAW)
    return out


TRACES = "traces"
TRACES_PACKED = "traces.tar"


def traces_dir(run_dir: str | Path) -> Path:
    """The folder of a run's self-traces (``traces/<case>/kernelslist.g`` and its
    kernels): the loose folder where there is one, else ``traces.tar`` unpacked once
    into a cache under the system's temporary folder (keyed by the pack's path, size
    and time, so a new pack is unpacked anew)."""
    run_dir = Path(run_dir)
    loose = run_dir / TRACES
    pack = run_dir / TRACES_PACKED
    if loose.is_dir() or not pack.is_file():
        return loose
    st = pack.stat()
    key = hashlib.sha1(f"{pack.resolve()}:{st.st_size}:{st.st_mtime_ns}".encode()).hexdigest()[:16]
    cache = Path(tempfile.gettempdir()) / "hostlink-traces" / key
    if not cache.is_dir():
        cache.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=cache.parent, prefix=f".{key}-"))
        try:
            with tarfile.open(pack, "r:") as tar:
                tar.extractall(tmp, filter="data")
        except (tarfile.TarError, OSError, EOFError) as exc:
            shutil.rmtree(tmp, ignore_errors=True)
            raise ResultsError(f"{pack}: not a readable tar of traces ({exc})") from None
        try:
            tmp.replace(cache)
        except OSError:  # unpacked at the same time by another process: keep theirs
            shutil.rmtree(tmp, ignore_errors=True)
    return cache / TRACES


def _tree_bytes(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root.parent).as_posix(): p.read_bytes()
            for p in sorted(root.rglob("*")) if p.is_file()}


def pack_traces(run_dir: str | Path) -> Path:
    """Pack ``run_dir/traces/`` into ``traces.tar`` (the kernels are xz already, so
    the tar is not compressed again) and remove the loose folder, after reading every
    file back from the pack and comparing it."""
    run_dir = Path(run_dir)
    loose = run_dir / TRACES
    if not loose.is_dir():
        raise HostlinkError(f"{run_dir}: no {TRACES}/ folder to pack")
    data = _tree_bytes(loose)
    out = run_dir / TRACES_PACKED
    tmp = out.with_suffix(".tmp")
    with tarfile.open(tmp, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, blob in data.items():
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(blob), 0, 0o644
            tar.addfile(info, io.BytesIO(blob))
    tmp.replace(out)
    with tarfile.open(out, "r:") as tar:
        back = {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}
    if back != data:
        raise HostlinkError(f"{out}: the pack differs from {TRACES}/ after packing; {TRACES}/ kept")
    shutil.rmtree(loose)
    return out
