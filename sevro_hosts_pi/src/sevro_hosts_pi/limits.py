"""Bounds only the pi host applies (docs/limits.md lists them with the core's)."""

from __future__ import annotations

MIB = 1024 * 1024

MAX_PI_EVENT_LINE_BYTES = 16 * MIB
"""Bytes of one line of ``pi --mode json`` output. pi repeats the whole partial message in
every ``message_update`` (twice) and all of this invocation's messages in ``agent_end``, so a
line grows with the turn, not with one event."""

MAX_PI_EVENT_STREAM_BYTES = 128 * MIB
"""Bytes of one turn's ``pi --mode json`` stream. It grows quadratically with a reply's length
(each streamed delta repeats the partial message); a larger stream fails the turn."""

MAX_PI_TOOL_EXECUTIONS_PER_TURN = 4096
"""Tool executions one pi turn may start before its stream is rejected."""

MAX_PI_OBSERVED_TEXT_CHARS = 256 * 1024
"""UTF-16 code units of a system prompt or one request's rendered provider context the pi
observer records (longer: cut, and the observation is partial). Mirrored in observer.mjs."""

MAX_PI_OBSERVED_REQUESTS = 1024
"""Provider requests of one turn the pi observer records (more: partial). Mirrored in
observer.mjs."""

MAX_PI_OBSERVED_TOOL_NAMES = 256
"""Tool names of one provider request the pi observer records (more, or a name longer than
``MAX_PI_OBSERVED_TOOL_NAME_CHARS``: the request's tools are unreadable, so partial).
Mirrored in observer.mjs."""

MAX_PI_OBSERVED_TOOL_NAME_CHARS = 256
"""Characters of one offered tool name the pi observer records. Mirrored in observer.mjs."""

MAX_PI_OBSERVE_LINE_BYTES = 2 * MIB
"""Bytes of one pi observer record (its text bound escaped as JSON, plus the tool names)."""

MAX_PI_OBSERVE_FILE_BYTES = 64 * MIB
"""Bytes of one turn's pi observer file; the observer stops writing (and marks the turn
partial) before it would pass this, so a larger file is not the observer's."""
