"""What a group that misses its target lacks: the diagnosis of a report.

From a group's primary-metric errors, :func:`diagnose` says whether the model is
systematically too fast or too slow (most cases share the sign of the bias),
which numeric case parameter the error follows most closely (Spearman rank
correlation of the error with the parameter's logarithm, reported from
|rho| >= 0.6), which categorical parameter splits the error, and the effect the
model lacks by the sign of the error. Those effects are data, not code: one
entry per group in ``effects.toml`` beside this module (installed as package
data), with the committed result folders its text cites. Where a graph misses its
family target (:func:`hostlink.validation.report_judge.family_table`),
:func:`family_effects` names the effect by the sign of that graph's error.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated

import numpy as np
import pandas as pd
from pydantic import Field

from hostlink.model.errors import ConfigError
from hostlink.model.textfile import read_toml
from hostlink.model.tomlcheck import TomlModel, check
from hostlink.validation.report_judge import GroupStats

Text = Annotated[str, Field(min_length=1)]

#: The known gaps of the model (:func:`load_effects`).
EFFECTS_TOML = Path(__file__).with_name("effects.toml")


class Effect(TomlModel):
    """One ``[[effect]]`` of ``effects.toml``."""
    group: Text
    cites: list[str] = []
    too_fast: Text
    too_slow: Text


class EffectsFile(TomlModel):
    effect: list[Effect] = []


def load_effects(path: str | Path = EFFECTS_TOML) -> dict[str, tuple[str, str]]:
    """Candidate effects per group, from ``path``: group -> (the effect when the
    model is too fast, when it is too slow), in the file's order."""
    path = Path(path)
    doc = check(EffectsFile, read_toml(path, "file of the model's known gaps")[0], str(path))
    out: dict[str, tuple[str, str]] = {}
    for i, entry in enumerate(doc.effect):
        if entry.group in out:
            raise ConfigError(f"{path}: 'effect[{i}].group': {entry.group} given twice")
        out[entry.group] = (entry.too_fast, entry.too_slow)
    return out


#: Candidate effects per group: (when the model is too fast, too slow).
EFFECTS = load_effects()


def _effects_for(group: str) -> tuple[str, str] | None:
    for key in sorted(EFFECTS, key=len, reverse=True):
        if group.startswith(key):
            return EFFECTS[key]
    return None


def _numeric_params(rows: pd.DataFrame) -> dict[str, np.ndarray]:
    out = {}
    keys = set()
    for p in rows["params"]:
        keys.update(k for k, v in p.items() if isinstance(v, (int, float)) and not isinstance(v, bool))
    for k in sorted(keys):
        vals = np.array([float(p.get(k, np.nan)) if isinstance(p.get(k), (int, float)) else np.nan
                         for p in rows["params"]])
        if np.isfinite(vals).sum() >= 3 and len(np.unique(vals[np.isfinite(vals)])) >= 3:
            out[k] = vals
    return out


def _spearman(x: np.ndarray, y: np.ndarray) -> float:
    ok = np.isfinite(x) & np.isfinite(y)
    if ok.sum() < 3:
        return math.nan
    rx = pd.Series(x[ok]).rank().to_numpy()
    ry = pd.Series(y[ok]).rank().to_numpy()
    if rx.std() == 0 or ry.std() == 0:
        return math.nan
    return float(np.corrcoef(rx, ry)[0, 1])


def diagnose(stats: GroupStats, rows: pd.DataFrame) -> list[str]:
    """Sentences on what the model lacks for a group (its primary-metric rows)."""
    lines = []
    e = rows["error_pct"].to_numpy(dtype=float)
    metric = stats.metric
    higher_is_faster = metric.endswith("GBps")
    over = stats.bias_pct > 0
    consistent = np.mean(np.sign(e) == np.sign(stats.bias_pct)) if len(e) else 0.0
    if len(e) and consistent >= 0.8 and abs(stats.bias_pct) >= 0.5 * stats.mape_pct:
        fast = over == higher_is_faster
        lines.append(f"The model is systematically too {'fast' if fast else 'slow'}: "
                     f"{metric} is {'over' if over else 'under'}-predicted by "
                     f"{abs(stats.bias_pct):.1f}% on average ({consistent:.0%} of cases share the sign).")
    else:
        lines.append(f"The errors scatter around a bias of {stats.bias_pct:+.1f}%: the model "
                     f"misses a dependence on the case rather than a constant.")
    best = None
    for k, vals in _numeric_params(rows).items():
        rho = _spearman(np.log(np.maximum(vals, 1e-12)), e)
        if np.isfinite(rho) and (best is None or abs(rho) > abs(best[1])):
            best = (k, rho)
    if best is not None and abs(best[1]) >= 0.6:
        lines.append(f"The error {'grows' if best[1] > 0 else 'falls'} with `{best[0]}` "
                     f"(rank correlation {best[1]:+.2f}).")
    for cat in ("variant", "graph", "kernel", "id_bytes", "pattern", "advice", "memory_mode",
                "cache"):
        vals = [p.get(cat) for p in rows["params"]]
        if len(set(map(str, vals))) < 2:
            continue
        by = pd.Series(e).groupby(pd.Series([str(v) for v in vals])).mean()
        if by.max() - by.min() >= max(5.0, 0.5 * stats.mape_pct):
            parts = ", ".join(f"{k} {v:+.1f}%" for k, v in by.sort_values().items())
            lines.append(f"Mean error by {cat}: {parts}.")
    eff = _effects_for(stats.group)
    if eff is not None:
        fast = (stats.bias_pct > 0) == higher_is_faster
        lines.append("Effect the model lacks, by the sign of the error: "
                     + (eff[0] if fast else eff[1]) + ".")
    return lines


def family_effects(table: pd.DataFrame) -> list[str]:
    """What the model lacks where a graph misses its family target: one sentence per
    traversal group and sign of the error (kernel time: a positive bias is too slow),
    naming the graphs that miss that way and the group's effect for that sign.
    ``table``: :func:`hostlink.validation.report_judge.family_table`."""
    miss = table[table["mape_pct"] > table["target_pct"]]       # no target: NaN, never
    out = []
    for (group, slow), d in miss.groupby([miss["group"], miss["bias_pct"] > 0], sort=True):
        graphs = ", ".join(f"{r.graph} {r.mape_pct:.1f}%"
                           for r in d.sort_values("mape_pct", ascending=False).itertuples())
        eff = _effects_for(group)
        text = (eff[1] if slow else eff[0]) if eff else "no effect is recorded for this group"
        out.append(f"Too {'slow' if slow else 'fast'} in `{group}` ({graphs}): {text}.")
    return out
