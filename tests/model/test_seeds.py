"""The seed's figures reproduced: EMOGI (emogi_vldb2020 §3.3, §5.3-§5.5) on the
v100-pcie3 system (and a100-pcie3/-pcie4 for §5.5), with the golden values of
tests/golden/seeds_emogi.csv.

How the seed's runs are scaled down, and why the behaviour survives:
- Graphs: GAP kron and urand as the seed's GK and GU (same generators, degree
  16, 8 B neighbour ids as the seed's CSR), at scale 18 instead of 27 (2^18
  vertices, about 7.6 and 8.4 million list entries, 61 and 67 MB, instead of
  4.2 billion and 31.5 GB). What the zero-copy traffic depends on is
  per-list: the list-length distribution and where lists start relative to
  128 B lines. For urand the degrees are binomial around 32 at any scale; for
  kron the degree distribution is the same power law at fixed edge factor
  (R-MAT is self-similar), and list starts are uniformly spread modulo 128 B
  in both. So request-size histograms, request counts per edge and read
  amplification are scale free. An ML-like graph (average degree 222) is a
  kron of scale 13 with degree 258 (average degree after clean-up 217).
- Concurrency: the largest BFS levels at scale 18 still hold tens of
  thousands of active vertices, far more than the 5120 resident warps of the
  V100, so the link stays as busy as at full scale.
- Fixed costs scale with the graph: the launch overhead and the level
  synchronisation per launch, and for UVM the GPU memory the edge list may
  occupy (16 GB), are multiplied by (list entries here / list entries of the
  seed's graph), so that they keep their share of the run and the edge list
  oversubscribes the GPU memory as much as the seed's did (31.5 GB over 16 GB).
  The UVM driver's own granularities (4 KB pages, 64 KB prefetch blocks,
  2 MB chunks) stay as published; at scale 18 the scaled GPU memory still
  holds 14 of the 2 MB chunks.
- Sources: one BFS source per graph (a seeded random vertex with neighbours);
  on these graphs nearly every such vertex lies in the one giant component,
  so every source visits the same lists, as the seed's 64 sources did.

What the model cannot match is marked xfail(strict=True) with the missing
effect named, never absorbed into a tolerance.

The last section runs the same figures on the seeds' systems built from the
calibrated H200 by the transfer rules (``*-from-h200``,
:mod:`hostlink.model.config.seed_systems`); the v100-pcie3 sections above keep
the seed-only preset.
"""
from __future__ import annotations

import csv
import functools
from pathlib import Path

import numpy as np
import pytest

from hostlink.model.analytic import predict_system
from hostlink.model.config import load_system
from hostlink.model.predict import predict, size_histogram
from hostlink.model.workload import LaunchInfo, RequestStream

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "seeds_emogi.csv"
SCALE = 18
DEGREE = 16
GRAPHS = ("kron", "urand")
SEED_ENTRIES = {"kron": 4.22e9, "urand": 4.29e9}   # list entries of GK and GU (Table 2)
SEED_GPU_GiB = 16.0                                 # V100 16 GB; the A100's throttled to 16 GB
LOADED_RTT_NS = 1600.0                              # §3.3: 1.0 to 1.6 us measured


