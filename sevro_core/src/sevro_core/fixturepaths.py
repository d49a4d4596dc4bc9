"""Validation of relative paths that fixtures write into a workspace.

Shared by every fixture kind, so the same rules hold for inline files, Git overlays and tools.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Mapping

from sevro_core.errors import ConfigurationError, join_pointer
from sevro_core.limits import MAX_FIXTURE_PATH_DEPTH, MAX_FIXTURE_PATH_LENGTH


def check_relative_path(path: str, pointer: str) -> tuple[str, ...]:
    """Refuse absolute paths, ``.``/``..``/empty parts, backslashes, colons and NUL."""
    if not path:
        raise ConfigurationError("path is empty", pointer)
    if len(path) > MAX_FIXTURE_PATH_LENGTH:
        raise ConfigurationError(
            f"path is longer than {MAX_FIXTURE_PATH_LENGTH} characters", pointer
        )
    for char, name in (("\0", "NUL"), ("\\", "a backslash"), (":", "a colon")):
        if char in path:
            raise ConfigurationError(f"path {path!r} contains {name}", pointer)
    if path.startswith("/"):
        raise ConfigurationError(f"path {path!r} is absolute; fixture paths are relative", pointer)
    parts = tuple(path.split("/"))
    for part in parts:
        if part in ("", ".", ".."):
            raise ConfigurationError(f"path {path!r} has an empty, '.' or '..' part", pointer)
    if len(parts) > MAX_FIXTURE_PATH_DEPTH:
        raise ConfigurationError(f"path is deeper than {MAX_FIXTURE_PATH_DEPTH} levels", pointer)
    return parts


def check_git_path(path: str, pointer: str) -> tuple[str, ...]:
    """:func:`check_relative_path`, and no ``.git`` part in any case: Git owns that directory."""
    parts = check_relative_path(path, pointer)
    if any(part.casefold() == ".git" for part in parts):
        raise ConfigurationError(
            f"path {path!r} is inside .git, which fixtures cannot write", pointer
        )
    return parts


def check_collisions(
    paths: Iterable[str], base_pointer: str, pointers: Mapping[str, str] | None = None
) -> None:
    """Refuse paths equal under case folding, or where one is a directory prefix of another.

    Workspaces may live on case-insensitive, normalization-insensitive file systems (macOS
    APFS/HFS+: ``é`` as NFC and as NFD are one name), so the rule holds everywhere.
    ``pointers`` maps a path to where it was declared, when that is not ``base_pointer/path``.
    """
    seen: dict[tuple[str, ...], str] = {}
    for path in sorted(paths, key=lambda p: (p.count("/"), p)):
        folded = tuple(_fold(part) for part in path.split("/"))
        for depth in range(1, len(folded) + 1):
            prefix = folded[:depth]
            if prefix in seen:
                other = seen[prefix]
                relation = "the same path" if depth == len(folded) else "a parent of it"
                pointer = (pointers or {}).get(path) or join_pointer(base_pointer, path)
                raise ConfigurationError(
                    f"path {path!r} collides with {other!r} ({relation}, ignoring case and "
                    "Unicode normalization)",
                    pointer,
                )
        seen[folded] = path


def _fold(part: str) -> str:
    """One spelling per name a case- and normalization-insensitive file system would merge."""
    return unicodedata.normalize("NFD", unicodedata.normalize("NFD", part).casefold())
