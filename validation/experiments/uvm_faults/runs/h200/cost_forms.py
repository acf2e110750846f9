"""Which form of the UVM fault-service cost carries from first touch to traversals?

For a run with UVM first touch and UVM traversals (this folder, validation/experiments/uvm_session/runs/h100):
fit the service costs on the run's first touch as calibrate steps uvm_batches and
uvm_first_launch do, in four forms, and predict the run's UVM traversals with each:

- A: per batch, per VA block, per copied page, per moved page, a run's first fault
  (what calibrate fits);
- B: A plus ``fault_us`` per distinct page a batch fetches a fault for;
- E: A plus ``raised_fault_us`` per fault the warps raise on a page with no fault
  pending (``UvmResult.faults_raised``);
- M: A with the cost of moving pages off the host charged per VA block a batch
  serves without advice (``move_block_us``) instead of per page moved: first touch
  without advice costs twice what ReadMostly costs when random and barely more when
  sequential, so the move may cost by block rather than by page. No model option
  holds it: its columns are the block columns of the no-advice points and block
  services of the migrating traversals (every block a batch serves there moves pages
  off the host).

Each form's traversal error is also given per memory mode (without advice / with
ReadMostly), mean |error| and bias.

The service time is linear in the costs once the fault dynamics are fixed (no
eviction here), so every twin is run once at the run's calibrated costs: a first-touch
twin also once per cost raised by one (its columns), a traversal twin with its UVM
counts recorded (batches, block services, pages copied and moved, distinct faults
fetched and raised) by wrapping ``hostlink.model.uvm.simulate_uvm``. Then each form's
fit (soft-L1 least squares on log(predicted/measured), non-negative, from a NNLS start)
and each traversal's prediction are sums over those columns.

Usage (from the repository root; a run's traversals take 15-20 min on one core, kept
in CACHE_JSON and reused):
    python3 validation/experiments/uvm_faults/runs/h200/cost_forms.py RUN_DIR CACHE_JSON
"""
import collections
import json
import sys
from pathlib import Path

import numpy as np
from scipy.optimize import least_squares, nnls

KEYS = ["batch_base_us", "block_us", "copy_page_us", "move_page_us", "fault_us",
        "first_fault_us", "raised_fault_us", "move_block_us"]
MODEL_KEYS = KEYS[:-1]      # keys of the system's uvm section (move_block_us: form M alone)
FORMS = {
    "A": ["batch_base_us", "block_us", "copy_page_us", "move_page_us", "first_fault_us"],
    "B": ["batch_base_us", "block_us", "copy_page_us", "move_page_us", "fault_us", "first_fault_us"],
    "E": ["batch_base_us", "block_us", "copy_page_us", "move_page_us", "first_fault_us",
          "raised_fault_us"],
    "M": ["batch_base_us", "block_us", "copy_page_us", "move_block_us", "first_fault_us"],
}


def collect(rd: Path) -> dict:
    import hostlink.model.uvm as uvm_pkg
    from hostlink.model.config import load_any_system, system_with
    from hostlink.validation import twins
    from hostlink.validation.twin_common import load_run

    cal = rd / "calibrated.toml"
    system = load_any_system(str(cal))
    options = {"uvm": {k: float(getattr(system.uvm, k)) for k in MODEL_KEYS
                       if k != "batch_base_us"}}
    run = load_run(rd)
    rec: list[dict] = []
    orig = uvm_pkg.simulate_uvm

    page_B = system.uvm.page_B

    def recording(stream, system, **kw):
        r = orig(stream, system, **kw)
        rec.append(dict(mode=r.mode, batches=r.batches, block_services=r.block_services,
                        h2d_pages=r.h2d_B / page_B, faults_unique=r.faults_unique,
                        faults_raised=r.faults_raised))
        return r

    out = {"options": options, "batch_base_us": system.uvm.batch_base_us,
           "traversal": {}, "micro": {}}

    def on_case(case, rows, failure):
        reps = int(run.cases[case].get("reps", 1) or 1)
        kt = rows[rows.metric == "kernel_time_ms"] if len(rows) else rows
        pred = [float(kt[kt.rep == si * reps].value.iloc[0]) for si in range(len(rec))] if len(rows) else []
        m = run.measured[(run.measured.case == case) & (run.measured.metric == "kernel_time_ms")]
        out["traversal"][case] = dict(pred_ms=pred, counts=list(rec), reps=reps,
                                      measured_ms=m.value.tolist(), measured_rep=m.rep.tolist())
        rec.clear()
        print(f"  {case}", file=sys.stderr, flush=True)

    uvm_pkg.simulate_uvm = recording
    try:
        twins.predict_run(run, system, only="/uvm/,/uvm_readmostly/", on_case=on_case)
    finally:
        uvm_pkg.simulate_uvm = orig
    for case, p in run.cases.items():
        if p.get("benchmark") != "uvm_touch" or p.get("advice") not in ("none", "readmostly"):
            continue
        twin = twins.build_micro(case, p, system, hints=lambda m, c=case: run.hint(c, m))
        base = twin.predict(system, "des")
        cols = {}
        for k in MODEL_KEYS:
            s2 = system_with(system, {f"uvm.{k}": getattr(system.uvm, k) + 1.0})
            d = twin.predict(s2, "des")
            cols[k] = {m: d[m] - base[m] for m in base}
        meas = run.measured[run.measured.case == case]
        out["micro"][case] = dict(launches=int(p.get("launches", 1)), base=base, cols=cols,
                                  measured={m: meas[meas.metric == m].value.tolist() for m in base})
    return out