def golden() -> dict[str, dict]:
    with open(GOLDEN, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert rows and list(rows[0]) == ["source", "where", "config", "metric", "value", "unit",
                                      "tol_pct"]
    return {r["metric"]: {**r, "value": float(r["value"]), "tol_pct": float(r["tol_pct"])}
            for r in rows}


G = golden()


def within(metric: str, model: float) -> None:
    g = G[metric]
    tol = g["tol_pct"] / 100
    assert abs(model - g["value"]) <= tol * abs(g["value"]), (
        f"{metric}: model {model:.4g} vs seed {g['value']:.4g} {g['unit']} "
        f"({g['where']}), tolerance {g['tol_pct']:g}%")


# ----------------------------------------------------------------- cached inputs

@functools.lru_cache(maxsize=None)
def graph(kind: str, scale: int = SCALE, degree: int = DEGREE):
    from hostlink.traces.graphs import kron, urand
    return (kron if kind == "kron" else urand)(scale, degree)


@functools.lru_cache(maxsize=None)
def source(kind: str, scale: int = SCALE, degree: int = DEGREE) -> int:
    deg = np.diff(graph(kind, scale, degree).offsets)
    return int(np.random.default_rng(1).choice(np.flatnonzero(deg > 0)))


@functools.lru_cache(maxsize=None)
def stream(kind: str, kernel: str, variant: str, scale: int = SCALE,
           degree: int = DEGREE) -> RequestStream:
    from hostlink.traces.emulator import emulate
    emu = emulate(graph(kind, scale, degree), kernel, variant, source=source(kind, scale, degree),
                  id_bytes=8)
    return emu.requests()


def factor(kind: str, scale: int = SCALE) -> float:
    return graph(kind, scale).num_edges / SEED_ENTRIES[kind]


@functools.lru_cache(maxsize=None)
def system(name: str, kind: str, rtt_ns: float | None = None):
    f = factor(kind)
    over = {"launch_overhead_us": 5.0 * f, "level_sync_us": 10.0 * f,
            "uvm.gpu_memory_available_GiB": SEED_GPU_GiB * f}
    if rtt_ns is not None:
        over["link.rtt_ns"] = rtt_ns
    return load_system(name, over)


@functools.lru_cache(maxsize=None)
def run(kind: str, variant: str, mode: str = "zerocopy", name: str = "v100-pcie3",
        kernel: str = "bfs", rtt_ns: float | None = None):
    return predict(stream(kind, kernel, variant), system(name, kind, rtt_ns), mode=mode,
                   fidelity="des")


def uvm(kind: str, name: str = "v100-pcie3", kernel: str = "bfs"):
    """The seed's UVM baseline: the edge list managed and cudaMemAdviseSetReadMostly."""
    return run(kind, "merged_aligned", "uvm_readmostly", name, kernel)


def share(hist: dict, size: int) -> float:
    return hist.get(size, 0) / sum(hist.values())


def test_scaled_down_graphs_keep_the_oversubscription():
    for kind in GRAPHS:
        p = uvm(kind)
        seed_ratio = SEED_ENTRIES[kind] * 8 / (SEED_GPU_GiB * 2**30)
        assert p.extra["uvm"]["capacity_B"] // 2**21 >= 14
        assert graph(kind).num_edges * 8 / p.extra["uvm"]["capacity_B"] == pytest.approx(
            seed_ratio, rel=0.01)


# ----------------------------------------------------------------- §3.3 the toy example

def toy_stream(lines: int = 1 << 19) -> RequestStream:
    """One warp per 128 B line of a 1-D array in host memory (Listing 2 with
    aligned starts): every request a whole 128 B line."""
    n = lines
    return RequestStream(launch=np.zeros(n), warp=np.arange(n), inst=np.zeros(n),
                         addr=np.arange(n, dtype=np.uint64) * np.uint64(128),
                         size_B=np.full(n, 128), useful_B=np.full(n, 128),
                         space=np.zeros(n), is_write=np.zeros(n, bool),
                         launches=(LaunchInfo("toy", n // 8, 8, 256),))


def test_toy_merged_aligned_saturates_the_link():
    """The seed's V100 host returns 64 B completions (v100-pcie3 sets
    ``link.cpl_split = "rcb"``): 128 B reads then saturate the link at the
    measured 12.23 GB/s."""
    p = predict(toy_stream(), "v100-pcie3", fidelity="des")
    assert p.bound == "link_down"
    within("toy_aligned_bw_GBps", p.link_bw_GBps)


def test_toy_with_whole_completions_overshoots():
    """Without the split (one 128 B CplD per read) the link would carry about
    13.5 GB/s, 10% above the measurement: the split is what the data shows."""
    r = predict_system(load_system("v100-pcie3"), size_histogram(toy_stream(1 << 10)),
                       cpl_split="mps")
    assert str(r.bound) == "link_down"
    assert float(r.bw_GBps) > 1.08 * G["toy_aligned_bw_GBps"]["value"]


# ----------------------------------------------------------------- §5.3.1 request sizes

def test_naive_requests_are_nearly_all_32B():
    worst = max(1 - share(stream(k, "bfs", "naive").size_histogram(), 32) for k in GRAPHS)
    assert worst <= G["bfs_naive_share_above_32B_max"]["value"]


def test_merged_sends_about_40pct_128B_requests():
    within("bfs_merged_share_128B_mean",
           np.mean([share(stream(k, "bfs", "merged").size_histogram(), 128) for k in GRAPHS]))


@pytest.mark.parametrize("kind", GRAPHS)
def test_alignment_raises_the_128B_share_much_on_kron_little_on_urand(kind):
    gain = (share(stream(kind, "bfs", "merged_aligned").size_histogram(), 128)
            / share(stream(kind, "bfs", "merged").size_histogram(), 128))
    within(f"bfs_share_128B_gain_{kind}", gain)


def ml_like(variant: str) -> dict:
    return stream("kron", "bfs", variant, scale=13, degree=258).size_histogram()


def test_a_high_degree_graph_like_ml():
    within("ml_merged_share_128B", share(ml_like("merged"), 128))
    reduction = 1 - sum(ml_like("merged_aligned").values()) / sum(ml_like("merged").values())
    within("ml_aligned_request_reduction", reduction)


def test_merging_cuts_requests_by_as_much_as_the_seed_saw():
    """The naive kernel's requests depend on the L1 keeping a thread's last sector
    (the seed: a new 32 B request each time a thread crosses a 32 B boundary, but
    evictions under thrashing). The model's two extremes, no reuse (every access a
    request) and perfect reuse (an L1 per SM holding host sectors, accesses in
    trace order, scale 16 to keep the coalescer quick), bracket the measured
    reduction."""
    from hostlink.traces.cache import CacheConfig
    from hostlink.traces.coalescer import coalesce
    from hostlink.traces.emulator import emulate
    sysc = load_system("v100-pcie3")
    no_reuse, reuse = [], []
    for kind in GRAPHS:
        merged = len(stream(kind, "bfs", "merged"))
        no_reuse.append(1 - merged / len(stream(kind, "bfs", "naive")))
        emu = emulate(graph(kind, 16), "bfs", "naive", source=source(kind, 16), id_bytes=8)
        cached = coalesce(emu.trace(), cache=CacheConfig.from_gpu(sysc.gpu, l2=False),
                          cache_host=True)
        reuse.append(1 - len(stream(kind, "bfs", "merged", scale=16)) / len(cached))
    seed = G["bfs_merged_request_reduction_max"]["value"]
    assert max(reuse) < seed < max(no_reuse)
    assert all(r < seed for r in reuse)


# ----------------------------------------------------------------- §5.3.2 bandwidth

def naive_max(rtt_ns=None) -> float:
    return max(run(k, "naive", rtt_ns=rtt_ns).link_bw_GBps for k in GRAPHS)


@pytest.mark.xfail(strict=True, raises=AssertionError, reason=(
    "the model's round trip stays at the preset's unloaded 1.0 us: the naive kernel's "
    "32 B reads fill all 256 tags and the link only queues (not saturated), while the "
    "seed's RTT rose to 1.6 us under load (the root complex's and DRAM's loaded "
    "latency, not modelled); urand's naive BFS reaches 256 x 32 B / 1.0 us = 8.2 GB/s"))
def test_naive_bandwidth_with_the_preset_rtt():
    within("bfs_naive_link_bw_max_GBps", naive_max())


def test_naive_bandwidth_with_the_seeds_loaded_rtt():
    within("bfs_naive_link_bw_max_loaded_rtt_GBps", naive_max(LOADED_RTT_NS))
    assert run("urand", "naive", rtt_ns=LOADED_RTT_NS).bound in ("tags", "requester")


def test_kron_naive_is_bound_by_its_long_lists():
    """Thread-per-vertex on a power-law graph: a warp runs as many trips as its
    longest list, mostly with one lane active, so it is latency bound."""
    p = run("kron", "naive")
    assert p.bound == "latency" and p.link_bw_GBps <= G["bfs_naive_link_bw_max_GBps"]["value"]


def test_uvm_bandwidth():
    within("bfs_uvm_link_bw_max_GBps", max(uvm(k).link_bw_GBps for k in GRAPHS))


def test_merged_bandwidth():
    within("bfs_merged_link_bw_max_GBps", max(run(k, "merged").link_bw_GBps for k in GRAPHS))


@pytest.mark.xfail(strict=True, raises=AssertionError, reason=(
    "the model charges a misaligned list only its extra request's header and framing "
    "bytes, so aligning gains 0.2 GB/s of link bandwidth; the seed gained 0.5-1 GB/s, "
    "a per-request cost (root complex or DRAM access) that the model lacks"))
def test_alignment_adds_half_to_one_GBps():
    gain = min(run(k, "merged_aligned").link_bw_GBps - run(k, "merged").link_bw_GBps
               for k in GRAPHS)
    within("bfs_aligned_gain_min_GBps", gain)


def test_alignment_always_helps():
    for kind in GRAPHS:
        assert run(kind, "merged_aligned").link_bw_GBps > run(kind, "merged").link_bw_GBps
        assert len(stream(kind, "bfs", "merged_aligned")) < len(stream(kind, "bfs", "merged"))


def ordered(kind, rtt_ns=None):
    return [run(kind, "naive", rtt_ns=rtt_ns).link_bw_GBps, uvm(kind).link_bw_GBps,
            run(kind, "merged", rtt_ns=rtt_ns).link_bw_GBps,
            run(kind, "merged_aligned", rtt_ns=rtt_ns).link_bw_GBps]


def test_ordering_naive_uvm_merged_aligned_on_kron():
    bw = ordered("kron")
    assert bw == sorted(bw) and len(set(bw)) == 4


@pytest.mark.xfail(strict=True, raises=AssertionError, reason=(
    "with the unloaded 1.0 us RTT urand's naive BFS reaches 8.1 GB/s, above UVM's "
    "7.4 GB/s; the loaded round trip the seed measured (1.6 us) is not modelled "
    "(see test_ordering_with_the_seeds_loaded_rtt)"))
def test_ordering_naive_uvm_merged_aligned_on_urand():
    bw = ordered("urand")
    assert bw == sorted(bw)


@pytest.mark.parametrize("kind", GRAPHS)
def test_ordering_with_the_seeds_loaded_rtt(kind):
    bw = ordered(kind, LOADED_RTT_NS)
    assert bw == sorted(bw) and len(set(bw)) == 4


def test_zero_copy_never_beats_the_link():
    for kind in GRAPHS:
        for variant in ("naive", "merged", "merged_aligned"):
            p = run(kind, variant)
            ana = predict_system(system("v100-pcie3", kind),
                                 size_histogram(stream(kind, "bfs", variant)))
            assert p.link_bw_GBps <= float(ana.bw_link_GBps)


# ----------------------------------------------------------------- §5.3.3 performance

def test_alignment_speeds_bfs_up_by_a_tenth():
    within("bfs_aligned_speedup_mean",
           np.mean([run(k, "merged").time_s / run(k, "merged_aligned").time_s for k in GRAPHS]))


@pytest.mark.xfail(strict=True, raises=AssertionError, reason=(
    "the UVM model migrates at 7.0-7.4 GB/s during BFS against the seed's 9 GB/s (its "
    "fault-batch service times are published Titan V measurements, not calibrated on "
    "the V100 system), so merged BFS comes out 4-6x faster than UVM instead of 3.24x"))
def test_merged_speedup_over_uvm():
    within("bfs_merged_speedup_over_uvm_mean",
           np.mean([uvm(k).time_s / run(k, "merged").time_s for k in GRAPHS]))


def test_merged_is_much_faster_than_uvm():
    for kind in GRAPHS:
        assert uvm(kind).time_s > 2 * run(kind, "merged").time_s


# ----------------------------------------------------------------- §5.3.4 amplification

def test_uvm_reads_far_more_than_emogi():
    emogi = [run(k, "merged_aligned").read_amplification for k in GRAPHS]
    um = [uvm(k).read_amplification for k in GRAPHS]
    assert max(emogi) <= G["bfs_emogi_amplification_max"]["value"]
    assert min(emogi) >= 1.0
    assert max(um) <= G["bfs_uvm_amplification_max"]["value"]
    assert min(um) > G["bfs_uvm_amplification_min"]["value"]


# ----------------------------------------------------------------- §5.4 beyond BFS

KERNELS = ("bfs", "sssp", "cc")


def speedup_over_uvm(kernel: str, kind: str = "kron") -> float:
    return (uvm(kind, kernel=kernel).time_s
            / run(kind, "merged_aligned", kernel=kernel).time_s)


def test_emogi_beats_uvm_on_sssp_and_cc_too():
    s = {k: speedup_over_uvm(k) for k in KERNELS}
    assert all(v > 1.5 for v in s.values())
    # CC traverses every list every iteration: streaming, the least amplification
    # for UVM, the least gain (§5.4)
    assert s["cc"] == min(s.values())
    assert (uvm("kron", kernel="cc").read_amplification
            < uvm("kron", kernel="sssp").read_amplification)


def test_emogi_mean_speedup_over_uvm():
    within("emogi_speedup_over_uvm_mean", np.mean([speedup_over_uvm(k) for k in KERNELS]))


# ----------------------------------------------------------------- §5.5 PCIe 4.0

def test_pcie4_scaling_emogi_nearly_linear_uvm_less():
    zc = [run(k, "merged_aligned", name="a100-pcie3").time_s
          / run(k, "merged_aligned", name="a100-pcie4").time_s for k in GRAPHS]
    um = [uvm(k, "a100-pcie3").time_s / uvm(k, "a100-pcie4").time_s for k in GRAPHS]
    within("emogi_pcie4_speedup_mean", np.mean(zc))
    within("uvm_pcie4_speedup_mean", np.mean(um))
    assert np.mean(zc) > np.mean(um)


# ----------------------------------------------------------------- the seeds' systems moved
# v100-pcie3-from-h200 and a100-pcie*-from-h200: the calibrated H200 moved to the
# seeds' parts by hostlink.model.config.transfer, with the seeds' measured round
# trip (1.0-1.6 us), cudaMemcpy rate (12.3 GB/s; about 24 GB/s at PCIe 4.0) and
# completion size. Nothing in them is fitted to the figures below.

MOVED = "v100-pcie3-from-h200"


@pytest.mark.xfail(strict=True, raises=AssertionError, reason=(
    "the round trip grows with the link's byte load alone (0.6 us at a full link): the "
    "naive kernel's 32 B reads load the link to half, so its round trip grows to about "
    "1.3 us and urand's naive BFS reaches 5.9 GB/s; the seed's rose to 1.6 us. Missing: "
    "a round trip that grows with the request rate (the root complex's cost per request)"))
def test_moved_naive_bandwidth():
    """§5.3.2: "EMOGI's Naive implementation of BFS can only reach up to 4.7GB/s PCIe
    bandwidth." """
    within("bfs_naive_link_bw_max_GBps",
           max(run(k, "naive", name=MOVED).link_bw_GBps for k in GRAPHS))


def test_moved_merged_bandwidth():
    """§5.3.2: "With the merge optimization, the PCIe bandwidth utilization increased up
    to 11GB/s" """
    within("bfs_merged_link_bw_max_GBps",
           max(run(k, "merged", name=MOVED).link_bw_GBps for k in GRAPHS))


def test_moved_uvm_bandwidth():
    """§5.3.2: "Because of the page faulting overhead present in the UVM, it can only
    achieve PCIe bandwidth of 9GB/s." """
    within("bfs_uvm_link_bw_max_GBps", max(uvm(k, MOVED).link_bw_GBps for k in GRAPHS))


@pytest.mark.xfail(strict=True, raises=AssertionError, reason=(
    "aligning gains 0.02 GB/s on kron and 0.14 on urand: the model charges a misaligned "
    "list its extra request's header and framing bytes only. Missing: the host's cost per "
    "request (root complex and DRAM access), the same effect the naive round trip lacks"))
def test_moved_alignment_adds_half_to_one_GBps():
    """§5.3.2: "With the Merged+Aligned optimization, we add about 0.5 to 1GB/s of
    additional bandwidth utilization on top of merge optimization in all cases." """
    for kind in GRAPHS:
        gain = run(kind, "merged_aligned", name=MOVED).link_bw_GBps \
            - run(kind, "merged", name=MOVED).link_bw_GBps
        assert 0.5 <= gain <= 1.0, f"{kind}: {gain:.2f} GB/s"


def test_moved_merged_speedup_over_uvm():
    """§5.3.3 Fig. 9: merged BFS 3.24x faster than UVM on average."""
    within("bfs_merged_speedup_over_uvm_mean",
           np.mean([uvm(k, MOVED).time_s / run(k, "merged", name=MOVED).time_s
                    for k in GRAPHS]))


def test_moved_ordering_naive_uvm_merged_aligned():
    """§5.3.2 Fig. 8: naive below UVM below merged below merged+aligned."""
    for kind in GRAPHS:
        bw = [run(kind, "naive", name=MOVED).link_bw_GBps, uvm(kind, MOVED).link_bw_GBps,
              run(kind, "merged", name=MOVED).link_bw_GBps,
              run(kind, "merged_aligned", name=MOVED).link_bw_GBps]
        assert bw == sorted(bw), f"{kind}: {bw}"


def test_moved_a100_zero_copy_scales_with_the_link():
    """§5.5: "While EMOGI's performance scales by 1.9 on average with the faster
    interconnect" (the DGX A100's root port switched from PCIe 3.0 to 4.0)."""
    within("emogi_pcie4_speedup_mean",
           np.mean([run(k, "merged_aligned", name="a100-pcie3-from-h200").time_s
                    / run(k, "merged_aligned", name="a100-pcie4-from-h200").time_s
                    for k in GRAPHS]))


@pytest.mark.xfail(strict=True, raises=AssertionError, reason=(
    "UVM scales 2.3x from PCIe 3.0 to 4.0, not 1.53x: the fault-servicing costs are the "
    "H200 host's (a recent driver on a recent Xeon), kept per driver generation, and they "
    "leave the migration bound by the link. Missing: the DGX A100's own driver costs "
    "(the seed: the fault handler on the CPU \"can't keep up\")"))
def test_moved_a100_uvm_scales_less():
    """§5.5: "UVM's performance scales by only 1.53 on average." """
    within("uvm_pcie4_speedup_mean",
           np.mean([uvm(k, "a100-pcie3-from-h200").time_s / uvm(k, "a100-pcie4-from-h200").time_s
                    for k in GRAPHS]))
