"""Bounds only the Claude host applies (docs/limits.md lists them with the core's)."""

from __future__ import annotations

MAX_HOST_TOOL_CALLS_PER_TURN = 4096
"""Tool calls one Claude Code turn may make before its stream is rejected."""
