"""Graph readers: Matrix Market, SNAP and CSV edge lists, GAP .el/.wel and EMOGI's binary CSR.

Formats (Matrix Market: Boisvert, Pozo and Remington, "The Matrix Market
Exchange Formats: Initial Design", NIST IR 5935, 1996; SNAP: the edge-list
files of snap.stanford.edu/data; GAP: sbeamer/gapbs ``src/reader.h``; EMOGI:
illinois-impact/EMOGI ``bfs.cu``):
- Matrix Market: ``%%MatrixMarket matrix coordinate <field> <symmetry>``,
  ``%`` comment lines, a size line ``rows cols entries``, then one 1-based
  ``i j [value]`` line per entry. Fields pattern, integer, real (and its alias
  double); symmetries general (a directed graph) and symmetric (one triangle
  stored; both directions are built). The vertex count is max(rows, cols).
  The parser (fast_matrix_market, through SciPy) reads an integer field's
  value up to its first non-digit and ignores fields past those the header
  names; a NUL byte is refused before it parses.
- SNAP: ``#`` comment lines, then whitespace separated ``from to`` pairs, or
  ``from to weight`` triples (every line the same). Ids need not be
  contiguous: they are renumbered 0..n-1 in ascending order of the original
  id.
- CSV (``.csv``): as SNAP, with fields separated by commas (RFC 4180 without
  quoting); a first line whose first field is not a number is a header.
- GAP .el (``u v``) and .wel (``u v w``): 0-based ids, one edge per line,
  vertex count = largest id + 1.
- EMOGI binary CSR ``PREFIX.bel.col`` (u64 offsets), ``PREFIX.bel.dst`` (u64
  neighbour ids), ``PREFIX.bel.val`` (u32 weights, optional): each file is a
  16 B header (u64 element count, u64 unused) and the elements, little
  endian. V = offsets count - 1.

Compressed text: a name ending in ``.xz`` or ``.gz`` (``web.mtx.xz``,
``roads.txt.gz``) is decompressed (:mod:`lzma`, :mod:`gzip`) to a temporary
file and read by the format of the name without the suffix; errors name the
compressed file.

Every reader removes self-loops and duplicate edges (through
:func:`~hostlink.traces.graphs.csr.from_edges`; the binary CSR is taken as
stored and only checked). Matrix Market files are parsed by
:func:`scipy.io.mmread` (fast_matrix_market), other text files in bulk by
pandas' C parser; when that fails, or a value is out of range, the error
names the file and the line (the parser's, or found by scanning the file line
by line).

A file without a single edge is an error (a traversal of it reads nothing);
so are 0-based ids (.el, .wel, .mtx sizes) that give more than 2**20 vertices
and more than 64 vertices per edge (a typo would allocate gigabytes of empty
vertices). Text must be UTF-8 (a bad byte names its line).

Weights: real values (Matrix Market real, a third SNAP/CSV column) become
u32 weights by rounding to the nearest integer; they must lie in [0, 2**32).
A positive value that rounds to 0 (below 0.5, as many of SuiteSparse's
Newman/netscience weights are) is read as 1, the smallest positive u32
weight, with a warning on stderr giving the count, so that no edge silently
gets weight 0. ``pattern_only`` reads only which entries exist and ignores
the values (a matrix with negative values as a graph for BFS).
Skew-symmetric, hermitian, complex and array files are refused.
"""
from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path
from typing import Callable

import numpy as np

from hostlink.traces.graphs.csr import CSR, GraphError, from_edges

BEL_HEADER_B = 16
_U32_MAX = 0xFFFFFFFF
PATTERN_HINT = " (--pattern-only reads the edges alone)"
# vertex ids may leave at most this many vertices per edge without edges, beyond the
# first 2**20 (kron and urand graphs have 16 edges per vertex; road networks about 2.5)
SPARSE_FACTOR = 64
MAX_DENSE_FREE = 1 << 20


# --------------------------------------------------------------- text helpers
def _parses(tok: str, kind: type) -> bool:
    """Whether ``kind(tok)`` (int or float) reads ``tok``."""
    try:
        kind(tok)
        return True
    except ValueError:
        return False


