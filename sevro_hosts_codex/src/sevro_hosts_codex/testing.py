"""Test helpers for the Codex host: find the real Codex CLI for real-CLI tests."""

from __future__ import annotations

from sevro_core.testing import require_agent_cli

CODEX_BIN_ENV = "SEVRO_CODEX_BIN"


def require_codex() -> str:
    """The Codex CLI for real-CLI tests (see ``sevro_core.testing.require_agent_cli``)."""
    return require_agent_cli("codex", CODEX_BIN_ENV, "Codex")
