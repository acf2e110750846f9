"""``hostlink validate run`` stops at once, writing nothing, on a host without a GPU."""
from __future__ import annotations

import pytest

from hostlink.model.cli.main import main
from hostlink.validation import runner
from hostlink.validation.data_tree import manifest_path


def _fake_smi(tmp_path, monkeypatch, script: str | None):
    """PATH holding only a fake nvidia-smi (none at all for ``script=None``)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    if script is not None:
        smi = bin_dir / "nvidia-smi"
        smi.write_text("#!/bin/sh\n" + script + "\n")
        smi.chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))


@pytest.mark.parametrize("script", [
    None,                                               # no driver tools at all
    'echo "No devices were found"; exit 6',             # the driver's answer without a GPU
    'echo "NVIDIA-SMI has failed"; exit 9',
])
def test_run_without_a_gpu_exits_2_before_writing(tmp_path, monkeypatch, capsys, repo, script):
    _fake_smi(tmp_path, monkeypatch, script)
    out = tmp_path / "out"
    rc = main(["validate", "run", str(manifest_path("ci_small")),
               "--out", str(out), "--quiet"])
    assert rc == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no CUDA GPU" in err
    assert not out.exists()


def test_a_listed_gpu_passes(tmp_path, monkeypatch):
    _fake_smi(tmp_path, monkeypatch, 'echo "GPU 0: NVIDIA H200 (UUID: GPU-0)"')
    assert runner.gpu_listing() == "GPU 0: NVIDIA H200 (UUID: GPU-0)"
    runner.require_gpu()


def test_dry_run_needs_no_gpu(tmp_path, monkeypatch, capsys, repo):
    _fake_smi(tmp_path, monkeypatch, None)
    rc = main(["validate", "run", str(manifest_path("ci_small")),
               "--out", str(tmp_path / "out"), "--dry-run", "--quiet"])
    assert rc == 0
