"""Every TOML a command reads: bad bytes and bad TOML are one line and exit 2."""
from pathlib import Path

import pytest

from hostlink.model.cli.main import main
from hostlink.model.errors import ConfigError
from hostlink.model.textfile import decode_utf8, read_toml, where_in

# "1.2 µs" saved as Latin-1: µ is the single byte 0xb5 (ISO/IEC 8859-1), not UTF-8
LATIN1 = '[system]\nname = "x"\nlink = "pcie/gen3_x16"\n[link]\nrtt_ns = "1.2 µs"\n'.encode("latin-1")
TRACE = str(Path(__file__).resolve().parents[1] / "traces" / "data")


def test_where_in_counts_lines_and_columns():
    assert where_in(b"ab\ncd\xb5", 5) == (2, 3)
    assert where_in(b"\xb5", 0) == (1, 1)


def test_decode_names_line_and_column():
    with pytest.raises(ConfigError, match=r"f.toml:5: byte 0xb5 at column 15 is not UTF-8"):
        decode_utf8(LATIN1, "f.toml")
    assert decode_utf8("\ufeffa = 1".encode(), "f") == "a = 1"


def test_read_toml_faults(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("a = 1\nb = = 2\n")
    with pytest.raises(ConfigError, match=r"bad.toml: not valid TOML: .*line 2"):
        read_toml(bad)
    with pytest.raises(ConfigError, match="no such"):
        read_toml(tmp_path / "missing.toml")
    with pytest.raises(ConfigError, match="is a folder"):
        read_toml(tmp_path)
    deep = tmp_path / "deep.toml"
    deep.write_text("a = " + "[" * 100_000)
    with pytest.raises(ConfigError, match="not valid TOML"):
        read_toml(deep)


@pytest.mark.parametrize("argv", [
    ["config", "show", "{f}"],
    ["predict", "--system", "{f}", "--trace", TRACE + "/edge_v4"],
    ["link", "--system", "{f}"],
    ["sweep", "{f}", "--out", "{out}"],
    ["trace", "stats", TRACE + "/edge_v4", "--regions", "{f}"],
    ["validate", "run", "{f}", "--out", "{out}"],
])
def test_latin1_toml_is_one_line_exit_2(tmp_path, capsys, argv):
    f = tmp_path / "bad.toml"
    f.write_bytes(LATIN1)
    args = [a.format(f=f, out=tmp_path / "out") for a in argv]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{f}:5: byte 0xb5" in err
    assert not (tmp_path / "out").exists()


def test_error_with_a_quoted_line_break_stays_one_line(tmp_path, capsys):
    """A TOML string may hold a line break; quoted back in an error it is escaped."""
    f = tmp_path / "regions.toml"
    f.write_text('[[region]]\nname = "e"\nstart = 0\nsize_B = 4\nlocation = "\\nhost"\n')
    assert main(["trace", "stats", TRACE + "/edge_v4", "--regions", str(f)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "= '\\nhost' is not one of" in err
