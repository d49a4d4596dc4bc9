"""Which workspace files a trial changed, from digests taken before and after the agent ran.

Agent CLIs report edits in their own ways (patches, commands, tools); comparing the workspace
itself is the one account every host can give. ``.git`` internals are skipped. Symlinks are
recorded by their target text and never followed. Beyond the scan bounds the result is partial.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from attrs import frozen

from sevro_core.jsonio import JsonValue
from sevro_core.limits import MAX_CHANGE_SCAN_BYTES, MAX_CHANGE_SCAN_FILES

FILES_CHANGED_OBSERVATION = "sevro.files-changed"


@frozen
class Snapshot:
    entries: dict[str, tuple[str, str, int]]  # path -> (kind, sha256, byteLength)
    complete: bool


def snapshot(workspace: Path) -> Snapshot:
    """Digest every file below ``workspace``; iterative, so no tree depth can exhaust the stack."""
    entries: dict[str, tuple[str, str, int]] = {}
    budget = MAX_CHANGE_SCAN_BYTES
    complete = True
    visited = 0
    pending = [(workspace, "")]
    while pending:
        directory, prefix = pending.pop()
        try:
            names = sorted(os.listdir(directory))
        except OSError:  # unreadable, or a path beyond PATH_MAX: the account is partial
            complete = False
            continue
        subdirectories = []
        for name in names:
            relative = f"{prefix}{name}"
            if relative == ".git":
                continue
            visited += 1  # directories count too: a million empty ones is no cheaper to walk
            if visited > MAX_CHANGE_SCAN_FILES:
                return Snapshot(entries, False)
            path = directory / name
            try:
                info = os.lstat(path)
            except OSError:
                complete = False
                continue
            if stat.S_ISDIR(info.st_mode):
                subdirectories.append((path, f"{relative}/"))
            elif stat.S_ISLNK(info.st_mode):
                target = os.readlink(path).encode("utf-8", "surrogateescape")
                entries[relative] = ("symlink", hashlib.sha256(target).hexdigest(), len(target))
            elif stat.S_ISREG(info.st_mode):
                digest = _digest(path) if info.st_size <= budget else None
                if digest is None:
                    complete = False
                    continue
                budget -= info.st_size
                entries[relative] = ("file", digest, info.st_size)
        pending.extend(reversed(subdirectories))  # depth-first, in name order
    return Snapshot(entries, complete)


def _digest(path: Path) -> str | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        digest = hashlib.sha256()
        while chunk := os.read(fd, 1 << 20):
            digest.update(chunk)
        return digest.hexdigest()
    finally:
        os.close(fd)


def changes(before: Snapshot, after: Snapshot) -> dict[str, JsonValue]:
    """The ``sevro.files-changed`` data: ``{changes: [{path, change, sha256?, byteLength?}]}``."""
    out: list[JsonValue] = []
    for path in sorted(set(before.entries) | set(after.entries)):
        old, new = before.entries.get(path), after.entries.get(path)
        if old == new:
            continue
        entry: dict[str, JsonValue] = {"path": path}
        if new is None:
            entry["change"] = "deleted"
        else:
            entry["change"] = "added" if old is None else "modified"
            entry.update(kind=new[0], sha256=new[1], byteLength=new[2])
        out.append(entry)
    return {"changes": out}
