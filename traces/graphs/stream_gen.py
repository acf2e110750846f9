"""GAP-style kron, rmat and urand graphs written to EMOGI's binary CSR out of core, for scales 25-31.

``stream_generate(kind, scale, degree, seed, prefix)`` writes ``PREFIX.bel.col``,
``PREFIX.bel.dst`` and (weighted) ``PREFIX.bel.val`` (the format of
:mod:`hostlink.traces.graphs.writers`) without holding the graph in memory:

1. sample: the N * degree edges are drawn block by block (2**24 a block); each
   undirected edge's canonical key ``min << 32 | max`` (self-loops dropped) is
   appended to the spill file of its bucket, the bucket being ``min``'s range
   of ``N / B`` vertices (B a power of two, about 2**24 keys a bucket);
2. build: bucket by bucket in vertex order, the keys are turned into the rows
   ``min -> max`` of the bucket, and the reverse rows ``max -> min`` go to the
   spill file of ``max``'s bucket (always a later or the same bucket, since
   max >= min); a bucket's rows are then complete: they are radix sorted,
   duplicates dropped, and the bucket's offsets, neighbour ids and weights
   appended to the output files. Each bucket's spill files are deleted once read.

The graph is the same as :func:`hostlink.traces.graphs.from_edges` of the
sampled edge list with ``symmetrize=True`` (the test suite checks it): neighbour
lists sorted, no self-loops, no duplicates, weights by
:func:`hostlink.traces.graphs.edge_weights`' hash.

Sampling (GAP ``src/generator.h``: R-MAT A = 0.57, B = 0.19, C = 0.19; urand
uniform endpoints): as :mod:`hostlink.traces.graphs.generators`, one 16-bit
uniform per bit compared with round(65536 * (A, A + B, A + B + C)). The
uniforms come from a counter-based stream, splitmix64 (Steele, Lea and Flood,
"Fast splittable pseudorandom number generators", OOPSLA 2014) at counter
``edge * draws + draw``, so any block can be drawn alone and the graph does
not depend on the block size. kron's vertex ids are shuffled by a bijection of
the scale-bit ids (xor with a key, multiplication by an odd constant, xor
shift, twice: each step is invertible modulo 2**scale) instead of GAP's
stored random permutation, which would take 4 B per vertex; rmat is kron
without that shuffle (hubs at low ids). The graph is thus
GAP's in distribution, not edge by edge, and not the in-memory generator's.

Memory: the sampling block (2**24 edges, about 24 B each: 0.4 GB) and, while
building, one bucket's rows with a radix-sort copy, the reverse rows and the
bucket's output (about 32 B per directed row: about 1.1 GB for the 2**25 rows
of a bucket). Nothing grows with the graph but the bucket count: kron scale 22
peaked at 0.96 GB resident, scale 26 (2.10 billion directed edges, 64
buckets) at 1.07 GB in 141 s of CPU, scale 27 (4.22 billion, 128 buckets) at
1.02 GB in 293 s of CPU (806 s and 2138 s of wall time on the shared 2-core
machine, which gave them 17% and 13% of a core). Disk: the
spill files (8 B per sampled edge) and the output (8 B per offset, 8 B per
directed edge, 4 B more per edge with weights) must fit together; the free
space of the output folder is checked first.

Atomic output: everything is written under temporary names in the output
folder and renamed at the end (``.bel.col`` last, the file readers look for),
so a crash or an interrupt leaves no file that looks complete; the temporary
files are removed on the way out.

Assumption: numba compiles the kernels (``cache=True``); the rest of
:mod:`hostlink.traces.graphs` needs NumPy only.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
from numba import njit

from hostlink.traces.graphs.csr import GraphError
from hostlink.traces.graphs.generators import (DEFAULT_SEED, KINDS, RMAT_A, RMAT_B, RMAT_C,
                                               WEIGHT_MAX)
from hostlink.traces.graphs.readers import BEL_HEADER_B, bel_paths

SAMPLE_BLOCK = 1 << 24
#: keys a bucket gets on average (its rows are twice as many)
BUCKET_KEYS = 1 << 24
_GAMMA = np.uint64(0x9E3779B97F4A7C15)
_T1 = round(RMAT_A * 65536)
_T2 = round((RMAT_A + RMAT_B) * 65536)
_T3 = round((RMAT_A + RMAT_B + RMAT_C) * 65536)
#: R-MAT levels one 16-bit uniform picks (see quadrant_table)
LEVELS = 3
_LEVEL_MASK = (1 << LEVELS) - 1
_M1 = np.uint64(0xD6E8FEB86659FD93)
_M2 = np.uint64(0x9E3779B97F4A7C15 | 1)


# ------------------------------------------------------------------ sampling
@njit(cache=True, inline="always")
def _mix(z):
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@njit(cache=True, inline="always")
def _shuffle(x, mask, k1, k2, shift):
    x = ((x ^ k1) * _M1) & mask
    x ^= x >> shift
    x = ((x ^ k2) * _M2) & mask
    x ^= x >> shift
    return x


@njit(cache=True)
def _sample(kron, shuffle, scale, salt, k1, k2, start, m, lo, hi, table):
    """Endpoints (min, max) of edges start .. start + m; ``lo == hi`` marks a self-loop."""
    mask = np.uint64((1 << scale) - 1)
    shift = np.uint64(max(1, scale // 2))
    draws = -(-scale // (4 * LEVELS)) if kron else 1
    for i in range(m):
        ctr = np.uint64(start + i) * np.uint64(draws)
        if kron:
            s = np.uint64(0)
            d = np.uint64(0)
            bit = np.uint64(0)
            for j in range(draws):
                r = _mix(salt + (ctr + np.uint64(j + 1)) * _GAMMA)
                for _ in range(4):
                    q = np.uint64(table[r & np.uint64(0xFFFF)])
                    r >>= np.uint64(16)
                    s |= (q >> np.uint64(LEVELS)) << bit
                    d |= (q & np.uint64(_LEVEL_MASK)) << bit
                    bit += np.uint64(LEVELS)
            s &= mask
            d &= mask
            if shuffle:
                s = _shuffle(s, mask, k1, k2, shift)
                d = _shuffle(d, mask, k1, k2, shift)
        else:
            r = _mix(salt + (ctr + np.uint64(1)) * _GAMMA)
            s = r & mask
            d = (r >> np.uint64(32)) & mask
        lo[i] = min(s, d)
        hi[i] = max(s, d)


def quadrant_table(levels: int = LEVELS) -> np.ndarray:
    """u8[65536]: the ``levels`` R-MAT quadrant picks a 16-bit uniform stands for, as
    source bits << levels | destination bits (bit k: level k). The 4**levels outcomes
    take ranges of the uniform in proportion to their probabilities (products of
    A, B, C, D), rounded to 2**-16."""
    p1 = np.array([RMAT_A, RMAT_B, RMAT_C, 1.0 - RMAT_A - RMAT_B - RMAT_C])
    probs = np.ones(1)
    for _ in range(levels):       # outcome index o = sum q_k * 4**k (q_k: level k's quadrant)
        probs = np.outer(p1, probs).ravel()
    cuts = np.round(np.cumsum(probs) * 65536).astype(np.int64)
    outcome = np.searchsorted(cuts, np.arange(65536), side="right")
    code = np.zeros(len(probs), dtype=np.uint8)
    for o in range(len(probs)):
        for k in range(levels):
            q = (o >> (2 * k)) & 3      # 0 = A (0, 0), 1 = B (0, 1), 2 = C (1, 0), 3 = D (1, 1)
            code[o] |= ((q >> 1) << (levels + k)) | ((q & 1) << k)
    return code[np.minimum(outcome, len(probs) - 1)]


@njit(cache=True)
def _partition(lo, hi, bshift, nb):
    """Keys ``lo << 32 | hi`` of the non-loop edges grouped by bucket ``lo >> bshift``."""
    counts = np.zeros(nb + 1, dtype=np.int64)
    for i in range(len(lo)):
        if lo[i] != hi[i]:
            counts[np.int64(lo[i] >> bshift) + 1] += 1
    for b in range(nb):
        counts[b + 1] += counts[b]
    out = np.empty(counts[nb], dtype=np.uint64)
    pos = counts[:nb].copy()
    for i in range(len(lo)):
        if lo[i] != hi[i]:
            b = np.int64(lo[i] >> bshift)
            out[pos[b]] = (lo[i] << np.uint64(32)) | hi[i]
            pos[b] += 1
    return out, counts


def _salts(seed: int) -> tuple[np.uint64, np.uint64, np.uint64]:
    z = np.array([seed & 0xFFFFFFFFFFFFFFFF, 1, 2], dtype=np.uint64)
    with np.errstate(over="ignore"):
        z = z * _GAMMA + _GAMMA
    out = [int(v) for v in _mix_np(z)]
    return np.uint64(out[0]), np.uint64(out[1]), np.uint64(out[2])


def _mix_np(z: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def sample_edges(kind: str, scale: int, degree: int = 16, seed: int = DEFAULT_SEED,
                 start: int = 0, count: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Sampled edges ``start .. start + count`` (default all N * degree) as (min, max)
    u64 arrays, self-loops included: the edge list :func:`stream_generate` builds from."""
    _check(kind, scale, degree)
    total = (1 << scale) * degree
    count = total - start if count is None else count
    salt, k1, k2 = _salts(int(seed))
    lo = np.empty(count, dtype=np.uint64)
    hi = np.empty(count, dtype=np.uint64)
    _sample(kind != "urand", kind == "kron", scale, salt, k1, k2, start, count, lo, hi,
            quadrant_table())
    return lo, hi


