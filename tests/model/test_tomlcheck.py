"""The shared TOML checking: pydantic faults as one line naming file and key."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import pytest

from hostlink.model.config.fields import param, section_model
from hostlink.model.errors import ConfigError, TraceError
from hostlink.model.tomlcheck import Bytes, TomlModel, check


class Item(TomlModel):
    kind: Literal["a", "b"]
    size_B: Bytes = 0
    names: list[str] = []


class File(TomlModel):
    item: list[Item] = []
    flag: bool = False


@pytest.mark.parametrize("data, line", [
    ({"item": [{"kind": "a"}, {"kind": "c"}]},
     "f.toml: 'item[1].kind' = 'c' is not one of: 'a' or 'b'"),
    ({"item": [{"kind": "a", "colour": 1}]},
     "f.toml: unknown key 'item[0].colour' (known: kind, size_B, names)"),
    ({"item": [{}]}, "f.toml: 'item[0].kind' is required"),
    ({"flag": 1}, "f.toml: 'flag' must be true or false, not 1"),
    ({"item": {"kind": "a"}}, "f.toml: 'item' must be a list, not {'kind': 'a'}"),
    # an item of a list of plain values is named by its list; its value says which
    ({"item": [{"kind": "a", "names": ["x", 3]}]},
     "f.toml: 'item[0].names' must be a string, not 3"),
    ({"item": [{"kind": "a", "size_B": "3 us"}]},
     "f.toml: 'item[0].size_B': unit 'us' does not fit key 'size_B' (expected one of: B, GB, "
     "GiB, KB, KiB, MB, MiB, TB, TiB)"),
    ({"item": [{"kind": "a", "size_B": "1.5 B"}]},
     "f.toml: 'item[0].size_B': '1.5 B' is not a whole number of bytes"),
])
def test_a_fault_is_one_line_naming_file_and_key(data, line):
    with pytest.raises(ConfigError) as err:
        check(File, data, "f.toml")
    assert str(err.value) == line


def test_sizes_convert_and_the_caller_picks_the_error_type():
    assert check(File, {"item": [{"kind": "b", "size_B": "4 KiB"}]}, "f").item[0].size_B == 4096
    with pytest.raises(TraceError, match=r"^t.toml: 'part.flag' must be true or false"):
        check(File, {"flag": "yes"}, "t.toml", prefix="part", error=TraceError)


@dataclass(frozen=True)
class Part:
    count: int = param(1, doc="a count", ge=1, le=8)
    lat_ns: float = param(100.0, doc="a latency", gt=0)
    names: tuple[str, ...] = param((), doc="names")
    size_B: int | None = param(None, doc="a size", optional=True)


def test_section_model_reads_param_metadata():
    model = section_model(Part)
    given = check(model, {"count": 8.0, "lat_ns": "1.5 us", "names": ["x"]}, "p.toml", "part")
    assert (given.count, given.lat_ns, given.names) == (8, 1500.0, ("x",))
    assert given.model_fields_set == {"count", "lat_ns", "names"}
    assert check(model, {"size_B": None}, "p.toml", "part").size_B is None
    for data, words in [({"count": 9}, "'part.count' = 9 must be <= 8"),
                        ({"count": 2.5}, "'part.count' = 2.5 must be a whole number"),
                        ({"count": True}, "'part.count' must be an integer, not True"),
                        ({"lat_ns": "2 GB"}, "'part.lat_ns': unit 'GB' does not fit"),
                        ({"names": "x"}, "'part.names' must be a list, not 'x'")]:
        with pytest.raises(ConfigError, match=r"^p\.toml: " + words.replace(".", r"\.")):
            check(model, data, "p.toml", "part")
