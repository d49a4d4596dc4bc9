"""Fixture tools and hooks: executables a Git fixture installs under its ``.git`` directory.

``bin`` tools land in ``.git/fixture-bin`` (first on the host's ``PATH``), ``hooks`` in
``.git/hooks``. Both live inside ``.git`` so they are never part of the tracked tree, and both
are installed after sevro's own commits, which ran with hooks disabled.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from collections.abc import Mapping
from pathlib import Path

from attrs import frozen

from sevro_core.errors import ConfigurationError, join_pointer
from sevro_core.fileio import write_all
from sevro_core.jsonio import JsonValue
from sevro_core.limits import (
    MAX_FIXTURE_HOOK_BYTES,
    MAX_FIXTURE_HOOKS,
    MAX_FIXTURE_TOOL_BYTES,
    MAX_FIXTURE_TOOL_NAME_LENGTH,
    MAX_FIXTURE_TOOLS,
)

TOOL_NAME_PATTERN = r"^[A-Za-z][A-Za-z0-9._-]*$"
HOOK_NAME_PATTERN = r"^[a-z][a-z0-9-]*$"
FIXTURE_BIN = ".git/fixture-bin"
HOOKS_DIR = ".git/hooks"
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


@frozen
class _Kind:
    key: str
    pattern: re.Pattern[str]
    count: int
    size: int


_TOOLS = _Kind("bin", re.compile(TOOL_NAME_PATTERN), MAX_FIXTURE_TOOLS, MAX_FIXTURE_TOOL_BYTES)
_HOOKS = _Kind("hooks", re.compile(HOOK_NAME_PATTERN), MAX_FIXTURE_HOOKS, MAX_FIXTURE_HOOK_BYTES)


@frozen
class FixtureTools:
    """Validated ``bin`` and ``hooks`` maps, sorted by name."""

    bin: tuple[tuple[str, str], ...] = ()
    hooks: tuple[tuple[str, str], ...] = ()

    @property
    def byte_size(self) -> int:
        return sum(len(n.encode()) + len(c.encode()) for n, c in (*self.bin, *self.hooks))

    def identity(self) -> dict[str, JsonValue]:
        return {"bin": dict(self.bin), "hooks": dict(self.hooks)}

    def install(self, workspace: Path) -> Path | None:
        """Write the executables (0755); return the canonical tool directory, if any."""
        bin_dir = None
        if self.bin:
            bin_dir = _install(workspace, FIXTURE_BIN, self.bin)
        if self.hooks:
            _install(workspace, HOOKS_DIR, self.hooks)
        return bin_dir


def compile_tools(declaration: Mapping[str, JsonValue]) -> FixtureTools:
    """Check names, counts, sizes and content of ``bin`` and ``hooks`` (``ConfigurationError``)."""
    return FixtureTools(
        bin=_compile(declaration.get("bin", {}), _TOOLS),
        hooks=_compile(declaration.get("hooks", {}), _HOOKS),
    )


def _compile(entries: JsonValue, kind: _Kind) -> tuple[tuple[str, str], ...]:
    assert isinstance(entries, dict)  # the fixture's schema ran first
    if len(entries) > kind.count:
        raise ConfigurationError(f"more than {kind.count} entries", f"/{kind.key}")
    folded: dict[str, str] = {}
    total = 0
    for name, content in entries.items():
        pointer = join_pointer(f"/{kind.key}", name)
        if len(name) > MAX_FIXTURE_TOOL_NAME_LENGTH or not kind.pattern.fullmatch(name):
            raise ConfigurationError(
                f"name {name!r} must match {kind.pattern.pattern} and have at most "
                f"{MAX_FIXTURE_TOOL_NAME_LENGTH} characters",
                pointer,
            )
        if name.casefold() in folded:
            raise ConfigurationError(
                f"name {name!r} collides with {folded[name.casefold()]!r} (ignoring case)", pointer
            )
        folded[name.casefold()] = name
        if "\0" in content:
            raise ConfigurationError("content contains NUL", pointer)
        total += len(content.encode("utf-8"))
    if total > kind.size:
        raise ConfigurationError(f"contents exceed {kind.size} bytes in total", f"/{kind.key}")
    return tuple(sorted(entries.items()))


def _install(workspace: Path, relative: str, entries: tuple[tuple[str, str], ...]) -> Path:
    git_name, child = relative.split("/")
    fd = os.open(workspace / git_name, _DIR_FLAGS)
    try:
        try:
            os.mkdir(child, 0o700, dir_fd=fd)
        except FileExistsError:
            if not stat.S_ISDIR(os.lstat(child, dir_fd=fd).st_mode):
                raise NotADirectoryError(errno.ENOTDIR, f"{relative} is not a directory") from None
        target = os.open(child, _DIR_FLAGS, dir_fd=fd)
    finally:
        os.close(fd)
    try:
        for name, content in entries:
            out = os.open(name, _NEW_FILE, 0o700, dir_fd=target)
            try:
                os.fchmod(out, 0o755)
                write_all(out, content.encode("utf-8"))
            finally:
                os.close(out)
    finally:
        os.close(target)
    directory = workspace / relative
    if Path(os.path.realpath(directory)) != directory:
        raise NotADirectoryError(errno.ENOTDIR, f"{directory} is not canonical")
    return directory
