"""Finding the Claude Code executable behind ``--claude-bin`` or ``claude`` on PATH.

The npm package ships a native executable (``bin/claude.exe``); sevro runs it directly inside
its sandbox and mounts only the package directory it lives in.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from attrs import frozen

TESTED_VERSION = "2.1.332 (Claude Code)"
_MAGIC = (b"\x7fELF", b"\xcf\xfa\xed\xfe", b"\xca\xfe\xba\xbe")


class BinaryError(Exception):
    pass


@frozen
class ClaudeBinary:
    native: Path
    """The native executable (canonical)."""
    tree: Path
    """The directory mounted read-only for it: the npm package, or the binary's own directory."""


def _is_native(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            return handle.read(4) in _MAGIC
    except OSError:
        return False


def locate(configured: str | None) -> ClaudeBinary:
    """Resolve the binary; raise ``BinaryError`` with a fix when there is none."""
    if configured is not None:
        candidate = Path(configured)
        if not candidate.is_file():
            raise BinaryError(f"--claude-bin {configured} is not a file")
    else:
        found = shutil.which("claude")
        if found is None:
            raise BinaryError(
                "claude is not on PATH; install it (npm install -g @anthropic-ai/claude-code) "
                "or pass --claude-bin"
            )
        candidate = Path(found)
    real = candidate.resolve()
    if not _is_native(real):
        raise BinaryError(
            f"{real} is not a native Claude Code executable; pass --claude-bin pointing at "
            "node_modules/@anthropic-ai/claude-code/bin/claude.exe"
        )
    parent = real.parent
    tree = parent.parent if (parent.parent / "package.json").is_file() else parent
    return ClaudeBinary(native=real, tree=tree)


def version(binary: ClaudeBinary, timeout: float = 30) -> str:
    """``claude --version`` (for example ``2.1.332 (Claude Code)``); raises ``BinaryError``."""
    try:
        done = subprocess.run(
            [str(binary.native), "--version"],
            capture_output=True,
            timeout=timeout,
            env={"PATH": os.defpath, "LANG": "C.UTF-8", "DISABLE_AUTOUPDATER": "1"},
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise BinaryError(f"{binary.native} --version failed: {exc}") from None
    text = done.stdout.decode("utf-8", "replace").strip()
    if done.returncode != 0 or "Claude Code" not in text:
        raise BinaryError(f"{binary.native} --version did not report a Claude Code version")
    return text[:200]