def _scan(path: Path, first_line: int, comment: str | None,
          check: Callable[[list[str], int], str | None], fallback: str,
          sep: str | None = None) -> None:
    """Walk the data lines from ``first_line`` (1-based); raise at the first bad one.

    ``check(tokens, data_row)`` returns an error message or None. When no line
    is bad, raise ``fallback`` naming only the file.
    """
    row = 0
    with open(path, "rb") as f:
        for lineno, raw in enumerate(f, start=1):
            if lineno < first_line:
                continue
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise GraphError(f"{path}:{lineno}: byte 0x{raw[exc.start]:02x} at column "
                                 f"{exc.start + 1} is not UTF-8") from None
            if "\0" in line:
                raise GraphError(f"{path}:{lineno}: binary data (NUL byte) in a text graph")
            text = line.strip()
            if not text or (comment and text.startswith(comment)):
                continue
            if comment and comment in text:
                text = text.split(comment, 1)[0].strip()
            msg = check(_split(text, sep), row)
            if msg:
                raise GraphError(f"{path}:{lineno}: {msg}")
            row += 1
    raise GraphError(f"{path}: {fallback}")


def _split(text: str, sep: str | None) -> list[str]:
    return text.split() if sep is None else [t.strip() for t in text.split(sep)]


def _columns_check(ncols: tuple[int, ...], kinds: str, min_id: int = 0) -> Callable:
    """A line check: the token count is one of ``ncols``; ``kinds[i]`` is 'i' (id),
    'w' (integer weight) or 'r' (real) for column i."""
    def check(tokens: list[str], row: int) -> str | None:
        if len(tokens) not in ncols:
            want = " or ".join(str(n) for n in ncols)
            return f"expected {want} fields, found {len(tokens)}"
        for i, tok in enumerate(tokens):
            kind = kinds[i]
            if kind == "i":
                if not _parses(tok, int):
                    return f"vertex id '{tok}' is not an integer"
                if int(tok) < min_id:
                    return f"vertex id {tok} is below {min_id}"
            elif kind == "w":
                if not _parses(tok, int):
                    return f"weight '{tok}' is not an integer"
                if not 0 <= int(tok) <= _U32_MAX:
                    return f"weight {tok} is outside [0, 2**32){PATTERN_HINT}"
            elif kind == "r":
                if not _parses(tok, float) or not np.isfinite(float(tok)):
                    return f"value '{tok}' is not a finite number"
        return None
    return check


def _read_table(path: Path, first_line: int, comment: str | None, ncols: int,
                kinds: str, min_id: int = 0, sep: str | None = None) -> np.ndarray:
    """The data lines from ``first_line`` on as a (rows, ncols) array (int64, or
    float64 when a column is real)."""
    import pandas as pd

    check = _columns_check((ncols,), kinds, min_id)
    dtype = np.float64 if "r" in kinds else np.int64

    def scan(fallback: str):
        _scan(path, first_line, comment, check, fallback, sep)

    try:
        if os.path.getsize(path) == 0:
            return np.zeros((0, ncols), dtype=dtype)
        with warnings.catch_warnings():  # pandas' casts of "nan" to int; checked below
            warnings.simplefilter("ignore", RuntimeWarning)
            df = pd.read_csv(path, sep=r"\s+" if sep is None else sep, header=None,
                             skiprows=first_line - 1, comment=comment, engine="c", dtype=dtype,
                             skip_blank_lines=True, encoding="utf-8")
    except pd.errors.EmptyDataError:
        return np.zeros((0, ncols), dtype=dtype)
    except OSError as exc:
        raise GraphError(f"{path}: cannot read ({exc.strerror or exc})") from None
    except (ValueError, pd.errors.ParserError, OverflowError) as exc:
        scan(f"cannot be parsed ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})")
    data = df.to_numpy()
    if data.ndim != 2 or data.shape[1] != ncols or df.isna().to_numpy().any():
        scan(f"expected {ncols} columns")
    if dtype == np.float64 and data.size and not np.isfinite(data).all():
        scan("a value is not a finite number")
    if "i" in kinds:
        ids = data[:, [i for i, k in enumerate(kinds) if k == "i"]]
        if ids.size and ids.min() < min_id:
            scan(f"a vertex id is below {min_id}")
        if dtype == np.float64 and ids.size and (np.any(ids != np.floor(ids))
                                                 or ids.max() >= 2.0 ** 53):
            scan("a vertex id is not an integer below 2**53")
    for i, k in enumerate(kinds):
        if k == "w" and data.shape[0] and (data[:, i].min() < 0 or data[:, i].max() > _U32_MAX):
            scan("a weight is outside [0, 2**32)")
    return data


