"""What every agent CLI's event stream parser checks before it reads a single event.

A stream is JSON Lines on stdout: bounded in total and per line, ending with a newline, each
line one JSON object with a known string ``type``. The host's own parser (its ``events.py``)
owns the meaning of the events; anything it cannot trust raises ``StreamError``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from sevro_core.limits import MAX_HOST_EVENT_LINE_BYTES, MAX_HOST_EVENT_STREAM_BYTES


class StreamError(Exception):
    """The event stream cannot be trusted; the message says why and where."""


def stream_lines(stream: bytes) -> Iterator[tuple[int, bytes]]:
    """Numbered non-blank lines of a whole, bounded stream (``StreamError`` if it is not)."""
    if len(stream) > MAX_HOST_EVENT_STREAM_BYTES:
        raise StreamError(f"event stream is larger than {MAX_HOST_EVENT_STREAM_BYTES} bytes")
    if stream and not stream.endswith(b"\n"):
        raise StreamError("event stream is truncated (its last line has no newline)")
    for number, line in enumerate(stream.splitlines(), start=1):
        if line.strip():
            yield number, line


def decode_event(
    line: bytes,
    number: int,
    event_types: frozenset[str],
    max_line_bytes: int = MAX_HOST_EVENT_LINE_BYTES,
) -> dict[str, Any]:
    """One line as an event object whose ``type`` is one of ``event_types``; a host whose CLI
    writes longer lines passes its own documented ``max_line_bytes``."""
    if len(line) > max_line_bytes:
        raise StreamError(f"line {number} is longer than {max_line_bytes} bytes")
    try:
        event = json.loads(line.decode("utf-8"), parse_constant=_no_constant)
    except (UnicodeDecodeError, ValueError) as exc:
        raise StreamError(f"line {number} is not JSON: {exc}") from None
    if not isinstance(event, dict) or not isinstance(event.get("type"), str):
        raise StreamError(f"line {number} is not an event object with a string 'type'")
    if event["type"] not in event_types:
        raise StreamError(f"line {number} has an unknown event type {event['type']!r}")
    return event


def _no_constant(name: str) -> None:
    raise ValueError(f"non-standard constant {name}")