# ------------------------------------------------------------------ building
@njit(cache=True)
def _rows(keys, base, bshift, b, nb, scale):
    """Local rows ``(min - base) << scale | max`` of a bucket's keys, and the reverse
    keys ``max << 32 | min`` grouped by ``max``'s bucket (those of bucket ``b`` are
    turned into local rows at once)."""
    low = np.uint64(0xFFFFFFFF)
    s32 = np.uint64(32)
    sc = np.uint64(scale)
    counts = np.zeros(nb + 1, dtype=np.int64)
    own = 0
    for i in range(len(keys)):
        c = np.int64((keys[i] & low) >> bshift)
        if c == b:
            own += 1
        else:
            counts[c + 1] += 1
    for c in range(nb):
        counts[c + 1] += counts[c]
    rows = np.empty(len(keys) + own, dtype=np.uint64)
    rev = np.empty(counts[nb], dtype=np.uint64)
    pos = counts[:nb].copy()
    r = 0
    for i in range(len(keys)):
        lo = keys[i] >> s32
        hi = keys[i] & low
        rows[r] = ((lo - base) << sc) | hi
        r += 1
        c = np.int64(hi >> bshift)
        if c == b:
            rows[r] = ((hi - base) << sc) | lo
            r += 1
        else:
            rev[pos[c]] = (hi << s32) | lo
            pos[c] += 1
    return rows, rev, counts