def _first_data_line(path: Path, comment: str | None, sep: str | None,
                     start: int = 1) -> tuple[int, list[str]]:
    """(line number, fields) of the first line from ``start`` on that is neither blank
    nor a comment; (0, []) for a file without one."""
    try:
        f = open(path, "rb")
    except OSError as exc:
        raise GraphError(f"{path}: cannot read ({exc.strerror or exc})") from None
    with f:
        for lineno, raw in enumerate(f, start=1):
            try:
                text = raw.decode("utf-8").strip()
            except UnicodeDecodeError as exc:
                raise GraphError(f"{path}:{lineno}: byte 0x{raw[exc.start]:02x} at column "
                                 f"{exc.start + 1} is not UTF-8") from None
            if lineno >= start and text and not (comment and text.startswith(comment)):
                return lineno, _split(text, sep)
    return 0, []


def _check_sparsity(path: Path, num_vertices: int, num_edges: int) -> None:
    """Refuse ids so sparse that the vertex array would dwarf the edges: a typo (an
    extra digit) would otherwise allocate gigabytes for vertices without edges."""
    if num_vertices > MAX_DENSE_FREE and num_vertices > SPARSE_FACTOR * num_edges:
        raise GraphError(f"{path}: the largest vertex id gives {num_vertices:,} vertices for "
                         f"{num_edges:,} edges (more than {SPARSE_FACTOR} per edge): ids this "
                         f"sparse are not 0..n-1; a SNAP .txt edge list is renumbered")


def _no_edges(path: Path) -> GraphError:
    return GraphError(f"{path}: holds no edges (a traversal of an empty graph reads nothing)")


def _u32_weights(path: Path, first: int, comment: str | None, values: np.ndarray,
                 sep: str | None = None) -> np.ndarray:
    """Real values as u32 weights by the module's rule (rounded; positive values below
    0.5 read as 1, with a warning); a value outside [0, 2**32) names its line."""
    w = np.rint(values)
    bad = (w < 0) | (w > _U32_MAX)
    if bad.any():
        row = int(np.argmax(bad))
        _locate_row(path, first, comment, row, f"value {values[row]:g} is outside [0, 2**32) "
                    f"and cannot be a u32 weight{PATTERN_HINT}", sep)
    raised = (w == 0) & (values > 0)
    if raised.any():
        sys.stderr.write(f"hostlink: warning: {path}: {int(raised.sum()):,} of {len(w):,} "
                         "weights are positive but below 0.5; they are read as 1, not 0\n")
        w[raised] = 1
    return w.astype(np.int64)


def _locate_row(path: Path, first_line: int, comment: str | None, bad_row: int,
                message: str, sep: str | None = None) -> None:
    """Raise ``message`` at the file line that holds data row ``bad_row``."""
    def check(tokens, row):
        return message if row == bad_row else None
    _scan(path, first_line, comment, check, message, sep)


