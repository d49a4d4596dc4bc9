"""The workspace file a ``sevro.semantic`` check's ``artifactPath`` puts before the judge.

The path is relative, never inside ``.git``, never ``..``, with at most one ``*`` and only in
the file name (``reports/summary-*.md``); it must name exactly one regular file of at most
``MAX_SEMANTIC_ARTIFACT_BYTES``, read as UTF-8. The agent left the workspace, so nothing in it
is trusted: no symlink is followed (on the way or at the end), a listing and a read are bounded.
What sevro cannot show the judge whole is ``unavailable`` (the judge is not asked): no match, a
symlink, a directory, a file over the bound or not UTF-8. Two or more matches are a grading
error: the check is ambiguous, and guessing which file was meant could pass the wrong one.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from attrs import frozen

from sevro_core.api import (
    ConfigurationError,
    GradingError,
    WorkspaceEscapeError,
    check_relative_path,
    limits,
    list_confined,
    read_confined,
)

_SHOWN_MATCHES = 4


@frozen
class ArtifactPattern:
    """A checked ``artifactPath``: its directory and its file name, maybe with one ``*``."""

    source: str
    directory: str
    """Relative to the workspace, ``""`` for the workspace itself."""
    name: str

    @property
    def is_glob(self) -> bool:
        return "*" in self.name

    def matches(self, name: str) -> bool:
        if not self.is_glob:
            return name == self.name
        prefix, suffix = self.name.split("*")
        return len(name) >= len(prefix) + len(suffix) and (
            name.startswith(prefix) and name.endswith(suffix)
        )


@frozen
class ArtifactText:
    """The one file the pattern matched (its workspace path) and its text."""

    path: str
    text: str
    data: bytes


@frozen
class NoArtifact:
    """Why the judge cannot be shown the file (the check is then ``unavailable``)."""

    detail: str


def compile_artifact_path(path: str, pointer: str = "/artifactPath") -> ArtifactPattern:
    """Refuse, before the run, a path that could leave the workspace or enter ``.git``."""
    parts = check_relative_path(path, pointer)
    if any(part.casefold() == ".git" for part in parts):
        raise ConfigurationError(f"artifactPath {path!r} is inside .git", pointer)
    if any("*" in part for part in parts[:-1]):
        raise ConfigurationError(
            f"artifactPath {path!r} has '*' in a directory; only the file name may have one",
            pointer,
        )
    if parts[-1].count("*") > 1:
        raise ConfigurationError(f"artifactPath {path!r} has more than one '*'", pointer)
    return ArtifactPattern(source=path, directory="/".join(parts[:-1]), name=parts[-1])


def read_artifact(workspace: Path, pattern: ArtifactPattern) -> ArtifactText | NoArtifact:
    """The text of the one regular file ``pattern`` names, or why the judge cannot see it;
    ``GradingError`` when it matches more than one entry."""
    if pattern.is_glob:
        found = _only_match(workspace, pattern)
        if isinstance(found, NoArtifact):
            return found
        relative = found
    else:
        relative = pattern.source
    limit = limits.MAX_SEMANTIC_ARTIFACT_BYTES
    try:
        data, size = read_confined(workspace, relative, limit + 1)
    except FileNotFoundError:
        return NoArtifact(f"{relative!r} does not exist")
    except WorkspaceEscapeError as exc:
        if exc.errno == errno.ELOOP:
            return NoArtifact(f"{relative!r} is a symlink (not followed)")
        return NoArtifact(f"{relative!r}: {exc.strerror} (a symlink is not followed)")
    except IsADirectoryError:
        return NoArtifact(f"{relative!r} is not a regular file")
    except OSError as exc:
        return NoArtifact(f"{relative!r} cannot be read ({os.strerror(exc.errno or errno.EIO)})")
    if size > limit or len(data) > limit:
        return NoArtifact(f"{relative!r} is larger than {limit} bytes (not shown to the judge)")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return NoArtifact(f"{relative!r} is not UTF-8 text (at byte {exc.start})")
    return ArtifactText(relative, text, data)


def _only_match(workspace: Path, pattern: ArtifactPattern) -> str | NoArtifact:
    """The workspace path of the one entry whose name matches, if it is a regular file."""
    where = pattern.directory or "."
    try:
        listing = list_confined(workspace, pattern.directory, limits.MAX_SEMANTIC_GLOB_ENTRIES)
    except FileNotFoundError:
        return NoArtifact(f"no file matches {pattern.source!r} ({where!r} does not exist)")
    except WorkspaceEscapeError:
        return NoArtifact(f"{where!r} is not a plain directory (a symlink is not followed)")
    except OSError as exc:
        reason = os.strerror(exc.errno or errno.EIO)
        return NoArtifact(f"{where!r} cannot be listed ({reason})")
    if listing is None:
        bound = limits.MAX_SEMANTIC_GLOB_ENTRIES
        return NoArtifact(f"{where!r} holds more than {bound} entries (not all seen)")
    matches = [
        (name, mode)
        for name, mode in listing
        if pattern.matches(name) and name.casefold() != ".git"  # Git's, never the agent's work
    ]
    if not matches:
        return NoArtifact(f"no file matches {pattern.source!r}")
    if len(matches) > 1:
        shown = ", ".join(repr(name[:80]) for name, _ in matches[:_SHOWN_MATCHES])
        more = ", ..." if len(matches) > _SHOWN_MATCHES else ""
        raise GradingError(
            f"artifactPath {pattern.source!r} matches {len(matches)} entries "
            f"({shown}{more}); it must name exactly one file"
        )
    name, mode = matches[0]
    relative = f"{pattern.directory}/{name}" if pattern.directory else name
    if stat.S_ISLNK(mode):
        return NoArtifact(f"{relative!r} is a symlink (not followed)")
    if not stat.S_ISREG(mode):
        return NoArtifact(f"{relative!r} is not a regular file")
    return relative
