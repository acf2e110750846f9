"""Writing a benchmark's record: the figures with when and where they were measured."""
from __future__ import annotations

import json
import os
import platform
from datetime import datetime, timezone
from pathlib import Path


def write_record(out_path: Path, record: dict, missed: list[str]) -> int:
    """Stamp ``record`` with the time and the machine, write it to ``out_path`` as JSON,
    print the targets ``missed`` and return the benchmark's exit status (1 if any)."""
    record.update({"recorded_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                   "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
                   "missed": missed})
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(json.dumps(record, indent=1) + "\n")
    print(f"missed: {', '.join(missed) or 'none'}")
    return 1 if missed else 0
