"""Descriptor-level reads and writes shared by everything that touches untrusted trees."""

from __future__ import annotations

import os

_CHUNK = 1 << 20


def read_at_most(fd: int, limit: int) -> bytes:
    """Read until EOF or ``limit`` bytes, whichever comes first."""
    chunks = []
    remaining = limit
    while remaining > 0:
        chunk = os.read(fd, min(remaining, _CHUNK))
        if not chunk:
            break
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def write_all(fd: int, data: bytes) -> None:
    """Write every byte of ``data`` (``os.write`` may write less than asked)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
