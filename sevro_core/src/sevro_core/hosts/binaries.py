"""Finding an agent CLI's native executable and asking it for its version.

The npm packages install Node launchers; sevro runs the native executable behind them directly
(no Node in the trial environment) and mounts only the tree it needs.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from collections.abc import Callable
from pathlib import Path

from attrs import frozen

_NATIVE_MAGIC = (b"\x7fELF", b"\xcf\xfa\xed\xfe", b"\xca\xfe\xba\xbe")


class BinaryError(Exception):
    """The agent CLI cannot be found or does not answer; the message says how to fix it."""


@frozen
class NativeBinary:
    native: Path
    """The native executable (canonical)."""
    tree: Path
    """The directory the executable needs to read (its npm package, or its own directory)."""


def is_native_executable(path: Path) -> bool:
    """ELF or Mach-O, not a script or a Node launcher."""
    try:  # O_NONBLOCK and a regular-file check: an executable FIFO on PATH must not block
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return False
    try:
        return stat.S_ISREG(os.fstat(fd).st_mode) and os.read(fd, 4) in _NATIVE_MAGIC
    except OSError:
        return False
    finally:
        os.close(fd)


def candidate_binary(configured: str | None, command: str, flag: str, package: str) -> Path:
    """``flag``'s file, else ``command`` on PATH, canonicalised; ``BinaryError`` with a fix."""
    if configured is not None:
        candidate = Path(configured)
        if not candidate.is_file():
            raise BinaryError(f"{flag} {configured} is not a file")
    else:
        found = shutil.which(command)
        if found is None:
            raise BinaryError(
                f"{command} is not on PATH; install it (npm install -g {package}) or pass {flag}"
            )
        candidate = Path(found)
    return candidate.resolve()


def binary_version(
    binary: NativeBinary,
    accepts: Callable[[str], bool],
    what: str,
    env: dict[str, str],
    timeout: float,
) -> str:
    """``<binary> --version`` when ``accepts`` its output; else ``BinaryError``."""
    try:
        done = subprocess.run(
            [str(binary.native), "--version"],
            capture_output=True,
            timeout=timeout,
            env={"PATH": os.defpath, "LANG": "C.UTF-8", **env},
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise BinaryError(f"{binary.native} --version failed: {exc}") from None
    text = done.stdout.decode("utf-8", "replace").strip()
    if done.returncode != 0 or not accepts(text):
        raise BinaryError(f"{binary.native} --version did not report a {what} version")
    return text[:200]
