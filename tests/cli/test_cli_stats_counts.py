"""``trace stats`` and ``predict`` count the same host read requests, and say after what."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from hostlink.model.cli.main import main

# the shared Accel-Sim sample traces (tests/conftest.py's ACCELSIM_DATA)
ACCELSIM_DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "accelsim"

BFS = ACCELSIM_DATA / "bfs_rodinia"      # Rodinia BFS, 16 launches
pytestmark = pytest.mark.skipif(not BFS.is_dir(), reason=f"shared trace {BFS} not found")
SOURCE = ["--memcpy-location", "host"]


#: what each command line printed with --json, parsed: the tests of this module run some
#: command lines alike, and the commands are deterministic
_PRINTED: dict[tuple[str, ...], dict] = {}


def _json(capsys, argv):
    """``hostlink ARGV --json``'s output, parsed; each command line is run once."""
    key = tuple(argv)
    if key not in _PRINTED:
        assert main(argv + ["--json"]) == 0
        _PRINTED[key] = json.loads(capsys.readouterr().out)
    return _PRINTED[key]


def test_stats_with_a_system_counts_what_predict_counts(capsys):
    stats = _json(capsys, ["trace", "stats", str(BFS), *SOURCE, "--system", "h200-pcie5"])
    pred = _json(capsys, ["predict", "--system", "h200-pcie5", "--trace", str(BFS), *SOURCE])
    assert stats["host_read_requests"] == pred["requests"]
    assert {int(k): v for k, v in stats["requests_by_size_B"].items()} == \
        {int(k): v for k, v in pred["requests_by_size_B"].items()}
    assert "as hostlink predict counts them" in stats["counted"]


def test_stats_by_default_count_before_the_caches_as_predict_without_them(capsys):
    raw = _json(capsys, ["trace", "stats", str(BFS), *SOURCE])
    cached = _json(capsys, ["trace", "stats", str(BFS), *SOURCE, "--system", "h200-pcie5"])
    bare = _json(capsys, ["predict", "--system", "h200-pcie5", "--trace", str(BFS), *SOURCE,
                          "--no-caches"])
    assert raw["host_read_requests"] == bare["requests"]
    assert raw["host_read_requests"] > cached["host_read_requests"]   # the L1 filters some
    assert raw["counted"].startswith("before any cache")


def test_both_print_what_they_count(capsys):
    assert main(["trace", "stats", str(BFS), *SOURCE]) == 0
    assert "(before any cache; hostlink predict filters them" in capsys.readouterr().out
    assert main(["predict", "--system", "h200-pcie5", "--trace", str(BFS), *SOURCE]) == 0
    line = [ln for ln in capsys.readouterr().out.splitlines() if "host read requests" in ln][0]
    assert "after the L1 of" in line and "trace stats --system h200-pcie5" in line
    assert main(["trace", "stats", str(BFS), "--system", "h200-pcie5", "--l1-size", "1KiB"]) == 2


def test_stats_take_set_with_a_system(capsys):
    full = _json(capsys, ["trace", "stats", str(BFS), *SOURCE, "--system", "h200-pcie5"])
    # host reads cached nowhere: the L1 filters none of them
    bare = _json(capsys, ["trace", "stats", str(BFS), *SOURCE, "--system", "h200-pcie5",
                          "--set", "gpu.caches_host_reads=false"])
    raw = _json(capsys, ["trace", "stats", str(BFS), *SOURCE])
    assert bare["host_read_requests"] == raw["host_read_requests"] > full["host_read_requests"]
    assert main(["trace", "stats", str(BFS), "--set", "gpu.l1_B=1024"]) == 2
