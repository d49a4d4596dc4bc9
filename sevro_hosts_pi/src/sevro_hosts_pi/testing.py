"""Test helpers for the pi host: find the real pi CLI for real-CLI tests."""

from __future__ import annotations

from sevro_core.testing import require_agent_cli

PI_BIN_ENV = "SEVRO_PI_BIN"


def require_pi() -> str:
    """The pi CLI for real-CLI tests (see ``sevro_core.testing.require_agent_cli``)."""
    return require_agent_cli("pi", PI_BIN_ENV, "pi")
