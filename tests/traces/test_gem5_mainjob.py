"""The main job writes its merged_aligned zero-copy run as a gem5 packet trace and links it.

The file's requests are checked against the sweep's own request counts
(``requests_by_size.csv``, from the predictions), not against the stream the
writer was given.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from hostlink.model.mainjob import MAIN_SWEEP, run_main_job
from hostlink.traces.gem5_trace import read_gem5, read_packets


def test_main_job_links_a_gem5_trace_of_its_merged_aligned_run(tmp_path):
    sweep = tmp_path / "small.toml"
    sweep.write_text(MAIN_SWEEP.read_text().replace("scale = 18", "scale = 11"))
    result = run_main_job(tmp_path / "job", jobs=1, progress=False, sweep_file=sweep)
    # h100-pcie5, the sweep's system, has a PCIe 5.0 link
    rel = "gem5/merged_aligned_zerocopy_pcie5.trc.gz"
    report = (result.out / "report.md").read_text()
    assert f"]({rel})" in report
    path = result.out / rel
    stream = read_gem5(path)
    mix = pd.read_csv(result.out / "requests_by_size.csv", index_col="variant")
    want = {s: int(mix.loc["merged_aligned", f"{s} B"]) for s in (32, 64, 96, 128)}
    assert stream.size_histogram() == {s: n for s, n in want.items() if n}
    pk = read_packets(path)
    assert "PCIe 5" in pk.obj_id and "discrete-event" in pk.meta["timing"]
    assert (np.diff(pk.tick.astype(np.int64)) >= 0).all()
    # the sweep's own PCIe 5.0 time for that run bounds the last request's tick
    s = result.summary
    row = s[(s["variant"] == "merged_aligned") & (s["mode"] == "zerocopy") & (s["gen"] == 5)]
    assert int(pk.tick[-1]) < float(row["time_ms"].iloc[0]) * 1e9