# -------------------------------------------------------------- Matrix Market
def read_mtx(path, *, symmetrize: bool | None = None, weighted: bool = True,
             name: str | None = None, pattern_only: bool = False) -> CSR:
    """A Matrix Market coordinate file as a CSR (see module doc), parsed by
    :func:`scipy.io.mmread` (fast_matrix_market).

    ``symmetrize`` defaults to the file's symmetry (symmetric files are
    always built with both directions). ``pattern_only`` ignores the values.
    """
    import scipy.io

    path = Path(path)
    name = name or path.name.split(".")[0]
    size_line = _mtx_size_line(path)
    try:
        rows, cols, nnz, fmt, field, symmetry = scipy.io.mminfo(path)
    except (ValueError, OverflowError) as exc:
        raise _mtx_error(path, exc, size_line) from None
    if fmt != "coordinate":
        raise GraphError(f"{path}:1: only 'matrix coordinate' files are graphs, not 'matrix {fmt}'")
    if field not in ("pattern", "integer", "real", "double"):
        raise GraphError(f"{path}:1: field '{field}' is not supported "
                         "(pattern, integer or real)")
    if symmetry not in ("general", "symmetric"):
        raise GraphError(f"{path}:1: symmetry '{symmetry}' is not supported (general or symmetric)")
    if nnz == 0:
        raise _no_edges(path)
    # an entry takes at least 4 bytes ("1 1\n"): refuse a count the file cannot hold
    # before the parser allocates it
    if nnz > os.path.getsize(path) // 4:
        raise GraphError(f"{path}: the size line (line {size_line}) announces {nnz:,} "
                         f"entries, more than the file's {os.path.getsize(path):,} B can hold")
    _check_sparsity(path, max(rows, cols), nnz)
    try:
        coo = scipy.io.mmread(path, spmatrix=False)
    except (ValueError, OverflowError) as exc:
        raise _mtx_error(path, exc, size_line, (rows, cols), nnz) from None
    # the file's own entries come first (a symmetric file's mirror follows them)
    i = coo.row[:nnz].astype(np.int64)
    j = coo.col[:nnz].astype(np.int64)
    weights = None
    if weighted and field != "pattern" and not pattern_only:
        w = coo.data[:nnz]
        if field == "integer":
            bad = (w < 0) | (w > _U32_MAX)
            if bad.any():
                row = int(np.argmax(bad))
                _locate_row(path, size_line + 1, "%", row,
                            f"weight {int(w[row])} is outside [0, 2**32){PATTERN_HINT}")
        else:
            if not np.isfinite(w).all():
                row = int(np.argmax(~np.isfinite(w)))
                _locate_row(path, size_line + 1, "%", row, f"value {w[row]} is not a finite "
                            f"number{PATTERN_HINT}")
            w = _u32_weights(path, size_line + 1, "%", w)
        weights = w.astype(np.int64)
    sym = symmetry == "symmetric" if symmetrize is None else (symmetrize or symmetry == "symmetric")
    return from_edges(i, j, max(rows, cols), weights, symmetrize=sym, name=name)


def _mtx_size_line(path: Path, block_B: int = 1 << 24) -> int:
    """The line number of a Matrix Market file's size line (the first line after the
    banner that is neither blank nor a ``%`` comment; the last line where there is
    none). A NUL byte anywhere is refused here: the parser is not given binary data."""
    lineno, size_line, lines_before = 0, 0, 0
    try:
        with open(path, "rb") as f:
            for lineno, raw in enumerate(f, start=1):  # the header: a few lines
                if b"\0" in raw:
                    raise GraphError(f"{path}:{lineno}: binary data (NUL byte) in a text graph")
                if lineno > 1 and raw.strip() and not raw.lstrip().startswith(b"%"):
                    size_line = lineno
                    break
            lines_before = lineno
            while block := f.read(block_B):  # the entries, in blocks
                at = block.find(b"\0")
                if at >= 0:
                    line = lines_before + block.count(b"\n", 0, at) + 1
                    raise GraphError(f"{path}:{line}: binary data (NUL byte) in a text graph")
                lines_before += block.count(b"\n")
    except OSError as exc:
        raise GraphError(f"{path}: cannot open ({exc.strerror or exc})") from None
    return size_line or max(lineno, 1)


