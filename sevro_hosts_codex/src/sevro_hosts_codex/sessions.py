"""Codex's own session records (``sessions/**/rollout-*-<thread>.jsonl``) in the private home.

Codex 0.171.0 writes one rollout per thread (the root thread and each sub-agent thread), every
line ``{"timestamp", "ordinal", "type", "payload"}`` with ordinals increasing from 0; a resumed
thread appends to the same file. The ``--json`` stream carries no ordinals and no spawn
acceptance, so the native-call and continuation observations read these files. Every read is
bounded, follows no symlink and stays inside the trial's private ``CODEX_HOME``: anything
missing, linked, oversized, ambiguous or malformed is reported as such, never guessed.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from attrs import frozen

from sevro_hosts_codex.limits import (
    MAX_CODEX_SESSION_BYTES,
    MAX_CODEX_SESSION_ENTRIES,
    MAX_CODEX_SESSION_FILES,
)

THREAD_ID = re.compile(r"^[A-Za-z0-9._-]{1,128}$")
FOUND, UNAVAILABLE, PARTIAL, AMBIGUOUS = "found", "unavailable", "partial", "ambiguous"


@frozen
class Entry:
    """One validated rollout line: its native ordinal, line type and payload."""

    ordinal: int
    kind: str
    payload: Mapping[str, Any]


@frozen
class Session:
    """A thread's rollout as read: ``status`` is ``found`` (then ``complete`` says whether
    every line parsed within the bounds), or why it could not be read."""

    status: str
    entries: tuple[Entry, ...] = ()
    complete: bool = False

    @property
    def usable(self) -> bool:
        return self.status == FOUND and self.complete

    @property
    def last_ordinal(self) -> int | None:
        return self.entries[-1].ordinal if self.usable and self.entries else None


def locate(codex_home: Path, thread_id: str) -> tuple[str, Path | None]:
    """The one regular ``rollout-*-<thread>.jsonl`` below ``codex_home/sessions``: a missing
    tree or file is ``unavailable``; a link, an unreadable directory or too many entries is
    ``partial``; two matches are ``ambiguous``."""
    if not THREAD_ID.match(thread_id):
        return PARTIAL, None
    root = codex_home / "sessions"
    try:
        info = os.lstat(root)
    except FileNotFoundError:
        return UNAVAILABLE, None
    except OSError:
        return PARTIAL, None
    if not stat.S_ISDIR(info.st_mode):
        return PARTIAL, None
    suffix, matches, visited, pending = f"-{thread_id}.jsonl", [], 0, [root]
    while pending:
        try:
            with os.scandir(pending.pop()) as found:
                entries = list(found)
        except OSError:
            return PARTIAL, None
        for entry in entries:
            visited += 1
            if visited > MAX_CODEX_SESSION_FILES or entry.is_symlink():
                return PARTIAL, None
            if entry.is_dir(follow_symlinks=False):
                pending.append(Path(entry.path))
            elif entry.name.startswith("rollout-") and entry.name.endswith(suffix):
                matches.append(Path(entry.path))
    if len(matches) > 1:
        return AMBIGUOUS, None
    return (FOUND, matches[0]) if matches else (UNAVAILABLE, None)


def read_session(codex_home: Path, thread_id: str) -> Session:
    """The thread's rollout, located, read (bounded, no symlink) and parsed."""
    status, path = locate(codex_home, thread_id)
    if path is None:
        return Session(status)
    data = _read_bounded(path)
    if data is None:
        return Session(PARTIAL)
    entries, complete = parse_entries(data)
    return Session(FOUND, entries, complete)


def _read_bounded(path: Path) -> bytes | None:
    """The file's bytes, or None when it is no regular file, unreadable or too large."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_CODEX_SESSION_BYTES:
            return None
        chunks, total = [], 0
        while chunk := os.read(fd, 1 << 20):
            total += len(chunk)
            if total > MAX_CODEX_SESSION_BYTES:
                return None
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def parse_entries(data: bytes) -> tuple[tuple[Entry, ...], bool]:
    """Every line as an ``Entry``; complete only when each is a JSON object with an integer
    ordinal above the previous one, a string type and an object payload (and there is one)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return (), False
    entries: list[Entry] = []
    complete, last = True, -1
    for line in text.split("\n"):
        if not line.strip():
            continue
        if len(entries) >= MAX_CODEX_SESSION_ENTRIES:
            return tuple(entries), False
        entry = _entry(line, last)
        if entry is None:
            complete = False
            continue
        last = entry.ordinal
        entries.append(entry)
    return tuple(entries), complete and bool(entries)


def _entry(line: str, last: int) -> Entry | None:
    try:
        value = json.loads(line)
    except ValueError:
        return None
    if not isinstance(value, dict):
        return None
    ordinal, kind, payload = value.get("ordinal"), value.get("type"), value.get("payload")
    if not isinstance(ordinal, int) or isinstance(ordinal, bool) or ordinal <= last:
        return None
    if not isinstance(kind, str) or not isinstance(payload, dict):
        return None
    return Entry(ordinal, kind, payload)
