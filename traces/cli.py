"""``hostlink trace ...`` and ``hostlink graph ...``: the command groups of hostlink.traces.

The sub-commands live beside the code they front: trace reading, conversion
and statistics in :mod:`hostlink.traces.cli_io`; graph generation and kernel
trace generation in :mod:`hostlink.traces.cli_gen`.
"""
from __future__ import annotations

import importlib


def _optional(name: str):
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name == name:
            return None
        raise


def register(subparsers) -> None:
    trace = subparsers.add_parser("trace", help="read, generate, convert and summarise memory traces")
    trace_sub = trace.add_subparsers(dest="trace_command", metavar="TRACE_COMMAND")
    graph = subparsers.add_parser("graph", help="generate and convert graphs")
    graph_sub = graph.add_subparsers(dest="graph_command", metavar="GRAPH_COMMAND")
    for name in ("hostlink.traces.cli_io", "hostlink.traces.cli_gen"):
        module = _optional(name)
        if module is None:
            continue
        if hasattr(module, "register_trace_commands"):
            module.register_trace_commands(trace_sub)
        if hasattr(module, "register_graph_commands"):
            module.register_graph_commands(graph_sub)
    trace.set_defaults(func=lambda args: trace.print_help() or 2)
    graph.set_defaults(func=lambda args: graph.print_help() or 2)
