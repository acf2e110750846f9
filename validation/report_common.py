"""What a validation report and its worker processes share.

:class:`ReportError` is the error of a report's inputs that do not fit together
(a one-line message; the CLI prints it and exits with status 2).
:func:`case_order` is the order in which
:func:`hostlink.validation.twins.predict_run` predicts a run's cases:
microbenchmarks first, then traversals by graph, kernel, variant and id width,
so that the cases sharing a graph are predicted together. The report and
:mod:`hostlink.validation.parallel` both import this module, and it imports
neither of them.
"""
from __future__ import annotations

from hostlink.model.errors import HostlinkError


class ReportError(HostlinkError):
    """Inputs of a report that do not fit together."""


def case_order(run, case: str) -> tuple:
    """The order in which :func:`hostlink.validation.twins.predict_run` predicts cases."""
    p = run.cases.get(case) or {}
    return (p.get("kind") != "micro", str(p.get("graph", "")), str(p.get("kernel", "")),
            str(p.get("variant", "")), int(p.get("id_bytes", 0) or 0), case)
