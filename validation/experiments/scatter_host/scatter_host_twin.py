"""Measured against predicted for a scatter_host run: every point of its summary (run
scatter_host_summary.py first) predicted by the zc_read twin through the discrete-event
model, with the loads in flight the run's own SASS shows (RUN/loads_in_flight.json)
and the system named (default h200-pcie5; the H100's runs take h100-pcie5, and a
translation change can be tried with --set, as in hostlink predict).

    python3 validation/experiments/scatter_host/scatter_host_twin.py RUN [--system S]
        [--set KEY=VALUE ...] [--out NAME]

Writes RUN/NAME (default twin.csv): per point, the measured and predicted lane loads
per microsecond and the error, and prints it as it goes.
"""
from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

from hostlink.model.config import load_any_system, system_with
from hostlink.validation import twins
from hostlink.validation.twin_micro import run_loads_in_flight

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scatter_host_summary import rows  # noqa: E402  (this folder's table)

UNROLL = 4             # probe.sh's --unroll


def params_of(row: dict) -> dict:
    """The twin's parameters of one summary row (probe.sh's command line)."""
    p = dict(kind="micro", benchmark="zc_read", memory_mode="zerocopy",
             total_B=int(row["total_B"]), unroll=UNROLL, pattern=row["pattern"],
             bytes_per_lane=int(row["bytes_per_lane"]), cache=row["cache"])
    if row["knob"] in ("region_B", "chunk_B"):
        p[row["knob"]] = int(row["knob_B"])
    return p


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    ap.add_argument("run", type=Path)
    ap.add_argument("--system", default="h200-pcie5")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--out", default="twin.csv")
    args = ap.parse_args(argv)
    if not (args.run / "plain.jsonl").is_file():
        print(f"{args.run}: no plain.jsonl (probe.sh's output)", file=sys.stderr)
        return 2
    system = load_any_system(args.system)
    if args.set:
        system = system_with(system, args.set)
    programs = run_loads_in_flight(args.run) or _record_from_sass(args.run)
    if programs is None:
        print(f"{args.run}: no loads_in_flight.json: the twins take the committed build's",
              file=sys.stderr)
    out = []
    for row in rows(args.run):
        p = params_of(row)
        twin = twins.build_micro(f"micro/zc_read/{row['pattern']}", p, system,
                                 loads_in_flight=programs)
        pred = twin.predict(system, "des")["bw_GBps"]
        got = pred * 1e3 / p["bytes_per_lane"]
        r = {**row, "predicted_bw_GBps": round(pred, 3),
             "predicted_lane_loads_per_us": round(got, 1),
             "error_pct": round(100 * (got / row["lane_loads_per_us"] - 1), 1)}
        out.append(r)
        print(",".join(str(v) for v in r.values()), flush=True)
    with open(args.run / args.out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(out[0]))
        w.writeheader()
        w.writerows(out)
    return 0


def _record_from_sass(run: Path) -> dict | None:
    """Write RUN/loads_in_flight.json (the runner's form) from the probe's
    zc_read.sass.gz and return its programs; None where the run has no SASS."""
    import json

    from hostlink.validation import sass
    from hostlink.validation.runner import LOADS_IN_FLIGHT
    path = run / "zc_read.sass.gz"
    if not path.is_file():
        return None
    programs = {"zc_read": {"kernels": sass.kernels_in_flight(sass.read_sass(path))}}
    (run / LOADS_IN_FLIGHT).write_text(json.dumps(
        {"tool": "cuobjdump -sass", "wait_model": sass.WAIT_MODEL, "programs": programs},
        indent=1) + "\n")
    return programs


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