@njit(cache=True)
def _local(keys, base, scale, out, at):
    """Reverse keys ``max << 32 | min`` as local rows, written to ``out[at:]``."""
    low = np.uint64(0xFFFFFFFF)
    sc = np.uint64(scale)
    for i in range(len(keys)):
        out[at + i] = (((keys[i] >> np.uint64(32)) - base) << sc) | (keys[i] & low)


@njit(cache=True)
def _radix_sort(a, tmp, bits):
    """Sort u64 ``a`` whose values are below 2**bits (LSD radix, digits of at most 12
    bits); returns the sorted array (``a`` or ``tmp``)."""
    n = len(a)
    passes = max(1, -(-bits // 12))
    width = -(-bits // passes)
    radix = 1 << width
    digit = np.uint64(radix - 1)
    src, dst = a, tmp
    cnt = np.zeros(radix + 1, dtype=np.int64)
    for p in range(passes):
        shift = np.uint64(width * p)
        cnt[:] = 0
        for i in range(n):
            cnt[np.int64((src[i] >> shift) & digit) + 1] += 1
        for d in range(radix):
            cnt[d + 1] += cnt[d]
        for i in range(n):
            d = np.int64((src[i] >> shift) & digit)
            dst[cnt[d]] = src[i]
            cnt[d] += 1
        src, dst = dst, src
    return src


@njit(cache=True)
def _emit(rows, base, scale, salt_w, weighted, dst, wts, deg):
    """Sorted rows ``(v - base) << scale | u`` without their repeats as neighbour ids
    into ``dst`` (weights into ``wts``), degrees into ``deg``; returns the count kept."""
    mask = np.uint64((1 << scale) - 1)
    sc = np.uint64(scale)
    s32 = np.uint64(32)
    n = 0
    for i in range(len(rows)):
        if i and rows[i] == rows[i - 1]:
            continue
        v = rows[i] >> sc
        u = rows[i] & mask
        deg[v] += 1
        dst[n] = u
        if weighted:   # generators.edge_weights: splitmix64((min << 32 | max) ^ salt)
            g = v + base
            z = (((min(g, u) << s32) | max(g, u)) ^ salt_w) + np.uint64(0x9E3779B97F4A7C15)
            z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
            z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
            z = z ^ (z >> np.uint64(31))
            wts[n] = np.uint32(z % np.uint64(WEIGHT_MAX) + np.uint64(1))
        n += 1
    return n


# ------------------------------------------------------------------ plumbing
def _check(kind: str, scale: int, degree: int) -> None:
    if kind not in KINDS:
        raise GraphError(f"unknown generator '{kind}' (expected {', '.join(KINDS)})")
    if not isinstance(scale, (int, np.integer)) or not 1 <= scale <= 31:
        raise GraphError(f"scale must be an integer in [1, 31], not {scale!r}")
    if not isinstance(degree, (int, np.integer)) or degree < 1:
        raise GraphError(f"degree must be a positive integer, not {degree!r}")


def buckets_for(scale: int, degree: int) -> int:
    """Buckets (a power of two, at most one a vertex) of about BUCKET_KEYS keys each."""
    keys = (1 << scale) * degree
    b = 1
    while b * BUCKET_KEYS < keys and b < (1 << scale):
        b *= 2
    return b


def disk_need_B(scale: int, degree: int, weighted: bool) -> int:
    """Bytes on disk at the peak: spill (8 B a sampled edge) and output at their largest."""
    m = (1 << scale) * degree
    out = BEL_HEADER_B * 3 + ((1 << scale) + 1) * 8 + 2 * m * (8 + (4 if weighted else 0))
    return 8 * m + out


def _append(path: Path, arr: np.ndarray) -> None:
    if len(arr):
        with open(path, "ab") as f:
            arr.tofile(f)


def _header(f, count: int) -> None:
    f.seek(0)
    np.array([count, 0], dtype="<u8").tofile(f)


def stream_generate(kind: str, scale: int, degree: int = 16, seed: int = DEFAULT_SEED, *,
                    prefix, weighted: bool = True, progress=None) -> dict:
    """Write the graph to ``prefix``'s binary CSR files out of core (module doc).

    ``progress(done, total)``: called after each sampled block and built bucket.
    Returns the vertex and edge counts, the degree extremes and the files."""
    _check(kind, scale, degree)
    seed = int(seed)
    paths = bel_paths(prefix)
    folder = paths["col"].parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise GraphError(f"{folder}: cannot create ({exc.strerror})") from None
    need = disk_need_B(scale, degree, weighted)
    free = shutil.disk_usage(folder).free
    if free < need:
        raise GraphError(f"{folder}: {free / 1e9:.1f} GB free, {kind}{scale} degree {degree} "
                         f"needs {need / 1e9:.1f} GB while it is built")
    N = 1 << scale
    M = N * degree
    nb = buckets_for(scale, degree)
    span = N // nb
    bshift = np.uint64(scale - (nb.bit_length() - 1))
    salt, k1, k2 = _salts(seed)
    salt_w = np.uint64(int(_mix_np(np.array([seed & 0xFFFFFFFFFFFFFFFF], dtype=np.uint64)
                                   + _GAMMA)[0]))
    blocks = -(-M // SAMPLE_BLOCK)
    total_steps = blocks + nb
    work = Path(tempfile.mkdtemp(prefix=f".{paths['col'].name}.", dir=folder))
    tmp = {k: work / p.name for k, p in paths.items()}
    fwd = [work / f"f{b}" for b in range(nb)]
    rev = [work / f"r{b}" for b in range(nb)]
    try:
        table = quadrant_table()
        lo = np.empty(min(M, SAMPLE_BLOCK), dtype=np.uint64)
        hi = np.empty_like(lo)
        handles = [open(p, "ab") for p in fwd]
        try:
            for k in range(blocks):
                start = k * SAMPLE_BLOCK
                m = min(SAMPLE_BLOCK, M - start)
                _sample(kind != "urand", kind == "kron", scale, salt, k1, k2, start, m, lo[:m],
                        hi[:m], table)
                keys, counts = _partition(lo[:m], hi[:m], bshift, nb)
                for b in range(nb):
                    if counts[b + 1] > counts[b]:
                        keys[counts[b]:counts[b + 1]].tofile(handles[b])
                if progress:
                    progress(k + 1, total_steps)
        finally:
            for h in handles:
                h.close()
        del lo, hi
        E = 0
        deg_max = 0
        deg_min = None
        zero = 0
        with open(tmp["col"], "wb") as fc, open(tmp["dst"], "wb") as fd, \
                (open(tmp["val"], "wb") if weighted else open(os.devnull, "wb")) as fv:
            for f in (fc, fd, fv):
                _header(f, 0)
            np.zeros(1, dtype="<u8").tofile(fc)
            bits = scale + (span.bit_length() - 1)
            for b in range(nb):
                base = np.uint64(b * span)
                keys = np.fromfile(fwd[b], dtype=np.uint64)
                fwd[b].unlink()
                own, back, counts = _rows(keys, base, bshift, b, nb, scale)
                del keys
                for c in range(b + 1, nb):
                    if counts[c + 1] > counts[c]:
                        _append(rev[c], back[counts[c]:counts[c + 1]])
                del back
                earlier = (np.fromfile(rev[b], dtype=np.uint64) if rev[b].exists()
                           else np.empty(0, dtype=np.uint64))
                rev[b].unlink(missing_ok=True)
                rows = np.empty(len(own) + len(earlier), dtype=np.uint64)
                rows[:len(own)] = own
                _local(earlier, base, scale, rows, len(own))
                del own, earlier
                rows = _radix_sort(rows, np.empty_like(rows), bits)
                dst = np.empty(len(rows), dtype=np.uint64)
                wts = np.empty(len(rows) if weighted else 0, dtype=np.uint32)
                deg = np.zeros(span, dtype=np.int64)
                n = _emit(rows, base, scale, salt_w, weighted, dst, wts, deg)
                del rows
                dst[:n].astype("<u8", copy=False).tofile(fd)
                if weighted:
                    wts[:n].astype("<u4", copy=False).tofile(fv)
                (np.cumsum(deg) + E).astype("<u8").tofile(fc)
                E += n
                deg_max = max(deg_max, int(deg.max()))
                deg_min = int(deg.min()) if deg_min is None else min(deg_min, int(deg.min()))
                zero += int(np.count_nonzero(deg == 0))
                del dst, wts, deg
                if progress:
                    progress(blocks + b + 1, total_steps)
            _header(fc, N + 1)
            _header(fd, E)
            if weighted:
                _header(fv, E)
        for key in ("dst", "val", "col"):   # .bel.col last: readers look for it
            if key == "val" and not weighted:
                paths["val"].unlink(missing_ok=True)
                continue
            os.replace(tmp[key], paths[key])
    except OSError as exc:
        raise GraphError(f"{exc.filename or folder}: cannot write ({exc.strerror})") from None
    finally:
        shutil.rmtree(work, ignore_errors=True)
    files = [str(paths[k]) for k in ("col", "dst", "val") if k != "val" or weighted]
    return {"name": Path(str(prefix)).name, "vertices": N, "edges": E, "directed": False,
            "weighted": weighted, "degree_min": deg_min, "degree_mean": E / N,
            "degree_max": deg_max, "zero_degree_vertices": zero, "buckets": nb,
            "files": files}
