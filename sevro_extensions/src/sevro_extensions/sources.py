"""The source closure: the files an extension's behaviour depends on, digested and re-checked.

The closure is ``argv[0]`` plus every ``--extension-source-file``: unique absolute paths of
regular files (not symlinks), at least one source file (``argv[0]`` named again as a source
counts once, as in Sevro). Its digest is
``hash_json([sha256 of each file, in order])`` (Sevro's ``hashJson``). The engine takes it
before discovery and checks it again before and after every call; any change fails the run,
so an extension cannot rewrite itself between the calls it answers.

A file whose device, inode, size, modification and change times are all as when it was last
hashed is not read again: every write moves its change time, which no process can set back,
and ``argv[0]`` is often a 100 MiB interpreter that would otherwise be hashed twice a call.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Sequence
from pathlib import Path

from attrs import frozen

from sevro_core.api import InvocationError, hash_json
from sevro_extensions.errors import ExtensionSourceError
from sevro_extensions.limits import MAX_EXTENSION_SOURCE_FILE_BYTES, MAX_EXTENSION_SOURCE_FILES

_CHUNK = 1 << 20
_Key = tuple[int, int, int, int, int]


@frozen
class SourceFile:
    """One file of the closure as last hashed: its path, identity and sha256."""

    path: Path
    key: _Key
    sha256: str


class _Unreadable(Exception):
    """Why a closure file cannot be hashed (a phrase)."""


def _key(info: os.stat_result) -> _Key:
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def _hash_file(path: Path, known: SourceFile | None = None) -> SourceFile:
    """Hash ``path`` (a regular file, never through a symlink), bounded; reuse ``known``
    when the file's identity is unchanged."""
    try:
        before = os.lstat(path)
    except FileNotFoundError:
        raise _Unreadable("does not exist") from None
    except OSError as exc:
        raise _Unreadable(f"cannot be read ({exc.strerror})") from None
    if stat.S_ISLNK(before.st_mode):
        raise _Unreadable("is a symlink")
    if not stat.S_ISREG(before.st_mode):
        raise _Unreadable("is not a regular file")
    if before.st_size > MAX_EXTENSION_SOURCE_FILE_BYTES:
        raise _Unreadable(f"is larger than {MAX_EXTENSION_SOURCE_FILE_BYTES} bytes")
    if known is not None and known.key == _key(before):
        return known
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError as exc:
        raise _Unreadable(f"cannot be read ({exc.strerror})") from None
    try:
        opened = os.fstat(fd)
        if _key(opened)[:2] != _key(before)[:2] or not stat.S_ISREG(opened.st_mode):
            raise _Unreadable("was replaced while it was read")
        digest, total = hashlib.sha256(), 0
        while chunk := os.read(fd, _CHUNK):
            total += len(chunk)
            if total > MAX_EXTENSION_SOURCE_FILE_BYTES:
                raise _Unreadable(f"is larger than {MAX_EXTENSION_SOURCE_FILE_BYTES} bytes")
            digest.update(chunk)
        after = os.fstat(fd)
    finally:
        os.close(fd)
    if _key(after) != _key(opened):
        raise _Unreadable("changed while it was read")
    return SourceFile(path=path, key=_key(after), sha256=digest.hexdigest())


@frozen
class SourceClosure:
    """The closure as digested; :meth:`verify` re-checks it and returns the fresh state."""

    files: tuple[SourceFile, ...]

    @property
    def digest(self) -> str:
        return hash_json([file.sha256 for file in self.files])

    @property
    def paths(self) -> tuple[Path, ...]:
        return tuple(file.path for file in self.files)

    def verify(self, when: str) -> SourceClosure:
        """Hash the closure again; raise :class:`ExtensionSourceError` naming the first file
        that changed, vanished or became unreadable (``when``: "before resolve", ...)."""
        fresh: list[SourceFile] = []
        for known in self.files:
            try:
                now = _hash_file(known.path, known)
            except _Unreadable as exc:
                raise ExtensionSourceError(f"extension source {known.path} {exc} {when}") from None
            if now.sha256 != known.sha256:
                raise ExtensionSourceError(f"extension source {known.path} changed {when}")
            fresh.append(now)
        return SourceClosure(files=tuple(fresh))


def source_closure(argv0: str, source_files: Sequence[str]) -> SourceClosure:
    """Digest ``[argv0, *source_files]`` before discovery; bad input is an
    :class:`InvocationError` (exit 64)."""
    if not source_files:
        raise InvocationError(
            "at least one --extension-source-file is required (the extension's own code)"
        )
    seen: set[str] = set()
    for name in source_files:
        if os.path.normpath(name) in seen:
            raise InvocationError("extension source is named twice", source=name)
        seen.add(os.path.normpath(name))
    # argv[0] may also be named as a source (a self-contained executable): it counts once
    names = [argv0, *(name for name in source_files if name != argv0)]
    if len(names) > MAX_EXTENSION_SOURCE_FILES:
        raise InvocationError(
            f"the extension source closure has more than {MAX_EXTENSION_SOURCE_FILES} files"
        )
    files: list[SourceFile] = []
    for name in names:
        if not Path(name).is_absolute():
            raise InvocationError("extension source must be an absolute path", source=name)
        try:
            files.append(_hash_file(Path(name)))
        except _Unreadable as exc:
            raise InvocationError(f"extension source {exc}", source=name) from None
    return SourceClosure(files=tuple(files))
