"""Finding the native Codex executable behind ``--codex-bin`` or ``codex`` on PATH.

The npm package installs ``codex`` as a Node launcher; sevro runs the native binary it launches
directly (no Node in the trial environment) and points Codex's sandbox helper at it.
"""

from __future__ import annotations

import platform

from sevro_core.api import (
    BinaryError,
    NativeBinary,
    binary_version,
    candidate_binary,
    is_native_executable,
)

_TRIPLES = {
    ("Linux", "x86_64"): ("codex-linux-x64", "x86_64-unknown-linux-musl"),
    ("Linux", "aarch64"): ("codex-linux-arm64", "aarch64-unknown-linux-musl"),
    ("Darwin", "x86_64"): ("codex-darwin-x64", "x86_64-apple-darwin"),
    ("Darwin", "arm64"): ("codex-darwin-arm64", "aarch64-apple-darwin"),
}
CodexBinary = NativeBinary
TESTED_VERSION = "codex-cli 0.171.0"

__all__ = ["TESTED_VERSION", "BinaryError", "CodexBinary", "locate", "version"]


def locate(configured: str | None) -> CodexBinary:
    """Resolve the binary; raise ``BinaryError`` with a fix when there is none."""
    real = candidate_binary(configured, "codex", "--codex-bin", "@openai/codex")
    if is_native_executable(real):
        parent = real.parent
        tree = (
            parent.parent
            if parent.name == "bin" and (parent.parent / "codex-path").is_dir()
            else parent
        )
        return CodexBinary(native=real, tree=tree)
    key = (platform.system(), platform.machine())
    if key not in _TRIPLES:
        raise BinaryError(f"{real} is not a native binary and {key} has no known Codex package")
    package, triple = _TRIPLES[key]
    # bin/codex.js in @openai/codex; the platform package is a sibling or a nested dependency.
    codex_pkg = real.parent.parent
    for root in (codex_pkg.parent, codex_pkg / "node_modules" / "@openai"):
        vendor = root / package / "vendor" / triple
        native = vendor / "bin" / "codex"
        if is_native_executable(native):
            return CodexBinary(native=native.resolve(), tree=vendor.resolve())
    raise BinaryError(
        f"{real} is not a native Codex binary and no {package} package was found next to it; "
        "reinstall @openai/codex or pass --codex-bin pointing at the native binary"
    )


def version(binary: CodexBinary, timeout: float = 20) -> str:
    """``codex --version`` (for example ``codex-cli 0.171.0``); raises ``BinaryError``."""
    return binary_version(binary, lambda text: text.startswith("codex"), "Codex", {}, timeout)
