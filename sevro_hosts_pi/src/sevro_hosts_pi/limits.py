"""Bounds only the pi host applies (docs/limits.md lists them with the core's)."""

from __future__ import annotations

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
