"""Which run a calibration was fitted on: the links of a calibration chain.

A calibration record (``calibration.json``, written by
:mod:`hostlink.validation.calibrate`) names the run folder it was fitted on, as
given on its command line, and a ``chain`` of the calibrations before it, each
with its own run folder and the case groups it fitted. A report judges a group
of a run as calibration (no target) only where some link was fitted on that
same run. Assumption: a relative folder in a record was relative to a working
directory whose trailing parts match the folder's.
"""
from __future__ import annotations

from pathlib import Path


def same_run_dir(recorded, results_dir) -> bool:
    """Whether a run folder named in a record (as given on its command line, maybe
    relative to another working directory) is ``results_dir``: the same path once
    resolved, or, for a relative record, ``results_dir``'s trailing parts."""
    a, b = Path(str(recorded)), Path(str(results_dir))
    if a.resolve() == b.resolve():
        return True
    return not a.is_absolute() and b.resolve().parts[-len(a.parts):] == a.parts


def groups_fitted_on(calibration: dict, results_dir) -> list[str]:
    """Groups of ``results_dir``'s own measurements that ``calibration`` (a record) or
    any calibration in its chain fitted. A record without a chain: its own groups."""
    chain = calibration.get("chain")
    if not isinstance(chain, list):
        return list(calibration.get("calibration_groups") or [])
    used: list[str] = []
    for link in chain:
        if same_run_dir(link.get("results_dir", ""), results_dir):
            used += [g for g in link.get("calibration_groups") or [] if g not in used]
    return used