def _mtx_error(path: Path, exc: Exception, size_line: int, shape: tuple | None = None,
               nnz: int | None = None) -> GraphError:
    """The parser's message as one line naming the file and its line: fast_matrix_market
    writes "Line N: what"; one without a line is the size line's (header read,
    ``shape`` None) or the file's (entries read)."""
    text = str(exc).strip().rstrip(".") or type(exc).__name__
    if text.startswith("Line "):
        line, _, what = text[5:].partition(": ")
        what = what[:1].lower() + what[1:]
        if line == "1":
            return GraphError(f"{path}:1: not a Matrix Market header ('%%MatrixMarket matrix "
                              f"coordinate <field> <symmetry>'): {what}")
        if "Premature EOF" in what:
            return GraphError(f"{path}:{size_line}: the size line 'rows cols entries' is missing")
        if "index out of bounds" in what and shape is not None:
            what += f" (rows 1 to {shape[0]}, columns 1 to {shape[1]})"
        quoted = _line_text(path, int(line)) if line.isdigit() else ""
        return GraphError(f"{path}:{line}: {what}" + (f" in '{quoted}'" if quoted else ""))
    if "Truncated file" in text:
        return GraphError(f"{path}: the size line (line {size_line}) announces {nnz} entries, "
                          f"the file holds fewer ({text})")
    if shape is None:
        return GraphError(f"{path}:{size_line}: size line must be three non-negative integers "
                          f"'rows cols entries' ({text})")
    return GraphError(f"{path}: cannot be parsed ({text})")


def _line_text(path: Path, lineno: int, limit: int = 60) -> str:
    """Line ``lineno`` of ``path`` (1-based), stripped and cut to ``limit`` characters."""
    with open(path, "rb") as f:
        for n, raw in enumerate(f, start=1):
            if n == lineno:
                text = raw.decode("utf-8", errors="replace").strip()
                return text if len(text) <= limit else text[:limit] + "..."
    return ""


# ----------------------------------------------------------------------- SNAP
def read_snap(path, *, symmetrize: bool = False, name: str | None = None,
              pattern_only: bool = False, sep: str | None = None) -> CSR:
    """A SNAP edge list: '#' comments, 'from to' pairs or 'from to weight' triples;
    ids renumbered densely. ``sep=","`` reads CSV (a non-numeric first line is a
    header)."""
    path = Path(path)
    _exists(path)
    lineno, fields = _first_data_line(path, "#", sep)
    if not lineno:
        raise _no_edges(path)
    first = lineno
    if sep is not None and fields and not _parses(fields[0], float):
        first = lineno + 1  # a CSV header
        lineno, fields = _first_data_line(path, "#", sep, start=first)
        if not lineno:
            raise _no_edges(path)
    ncols = 3 if len(fields) == 3 else 2
    data = _read_table(path, first, "#", ncols, "ii" + "r" * (ncols - 2), min_id=0, sep=sep)
    if not len(data):
        raise _no_edges(path)
    pairs = data[:, :2].astype(np.int64)
    ids, inverse = np.unique(pairs.reshape(-1), return_inverse=True)
    inverse = inverse.reshape(-1, 2)
    weights = None
    if ncols == 3 and not pattern_only:
        weights = _u32_weights(path, first, "#", data[:, 2], sep)
    return from_edges(inverse[:, 0], inverse[:, 1], len(ids), weights, symmetrize=symmetrize,
                      name=name or path.name.split(".")[0])


# ------------------------------------------------------------------ GAP .el/.wel
def read_el(path, *, symmetrize: bool = False, name: str | None = None) -> CSR:
    """GAP's text edge list 'u v' (0-based)."""
    path = Path(path)
    _exists(path)
    data = _read_table(path, 1, None, 2, "ii", min_id=0)
    if not len(data):
        raise _no_edges(path)
    _check_sparsity(path, int(data.max()) + 1, len(data))
    return from_edges(data[:, 0], data[:, 1], None, symmetrize=symmetrize,
                      name=name or path.name.split(".")[0])


def read_wel(path, *, symmetrize: bool = False, name: str | None = None,
             pattern_only: bool = False) -> CSR:
    """GAP's weighted text edge list 'u v w' (0-based, integer weights)."""
    path = Path(path)
    _exists(path)
    data = _read_table(path, 1, None, 3, "iir" if pattern_only else "iiw", min_id=0)
    if not len(data):
        raise _no_edges(path)
    weights = None if pattern_only else data[:, 2]
    data = data.astype(np.int64)
    _check_sparsity(path, int(data[:, :2].max()) + 1, len(data))
    return from_edges(data[:, 0], data[:, 1], None, weights, symmetrize=symmetrize,
                      name=name or path.name.split(".")[0])


