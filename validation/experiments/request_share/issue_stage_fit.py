"""The SM issue stage's costs (``gpu.request_gap_ns``, ``gpu.host_request_gap_ns``,
``gpu.sm_request_ns``) from the request_cost and request_share probes' measurements.

A warp's round is the bytes it reads per round over its share of the measured
bandwidth. Rounds, default cache operator, 4 B per lane:

- coalesced, unroll 1: one 128 B line per load, one load per round;
- strided: each lane reads its own 32 B sector over eight loads (the later seven
  hit the L1), so a round is one load's 32 lines, 32 x 32 B of useful bytes.

With one warp per SM the strided round costs the coalesced one plus one gap per
line beyond the first (``(strided - coalesced) / 31``; in the model this is exact:
tests/model/test_des.py), in device memory (the L2: 16 MiB per point) and from
host memory. With eight warps per SM (request_share, 256 MiB of device memory) the
SM's lines queue: the round is the SM's 256 lines one after another, so
``round / 256`` is the SM's time per line. Each constant is the mean over the
two chunk sizes (128 B and 4 KiB).

Usage: python3 validation/experiments/request_share/issue_stage_fit.py COST_DIR SHARE_DIR [COST_DIR SHARE_DIR ...]
(a pair per lease; prints JSON: each lease's constants and the rounds they come
from, and the constants' mean over the leases, which the GPU presets carry).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from statistics import median

from hostlink.model.geometry import LINE_B, SECTOR_B

LINES = 32                  # lines of a strided load: one per lane


def medians(path: str | Path) -> tuple[dict[tuple, float], int]:
    """Median bw_GBps per measured point, keyed by its parameters, and the GPU's SM
    count (the program's device record)."""
    reps: dict[tuple, list[float]] = {}
    sm_count = None
    for line_no, line in enumerate(Path(path).read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}:{line_no}: not JSON ({exc})") from None
        if rec.get("type") == "device":
            sm_count = int(rec["sm_count"])
        if rec.get("type") != "measurement":
            continue
        key = tuple(sorted((k, v) for k, v in rec["params"].items()))
        reps.setdefault(key, []).append(float(rec["metrics"]["bw_GBps"]))
    if sm_count is None:
        raise ValueError(f"{path}: no device record (its SM count)")
    return {k: median(v) for k, v in reps.items()}, sm_count


def round_ns(points: dict, *, pattern: str, memory_mode: str, warps: int,
             chunk_B: int | None = None) -> float:
    """A warp's round (ns) at one point: default operator, 4 B per lane, unroll 1."""
    want = {"pattern": pattern, "memory_mode": memory_mode, "warps": warps, "unroll": 1,
            "cache": "default", "bytes_per_lane": 4}
    if chunk_B is not None:
        want["chunk_B"] = chunk_B
    found = [bw for key, bw in points.items()
             if all(dict(key).get(k) == v for k, v in want.items())
             and (pattern != "coalesced" or dict(key).get("offset_B", 0) == 0)]
    if len(found) != 1:
        raise ValueError(f"expected one point {want}, found {len(found)}")
    per_round_B = LINES * SECTOR_B if pattern == "strided" else LINE_B
    return per_round_B / (found[0] / warps)          # B / (B/ns per warp)


def fit(request_cost_dir: str | Path, request_share_dir: str | Path) -> dict:
    cost, _ = medians(Path(request_cost_dir) / "plain.jsonl")
    share, sm_count = medians(Path(request_share_dir) / "plain.jsonl")
    out: dict = {"rounds_ns": {}}
    for key, mode in (("request_gap_ns", "device"), ("host_request_gap_ns", "zerocopy")):
        one = round_ns(cost, pattern="coalesced", memory_mode=mode, warps=1)
        gaps = []
        for chunk in (128, 4096):
            strided = round_ns(cost, pattern="strided", memory_mode=mode, warps=1, chunk_B=chunk)
            out["rounds_ns"][f"{mode}/1 warp/strided {chunk} B"] = round(strided, 1)
            gaps.append((strided - one) / (LINES - 1))
        out["rounds_ns"][f"{mode}/1 warp/coalesced 1 line"] = round(one, 1)
        out[key] = round(sum(gaps) / len(gaps), 2)
    per_sm = 8
    sm = []
    for chunk in (128, 4096):
        r = round_ns(share, pattern="strided", memory_mode="device", warps=per_sm * sm_count,
                     chunk_B=chunk)
        out["rounds_ns"][f"device/{per_sm} warps per SM/strided {chunk} B"] = round(r, 1)
        sm.append(r / (per_sm * LINES))
    out["sm_request_ns"] = round(sum(sm) / len(sm), 2)
    return out


KEYS = ("request_gap_ns", "host_request_gap_ns", "sm_request_ns")


def fit_leases(dirs: list[str]) -> dict:
    """Each lease's fit (pairs of probe folders) and the mean of its constants."""
    if not dirs or len(dirs) % 2:
        raise ValueError("give the probe folders in pairs: REQUEST_COST_DIR REQUEST_SHARE_DIR")
    leases = {f"{a} + {Path(b).name}": fit(a, b) for a, b in zip(dirs[::2], dirs[1::2])}
    mean = {k: round(sum(f[k] for f in leases.values()) / len(leases), 2) for k in KEYS}
    return {"leases": leases, "mean": mean}


def main(argv: list[str]) -> int:
    if not argv or len(argv) % 2:
        print(__doc__, file=sys.stderr)
        return 2
    print(json.dumps(fit_leases(argv), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
