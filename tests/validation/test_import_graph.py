"""hostlink.validation imports without a cycle, and no library module imports its CLI.

The graph is read from each module's source (``ast``): every ``import
hostlink.validation.X`` and ``from hostlink.validation[.X] import ...``, relative
imports included, at any level (function-level imports count: a cycle through a
deferred import is still a cycle of responsibilities). The cycle search is the
standard library's :class:`graphlib.TopologicalSorter`.
"""
from __future__ import annotations

import ast
import graphlib
import importlib
import pkgutil
from pathlib import Path

import pytest

import hostlink.validation as package

PACKAGE = package.__name__


def module_files(folder: Path) -> dict[str, Path]:
    return {p.stem: p for p in sorted(folder.glob("*.py")) if p.stem != "__init__"}


def imported_modules(path: Path, package_name: str, modules: set[str]) -> set[str]:
    """The modules of ``modules`` (names inside ``package_name``) that ``path`` imports."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:                       # relative: from .x import y, from . import x
                base = ".".join([package_name, base] if base else [package_name])
            targets = [base] + [f"{base}.{a.name}" for a in node.names]
        else:
            continue
        for t in targets:
            parts = t.split(".")
            prefix = package_name.split(".")
            if parts[:len(prefix)] == prefix and len(parts) > len(prefix) \
                    and parts[len(prefix)] in modules:
                out.add(parts[len(prefix)])
    out.discard(path.stem)
    return out


def import_graph(folder: Path, package_name: str) -> dict[str, set[str]]:
    files = module_files(folder)
    return {name: imported_modules(p, package_name, set(files)) for name, p in files.items()}


def cycle(graph: dict[str, set[str]]) -> list[str] | None:
    try:
        tuple(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as exc:
        return list(exc.args[1])
    return None


FOLDER = Path(package.__file__).parent
GRAPH = import_graph(FOLDER, PACKAGE)


@pytest.mark.parametrize("name", sorted(m.name for m in pkgutil.iter_modules([str(FOLDER)])))
def test_every_module_imports(name):
    importlib.import_module(f"{PACKAGE}.{name}")


def test_the_graph_sees_module_and_function_level_imports():
    # report_build imports report_store at its top and twins inside build_report only
    assert "report_store" in GRAPH["report_build"]
    assert "twins" in GRAPH["report_build"]
    assert len(GRAPH) == len(list(pkgutil.iter_modules([str(FOLDER)])))


def test_no_import_cycle_in_validation():
    assert cycle(GRAPH) is None, " -> ".join(cycle(GRAPH) or [])


def test_library_modules_import_no_cli_module():
    bad = sorted((m, d) for m, deps in GRAPH.items() if not m.startswith("cli")
                 for d in deps if d.startswith("cli"))
    assert bad == []


def test_a_cycle_through_a_function_level_import_is_found(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from pkg.b import f\n")
    (pkg / "b.py").write_text("def f():\n    from . import c\n")
    (pkg / "c.py").write_text("def g():\n    import pkg.a\n")
    graph = import_graph(pkg, "pkg")
    assert graph == {"a": {"b"}, "b": {"c"}, "c": {"a"}}
    assert set(cycle(graph)) == {"a", "b", "c"}
    (pkg / "c.py").write_text("import os\n")
    assert cycle(import_graph(pkg, "pkg")) is None
