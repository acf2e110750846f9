"""The UVM cost-form comparison (validation/experiments/uvm_faults/runs/h200/cost_forms.py):
its fits on the committed count caches give the figures its README's table quotes,
form by form (first-touch MAPE, traversal MAPE and bias, each memory mode's bias)."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest
from hostlink.validation.data_tree import run_dir

ROOT = Path(__file__).resolve().parents[2]
FOLDER = run_dir("uvm_faults", "h200")

# validation/experiments/uvm_faults/README.md, "Which cost form carries to the
# traversals": (first touch MAPE, traversals MAPE, traversals bias, bias without
# advice, bias with ReadMostly), %
README = {
    "h200_uvm_faults": {"A": (22.4, 25.0, 8.7, 19.0, -1.6), "B": (17.9, 34.3, 24.4, 31.0, 17.8),
                        "E": (16.4, 27.7, 11.1, 19.3, 3.0), "M": (30.9, 22.8, 6.5, 2.5, 10.5)},
    "h100_uvm_session": {"A": (22.0, 20.1, -5.8, -1.4, -10.3), "B": (16.4, 20.7, 2.0, 4.3, -0.3),
                         "E": (15.5, 20.2, -5.7, -3.2, -8.3), "M": (23.9, 20.8, -7.9, -13.4, -2.4)},
    "h100_uvm_faults": {"A": (23.8, 20.7, -3.8, 5.9, -13.5), "B": (19.7, 23.7, 8.4, 16.0, 0.7),
                        "E": (17.2, 21.1, -1.9, 7.7, -11.5), "M": (29.4, 19.7, -6.9, -11.3, -2.4)},
}


@pytest.fixture(scope="module")
def cost_forms():
    spec = importlib.util.spec_from_file_location("cost_forms", FOLDER / "cost_forms.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def figures(mod, d: dict, free: list[str]) -> tuple[float, ...]:
    _, err, e = mod.evaluate(d, free)
    by = mod.by_mode(e)
    ev = np.array(list(e.values()))
    return (np.mean(np.abs(err)), np.mean(np.abs(ev)), np.mean(ev),
            np.mean(by["uvm"]), np.mean(by["uvm_readmostly"]))


@pytest.mark.parametrize("run", sorted(README))
def test_readme_table_is_what_the_fits_give(cost_forms, run):
    d = json.loads((FOLDER / f"cost_forms_{run}.json").read_text())
    assert len(d["traversal"]) == 144
    for form, quoted in README[run].items():
        got = figures(cost_forms, d, cost_forms.FORMS[form])
        assert got == pytest.approx(quoted, abs=0.051), (run, form)


def test_moving_per_block_charges_only_what_moves(cost_forms):
    # form M's column: a no-advice point's block column, nothing under ReadMostly
    m = {"cols": {k: {"time_ms": float(i + 1)} for i, k in enumerate(cost_forms.MODEL_KEYS)}}
    none = cost_forms.micro_columns("micro/uvm_touch/size_B=1,advice=none", m, "time_ms")
    rm = cost_forms.micro_columns("micro/uvm_touch/size_B=1,advice=readmostly", m, "time_ms")
    k = cost_forms.KEYS.index("move_block_us")
    assert none[k] == none[cost_forms.KEYS.index("block_us")] and rm[k] == 0.0
