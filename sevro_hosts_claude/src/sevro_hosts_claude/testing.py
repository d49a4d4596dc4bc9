"""Test helpers for the Claude host: find the real Claude Code CLI for real-CLI tests."""

from __future__ import annotations

from sevro_core.testing import require_agent_cli

CLAUDE_BIN_ENV = "SEVRO_CLAUDE_BIN"


def require_claude() -> str:
    """The Claude Code CLI for real-CLI tests (see ``sevro_core.testing.require_agent_cli``)."""
    return require_agent_cli("claude", CLAUDE_BIN_ENV, "Claude Code")
