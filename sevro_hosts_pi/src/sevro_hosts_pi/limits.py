"""Bounds only the pi host applies (docs/limits.md lists them with the core's)."""

from __future__ import annotations

MAX_TOOLS = 64
"""Tool names one case may declare for pi (``--tools``)."""

MAX_TOOL_NAME_CHARS = 64
"""Characters of one declared tool name."""

MAX_SESSION_FILE_BYTES = 64 * 1024 * 1024
"""Bytes of pi's session file kept as the ``sevro.pi.session`` artifact when the runtime
profile asks for the session (a larger one is not retained and the trial says so)."""
