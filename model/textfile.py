"""Read a user's text or TOML file strictly: bad bytes are one-line errors.

Every reader of a text file a user hands over goes through here, so that a
file saved in another encoding (``"1.2 µs"`` written as Latin-1), a binary
file or a broken TOML file gives one line that names the file, the line and
the column, never a traceback.

Assumptions: text files are UTF-8 (TOML requires it: TOML v1.0.0, "Spec":
"A TOML file must be a valid UTF-8 encoded Unicode document"); a leading
byte-order mark is accepted and dropped. Line and column are 1-based; the
column counts characters, as :mod:`tomllib` does.
"""
from __future__ import annotations

import tomllib
from pathlib import Path

from hostlink.model.errors import ConfigError, HostlinkError


def where_in(raw: bytes, pos: int) -> tuple[int, int]:
    """(line, column) of byte offset ``pos`` in ``raw``, both 1-based."""
    line = raw.count(b"\n", 0, pos) + 1
    start = raw.rfind(b"\n", 0, pos) + 1
    return line, pos - start + 1


def decode_utf8(raw: bytes, path, error: type[HostlinkError] = ConfigError) -> str:
    """``raw`` as text; a byte that is not UTF-8 raises ``error`` naming its line."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line, col = where_in(raw, exc.start)
        raise error(f"{path}:{line}: byte 0x{raw[exc.start]:02x} at column {col} is not "
                    f"UTF-8 (save the file as UTF-8)") from None
    return text[1:] if text.startswith("\ufeff") else text


def read_text(path, error: type[HostlinkError] = ConfigError, what: str = "file") -> str:
    """The UTF-8 text of ``path``; a missing, unreadable or non-UTF-8 file raises ``error``."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise error(f"{path}: cannot read {what}: no such {what}") from None
    except IsADirectoryError:
        raise error(f"{path}: is a folder, not a {what}") from None
    except OSError as exc:
        raise error(f"{path}: cannot read {what}: {exc.strerror or exc}") from None
    return decode_utf8(raw, path, error)


def parse_toml(text: str, path) -> dict:
    """Parse TOML text; a syntax error raises :class:`ConfigError` with the file and line."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        # the message ends with "(at line L, column C)"
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    except (RecursionError, ValueError) as exc:  # nesting too deep, numbers too large
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None


def read_toml(path, what: str = "file") -> tuple[dict, str]:
    """The parsed TOML of ``path`` and its text; every fault is one :class:`ConfigError`."""
    text = read_text(path, ConfigError, what)
    return parse_toml(text, path), text
