"""Finding the Claude Code executable behind ``--claude-bin`` or ``claude`` on PATH.

The npm package ships a native executable (``bin/claude.exe``); sevro runs it directly inside
its sandbox and mounts only the package directory it lives in.
"""

from __future__ import annotations

from sevro_core.api import (
    BinaryError,
    NativeBinary,
    binary_version,
    candidate_binary,
    is_native_executable,
)

TESTED_VERSION = "2.1.332 (Claude Code)"

ClaudeBinary = NativeBinary

__all__ = ["TESTED_VERSION", "BinaryError", "ClaudeBinary", "locate", "version"]


def locate(configured: str | None) -> ClaudeBinary:
    """Resolve the binary; raise ``BinaryError`` with a fix when there is none."""
    real = candidate_binary(configured, "claude", "--claude-bin", "@anthropic-ai/claude-code")
    if not is_native_executable(real):
        raise BinaryError(
            f"{real} is not a native Claude Code executable; pass --claude-bin pointing at "
            "node_modules/@anthropic-ai/claude-code/bin/claude.exe"
        )
    parent = real.parent
    tree = parent.parent if (parent.parent / "package.json").is_file() else parent
    return ClaudeBinary(native=real, tree=tree)


def version(binary: ClaudeBinary, timeout: float = 30) -> str:
    """``claude --version`` (for example ``2.1.332 (Claude Code)``); raises ``BinaryError``."""
    return binary_version(
        binary,
        lambda text: "Claude Code" in text,
        "Claude Code",
        {"DISABLE_AUTOUPDATER": "1"},
        timeout,
    )
