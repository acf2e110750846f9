"""Helpers for the tests of committed probe folders: load a summary script that lives
in the data tree (validation/experiments/*/*.py) and read the CSV tables it writes."""
from __future__ import annotations

import csv
from pathlib import Path

from hostlink.validation.data_tree import load_script  # noqa: F401  (re-exported)


def csv_rows(path: Path) -> list[dict]:
    """A CSV table's rows, every value as written."""
    with path.open() as f:
        return list(csv.DictReader(f))
