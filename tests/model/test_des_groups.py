"""The discrete-event model run a group of launches at a time
(hostlink.model.des.simulate_in_groups): the same numbers as one whole run."""
from __future__ import annotations

import numpy as np
import pytest

import hostlink.model.des as des
from hostlink.model.config import load_system
from hostlink.model.predict import predict
from hostlink.model.stream_memo import forget
from hostlink.model.workload import SPACE_DEVICE, SPACE_HOST, LaunchInfo, RequestStream
from hostlink.traces.graphs.families import build_graph
from hostlink.traces.traversal import traversal_workload


def random_stream(seed: int, n_launch: int = 12, n_warps: int = 40) -> RequestStream:
    """Launches of random host and device reads and writes over a few 2 MiB pages,
    rows in (launch, warp, instruction) order."""
    rng = np.random.default_rng(seed)
    cols = {k: [] for k in ("launch", "warp", "inst", "addr", "size_B", "space", "is_write")}
    for la in range(n_launch):
        for w in range(n_warps):
            for i in range(int(rng.integers(0, 6))):
                write = bool(rng.random() < 0.1)
                for _ in range(int(rng.integers(1, 4))):
                    size = int(rng.choice([32, 64, 96, 128]))
                    cols["launch"].append(la)
                    cols["warp"].append(w)
                    cols["inst"].append(i)
                    # pages 0..5 of 2 MiB, each launch touching new ones
                    page = int(rng.integers(0, 2 + la // 3))
                    cols["addr"].append(page * (2 << 20) + int(rng.integers(0, 1 << 14)) * 128)
                    cols["size_B"].append(size)
                    cols["space"].append(SPACE_DEVICE if rng.random() < 0.3 else SPACE_HOST)
                    cols["is_write"].append(write)
    n = len(cols["addr"])
    info = LaunchInfo("k", n_warps // 8, 8, 256)
    return RequestStream(launch=np.array(cols["launch"]), warp=np.array(cols["warp"]),
                         inst=np.array(cols["inst"]), addr=np.array(cols["addr"], np.uint64),
                         size_B=np.array(cols["size_B"]), useful_B=np.array(cols["size_B"]),
                         space=np.array(cols["space"], np.uint8),
                         is_write=np.array(cols["is_write"]), launches=(info,) * n_launch)


grouped = des.simulate_in_groups


def run_both(stream, system, monkeypatch, group_requests):
    whole_in, whole = des.simulate(stream, system)
    monkeypatch.setattr(des, "GROUP_REQUESTS", group_requests)
    parts_in, parts = des.simulate(stream, system)
    return whole_in, whole, parts_in, parts


def assert_identical(whole_in, whole, parts_in, parts):
    assert np.array_equal(whole.kernel_ns, parts.kernel_ns)
    assert np.array_equal(whole.stats, parts.stats)
    assert np.array_equal(whole.bw_bins_B, parts.bw_bins_B)
    assert whole.bin_ns == parts.bin_ns
    assert whole_in.extra["wire_B"] == parts_in.extra["wire_B"]
    assert whole_in.extra["host_dram_B"] == parts_in.extra["host_dram_B"]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_groups_give_the_whole_runs_numbers(seed, monkeypatch):
    system = load_system("h200-pcie5")
    stream = random_stream(seed)
    assert des.pages_fit(stream, system)       # only first touches miss the TLB
    whole_in, whole, parts_in, parts = run_both(stream, system, monkeypatch, len(stream) // 5)
    assert parts_in.extra["groups"] >= 5
    assert whole.stats[des.STAT["walks"]] > 0   # each page's first touch walks, once
    assert_identical(whole_in, whole, parts_in, parts)


def test_a_traversal_in_groups_predicts_the_same(monkeypatch):
    system = load_system("h200-pcie5")
    grid = build_graph("grid", dims="64x64", ids="shuffled", seed=3)
    work = traversal_workload(grid, "bfs", "naive", system.gpu, source=5, id_bytes=8)
    whole = predict(work, system, mode="zerocopy", fidelity="des")
    for kind in ("des", "des_inputs"):        # the engine runs again, not its memo
        forget(work.stream, kind)
    calls = []
    monkeypatch.setattr(des, "GROUP_REQUESTS", len(work.stream) // 9)
    monkeypatch.setattr(des, "simulate_in_groups", lambda *a, **k: calls.append(1) or
                        grouped(*a, **k))
    parts = predict(work, system, mode="zerocopy", fidelity="des")
    assert calls        # every pass of the loaded round trip ran in groups
    assert parts.extra["des"]["stats"] == whole.extra["des"]["stats"]
    assert parts.per_launch_kernel_s == whole.per_launch_kernel_s
    assert parts.time_s == whole.time_s


def test_groups_hold_whole_launches():
    stream = random_stream(4)
    groups = des.launch_groups(stream, 50)
    assert groups[0][0] == 0 and groups[-1][1] == len(stream.launches)
    assert groups[-1][3] == len(stream)
    for (a, b, r0, r1), (c, _, r2, _) in zip(groups, groups[1:]):
        assert b == c and r1 == r2 and b > a
        # a group ends where a launch ends
        assert stream.launch[r1 - 1] != stream.launch[r1]
    # a launch of more requests than a group's is a group of its own
    assert len(des.launch_groups(stream, 1)) == len(stream.launches)


def test_rows_out_of_launch_order_are_not_grouped():
    stream = random_stream(5)
    back = stream.select(np.arange(len(stream))[::-1])
    assert des.launch_groups(back, 50) is None


@pytest.mark.parametrize("budget", ["all", "half", "none"])
def test_kept_groups_serve_another_round_trip_unchanged(budget):
    """The loaded round trip's passes reuse the groups' inputs (KeptGroups): a pass on
    another ``link.rtt_ns`` gives the numbers of inputs built afresh, whether every
    group, the first few or none fit the budget."""
    from hostlink.model.config import system_with
    system = load_system("h200-pcie5")
    stream = random_stream(6)
    groups = des.launch_groups(stream, len(stream) // 6)
    assert len(groups) >= 6
    sizes = {"all": 1 << 40, "half": None, "none": 0}
    kept = des.KeptGroups(sizes[budget])
    first_in, first = grouped(stream, system, groups, translation=True, kept=kept)
    if budget == "half":        # keep the first groups only: the later ones are rebuilt
        kept = des.KeptGroups(kept.size_B // 2)
        grouped(stream, system, groups, translation=True, kept=kept)
        assert 0 < len(kept.groups) < len(groups)
    assert (len(kept.groups) == len(groups)) == (budget == "all")
    assert len(kept.groups) > 0 or budget == "none"
    slower = system_with(system, {"link.rtt_ns": 2.5 * system.link.rtt_ns})
    reused_in, reused = grouped(stream, slower, groups, translation=True, kept=kept)
    fresh_in, fresh = grouped(stream, slower, groups, translation=True)
    assert_identical(fresh_in, fresh, reused_in, reused)
    assert fresh.stats[des.STAT["walks"]] > 0
    assert not np.array_equal(first.kernel_ns, fresh.kernel_ns)   # the round trip counted


@pytest.mark.parametrize("seed, iommu", [(1, False), (2, True), (3, True)])
def test_groups_past_the_tlb_give_the_whole_runs_numbers(seed, iommu, monkeypatch):
    """Host pages that do not fit the TLB: each group's first run gives its reads'
    order, and the TLB and IOTLB carry what they hold from group to group, so the
    misses, and every number, are the whole run's."""
    from hostlink.model.config import system_with
    system = system_with(load_system("h200-pcie5"), {
        "translation.page_B": 4096, "translation.tlb_entries": 24,
        "translation.iommu": iommu, "translation.iommu_page_B": 4096,
        "translation.iommu_iotlb_entries": 16})
    stream = random_stream(seed)
    assert not des.pages_fit(stream, system)
    whole_in, whole, parts_in, parts = run_both(stream, system, monkeypatch, len(stream) // 5)
    assert parts_in.extra["groups"] >= 5
    assert whole.stats[des.STAT["walks"]] > 100
    assert_identical(whole_in, whole, parts_in, parts)


def test_groups_past_the_tlb_reuse_their_kept_inputs(monkeypatch):
    """A second pass on another round trip takes the groups' inputs built without
    translation from the first, and finds the misses of its own order again."""
    from hostlink.model.config import system_with
    system = system_with(load_system("h200-pcie5"), {"translation.page_B": 4096,
                                                     "translation.tlb_entries": 24})
    stream = random_stream(4)
    groups = des.launch_groups(stream, len(stream) // 5)
    kept = des.KeptGroups(1 << 40)
    grouped(stream, system, groups, translation=True, kept=kept, tlb_order=True)
    assert len(kept.groups) == len(groups)
    slower = system_with(system, {"link.rtt_ns": 2.5 * system.link.rtt_ns})
    reused_in, reused = grouped(stream, slower, groups, translation=True, kept=kept,
                                tlb_order=True)
    fresh_in, fresh = grouped(stream, slower, groups, translation=True, tlb_order=True)
    assert_identical(fresh_in, fresh, reused_in, reused)
    assert np.array_equal(fresh_in.walk, reused_in.walk)
