"""Where the committed measurements live: one folder per experiment.

``validation/experiments/<experiment>/`` holds the experiment's README.md,
manifest.toml, its probe scripts and ``runs/<run>/``, one folder per run. A run's
name is its GPU and, after a dash, which take it is (``h200``, ``h100-b``,
``h200-repeat``); its record.toml says what the take was for. The tree is data,
not a Python package: probe scripts in it are loaded by path.
"""
from __future__ import annotations

import importlib.util
from pathlib import Path

EXPERIMENTS = Path(__file__).resolve().parent / "experiments"


def experiment_dir(experiment: str) -> Path:
    """The folder of ``experiment`` (its README, manifest and probe scripts)."""
    return EXPERIMENTS / experiment


def run_dir(experiment: str, run: str) -> Path:
    """The folder of one committed run, e.g. ``run_dir("first_run", "h200")``."""
    return EXPERIMENTS / experiment / "runs" / run


def manifest_path(experiment: str) -> Path:
    """The manifest ``hostlink validate run`` takes for ``experiment``."""
    return EXPERIMENTS / experiment / "manifest.toml"


def script_path(experiment: str, name: str) -> Path:
    """A probe or summary script of ``experiment`` (loaded by path: not a module)."""
    return EXPERIMENTS / experiment / name


def committed_runs() -> list[Path]:
    """Every committed run folder, sorted by experiment and run."""
    return sorted(p for p in EXPERIMENTS.glob("*/runs/*") if p.is_dir())


def load_script(path: str | Path):
    """The module of a probe or summary script of the tree, imported from its file
    (the tree is data, so its scripts are no package's modules)."""
    path = Path(path)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
