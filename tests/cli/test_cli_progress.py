"""Long commands show progress on a terminal and write nothing extra into a pipe."""
from __future__ import annotations

import os
import pty
import subprocess
import sys
import threading
from pathlib import Path

import pytest

HOSTLINK = [sys.executable, "-m", "hostlink.model.cli.main"]


def _run(argv, *, tty: bool) -> tuple[int, str, str]:
    """Run hostlink with stderr on a pseudo-terminal (tty) or a pipe; (rc, stdout, stderr)."""
    env = {**os.environ, "TERM": "xterm", "COLUMNS": "120"}
    if not tty:
        p = subprocess.run(HOSTLINK + argv, capture_output=True, text=True, env=env, timeout=300)
        return p.returncode, p.stdout, p.stderr
    master, slave = pty.openpty()
    chunks: list[bytes] = []

    def drain():
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:          # the terminal closed with the process
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=drain)
    reader.start()
    p = subprocess.Popen(HOSTLINK + argv, stdout=subprocess.PIPE, stderr=slave, env=env)
    os.close(slave)
    out = p.stdout.read().decode()
    p.wait(timeout=300)
    reader.join(timeout=30)
    os.close(master)
    return p.returncode, out, b"".join(chunks).decode(errors="replace")


@pytest.fixture(scope="module")
def graph(tmp_path_factory) -> Path:
    prefix = tmp_path_factory.mktemp("g") / "k"
    rc, _, _ = _run(["graph", "gen", "kron", "--scale", "8", "--out", str(prefix)], tty=False)
    assert rc == 0
    return prefix


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs a Linux pseudo-terminal")
def test_trace_gen_shows_its_steps_on_a_terminal(graph, tmp_path):
    rc, out, err = _run(["trace", "gen", "--kernel", "bfs", "--variant", "naive", "--graph",
                         str(graph), "--out", str(tmp_path / "t"), "--json"], tty=True)
    assert rc == 0 and out.lstrip().startswith("{")          # stdout stays clean
    assert "reading graph" in err and "emulating bfs (naive)" in err
    assert "writing the trace" in err


def test_trace_gen_is_quiet_in_a_pipe(graph, tmp_path):
    rc, out, err = _run(["trace", "gen", "--kernel", "bfs", "--variant", "naive", "--graph",
                         str(graph), "--out", str(tmp_path / "t"), "--json"], tty=False)
    assert rc == 0 and out.lstrip().startswith("{")
    assert err == ""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs a Linux pseudo-terminal")
def test_stats_and_predict_show_progress_on_a_terminal_only(graph, tmp_path):
    trace = tmp_path / "t"
    assert _run(["trace", "gen", "--kernel", "bfs", "--variant", "naive", "--graph", str(graph),
                 "--out", str(trace)], tty=False)[0] == 0
    for argv, words in ((["trace", "stats", str(trace)], "reading and coalescing"),
                        (["predict", "--system", "h100-pcie5", "--trace", str(trace)],
                         "coalescing")):
        rc, out, err = _run(argv, tty=True)
        assert rc == 0 and words in err and words not in out
        rc, _, err = _run(argv, tty=False)
        assert rc == 0 and err == ""


def test_first_compile_note_only_on_a_cold_cache_and_a_terminal(monkeypatch, capsys):
    from hostlink.model.cli import progress

    class Tty:
        def __init__(self):
            self.text = ""

        def write(self, s):
            self.text += s
            return len(s)

        def flush(self):
            pass

        def isatty(self):
            return True

    fake = Tty()
    monkeypatch.setattr(sys, "stderr", fake)
    monkeypatch.setattr(progress, "numba_cache_cold", lambda: True)
    progress.note_first_compile()
    assert "first run: compiling" in fake.text
    fake.text = ""
    progress.note_first_compile(quiet=True)
    monkeypatch.setattr(progress, "numba_cache_cold", lambda: False)
    progress.note_first_compile()
    assert fake.text == ""
