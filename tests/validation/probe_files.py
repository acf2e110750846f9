"""Helpers for the tests of committed probe folders: load a summary script that lives
outside the package (validation/device/*.py) and read the CSV tables it writes."""
from __future__ import annotations

import csv
import importlib.util
from pathlib import Path


def load_script(path: Path):
    """The module of a standalone script, imported from its file."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def csv_rows(path: Path) -> list[dict]:
    """A CSV table's rows, every value as written."""
    with path.open() as f:
        return list(csv.DictReader(f))