def costs_of(d: dict) -> dict:
    c = {k: float(d["options"].get("uvm", {}).get(k, 0.0)) for k in KEYS}   # move_block_us: 0
    c["batch_base_us"] = d["batch_base_us"]
    return c


def fit(points, c0: dict, free: list[str], fixed: dict) -> tuple[dict, np.ndarray]:
    meas = np.array([p[0] for p in points])
    base = np.array([p[1] for p in points])
    cols = np.array([p[2] for p in points])

    def pred(c):
        return base + cols @ np.array([c[k] - c0[k] for k in KEYS])

    start = dict(c0, **fixed, **{k: 0.0 for k in free})
    idx = [KEYS.index(k) for k in free]
    x0, _ = nnls(cols[:, idx] / meas[:, None], 1.0 - pred(start) / meas)

    def residual(x):
        return np.log(np.maximum(pred(dict(start, **dict(zip(free, x)))), 1e-9) / meas)

    r = least_squares(residual, np.maximum(x0, 1e-6), bounds=(0, np.inf), loss="soft_l1",
                      f_scale=0.1)
    c = dict(start, **dict(zip(free, r.x)))
    return c, 100 * (pred(c) / meas - 1)


def micro_columns(case: str, m: dict, metric: str) -> list[float]:
    """A first-touch point's change per unit of each cost; ``move_block_us`` is its
    block column where it runs without advice (its block services move pages)."""
    cols = {k: m["cols"][k][metric] for k in MODEL_KEYS}
    cols["move_block_us"] = cols["block_us"] if "advice=none" in case else 0.0
    return [cols[k] for k in KEYS]


def micro_points(d: dict, launches: bool):
    metric = "first_launch_ms" if launches else "time_ms"
    return [(float(np.median(m["measured"][metric])), m["base"][metric],
             micro_columns(case, m, metric))
            for case, m in d["micro"].items() if (m["launches"] > 1) == launches]


def traversal_errors(d: dict, c: dict) -> dict:
    c0 = costs_of(d)
    errs = {}
    for case, t in d["traversal"].items():
        preds = []
        for ms, n in zip(t["pred_ms"], t["counts"]):
            # the traversals only read their managed arrays, so under ReadMostly no
            # page moves off the host and every migrating page does
            count = dict(batch_base_us=n["batches"], block_us=n["block_services"],
                         copy_page_us=n["h2d_pages"],
                         move_page_us=n["h2d_pages"] if n["mode"] == "migrate" else 0.0,
                         fault_us=n["faults_unique"], first_fault_us=float(n["batches"] > 0),
                         raised_fault_us=n["faults_raised"],
                         move_block_us=n["block_services"] if n["mode"] == "migrate" else 0.0)
            preds.append(ms + 1e-3 * sum((c[k] - c0[k]) * count[k] for k in KEYS))
        used = len(preds) * t["reps"]
        meas = [v for v, r in zip(t["measured_ms"], t["measured_rep"]) if r < used]
        errs[case] = 100 * (np.median(np.repeat(preds, t["reps"])) / np.median(meas) - 1)
    return errs


def evaluate(d: dict, free: list[str]) -> tuple[dict, np.ndarray, dict]:
    """One form: its costs fitted on first touch (the one-off cost then refitted on the
    split touch, where the run has it), the first-touch errors (%) and each traversal
    case's error (%)."""
    c0 = costs_of(d)
    touch, launch = micro_points(d, False), micro_points(d, True)
    c, err = fit(touch, c0, free, {k: 0.0 for k in KEYS if k not in free})
    if launch:
        c, _ = fit(launch, c0, ["first_fault_us"], {k: c[k] for k in KEYS if k != "first_fault_us"})
    return c, err, traversal_errors(d, c)


def by_mode(errors: dict) -> dict[str, list[float]]:
    """Traversal errors (%) by memory mode (the case name's fourth field)."""
    by = collections.defaultdict(list)
    for case, v in errors.items():
        by[case.split("/")[3]].append(v)
    return by


def main() -> None:
    rd, cache = Path(sys.argv[1]), Path(sys.argv[2])
    if cache.exists():
        d = json.loads(cache.read_text())
    else:
        d = collect(rd)
        cache.write_text(json.dumps(d))
    touch = micro_points(d, False)
    print(f"{rd}: {len(touch)} first-touch points, {len(d['traversal'])} UVM traversal cases")
    print("| form | first touch MAPE % | traversals MAPE % (bias) | by mode, MAPE % (bias): uvm / readmostly | costs (us) |")
    print("|---|---:|---|---|---|")
    for form, free in FORMS.items():
        c, err, e = evaluate(d, free)
        by = by_mode(e)
        ev = np.array(list(e.values()))
        cost = ", ".join(f"{k.removesuffix('_us')} {c[k]:.3g}" for k in free)
        modes = " / ".join(f"{np.mean(np.abs(by[m])):.1f} ({np.mean(by[m]):+.1f})"
                           for m in ("uvm", "uvm_readmostly"))
        print(f"| {form} | {np.mean(np.abs(err)):.1f} | {np.mean(np.abs(ev)):.1f} ({np.mean(ev):+.1f}) | "
              f"{modes} | {cost} |")


if __name__ == "__main__":
    main()
