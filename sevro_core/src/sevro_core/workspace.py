"""Trial workspaces: creation (private, canonical), confined file access, and safe removal.

Agents may leave symlinks pointing anywhere and directories without permissions. Nothing here
follows a symlink out of the tree, and removal repairs owner permissions without following links.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from collections.abc import Sequence
from pathlib import Path

from attrs import frozen

from sevro_core.fileio import read_at_most, write_all

WORKSPACE_PREFIX = "sevro-case-"
PRIVATE_PREFIX = "sevro-private-"
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class WorkspaceEscapeError(OSError):
    """A path inside the workspace resolves through a symlink or outside the tree."""


def create_workspace(root: Path | None = None, prefix: str = WORKSPACE_PREFIX) -> Path:
    """Make a fresh 0700 directory and return its canonical path."""
    path = Path(tempfile.mkdtemp(prefix=prefix, dir=root)).resolve(strict=True)
    os.chmod(path, 0o700)
    return path


def _open_parent(root: Path, parts: Sequence[str], *, create: bool) -> int:
    """Open the directory holding ``parts[-1]`` by walking dir fds without following symlinks."""
    if any(part in ("", ".", "..") or "\0" in part for part in parts):
        raise WorkspaceEscapeError(
            errno.EINVAL, f"{'/'.join(parts)!r} is not a plain relative path"
        )
    fd = os.open(root, _DIR_FLAGS)
    try:
        for part in parts[:-1]:
            if create:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o700, dir_fd=fd)
            try:
                child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise WorkspaceEscapeError(
                        exc.errno, f"{part!r} is not a plain directory"
                    ) from None
                raise
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_parent(root: Path, relative: str) -> tuple[int, str]:
    """Open the directory holding ``relative`` without following symlinks: ``(fd, name)``.

    The caller closes the descriptor. A symlink or non-directory on the way raises
    :class:`WorkspaceEscapeError`.
    """
    parts = relative.split("/")
    return _open_parent(root, parts, create=False), parts[-1]


def write_confined(root: Path, relative: str, data: bytes) -> None:
    """Create or replace ``root/relative`` (0600) without following any symlink."""
    parts = relative.split("/")
    parent = _open_parent(root, parts, create=True)
    try:
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            fd = os.open(parts[-1], flags, 0o600, dir_fd=parent)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise WorkspaceEscapeError(exc.errno, f"{relative!r} is a symlink") from None
            raise
        try:
            write_all(fd, data)
        finally:
            os.close(fd)
    finally:
        os.close(parent)


def read_confined(root: Path, relative: str, limit: int) -> tuple[bytes, int]:
    """Read at most ``limit`` bytes of a regular file; return the bytes and the file's size."""
    parts = relative.split("/")
    parent = _open_parent(root, parts, create=False)
    try:
        try:
            # O_NONBLOCK: a FIFO planted by the candidate must not hang the host on open
            flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
            fd = os.open(parts[-1], flags, dir_fd=parent)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise WorkspaceEscapeError(exc.errno, f"{relative!r} is a symlink") from None
            raise
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise IsADirectoryError(errno.EISDIR, f"{relative!r} is not a regular file")
            return read_at_most(fd, limit), info.st_size
        finally:
            os.close(fd)
    finally:
        os.close(parent)


def remove_tree(path: Path) -> None:
    """Delete ``path`` and everything below it, repairing owner permissions, following no symlink.

    The walk is iterative and holds at most two descriptors, so a tree thousands of levels deep
    (deeper than Python's recursion limit, the descriptor limit, or ``PATH_MAX``) is removed too.
    """
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(info.st_mode):
        os.unlink(path)
        return
    parent_fd = os.open(path.parent, _DIR_FLAGS)
    try:
        _remove_directory(parent_fd, path.name)
    finally:
        os.close(parent_fd)


@frozen
class _Level:
    """A directory being emptied: its name in its parent, its identity, subdirectories left."""

    name: str
    identity: tuple[int, int]
    pending: list[str]


def _identity(fd: int) -> tuple[int, int]:
    info = os.fstat(fd)
    return info.st_dev, info.st_ino


def _enter(parent_fd: int, name: str) -> tuple[int, _Level]:
    """Open subdirectory ``name`` (owner rwx repaired), unlink its files, list its directories."""
    info = os.lstat(name, dir_fd=parent_fd)
    if info.st_mode & 0o700 != 0o700:
        # lstat said directory (not a link); every process of the trial is dead by now.
        os.chmod(name, stat.S_IMODE(info.st_mode) | 0o700, dir_fd=parent_fd)
    fd = os.open(name, _DIR_FLAGS, dir_fd=parent_fd)
    try:
        pending = []
        with os.scandir(fd) as entries:
            names = [(entry.name, entry.is_dir(follow_symlinks=False)) for entry in entries]
        for entry_name, is_dir in names:
            if is_dir:
                pending.append(entry_name)
            else:
                os.unlink(entry_name, dir_fd=fd)
        return fd, _Level(name, _identity(fd), pending)
    except BaseException:
        os.close(fd)
        raise


def _remove_directory(parent_fd: int, name: str) -> None:
    """Depth-first removal that climbs back through ``..``, checking each directory's identity."""
    top = _identity(parent_fd)
    fd, level = _enter(parent_fd, name)
    levels = [level]
    try:
        while levels:
            current = levels[-1]
            if current.pending:
                child_fd, child = _enter(fd, current.pending.pop())
                os.close(fd)
                fd = child_fd
                levels.append(child)
                continue
            levels.pop()
            up = os.open("..", _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = up
            if _identity(fd) != (levels[-1].identity if levels else top):
                raise OSError(errno.EXDEV, f"{current.name!r} was moved during removal")
            os.rmdir(current.name, dir_fd=fd)
    finally:
        os.close(fd)
