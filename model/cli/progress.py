"""Progress of long single commands: a spinner with the step and its elapsed time on stderr.

Shown only where stderr is a terminal (``sys.stderr.isatty()``); in a pipe,
a file or a test nothing is written, so output stays clean for scripts. The
display is rich's (``rich.progress``), cleared when the step ends.

The model's Numba functions are compiled on their first call and cached next
to their modules (``@njit(cache=True)``, Numba's "Notes on Caching"); a run
with no cache file yet says so once, since compiling takes a while and
nothing else would explain the wait.
"""
from __future__ import annotations

import contextlib
import sys
from pathlib import Path


def enabled(quiet: bool = False) -> bool:
    """Whether to show progress: not asked to be quiet and stderr is a terminal."""
    isatty = getattr(sys.stderr, "isatty", None)
    return not quiet and bool(isatty and isatty())


def _console():
    from rich.console import Console
    return Console(file=sys.stderr)


@contextlib.contextmanager
def step(message: str, *, quiet: bool = False):
    """Show ``message`` with a spinner and the elapsed time while the block runs; yields
    ``detail(text)``, which shows ``text`` in its place from then on (a no-op off a
    terminal)."""
    if not enabled(quiet):
        yield lambda text: None
        return
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
    bar = Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
                   console=_console(), transient=True)
    task = bar.add_task(message, total=None)
    with bar:
        yield lambda text: bar.update(task, description=text)


@contextlib.contextmanager
def step_with_stages(message: str, *, quiet: bool = False):
    """:func:`step`, showing beside ``message`` the stages the model names in the block
    (:mod:`hostlink.model.progress`)."""
    from hostlink.model.progress import StageLine, listening
    with step(message, quiet=quiet) as detail:
        if not enabled(quiet):
            yield
            return
        with listening(StageLine(detail)):
            yield


def numba_cache_cold() -> bool:
    """True where no compiled Numba function of hostlink is cached yet (``*.nbi`` index
    files in the packages' ``__pycache__`` folders)."""
    import hostlink.model
    import hostlink.traces
    roots = {Path(hostlink.model.__file__).parent, Path(hostlink.traces.__file__).parent}
    return not any(next(root.glob("**/__pycache__/*.nbi"), None) for root in roots)


def note_first_compile(*, quiet: bool = False) -> None:
    """One line, on a terminal, when this run will compile the Numba functions first."""
    if enabled(quiet) and numba_cache_cold():
        _console().print("first run: compiling the model's Numba functions; later runs reuse "
                         "them from the cache")


@contextlib.contextmanager
def bar(message: str, *, quiet: bool = False):
    """A progress bar for ``message``; yields ``update(done, total)`` (a no-op off a terminal)."""
    if not enabled(quiet):
        yield lambda done, total: None
        return
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, \
        TimeRemainingColumn
    progress = Progress(TextColumn("{task.description}"), BarColumn(),
                        TextColumn("{task.completed}/{task.total}"), TimeElapsedColumn(),
                        TimeRemainingColumn(), console=_console(), transient=True)
    task = progress.add_task(message, total=None)
    with progress:
        yield lambda done, total: progress.update(task, completed=done, total=total)