def _exists(path: Path) -> None:
    if not path.is_file():
        raise GraphError(f"{path}: no such file")


# ------------------------------------------------------------ EMOGI binary CSR
def bel_prefix(path) -> Path:
    """``PREFIX`` from 'PREFIX', 'PREFIX.bel' or 'PREFIX.bel.col|dst|val'."""
    text = str(path)
    for suffix in (".bel.col", ".bel.dst", ".bel.val", ".bel"):
        if text.endswith(suffix):
            return Path(text[: -len(suffix)])
    return Path(text)


def bel_paths(prefix) -> dict[str, Path]:
    p = str(bel_prefix(prefix))
    return {"col": Path(p + ".bel.col"), "dst": Path(p + ".bel.dst"), "val": Path(p + ".bel.val")}


def _read_bel_array(path: Path, dtype, mmap: bool = False) -> np.ndarray:
    try:
        size_B = os.path.getsize(path)
    except OSError:
        raise GraphError(f"{path}: no such file") from None
    if size_B < BEL_HEADER_B:
        raise GraphError(f"{path}: {size_B} B is shorter than the 16 B header")
    header = np.fromfile(path, dtype="<u8", count=2)
    count = int(header[0])
    item = np.dtype(dtype).itemsize
    want_B = BEL_HEADER_B + count * item
    if size_B != want_B:
        raise GraphError(f"{path}: header announces {count} elements of {item} B "
                         f"({want_B} B with the header), the file has {size_B} B"
                         + (" (truncated)" if size_B < want_B else ""))
    little = np.dtype(dtype).newbyteorder("<")
    if mmap and count and little == np.dtype(dtype):
        # file-backed pages: the OS can drop and re-read them under memory pressure
        return np.memmap(path, dtype=little, mode="r", offset=BEL_HEADER_B, shape=(count,))
    return np.fromfile(path, dtype=little, count=count,
                       offset=BEL_HEADER_B).astype(dtype, copy=False)


def read_bel(prefix, *, id_bytes: int = 4, weights: bool = True, name: str | None = None,
             directed: bool = True, mmap: bool = False) -> CSR:
    """EMOGI's binary CSR ``PREFIX.bel.{col,dst,val}`` (the .val file is optional).

    With ``id_bytes=4`` the u64 neighbour ids are narrowed to u32, as the
    kernels' loader does (refused if an id does not fit). ``mmap``: map the
    arrays read-only from the files instead of reading them into memory (with
    8 B ids; a narrowed id list is a copy), so that a large graph's pages are
    the file's, which the OS may drop and read again, not the process's own.
    """
    paths = bel_paths(prefix)
    offsets = _read_bel_array(paths["col"], np.uint64, mmap)
    if len(offsets) < 1:
        raise GraphError(f"{paths['col']}: no offsets (V + 1 >= 1 entries expected)")
    dst = _read_bel_array(paths["dst"], np.uint64, mmap)
    if int(offsets[0]) != 0 or int(offsets[-1]) != len(dst):
        raise GraphError(f"{paths['col']}: offsets run from {int(offsets[0])} to "
                         f"{int(offsets[-1])}, expected 0 to the edge count {len(dst)} "
                         f"of {paths['dst']}")
    if len(offsets) > 1 and np.any(offsets[1:] < offsets[:-1]):
        bad = int(np.argmax(offsets[1:] < offsets[:-1]))
        raise GraphError(f"{paths['col']}: offsets decrease at vertex {bad} "
                         f"(element {bad + 1} after the header)")
    V = len(offsets) - 1
    if len(dst) and int(dst.max()) >= V:
        bad = int(np.argmax(dst >= V))
        raise GraphError(f"{paths['dst']}: element {bad} is vertex {int(dst[bad])}, "
                         f"but the graph has {V} vertices")
    w = None
    if weights and paths["val"].exists():
        w = _read_bel_array(paths["val"], np.uint32, mmap)
        if len(w) != len(dst):
            raise GraphError(f"{paths['val']}: {len(w)} weights for {len(dst)} edges")
    if id_bytes not in (4, 8):
        raise GraphError(f"id_bytes must be 4 or 8, not {id_bytes}")
    if id_bytes == 4:
        if V - 1 > _U32_MAX:
            raise GraphError(f"{paths['dst']}: {V} vertices do not fit 4 B ids")
        dst = dst.astype(np.uint32)
    # The format does not record symmetry: ``directed`` is the caller's word
    # (CSR.is_symmetric() checks it).
    return CSR(offsets, dst, w, name or bel_prefix(prefix).name, directed=directed)


