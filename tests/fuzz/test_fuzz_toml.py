"""Fuzz the TOML readers (system, sweep, regions, manifest): bad bytes, bad TOML and
values of the wrong type are one-line errors, never tracebacks."""
from __future__ import annotations

import datetime as dt
import tomllib

import pytest
import tomli_w
from fuzz_inputs import REPO, check_clean, fuzz_settings, inputs
from hypothesis import given
from hypothesis import strategies as st

from hostlink.model.config.loader import load_any_system
from hostlink.model.sweep.spec import load_sweep
from hostlink.traces.store import load_regions
from hostlink.validation.manifest import load_manifest

REGIONS = b'''[[region]]
name = "edges"
start = "0x10000000"
size_B = "4 KiB"
location = "host"

[[region]]
name = "labels"
start = 268439552
size_B = 256
location = "device"
'''

SEEDS = {
    "system": (REPO / "sim_configs/system/h100-pcie5.toml").read_bytes(),
    "sweep": (REPO / "sim_configs/sweeps/rtt_by_tags.toml").read_bytes(),
    "regions": REGIONS,
    "manifest": (REPO / "validation/experiments/tag_window/runs/h100/manifest.toml").read_bytes(),
}
LOADERS = {"system": load_any_system, "sweep": load_sweep, "regions": load_regions,
           "manifest": load_manifest}

# TOML values of every type, nested a little: what a user may put where another belongs
scalars = st.one_of(st.integers(-2**64, 2**64), st.floats(allow_nan=True), st.booleans(),
                    st.text(max_size=12), st.sampled_from(["1.2 us", "4 KiB", "0x10", "", "gen9"]),
                    st.dates(), st.times(), st.datetimes(min_value=dt.datetime(1, 1, 1)))
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3)
                      | st.dictionaries(st.text(max_size=8), inner, max_size=3), max_leaves=6)


@st.composite
def retyped(draw, seed: bytes) -> bytes:
    """The seed's TOML with one key's value, or one whole table, replaced by any value."""
    doc = tomllib.loads(seed.decode())
    node = doc
    for _ in range(draw(st.integers(0, 2))):  # walk down a few levels
        keys = [k for k, v in node.items() if isinstance(v, dict)]
        arrays = [k for k, v in node.items() if isinstance(v, list) and v and isinstance(v[0], dict)]
        choices = keys + arrays
        if not choices:
            break
        k = draw(st.sampled_from(choices))
        node = node[k] if isinstance(node[k], dict) else draw(st.sampled_from(node[k]))
    key = draw(st.sampled_from(sorted(node) + ["unknown_key"]))
    node[key] = draw(values)
    try:
        return tomli_w.dumps(doc).encode()
    except (TypeError, ValueError):  # a value tomli_w cannot write (e.g. a NaN key path)
        return seed


@pytest.mark.parametrize("kind", sorted(SEEDS))
@fuzz_settings(600)
@given(data=st.data())
def test_toml_readers_bytes(tmp_path, kind, data):
    raw = data.draw(inputs(SEEDS[kind]))
    path = tmp_path / f"{kind}.toml"
    path.write_bytes(raw)
    check_clean(LOADERS[kind], path)


@pytest.mark.parametrize("kind", sorted(SEEDS))
@fuzz_settings(300)
@given(data=st.data())
def test_toml_readers_wrong_types(tmp_path, kind, data):
    raw = data.draw(retyped(SEEDS[kind]))
    path = tmp_path / f"{kind}.toml"
    path.write_bytes(raw)
    check_clean(LOADERS[kind], path)
