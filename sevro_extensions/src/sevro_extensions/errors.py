"""Typed failures of an extension call, each one clear line.

An extension is untrusted: whatever it prints is collapsed to one line and shortened before it
enters a message, so a failure can never forge extra lines in sevro's output. None of these is
ever a pass; the engine turns them into errors (docs/extensions.md).
"""

from __future__ import annotations

import json

from sevro_core.api import JsonValue

_SHOWN_CHARS = 200


def one_line(text: str, limit: int = 4096) -> str:
    """``text`` with all whitespace runs as one space, at most ``limit`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def shown(value: JsonValue) -> str:
    """A value an extension sent, as short one-line JSON."""
    return one_line(json.dumps(value, ensure_ascii=False), _SHOWN_CHARS)


class ExtensionError(Exception):
    """An extension call failed; ``str(error)`` is one line."""

    def __init__(self, message: str, *, stderr: bytes = b"") -> None:
        self.message = one_line(message)
        self.stderr = stderr
        """What the extension wrote on stderr (bounded), for diagnostics only."""
        super().__init__(self.message)


class ExtensionProcessError(ExtensionError):
    """The process failed: it could not start, exited nonzero, timed out, was cancelled or
    wrote too much."""


class ExtensionProtocolError(ExtensionError):
    """The exchange broke the protocol: bytes that are not JSON, a schema-invalid request or
    response, or an ``id``/``protocol``/``method`` that does not echo the request."""


class ExtensionReportedError(ExtensionError):
    """The extension answered with an ``error`` object."""

    def __init__(self, code: str, message: str, *, stderr: bytes = b"") -> None:
        self.code = code
        self.reported = message
        super().__init__(f"extension reported {code}: {message}", stderr=stderr)


class ExtensionSourceError(ExtensionError):
    """A file of the source closure changed, vanished or became unreadable during the run."""


class NegotiationError(ExtensionError):
    """The extension's ``describe`` answer cannot be used with this engine and host."""
