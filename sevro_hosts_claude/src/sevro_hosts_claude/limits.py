"""Bounds only the Claude host applies (docs/limits.md lists them with the core's)."""

from __future__ import annotations

MAX_HOST_TOOL_CALLS_PER_TURN = 4096
"""Tool calls one Claude Code turn may make before its stream is rejected."""

MAX_SOCKET_PATH_BYTES = 107
"""Bytes a Unix socket's path holds on Linux (``sun_path`` less its terminating NUL): the
temp directory Claude Code's sandbox makes its bridge sockets in must leave room for them."""

MAX_SETTINGS_CHECK_BYTES = 1024 * 1024
"""Bytes of a workspace's Claude Code project settings file checked for hooks before each turn
(a larger file is refused)."""

MAX_PLUGIN_DIRS = 16
"""Plugin directories one Claude host configuration may declare (``pluginDirs``)."""

MAX_PLUGIN_MANIFEST_BYTES = 64 * 1024
"""Bytes of a declared plugin's ``.claude-plugin/plugin.json`` read to learn its name."""

KEYCHAIN_TIMEOUT_SECONDS = 10
"""Seconds ``security find-generic-password`` may take to hand over the macOS keychain login."""

MAX_KEYCHAIN_OUTPUT_BYTES = 1024 * 1024
"""Bytes of the macOS keychain login accepted (the credential file's own bound)."""

MAX_NESTED_AGENTS = 64
"""Child Agent sessions ``sevro.claude.nested-skills`` lists per trial (more: truncated)."""

MAX_SUBAGENT_META_BYTES = 64 * 1024
"""Bytes of a child Agent session's ``.meta.json`` sidecar read to check the session graph."""

MAX_SUBAGENT_TRANSCRIPT_BYTES = 8 * 1024 * 1024
"""Bytes of a grandchild Agent session's ``agent-<id>.jsonl`` transcript read for its tool
calls (Claude Code streams only direct children; larger: partial)."""

MAX_NATIVE_TRANSCRIPT_BYTES = 8 * 1024 * 1024
"""Bytes of Claude Code's session transcript read for ``sevro.host.native-goal`` (a larger one
makes the observation unavailable)."""

MAX_GOAL_REASON_CHARS = 512
"""Characters of a native goal evaluator's reason kept in ``sevro.host.native-goal``."""

MAX_HOOK_EXECUTIONS = 256
"""Hook executions (and sevro Stop records) kept in ``sevro.host.hooks``."""

MAX_STOP_RECORD_BYTES = 64 * 1024
"""Bytes of one Stop hook input sevro's Stop hook records (a larger one is refused)."""

STOP_HOOK_TIMEOUT_S = 10
"""Seconds Claude Code gives sevro's Stop hook before it stops it."""
