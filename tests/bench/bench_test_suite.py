"""Benchmark: the wall time of the whole test suite, serial and on worker processes.

Runs ``python -m pytest`` over tests/ (as ``make test`` does, with ``-n N
--dist loadfile`` of pytest-xdist for N workers, or serially), times it, and
records its wall time, pytest's own count of the session, the 1-minute load
average before and after (the machine may be shared: a load above the number
of CPUs means other work took some of them) and the slowest tests
(``--durations``). A pytest log already written can be recorded instead
(``--from-log``: the wall time is pytest's own). Each run is kept under its
label in tests/bench/results/test_suite.json, beside the runs recorded before.

Target: ``make test`` within 8 minutes on a 2-core machine. A full serial run
takes about 18 minutes on 2 cores.

    python tests/bench/bench_test_suite.py --label after_n2 --workers 2
    python tests/bench/bench_test_suite.py --label before_serial --from-log LOG
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
RESULTS = Path(__file__).resolve().parent / "results" / "test_suite.json"
TARGET_S = 8 * 60
SLOWEST = 20
# pytest's --durations lines: "12.34s call     tests/x.py::test_y[param]"
DURATION = re.compile(r"^\s*([0-9.]+)s (setup|call|teardown)\s+(\S.*)$")
# its last line: "1700 passed, 60 skipped, 9 xfailed in 1070.19s (0:17:50)", in "=" without -q
SUMMARY = re.compile(r"^=*\s*(\d+ (?:passed|failed|error).*) in ([0-9.]+)s")


def parse_log(text: str) -> dict:
    """pytest's outcome counts, its session time and its slowest test phases."""
    slow = []
    for line in text.splitlines():
        m = DURATION.match(line)
        if m:
            slow.append({"seconds": float(m.group(1)), "phase": m.group(2),
                         "test": m.group(3).strip()})
    summary = [m for m in map(SUMMARY.search, text.splitlines()) if m]
    if not summary:
        raise SystemExit("error: the pytest log has no final summary line (did the run finish?)")
    counts = {}
    for part in summary[-1].group(1).split(","):
        n, _, what = part.strip().partition(" ")
        if n.isdigit():
            counts[what] = int(n)
    slow.sort(key=lambda d: -d["seconds"])
    return {"pytest_s": float(summary[-1].group(2)), "outcomes": counts,
            "slowest": slow[:SLOWEST]}


def run_suite(workers: int, paths: list[str]) -> tuple[str, float, float, float]:
    """(log, wall s, load before, load after) of one run of the suite (or of ``paths``)."""
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
           f"--durations={SLOWEST}", *paths]
    if workers:
        cmd += ["-n", str(workers), "--dist", "loadfile"]
    load_before = os.getloadavg()[0]
    t0 = time.perf_counter()
    done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    return done.stdout + done.stderr, wall, load_before, os.getloadavg()[0]


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--label", help="name of this run in the record (default: serial or nN)")
    ap.add_argument("--workers", type=int, default=2, help="worker processes (0: serial)")
    ap.add_argument("--from-log", type=Path, help="record this finished pytest log instead")
    ap.add_argument("--paths", nargs="*", default=[],
                    help="test folders or files (default: all of tests/, as make test)")
    ap.add_argument("--commit", help="the commit the log ran on (default: HEAD)")
    ap.add_argument("--note", default="", help="what else ran on the machine, and so on")
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args(argv)
    label = args.label or (f"n{args.workers}" if args.workers else "serial")

    commit = args.commit or subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO,
                                           capture_output=True, text=True).stdout.strip()
    if args.from_log:
        entry = parse_log(args.from_log.read_text(errors="replace"))
        entry["wall_s"] = entry["pytest_s"]
    else:
        log, wall, load_before, load_after = run_suite(args.workers, args.paths)
        entry = parse_log(log)
        entry.update(wall_s=round(wall, 1), load_average_1min_before=load_before,
                     load_average_1min_after=load_after)
    entry.update(workers=args.workers, commit=commit, note=args.note, paths=args.paths or ["tests"],
                 recorded_utc=datetime.now(timezone.utc).isoformat(timespec="seconds"),
                 within_target=None if args.paths else entry["wall_s"] <= TARGET_S)
    record = json.loads(args.out.read_text()) if args.out.is_file() else {}
    record.update(benchmark="test_suite", target_s=TARGET_S,
                  machine={"cpus": os.cpu_count(), "python": platform.python_version()},
                  timing="wall-clock of one run (the machine may be shared: see each run's "
                         "load average and note)")
    record.setdefault("runs", {})[label] = entry
    args.out.write_text(json.dumps(record, indent=1) + "\n")
    print(f"{label}: {entry['wall_s']:.0f} s ({entry['outcomes']}), target {TARGET_S} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
