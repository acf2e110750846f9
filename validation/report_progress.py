"""Progress of a report's predictions: cases done of the total and the time left.

A rich progress bar on a terminal, else one plain line per case on stderr.
The time left is estimated per class of case (microbenchmark, traversal) from
the mean time of that class's cases finished so far.
"""
from __future__ import annotations

import sys
import time


def _clock(seconds: float) -> str:
    s = int(round(seconds))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


class CaseProgress:
    """Cases done of the total (resumed cases count as done) and the time left.

    The time left is the sum over the classes of the remaining cases (``classes``:
    case -> class, e.g. microbenchmark and traversal, whose twins differ in cost by
    orders of magnitude) of the mean time of the cases of that class that finished
    in this session times the number left; failed cases do not count in the means.
    Where a class has no timed case yet, the time is a lower bound (shown with a
    "+"). A rich progress bar on a terminal, else one plain line per case on
    ``stream`` (stderr)."""

    def __init__(self, total: int, done: int = 0, *, enabled: bool = True, stream=None,
                 classes: dict[str, str] | None = None):
        self.total, self.done, self.new = int(total), int(done), 0
        self.enabled = enabled
        self.stream = stream if stream is not None else sys.stderr
        self.classes = dict(classes or {})
        self.left_by_class: dict[str, int] = {}
        for c in self.classes.values():
            self.left_by_class[c] = self.left_by_class.get(c, 0) + 1
        unclassed = max(0, self.total - self.done - len(self.classes))
        if unclassed:
            self.left_by_class[""] = unclassed
        self.spent_s: dict[str, float] = {}
        self.timed: dict[str, int] = {}
        self.t0 = self._last = time.monotonic()
        self._rich = None
        if not enabled:
            return
        if done:
            self.stream.write(f"{done}/{total} cases already predicted (resumed)\n")
            self.stream.flush()
        isatty = getattr(self.stream, "isatty", None)
        if isatty is not None and isatty():
            try:
                from rich.console import Console
                from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                                           TimeElapsedColumn)
                from rich.table import Column
            except ImportError:
                return
            fixed = dict(no_wrap=True)
            self._rich = Progress(
                TextColumn("predicting", table_column=Column(**fixed)), BarColumn(bar_width=20),
                MofNCompleteColumn(table_column=Column(**fixed)),
                TimeElapsedColumn(table_column=Column(**fixed)),
                TextColumn("{task.fields[left]}", table_column=Column(min_width=12, **fixed)),
                TextColumn("{task.fields[case]}",
                           table_column=Column(ratio=1, overflow="ellipsis", **fixed)),
                console=Console(file=self.stream), transient=False, expand=True)
            self._task = self._rich.add_task("predict", total=total, completed=done,
                                             left="", case="")
            self._rich.start()

    def time_left(self) -> tuple[float, bool] | None:
        """(seconds left, whether that is exact for every class left), None before any timing."""
        if not self.timed:
            return None
        left, whole = 0.0, True
        for cls, n in self.left_by_class.items():
            if n <= 0:
                continue
            if self.timed.get(cls):
                left += self.spent_s[cls] / self.timed[cls] * n
            else:
                whole = False
        return left, whole

    def _left_text(self) -> str:
        t = self.time_left()
        if t is None:
            return "?"
        return f"{_clock(t[0])}{'' if t[1] else '+'} left"

    def line(self, case: str, failure: str | None = None) -> str:
        pct = 100.0 * self.done / self.total if self.total else 100.0
        tail = " (failed)" if failure else ""
        return f"[{self.done}/{self.total}] {pct:3.0f}%  {self._left_text()}  {case}{tail}"

    def step(self, case: str, failure: str | None = None) -> None:
        now = time.monotonic()
        cls = self.classes.get(case, "")
        self.left_by_class[cls] = self.left_by_class.get(cls, 0) - 1
        if failure is None:
            self.spent_s[cls] = self.spent_s.get(cls, 0.0) + (now - self._last)
            self.timed[cls] = self.timed.get(cls, 0) + 1
        self._last = now
        self.done += 1
        self.new += 1
        if not self.enabled:
            return
        if self._rich is not None:
            self._rich.update(self._task, completed=self.done, case=case,
                              left=self._left_text())
        else:
            self.stream.write(self.line(case, failure) + "\n")
            self.stream.flush()

    def close(self) -> None:
        if self._rich is not None:
            self._rich.stop()
            self._rich = None
