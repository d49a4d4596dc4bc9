"""A case's evaluator directories, read once at load time (``evaluator`` in the case file).

Verifier scripts, gold files and oracles belong to the evaluator, not the fixture: each
directory is named, relative to the case file, walked without following a link, bounded and
fingerprinted, so a changed verifier changes the case's identity. The engine hides them from
the candidate and mounts them read-only for checks (``docs/evaluator-resources.md``).
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from sevro_core.errors import InvocationError, join_pointer
from sevro_core.formats.canonical import hash_json
from sevro_core.limits import MAX_EVALUATOR_BYTES, MAX_EVALUATOR_ENTRIES
from sevro_core.models import EvaluatorDirectory

_DIRECTORY_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_CHUNK = 1024 * 1024


class _Refused(Exception):
    """Why a directory cannot be an evaluator directory (becomes an InvocationError)."""


class _Budget:
    def __init__(self) -> None:
        self.entries = 0
        self.bytes = 0

    def entry(self) -> None:
        self.entries += 1
        if self.entries > MAX_EVALUATOR_ENTRIES:
            raise _Refused(f"holds more than {MAX_EVALUATOR_ENTRIES} entries")

    def take(self, size: int) -> None:
        self.bytes += size
        if self.bytes > MAX_EVALUATOR_BYTES:
            raise _Refused(f"holds more than {MAX_EVALUATOR_BYTES} bytes")


def read_evaluator(
    declared: Mapping[str, str], *, source: str | Path, pointer: str
) -> tuple[EvaluatorDirectory, ...]:
    """Every declared directory, in name order; one exit-64 line per problem."""
    base = Path(source).resolve().parent
    out = []
    for name in sorted(declared):
        where = join_pointer(pointer, "evaluator", name)
        relative = declared[name]
        try:
            if os.path.isabs(relative):
                raise _Refused("must be relative to the case file")
            out.append(_read_one(name, base / relative))
        except _Refused as exc:
            raise InvocationError(
                f"evaluator directory {relative!r} {exc}", source=source, pointer=where
            ) from None
    return tuple(out)


def changed_since_loaded(directories: Sequence[EvaluatorDirectory]) -> str | None:
    """Why the directories checks would see differ from those fingerprinted into identity
    (one changed, vanished or outgrew its bounds since the case was loaded), or None."""
    for directory in directories:
        changed = f"evaluator directory {directory.name!r} changed since the case was loaded"
        try:
            now = _read_one(directory.name, directory.path).fingerprint
        except _Refused as exc:
            return f"{changed}: it {exc}"
        if now != directory.fingerprint:
            return changed
    return None


def _read_one(name: str, path: Path) -> EvaluatorDirectory:
    try:
        info = os.lstat(path)
    except OSError:
        raise _Refused("does not exist") from None
    if stat.S_ISLNK(info.st_mode):
        raise _Refused("is a symbolic link (refused)")
    if not stat.S_ISDIR(info.st_mode):
        raise _Refused("is not a directory")
    canonical = path.resolve()
    budget = _Budget()
    try:
        root = os.open(canonical, _DIRECTORY_FLAGS)
        try:
            entries = sorted(_walk(root, "", budget))
        finally:
            os.close(root)
    except OSError as exc:
        raise _Refused(f"cannot be read: {exc.strerror or exc}") from None
    fingerprint = hash_json([list(entry) for entry in entries])
    return EvaluatorDirectory(name, canonical, fingerprint, budget.entries, budget.bytes)


def _walk(directory: int, prefix: str, budget: _Budget) -> Iterator[tuple[str, str, str]]:
    """(path, mode, sha256) of every file below the open ``directory``; no link followed."""
    with os.scandir(directory) as listing:
        names = sorted(entry.name for entry in listing)
    for raw in names:
        budget.entry()
        shown = f"{prefix}{raw}"
        if not shown.isprintable():  # a surrogate (not UTF-8) or a control character
            raise _Refused(f"holds a name that is not printable UTF-8: {shown!r}")
        info = os.stat(raw, dir_fd=directory, follow_symlinks=False)
        if stat.S_ISLNK(info.st_mode):
            raise _Refused(f"holds a symbolic link {shown!r} (refused)")
        if stat.S_ISDIR(info.st_mode):
            child = os.open(raw, _DIRECTORY_FLAGS, dir_fd=directory)
            try:
                yield from _walk(child, shown + "/", budget)
            finally:
                os.close(child)
            continue
        if not stat.S_ISREG(info.st_mode):
            raise _Refused(f"holds a special file {shown!r} (refused)")
        mode = "100755" if info.st_mode & stat.S_IXUSR else "100644"
        yield shown, mode, _digest(raw, directory, budget, shown)


def _digest(raw: str, directory: int, budget: _Budget, shown: str) -> str:
    try:
        fd = os.open(raw, _FILE_FLAGS, dir_fd=directory)
    except OSError as exc:
        raise _Refused(f"holds {shown!r}, which cannot be read: {exc.strerror}") from None
    digest = hashlib.sha256()
    try:
        while chunk := os.read(fd, _CHUNK):
            budget.take(len(chunk))
            digest.update(chunk)
    finally:
        os.close(fd)
    return digest.hexdigest()
