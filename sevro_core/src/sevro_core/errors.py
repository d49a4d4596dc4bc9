"""Error types that map onto sevro's exit categories.

Everything the user can fix before a run starts is an :class:`InvocationError` (exit 64) and
renders as one line naming the file and JSON pointer at fault.
"""

from __future__ import annotations

from pathlib import Path


class SevroError(Exception):
    """Base class for errors sevro reports without a traceback."""

    code = "sevro.runner.error"
    exit_code = 70


class InvocationError(SevroError):
    """Bad input or configuration, detected before any trial starts (exit 64)."""

    code = "sevro.invocation.invalid"
    exit_code = 64

    def __init__(
        self, message: str, *, source: str | Path | None = None, pointer: str | None = None
    ):
        self.message = message
        self.source = str(source) if source is not None else None
        self.pointer = pointer
        super().__init__(self.one_line())

    def one_line(self) -> str:
        where = ""
        if self.source is not None:
            where = self.source
            if self.pointer is not None:
                where += f"#{self.pointer}"
            where += ": "
        elif self.pointer is not None:
            where = f"#{self.pointer}: "
        return " ".join(f"{where}{self.message}".split())


class ConfigurationError(Exception):
    """A plugin refused a configuration; the loader adds the file and pointer prefix."""

    def __init__(self, message: str, pointer: str = ""):
        self.message = message
        self.pointer = pointer
        super().__init__(message)


class GradingError(Exception):
    """A grader could not assess a check (grading ``error``, never a pass or a fail)."""


class HostExecutionError(Exception):
    """A host could not complete a turn (execution ``failed``)."""


class PersistenceError(SevroError):
    """Evidence could not be written; the workspace is kept and named (exit 70)."""

    code = "sevro.persistence.failed"


def join_pointer(base: str, *parts: str | int) -> str:
    """Append RFC 6901 reference tokens to ``base``."""
    out = base
    for part in parts:
        token = str(part).replace("~", "~0").replace("/", "~1")
        out += "/" + token
    return out
