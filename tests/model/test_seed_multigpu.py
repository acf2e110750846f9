"""The graph500_pcie_multigpu seed's figures (M. Daga, "On the Acceleration of
Graph500: Characterizing PCIe Overheads with Multi-GPUs", §4) predicted on the
preset of its system built from its stated parts (firepro-s9150-2s-pcie3): each
within 15%, or a strict xfail naming the effect the model lacks.

The seed's benchmark moves a 512 MB buffer from the host to the GPU
(clEnqueueWriteBuffer, §3: "we use a 512 MB buffer of float data-type and the
data is moved from host to the GPU"): a copy-engine copy here. GPUs 0 and 1 sit
on socket 0, GPUs 2 and 3 on socket 1 (§3, Fig. 2).
"""
from __future__ import annotations

import pytest

from hostlink.model.shared_host import GpuRun, predict_shared
from hostlink.model.workload import Copy

SYSTEM = "firepro-s9150-2s-pcie3"
COPY = Copy(512 * 2**20)   # §3: "a 512 MB buffer"
TOL = 0.15
LOCAL, REMOTE = {0: 0, 1: 0, 2: 1, 3: 1}, {0: 1, 1: 1, 2: 0, 3: 0}

MISSING_REMOTE = ("missing effect: a remote socket's limit on a device's DMA reads in "
                  "flight (the Haswell-EP IIO and home agent); the model adds the "
                  "inter-socket hop's 60 ns to each round trip, which 256 tags of 256 B "
                  "hide, and the 30.6 GB/s link does not fill; the seed's 2.5x needs a "
                  "round trip ~2.5x longer at a fixed window")


def _shares(placement: dict[int, int]) -> dict[int, float]:
    runs = [GpuRun(gpu, COPY, mode="zerocopy", node=node) for gpu, node in placement.items()]
    pred = predict_shared(runs, SYSTEM)
    return {r.gpu: r.shared_GBps for r in pred.runs}


def _single_local() -> float:
    return _shares({0: 0})[0]


def _close(pred: float, seed: float) -> bool:
    return abs(pred - seed) / seed <= TOL


def test_one_local_gpu_copies_at_12_3_GBps():
    # §4: "Using a single GPU and moving data to a local GPU, we achieve a
    # unidirectional bandwidth of 12.3 GB/s."
    for gpu in range(4):  # "performance is consistent no matter which GPU ... are used"
        assert _close(_shares({gpu: LOCAL[gpu]})[gpu], 12.3)


@pytest.mark.xfail(strict=True, reason=MISSING_REMOTE)
def test_one_remote_gpu_is_2_5x_slower():
    # §4: "The difference between local and remote data-transfers is 2.5x."
    assert _close(_single_local() / _shares({0: 1})[0], 2.5)


def test_two_gpus_on_two_sockets_local_each_at_91_percent():
    # §4 Fig. 4b: "the local bandwidth achieved with two GPUs is 91% of the
    # bandwidth achieved with one GPU due to inherent system overheads"
    shares = _shares({0: 0, 2: 1})
    for gpu in (0, 2):
        assert _close(shares[gpu] / _single_local(), 0.91)


@pytest.mark.xfail(strict=True, reason=MISSING_REMOTE)
def test_two_gpus_on_two_sockets_remote_2_6x_lower():
    # §4 Fig. 4b: "When both the GPUs are doing remote transfers, the bandwidth
    # achieved is 2.6x lower than the maximum possible."
    shares = _shares({0: 1, 2: 0})
    for gpu in (0, 2):
        assert _close(_single_local() / shares[gpu], 2.6)


def test_two_gpus_on_one_socket_local_gpu3_6_percent_below_gpu2():
    # §4 Fig. 4c: "the bandwidth achieved by both the GPUs is not equal; GPU 3
    # achieves 6% lower bandwidth than GPU 2"
    shares = _shares({2: 1, 3: 1})
    assert _close(shares[3] / shares[2], 0.94)


@pytest.mark.xfail(strict=True, reason="missing effect: contention between a local and a "
                   "remote DMA on one socket (§4: 'the contention of resources on the same "
                   "memory node while carrying out the DMA'); the model shares only link, "
                   "DRAM and inter-socket bandwidth, none of which fills here")
@pytest.mark.parametrize("placement, seed", [
    ({2: 1, 3: 0}, {2: 0.81, 3: 0.41}),   # "when GPU 3 is remote ... 81% and 41% of peak"
    ({2: 0, 3: 1}, {2: 0.48, 3: 0.57}),   # "when GPU 2 is remote ... only 48% and 57%"
], ids=["gpu3_remote", "gpu2_remote"])
def test_two_gpus_on_one_socket_one_remote(placement, seed):
    shares = _shares(placement)
    single = _single_local()
    assert all(_close(shares[g] / single, seed[g]) for g in placement)


@pytest.mark.xfail(strict=True, reason=MISSING_REMOTE)
def test_two_gpus_on_one_socket_remote_2_6x_lower():
    # §4 Fig. 4c: "When both the GPUs are remote, the bandwidth achieved is 2.6x
    # lower than than achieved by a single GPU."
    shares = _shares({2: 0, 3: 0})
    for gpu in (2, 3):
        assert _close(_single_local() / shares[gpu], 2.6)


def test_four_local_gpus_each_at_88_percent():
    # §4 Fig. 4d: "The bandwidth achieved by a single GPU when all the GPUs are
    # active is 88% of what is achievable when only one GPU is active."
    shares = _shares(LOCAL)
    for gpu in range(4):
        assert _close(shares[gpu] / _single_local(), 0.88)


@pytest.mark.xfail(strict=True, reason=MISSING_REMOTE)
def test_four_remote_gpus_4_4x_lower():
    # §4 Fig. 4d: "When all the GPUs are remote, the bandwidth achieved is worst
    # and is 4.4x lower than that achieved by a single GPU."
    shares = _shares(REMOTE)
    assert _close(_single_local() / min(shares.values()), 4.4)
