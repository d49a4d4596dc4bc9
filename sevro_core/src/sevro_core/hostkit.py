"""Small pieces every agent-CLI host needs: private files, secret scrubbing, stderr tails.

Kept in one place so the Codex and Claude hosts treat credentials and diagnostics the same way.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from sevro_core.errors import ConfigurationError, InvocationError
from sevro_core.jsonio import read_bounded
from sevro_core.limits import MAX_HOST_CREDENTIAL_FILE_BYTES

REDACTED = "[redacted]"


class HostFailure(Exception):
    """Ends a trial early with a message; ``cancelled`` when the run was cancelled."""

    def __init__(self, message: str, *, cancelled: bool = False, records: tuple[Any, ...] = ()):
        super().__init__(message)
        self.message = message
        self.cancelled = cancelled
        self.records = records


def inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def read_credential_file(path: Path, flag: str) -> bytes:
    """A credential file, bounded and non-empty (``ConfigurationError`` naming ``flag``)."""
    try:
        data = read_bounded(path, MAX_HOST_CREDENTIAL_FILE_BYTES, what=flag)
    except InvocationError as exc:
        raise ConfigurationError(exc.one_line()) from None
    if not data.strip():
        raise ConfigurationError(f"{flag} is empty")
    return data


def write_private(path: Path, data: bytes) -> None:
    """Create ``path`` (0600, never through a symlink, never over an existing file)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def secret_strings(data: bytes) -> list[str]:
    """String values of a credential file, to keep them out of any retained text."""
    try:
        document = json.loads(data)
    except ValueError:
        text = data.decode("utf-8", "replace").strip()
        return [text] if len(text) >= 8 else []
    found: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, str) and len(value) >= 8:
            found.append(value)
        elif isinstance(value, dict):
            for inner in value.values():
                walk(inner)
        elif isinstance(value, list):
            for inner in value:
                walk(inner)

    walk(document)
    return found


def scrub(text: str, secrets: list[str]) -> str:
    for secret in secrets:
        text = text.replace(secret, REDACTED)
    return text


def tail(stderr: bytes) -> str:
    """The end of a CLI's stderr on one line, for a diagnostic."""
    text = stderr.decode("utf-8", "replace").strip()
    return " ".join(text[-1500:].split()) or "(empty)"
