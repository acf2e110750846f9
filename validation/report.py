"""``hostlink validate report``: predicted twins against measurements, per case and per group.

This module gathers the public names of the report's parts, each a module of
its own:

- :mod:`hostlink.validation.report_build`: the command that builds a report;
- :mod:`hostlink.validation.report_store`: the predictions kept as each case
  finishes, and the keys and hashes that decide when they are reused;
- :mod:`hostlink.validation.report_judge`: summaries, groups, targets, MAPE
  and verdicts;
- :mod:`hostlink.validation.report_diagnose`: what a group that misses its
  target lacks (the known gaps of the model, from ``effects.toml``);
- :mod:`hostlink.validation.report_render`: ``report.md`` and the plots;
- :mod:`hostlink.validation.report_progress`: cases done and the time left;
- :mod:`hostlink.validation.report_common`: the report's error and the order
  of its cases.

The names here are copies: code that changes a setting (``FLUSH_EVERY_CASES``,
``TWIN_VERSION``, ``kind_code_hash``) sets it on the module that defines it.
"""
from __future__ import annotations

from hostlink.validation.report_build import (DEFAULT_FIDELITY, build_report, load_calibration,
                                              report_command)
from hostlink.validation.report_common import ReportError
from hostlink.validation.report_common import case_order as _case_order  # the old name
from hostlink.validation.report_diagnose import EFFECTS, diagnose
from hostlink.validation.report_judge import (MICRO_TARGET_PCT, NOT_FITTED, SUMMARY_COLUMNS,
                                              UNTARGETED_DIAGNOSE_PCT, UVM_TARGET_PCT,
                                              ZEROCOPY_TARGET_PCT, GroupStats, annotate,
                                              fitted_cases, group_stats, mape, mark_not_fitted,
                                              read_summary, summarise, target_for, write_summary)
from hostlink.validation.report_progress import CaseProgress
from hostlink.validation.report_render import (MAPE_STATUS, figure_error_by_group,
                                               figure_mape_by_group, markdown, plots,
                                               timing_table)
from hostlink.validation.report_store import (FLUSH_EVERY_CASES, FLUSH_EVERY_S,
                                              PREDICTION_CODE, PREDICTION_DATA,
                                              PREDICTIONS_JSON, PREDICTIONS_PARQUET,
                                              STALE_JSON, STALE_PARQUET, STORE_FORMAT,
                                              TWIN_VERSION, PredictionStore, case_inputs_hash,
                                              case_options, case_options_hash, code_hash,
                                              kind_code_hash, prediction_key, stored_record,
                                              system_hash, uvm_section)

__all__ = [
    "CaseProgress", "DEFAULT_FIDELITY", "EFFECTS", "FLUSH_EVERY_CASES", "FLUSH_EVERY_S",
    "GroupStats", "MAPE_STATUS", "MICRO_TARGET_PCT", "NOT_FITTED", "PREDICTIONS_JSON",
    "PREDICTIONS_PARQUET", "PREDICTION_CODE", "PREDICTION_DATA", "PredictionStore",
    "ReportError", "STALE_JSON", "STALE_PARQUET", "STORE_FORMAT", "SUMMARY_COLUMNS",
    "TWIN_VERSION", "UNTARGETED_DIAGNOSE_PCT", "UVM_TARGET_PCT", "ZEROCOPY_TARGET_PCT",
    "annotate", "build_report", "case_inputs_hash", "case_options",
    "case_options_hash", "code_hash", "diagnose", "figure_error_by_group",
    "figure_mape_by_group", "fitted_cases", "group_stats", "kind_code_hash",
    "load_calibration", "mape", "mark_not_fitted", "markdown", "plots", "prediction_key",
    "read_summary", "report_command", "stored_record", "summarise", "system_hash",
    "target_for", "timing_table", "uvm_section", "write_summary",
]
