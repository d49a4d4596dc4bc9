"""Bounds only the pi host applies (docs/limits.md lists them with the core's)."""

from __future__ import annotations

MAX_TOOLS = 64
"""Tool names one case may declare for pi (``--tools``)."""

MAX_TOOL_NAME_CHARS = 64
"""Characters of one declared tool name."""

MAX_SESSION_FILE_BYTES = 64 * 1024 * 1024
"""Bytes of pi's session file kept as the ``sevro.pi.session`` artifact when the runtime
profile asks for the session (a larger one is not retained and the trial says so)."""

MAX_BRIDGE_SOCKET_PATH_BYTES = 107
"""Bytes of the model bridge's Unix socket path on Linux (``sun_path`` less its NUL): a longer
trial root is refused before the run, never silently truncated."""

MAX_BRIDGE_CONNECTIONS = 16
"""Connections the model bridge serves at once; more are answered 503 and closed."""

MAX_BRIDGE_HEADER_BYTES = 64 * 1024
"""Bytes of one request's line and headers the model bridge reads (more: 431)."""

MAX_BRIDGE_HEADERS = 100
"""Header fields of one request the model bridge accepts (more: 431)."""

MAX_BRIDGE_REQUEST_BYTES = 32 * 1024 * 1024
"""Bytes of one request body the model bridge forwards to the model (more: 413)."""

MAX_BRIDGE_RESPONSE_BYTES = 64 * 1024 * 1024
"""Bytes of one model response the model bridge streams back; beyond it the stream is cut
(the agent sees a truncated response, never a silently shortened one)."""

BRIDGE_CLIENT_TIMEOUT_SECONDS = 60
"""Seconds the model bridge gives the sandbox to send a whole request, and each write back."""

BRIDGE_CONNECT_TIMEOUT_SECONDS = 15
"""Seconds to connect (and complete TLS) to the upstream model endpoint; beyond it: 502."""

BRIDGE_UPSTREAM_IDLE_SECONDS = 900
"""Seconds the upstream model may stay silent (before its headers or between chunks) before the
model bridge gives up on the request (the turn's own stall and turn timeouts usually fire first)."""

BRIDGE_REFUSAL_DRAIN_SECONDS = 2
"""Seconds the model bridge keeps reading (and dropping) a refused request's remaining bytes, so
the sandbox reads the refusal instead of a broken pipe."""

BRIDGE_CLOSE_JOIN_SECONDS = 5
"""Seconds closing the model bridge waits for its threads after shutting their sockets down."""

MAX_BRIDGE_ERRORS = 16
"""Refusals and upstream failures the model bridge keeps for the turn's failure reason."""

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