# ------------------------------------------------------------------ dispatch
_COMPRESSED = {".xz": "lzma", ".gz": "gzip"}


def _read_compressed(path: Path, **kw) -> CSR:
    """A ``.xz`` / ``.gz`` graph file, read through a temporary decompressed copy."""
    import importlib
    import lzma
    import shutil
    import tempfile
    opener = importlib.import_module(_COMPRESSED[path.suffix.lower()]).open
    inner = path.name[:-len(path.suffix)]
    kw.setdefault("name", None)
    kw["name"] = kw["name"] or inner.split(".")[0]
    with tempfile.TemporaryDirectory(prefix="hostlink-graph-") as tmp:
        plain = Path(tmp) / inner
        try:
            with opener(path, "rb") as src, open(plain, "wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 22)
        except (OSError, EOFError, lzma.LZMAError) as exc:
            raise GraphError(f"{path}: cannot decompress ({exc})") from None
        try:
            return read_graph(plain, **kw)
        except GraphError as exc:
            raise GraphError(str(exc).replace(str(plain), str(path))) from None


def read_graph(path, *, symmetrize: bool = False, id_bytes: int = 4,
               name: str | None = None, pattern_only: bool = False) -> CSR:
    """Read any supported graph file, chosen by its name.

    ``.mtx`` Matrix Market; ``.el`` / ``.wel`` GAP; ``.bel``, ``.bel.col``
    (or a prefix whose ``.bel.col`` exists) EMOGI binary CSR; ``.txt``,
    ``.tsv``, ``.snap``, ``.edges`` SNAP; ``.csv`` CSV; any of the text
    formats compressed as ``.xz`` or ``.gz``. ``pattern_only`` reads the
    edges and drops any weights.
    """
    text = str(path)
    lower = text.lower()
    if lower.endswith(tuple(_COMPRESSED)) and Path(text).is_file():
        return _read_compressed(Path(text), symmetrize=symmetrize, id_bytes=id_bytes,
                                name=name, pattern_only=pattern_only)
    if lower.endswith((".bel", ".bel.col", ".bel.dst", ".bel.val")) or \
            Path(text + ".bel.col").exists():
        csr = read_bel(text, id_bytes=id_bytes, name=name, weights=not pattern_only)
        return csr.symmetrized().with_id_bytes(id_bytes) if symmetrize else csr
    if not Path(text).exists():
        raise GraphError(f"{text}: no such graph file (nor a binary CSR {text}.bel.col)")
    if Path(text).is_dir():
        raise GraphError(f"{text}: is a folder, not a graph file")
    if lower.endswith(".mtx"):
        csr = read_mtx(text, symmetrize=symmetrize or None, name=name, pattern_only=pattern_only)
    elif lower.endswith(".wel"):
        csr = read_wel(text, symmetrize=symmetrize, name=name, pattern_only=pattern_only)
    elif lower.endswith(".el"):
        csr = read_el(text, symmetrize=symmetrize, name=name)
    elif lower.endswith((".txt", ".tsv", ".snap", ".edges")):
        csr = read_snap(text, symmetrize=symmetrize, name=name, pattern_only=pattern_only)
    elif lower.endswith(".csv"):
        csr = read_snap(text, symmetrize=symmetrize, name=name, pattern_only=pattern_only,
                        sep=",")
    else:
        raise GraphError(f"{text}: unknown graph format (expected .mtx, .el, .wel, .bel, "
                         "a SNAP .txt/.tsv edge list or a .csv edge list, optionally "
                         ".xz or .gz)")
    return csr.with_id_bytes(id_bytes)
