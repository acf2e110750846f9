"""The one error type users see: a message that names the file, line or key."""


class HostlinkError(Exception):
    """Bad input or an impossible request. The CLI prints its message on one
    line and exits non-zero, with no traceback. A line break quoted from the
    input (a TOML string holding one) is shown escaped, so the message stays
    on one line."""

    def __str__(self) -> str:
        return super().__str__().replace("\r", "\\r").replace("\n", "\\n")


class ConfigError(HostlinkError):
    """A config file or override that is malformed, unknown or out of range."""


class TraceError(HostlinkError):
    """A trace file that cannot be read; the message names the file and line."""
