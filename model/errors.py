"""The one error type users see: a message that names the file, line or key."""


class HostlinkError(Exception):
    """Bad input or an impossible request. The CLI prints its message on one
    line and exits non-zero, with no traceback."""


class ConfigError(HostlinkError):
    """A config file or override that is malformed, unknown or out of range."""


class TraceError(HostlinkError):
    """A trace file that cannot be read; the message names the file and line."""
