"""Synthetic graphs in the style of the GAP benchmark suite: kron (R-MAT), rmat and urand.

What is generated (sbeamer/gapbs ``src/generator.h``; Beamer, Asanović and
Patterson, "The GAP Benchmark Suite", arXiv:1508.03619):
- N = 2**scale vertices and N * degree sampled edges;
- kron: each edge picks one quadrant per bit of the vertex id with the R-MAT
  probabilities A = 0.57, B = 0.19, C = 0.19, D = 0.05; vertex ids are then
  shuffled by a random permutation (so hubs are not all near id 0);
- rmat: kron's edges without the permutation, so the hubs keep the low ids
  that R-MAT's recursion gives them (quadrant A, the top-left, is the most
  likely at every bit: vertex 0 has the largest expected degree), as social
  graphs numbered by join order do (Chakrabarti, Zhan and Faloutsos, "R-MAT:
  A Recursive Model for Graph Mining", SDM 2004);
- urand: both endpoints uniform in [0, N); a high ``degree`` (128 and up)
  gives a dense random graph (the EMOGI paper's ML graph has average degree
  222: Min et al., "EMOGI: Efficient Memory-access for Out-of-memory Graph
  Traversal in GPUs", VLDB 2020);
- the edge list is symmetrised; self-loops and duplicate edges are removed;
- weights are integers in [1, 255], the same for both directions of an edge;
- the default seed is GAP's, 27491095.

Deterministic by seed, but NOT bit-identical to GAP's C++ generator (GAP uses
std::mt19937 and its own block scheme; this module uses NumPy's PCG64):
graphs agree with GAP's in distribution, not edge by edge.

Assumptions (choices of this module, not of GAP):
- the sampler draws one 16-bit uniform integer per bit and compares it with
  the thresholds round(65536 * (A, A + B, A + B + C)), so the quadrant
  probabilities are those of GAP to within 2**-16;
- edges are sampled in blocks of 2**20, each from its own PCG64 stream seeded
  by ``SeedSequence(seed, spawn_key=(0, block))`` (the permutation uses
  ``spawn_key=(1,)``), so the output does not depend on memory limits;
- the weight of edge {u, v} is ``1 + splitmix64((min << 32 | max) ^
  splitmix64(seed)) mod 255``: a hash, uniform in [1, 255] to within 2**-56,
  that needs no weight array to be carried through the sorts (GAP draws the
  weights from its RNG instead).

Memory and time: the sampled edges are held once as packed u64 keys (8 B
per sampled edge), sorted and compacted in place; one compiled pass over
them then writes each key into both its ends' lists, so no second key array
exists.
Measured on the 2-core CI-size machine (tests/bench/results/emulator.json):
kron scale 22 degree 16 (128.3 M directed edges) peaks at 1.7 GiB and takes
about 16 s on an idle machine; scale 24 (520.8 M edges, 4.0 GiB of offsets,
edges and weights) peaks at 4.85 GiB.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from hostlink.traces.graphs.csr import CSR, GraphError, offsets_from_sorted_keys

DEFAULT_SEED = 27491095
RMAT_A, RMAT_B, RMAT_C = 0.57, 0.19, 0.19
WEIGHT_MAX = 255
BLOCK_EDGES = 1 << 20
#: the generators of :func:`generate`
KINDS = ("kron", "rmat", "urand")

_LOW32 = np.uint64(0xFFFFFFFF)
_S32 = np.uint64(32)
_SENTINEL = np.uint64(0xFFFFFFFFFFFFFFFF)
_WORK_BLOCK = 1 << 23


def _rng(seed: int, *key: int) -> np.random.Generator:
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed, spawn_key=key)))


def splitmix64(x: np.ndarray) -> np.ndarray:
    """The splitmix64 finaliser on u64 values (wrapping arithmetic)."""
    with np.errstate(over="ignore"):
        z = np.asarray(x, dtype=np.uint64) + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


@njit(cache=True)
def _weights_into(offsets, dst, salt, out):
    """:func:`edge_weights` edge by edge: ``1 + splitmix64((min << 32 | max) ^ salt)
    mod WEIGHT_MAX`` (u64 arithmetic wraps, as NumPy's)."""
    for v in range(offsets.shape[0] - 1):
        g = np.uint64(v)
        for e in range(offsets[v], offsets[v + 1]):
            u = np.uint64(dst[e])
            z = (((min(g, u) << _S32) | max(g, u)) ^ salt) + np.uint64(0x9E3779B97F4A7C15)
            z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
            z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
            z = z ^ (z >> np.uint64(31))
            out[e] = np.uint32(z % np.uint64(WEIGHT_MAX) + np.uint64(1))


def edge_weights(offsets: np.ndarray, dst: np.ndarray, seed: int = DEFAULT_SEED) -> np.ndarray:
    """Weights in [1, 255] of every CSR edge, symmetric in its endpoints (see module doc)."""
    offsets = np.asarray(offsets, dtype=np.int64)
    out = np.empty(len(dst), dtype=np.uint32)
    salt = splitmix64(np.uint64(seed & 0xFFFFFFFFFFFFFFFF))
    _weights_into(offsets, np.asarray(dst), np.uint64(salt), out)
    return out


def _check(scale: int, degree: int) -> None:
    if not isinstance(scale, (int, np.integer)) or not 1 <= scale <= 31:
        raise GraphError(f"scale must be an integer in [1, 31], not {scale!r}")
    if not isinstance(degree, (int, np.integer)) or degree < 1:
        raise GraphError(f"degree must be a positive integer, not {degree!r}")


def _rmat_block(rng: np.random.Generator, m: int, scale: int) -> tuple[np.ndarray, np.ndarray]:
    t1 = np.uint16(round(RMAT_A * 65536))
    t2 = np.uint16(round((RMAT_A + RMAT_B) * 65536))
    t3 = np.uint16(round((RMAT_A + RMAT_B + RMAT_C) * 65536))
    src = np.zeros(m, dtype=np.uint32)
    dst = np.zeros(m, dtype=np.uint32)
    for bit in range(scale):
        u = rng.integers(0, 1 << 16, m, dtype=np.uint16)
        q = (u >= t1).astype(np.uint8)
        q += u >= t2
        q += u >= t3
        # quadrant 0 = A (0, 0), 1 = B (0, 1), 2 = C (1, 0), 3 = D (1, 1)
        src |= (q >> 1).astype(np.uint32) << np.uint32(bit)
        dst |= (q & 1).astype(np.uint32) << np.uint32(bit)
    return src, dst


def _sample_keys(kind: str, scale: int, degree: int, seed: int) -> np.ndarray:
    """Canonical undirected keys ``min << 32 | max`` of the sampled edges, sorted, unique."""
    N = 1 << scale
    M = N * degree
    keys = np.empty(M, dtype=np.uint64)
    perm = _rng(seed, 1).permutation(N).astype(np.uint32) if kind == "kron" else None
    rmat = kind in ("kron", "rmat")
    for block, start in enumerate(range(0, M, BLOCK_EDGES)):
        m = min(BLOCK_EDGES, M - start)
        rng = _rng(seed, 0, block)
        if rmat:
            s, d = _rmat_block(rng, m, scale)
            if perm is not None:
                s, d = perm[s], perm[d]
        else:
            s = rng.integers(0, N, m, dtype=np.uint32)
            d = rng.integers(0, N, m, dtype=np.uint32)
        lo = np.minimum(s, d).astype(np.uint64)
        hi = np.maximum(s, d).astype(np.uint64)
        k = (lo << _S32) | hi
        k[lo == hi] = _SENTINEL
        keys[start:start + m] = k
    del perm
    keys.sort()
    # unique, without the self-loop sentinels, compacted in place block by block
    kept = 0
    previous = None  # last key of the previous block, read before it is overwritten
    for a in range(0, M, _WORK_BLOCK):
        blk = keys[a:a + _WORK_BLOCK]
        first = np.empty(len(blk), dtype=bool)
        first[0] = previous is None or blk[0] != previous
        np.not_equal(blk[1:], blk[:-1], out=first[1:])
        first &= blk != _SENTINEL
        previous = blk[-1].copy()
        sel = blk[first]
        keys[kept:kept + len(sel)] = sel
        kept += len(sel)
    return keys[:kept]


@njit(cache=True)
def _fill_lists(keys, offsets, lower_deg, dst):
    """Write each canonical key ``min << 32 | max`` of ``keys`` (sorted) into both its
    ends' lists in ``dst``: v's list holds its lower neighbours (``lower_deg[v]`` of
    them) then its higher ones. The keys come sorted by ``min``, then ``max``, so each
    part fills in ascending order."""
    n = offsets.shape[0] - 1
    lower_at = np.empty(n, dtype=np.int64)
    higher_at = np.empty(n, dtype=np.int64)
    for v in range(n):
        lower_at[v] = offsets[v]
        higher_at[v] = offsets[v] + lower_deg[v]
    for k in keys:
        lo = np.int64(k >> _S32)
        hi = np.int64(k & _LOW32)
        dst[higher_at[lo]] = hi
        higher_at[lo] += 1
        dst[lower_at[hi]] = lo
        lower_at[hi] += 1


def _csr_from_undirected(holder: list, N: int) -> tuple[np.ndarray, np.ndarray]:
    """Offsets (u64) and dst (u32) of the symmetric graph whose canonical keys
    ``min << 32 | max`` (sorted, unique) are ``holder[0]``.

    The neighbour list of v is the ``min`` ends of the keys whose ``max`` is v
    (all below v), then the ``max`` ends of the keys whose ``min`` is v (all
    above v), each ascending: one compiled pass over the keys (taken out of
    ``holder`` so that they are freed here) writes every key into both lists.
    """
    keys = holder.pop()
    U = len(keys)
    higher_deg = np.diff(offsets_from_sorted_keys(keys, N).astype(np.int64))
    lower_deg = np.zeros(N, dtype=np.int64)
    for a in range(0, U, _WORK_BLOCK):
        lower_deg += np.bincount((keys[a:a + _WORK_BLOCK] & _LOW32).astype(np.int64),
                                 minlength=N)
    offsets = np.zeros(N + 1, dtype=np.uint64)
    np.cumsum(higher_deg + lower_deg, out=offsets[1:])
    del higher_deg
    dst = np.empty(2 * U, dtype=np.uint32)
    _fill_lists(keys, offsets.astype(np.int64), lower_deg, dst)
    return offsets, dst


def generate(kind: str, scale: int, degree: int = 16, seed: int = DEFAULT_SEED, *,
             weighted: bool = True, id_bytes: int = 4, name: str | None = None) -> CSR:
    """A symmetric GAP-style graph: ``kind`` is 'kron', 'rmat' or 'urand' (module doc)."""
    if kind not in KINDS:
        raise GraphError(f"unknown generator '{kind}' (expected {', '.join(KINDS)})")
    _check(scale, degree)
    if id_bytes not in (4, 8):
        raise GraphError(f"id_bytes must be 4 or 8, not {id_bytes}")
    offsets, dst = _csr_from_undirected([_sample_keys(kind, scale, degree, int(seed))], 1 << scale)
    weights = edge_weights(offsets, dst, int(seed)) if weighted else None
    csr = CSR(offsets, dst, weights, name or f"{kind}{scale}_d{degree}", directed=False)
    return csr.with_id_bytes(id_bytes)


def kron(scale: int, degree: int = 16, seed: int = DEFAULT_SEED, **kw) -> CSR:
    """GAP kron: R-MAT (A=.57, B=.19, C=.19), 2**scale vertices, ids shuffled, symmetric."""
    return generate("kron", scale, degree, seed, **kw)


def rmat(scale: int, degree: int = 16, seed: int = DEFAULT_SEED, **kw) -> CSR:
    """R-MAT (A=.57, B=.19, C=.19) as kron, ids not shuffled: hubs at low ids."""
    return generate("rmat", scale, degree, seed, **kw)


def urand(scale: int, degree: int = 16, seed: int = DEFAULT_SEED, **kw) -> CSR:
    """GAP urand: uniform random endpoints, 2**scale vertices, symmetric."""
    return generate("urand", scale, degree, seed, **kw)
