"""The fuzz suite's size: at least 10,000 inputs in all (the project's floor), counted
from each fuzz test's max_examples times its parametrizations."""
from __future__ import annotations

import importlib
import inspect

MODULES = ("test_fuzz_cli", "test_fuzz_files", "test_fuzz_graphs", "test_fuzz_toml",
           "test_fuzz_traces")


def _examples(fn) -> int:
    settings = getattr(fn, "_hypothesis_internal_use_settings", None)
    if settings is None:
        return 0
    cases = 1
    for mark in getattr(fn, "pytestmark", []):
        if mark.name == "parametrize":
            cases *= len(mark.args[1])
    return settings.max_examples * cases


def test_at_least_ten_thousand_inputs():
    per_module = {}
    for name in MODULES:
        module = importlib.import_module(name)
        per_module[name] = sum(_examples(fn) for n, fn in inspect.getmembers(module)
                               if n.startswith("test_") and callable(fn))
    assert all(per_module.values()), per_module
    assert sum(per_module.values()) >= 10_000, per_module
