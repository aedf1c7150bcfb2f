"""Errors and exit codes: the one exception type `ov` raises on purpose.

Every failure a user can cause or meet becomes an `OvError` with a code from DESIGN.md;
only the CLI turns it into an exit status and a message. Anything else that escapes is a
bug and is reported as `internal` (with the traceback only under OV_DEBUG=1).
"""

from __future__ import annotations

import os

EXIT_OK = 0  # results
EXIT_NONE = 1  # ran fine, found nothing
EXIT_ERROR = 2  # any error

CODES = frozenset(
    {
        "invalid_argument",
        "invalid_pattern",
        "invalid_path",
        "not_found",
        "unsupported",
        "query_too_long",
        "index_busy",
        "deadline_exceeded",
        "internal",
    }
)


class OvError(Exception):
    """A failure with a stable machine-readable `code` (see DESIGN.md, "Errors")."""

    def __init__(
        self,
        code: str,
        message: str,
        *,
        retryable: bool = False,
        field: str | None = None,
    ) -> None:
        if code not in CODES:
            raise ValueError(f"unknown error code {code!r}")
        super().__init__(message)
        self.code = code
        self.message = message
        self.retryable = retryable or code == "index_busy"
        self.field = field

    def __reduce__(self):
        """Pickled and copied whole (a process pool hands a worker's error back so; the
        default rebuilds from `args`, the message alone, and failed)."""
        return (_rebuild, (type(self), self.code, self.message, self.retryable, self.field))

    def to_dict(self) -> dict:
        return {
            "code": self.code,
            "message": self.message,
            "retryable": self.retryable,
            "field": self.field,
        }


def _rebuild(cls: type, code: str, message: str, retryable: bool, field: str | None) -> OvError:
    """An OvError (or a subclass of it: its class is kept) from its pickled parts."""
    err = cls.__new__(cls)
    Exception.__init__(err, message)
    err.code, err.message, err.retryable, err.field = code, message, retryable, field
    return err


def debug_enabled() -> bool:
    """OV_DEBUG=1 asks for tracebacks; unset, empty, 0, false, no and off do not."""
    return os.environ.get("OV_DEBUG", "").strip().lower() not in ("", "0", "false", "no", "off")


def shown_bytes(text: str) -> str:
    """`text` with the bytes a name or an argument held that are not UTF-8 (surrogate
    escapes) shown as `\\xNN`, as the bytes they were (`lat\\xe9.txt`), not as Python's
    `\\udce9`; any other unpaired surrogate as `\\uNNNN`. Valid UTF-8 to print or dump."""
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
