"""A what-if on the link: a generation changes tags, flit mode and framing with it,
keeps the measured platform keys, and sweeps over link.gen run from a Gen5 base."""
from __future__ import annotations

import subprocess
import sys
import warnings

import pytest

from hostlink.model.config import load_system
from hostlink.model.config.link_change import LinkAdjusted, adapt_link, swap_link
from hostlink.model.errors import ConfigError
from hostlink.model.sweep import load_results, run_sweep
from hostlink.model.sweep.spec import load_sweep, with_link

HOSTLINK = [sys.executable, "-m", "hostlink.model.cli.main"]


def test_gen3_clamps_tags_to_the_8_bit_limit_with_a_note():
    base = load_system("h200-pcie5")
    assert base.link.tags == 768          # 10-bit tags, 768 usable (gen5_x16 preset)
    with pytest.warns(LinkAdjusted, match="768 tags are more than PCIe gen 3 allows; using 256"):
        s = load_system("h200-pcie5", ["link.gen=3"])
    assert s.link.gen == 3 and s.link.tags == 256
    assert "using 256" in s.provenance["link.tags"]
    # the measured round trip and its growth with load stay
    assert s.link.rtt_ns == base.link.rtt_ns
    assert s.link.rtt_at_full_link_ns == base.link.rtt_at_full_link_ns


def test_tags_given_with_the_generation_are_checked_not_clamped():
    with warnings.catch_warnings():
        warnings.simplefilter("error", LinkAdjusted)
        assert load_system("h200-pcie5", ["link.gen=3", "link.tags=32"]).link.tags == 32
    with pytest.raises(ConfigError, match="256 that PCIe gen 3"):
        load_system("h200-pcie5", ["link.gen=3", "link.tags=512"])


def test_tags_below_the_limit_are_kept():
    out, notes = adapt_link({"gen": 3, "tags": 256}, {"gen": 5})
    assert out["tags"] == 256 and notes == []


def test_entering_flit_mode_drops_the_measured_dllp_share_and_framing():
    base = load_system("h200-pcie5")
    assert base.link.dllp_overhead is not None    # fitted on the Gen5 memcpy
    s = load_system("h200-pcie5", ["link.gen=6"])
    assert s.link.uses_flit_mode
    assert s.link.dllp_overhead is None and s.link.framing_B is None
    back = load_system("h200-pcie5", ["link.gen=4"])
    assert back.link.dllp_overhead == base.link.dllp_overhead
    assert not back.link.uses_flit_mode


def test_flit_mode_given_explicitly_below_gen6_is_still_refused():
    with pytest.raises(ConfigError, match="flit mode needs PCIe 6"):
        load_system("h200-pcie5", ["link.gen=4", "link.flit_mode=true"])


def test_whole_link_swap_takes_the_generation_keeps_the_platform():
    base = load_system("h200-pcie5")
    s = load_system("h200-pcie5", ["link=pcie/gen4_x8"])
    assert (s.link.gen, s.link.lanes, s.link.tags, s.link.name) == (4, 8, 768, "gen4_x8")
    assert s.link.rtt_ns == base.link.rtt_ns and s.link.mps_B == base.link.mps_B
    assert s.provenance["link.gen"] == "link preset pcie/gen4_x8 (what-if)"
    s6 = load_system("h200-pcie5", ["link=gen6_x16"])
    assert s6.link.tags == 16384 and s6.link.uses_flit_mode
    # keys given beside the swap win
    assert load_system("h200-pcie5", ["link=gen4_x16", "link.tags=64"]).link.tags == 64


def test_swap_link_names_an_unknown_preset():
    with pytest.raises(ConfigError, match="no pcie preset 'gen9_x16'"):
        swap_link({"gen": 5}, "gen9_x16")
    with pytest.raises(ConfigError, match="'link' must name a link preset"):
        load_system("h200-pcie5", {"link": 4})


GEN_SWEEP = """
[sweep]
name = "gens"
system = "h200-pcie5"
[workload]
kind = "sizes"
size_B = 128
[[axis]]
key = "link.gen"
values = [3, 4, 5, 6]
"""


def test_sweep_over_gen_from_a_gen5_base_runs_and_records_tags(tmp_path):
    path = tmp_path / "gens.toml"
    path.write_text(GEN_SWEEP)
    with pytest.warns(LinkAdjusted, match="using 256"):
        run_sweep(load_sweep(path), tmp_path / "out", jobs=1, progress=False)
    wide = load_results(tmp_path / "out", wide=True).sort_values("link.gen")
    assert list(wide["link.tags"]) == [256, 768, 768, 768]
    bw = list(wide["bw_GBps"])
    assert bw[0] < bw[1] < bw[2]          # the link's rate doubles per generation


def test_sweep_axis_of_whole_links_and_with_link(tmp_path):
    path = tmp_path / "links.toml"
    path.write_text(GEN_SWEEP.replace('key = "link.gen"\nvalues = [3, 4, 5, 6]',
                                      'key = "link"\nvalues = ["gen3_x16", "pcie/gen6_x16"]'))
    run_sweep(load_sweep(path), tmp_path / "out", jobs=1, progress=False)
    wide = load_results(tmp_path / "out", wide=True).sort_values("link.gen")
    assert list(wide["link.tags"]) == [256, 16384]
    assert list(wide["link"]) == ["gen3_x16", "gen6_x16"]
    spec = with_link(load_sweep(tmp_path / "links.toml"), None)
    with pytest.raises(ConfigError, match="an axis varies 'link'"):
        with_link(spec, "gen4_x16")


def test_cli_sweep_prints_the_clamp_once_and_predict_takes_link(tmp_path):
    path = tmp_path / "gens.toml"
    path.write_text(GEN_SWEEP.replace("values = [3, 4, 5, 6]", "values = [3, 3.0, 4]"))
    proc = subprocess.run([*HOSTLINK, "sweep", str(path), "--out", str(tmp_path / "o"),
                           "--jobs", "1", "--quiet"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("hostlink: warning: link.tags: 768") == 1, proc.stderr
    proc = subprocess.run([*HOSTLINK, "config", "show", "h200-pcie5", "--set", "link=gen9_x1"],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
    assert "no pcie preset 'gen9_x1'" in proc.stderr


def test_cli_predict_link_shorthand_equals_set_link(tmp_path):
    prefix = tmp_path / "k8"
    subprocess.run([*HOSTLINK, "graph", "gen", "kron", "--scale", "8", "--out", str(prefix)],
                   check=True, capture_output=True)
    common = [*HOSTLINK, "predict", "--system", "h200-pcie5", "--graph", str(prefix), "--json"]
    a = subprocess.run([*common, "--link", "gen3_x16"], capture_output=True, text=True)
    b = subprocess.run([*common, "--set", "link=pcie/gen3_x16"], capture_output=True, text=True)
    c = subprocess.run(common, capture_output=True, text=True)
    assert a.returncode == b.returncode == c.returncode == 0, a.stderr + b.stderr
    import json
    bw = [json.loads(p.stdout)["bw_GBps"] for p in (a, b, c)]
    assert bw[0] == bw[1] and bw[0] < bw[2]


def test_with_link_gives_the_set_generation_keys_way(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(GEN_SWEEP.replace('[workload]', '[set]\n"link.lanes" = 16\n'
                                      '"link.rtt_ns" = 900\n[workload]'))
    spec = with_link(load_sweep(path), "gen4_x8")
    assert spec.overrides == {"link": "gen4_x8", "link.rtt_ns": 900}
    assert with_link(spec, None) is spec
