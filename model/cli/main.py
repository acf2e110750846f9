"""The ``hostlink`` command: one entry point, a sub-command group per module.

Each module listed in :data:`COMMAND_MODULES` has ``register(subparsers)``,
which adds its sub-commands and sets ``func`` on their parsers. Handlers import
their heavy dependencies themselves, so ``hostlink --help`` stays fast.
Errors derived from :class:`HostlinkError` (and argparse's own) print one line
and exit with status 2; nothing prints a traceback for bad input.
"""
from __future__ import annotations

import argparse
import importlib
import sys

from hostlink.model.errors import HostlinkError

COMMAND_MODULES = (
    "hostlink.model.cli.link",        # hostlink link
    "hostlink.model.cli.config_cmd",  # hostlink config
    "hostlink.traces.cli",            # hostlink trace, hostlink graph
    "hostlink.model.cli.predict",     # hostlink predict
    "hostlink.model.cli.predict_multi",  # hostlink predict-multi
    "hostlink.model.cli.advise",      # hostlink advise
    "hostlink.validation.cli",        # hostlink validate
    "hostlink.model.cli.sweep",       # hostlink sweep, hostlink plot
    "hostlink.model.cli.run",         # hostlink run (the main job)
)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, no usage dump
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        raise SystemExit(2)


def _version() -> str:
    """The installed distribution's version (pyproject.toml's ``version``)."""
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version("hostlink")
    except PackageNotFoundError:  # run from a tree that was never installed
        return "unknown"


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="hostlink",
                     description="Predict and measure GPU zero-copy and UVM bandwidth over PCIe.")
    parser.add_argument("--version", action="version", version=f"hostlink {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:  # a command group not built yet
                continue
            raise
        module.register(sub)
    return parser


def _one_line_notes() -> None:
    """Print each distinct note of a what-if on the link once, on one line."""
    import warnings
    from hostlink.model.config.link_change import LinkAdjusted
    from hostlink.model.cli.notes import warn
    shown = warnings.showwarning

    def show(message, category, *rest, **kw):
        if issubclass(category, LinkAdjusted):
            warn(str(message))
        else:
            shown(message, category, *rest, **kw)
    warnings.showwarning = show
    warnings.simplefilter("once", LinkAdjusted)


def main(argv: list[str] | None = None) -> int:
    _one_line_notes()
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except HostlinkError as exc:
        sys.stderr.write(f"hostlink: error: {exc}\n")
        return 2
    except BrokenPipeError:  # output piped into head and closed early
        sys.stderr.close()
        return 0
    except KeyboardInterrupt:
        sys.stderr.write("hostlink: interrupted\n")
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
