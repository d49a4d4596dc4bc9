"""Finding the native Codex executable behind ``--codex-bin`` or ``codex`` on PATH.

The npm package installs ``codex`` as a Node launcher; sevro runs the native binary it launches
directly (no Node in the trial environment) and points Codex's sandbox helper at it.
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
from pathlib import Path

from attrs import frozen

_TRIPLES = {
    ("Linux", "x86_64"): ("codex-linux-x64", "x86_64-unknown-linux-musl"),
    ("Linux", "aarch64"): ("codex-linux-arm64", "aarch64-unknown-linux-musl"),
    ("Darwin", "x86_64"): ("codex-darwin-x64", "x86_64-apple-darwin"),
    ("Darwin", "arm64"): ("codex-darwin-arm64", "aarch64-apple-darwin"),
}
_MAGIC = (b"\x7fELF", b"\xcf\xfa\xed\xfe", b"\xca\xfe\xba\xbe")


class BinaryError(Exception):
    pass


@frozen
class CodexBinary:
    native: Path
    """The native executable (canonical)."""
    tree: Path
    """The directory Codex's commands need to read: the vendor directory or the binary's own."""


def _is_native(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            return handle.read(4) in _MAGIC
    except OSError:
        return False


def locate(configured: str | None) -> CodexBinary:
    """Resolve the binary; raise ``BinaryError`` with a fix when there is none."""
    if configured is not None:
        candidate = Path(configured)
        if not candidate.is_file():
            raise BinaryError(f"--codex-bin {configured} is not a file")
    else:
        found = shutil.which("codex")
        if found is None:
            raise BinaryError(
                "codex is not on PATH; install it (npm install -g @openai/codex) "
                "or pass --codex-bin"
            )
        candidate = Path(found)
    real = candidate.resolve()
    if _is_native(real):
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
        if _is_native(native):
            return CodexBinary(native=native.resolve(), tree=vendor.resolve())
    raise BinaryError(
        f"{real} is not a native Codex binary and no {package} package was found next to it; "
        "reinstall @openai/codex or pass --codex-bin pointing at the native binary"
    )


def version(binary: CodexBinary, timeout: float = 20) -> str:
    """``codex --version`` (for example ``codex-cli 0.171.0``); raises ``BinaryError``."""
    try:
        done = subprocess.run(
            [str(binary.native), "--version"],
            capture_output=True,
            timeout=timeout,
            env={"PATH": os.defpath, "LANG": "C.UTF-8"},
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise BinaryError(f"{binary.native} --version failed: {exc}") from None
    text = done.stdout.decode("utf-8", "replace").strip()
    if done.returncode != 0 or not text.startswith("codex"):
        raise BinaryError(f"{binary.native} --version did not report a Codex version")
    return text[:200]
