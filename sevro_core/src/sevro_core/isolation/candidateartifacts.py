"""Candidate artifact directories (``runtime.artifactDirectories``): what of the candidate's
private home checks may read once it finished.

A skill may leave its evidence outside the workspace (a review store under ``~/.tool``), and
checks keep their own homes, so they cannot see it. The runtime file names a few subtrees of
the candidate's home; after the candidate ran, each is checked without following any link and
given read-only to role ``checks`` as ``SEVRO_CANDIDATE_ARTIFACT_<NAME>``. The tree is the
candidate's and untrusted: a link, a hardlink, a special file, too many entries or a missing
directory make it unusable, and grading is then an error, never a pass.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from attrs import frozen

from sevro_core.limits import MAX_ARTIFACT_DIRECTORY_ENTRIES

ARTIFACT_VARIABLE = "SEVRO_CANDIDATE_ARTIFACT_"
STATE_NAMES = frozenset(
    {
        "codex_config",
        "codex_skills",
        "agent_skills",
        "command_agent_skills",
        "command_codex_skills",
    }
)
"""Names seed 002 reserves for the host-state bindings: no declared directory may take one."""


@frozen
class ArtifactDirectory:
    """One declared subtree of the candidate's home, by name, and the pointer that declared it."""

    name: str
    path: str
    """Relative to the candidate's home, checked to have no empty, ``.`` or ``..`` component."""
    pointer: str

    @property
    def variable(self) -> str:
        return ARTIFACT_VARIABLE + self.name.upper()

    def to_json(self) -> dict[str, str]:
        return {"name": self.name, "path": self.path}


def artifact_directories(
    declared: Sequence[Mapping[str, Any]],
    credential_entries: Sequence[str],
    fail: Callable[[str, str], Exception],
) -> tuple[ArtifactDirectory, ...]:
    """The declarations the schema let through, with the rules it cannot say; ``fail(message,
    pointer)`` makes the exit-64 refusal that names the file. A path in an agent CLI's
    credential location of a home (``credential_entries``) is refused: checks never read one."""
    out: list[ArtifactDirectory] = []
    seen: set[str] = set()
    for index, entry in enumerate(declared):
        pointer = f"/runtime/artifactDirectories/{index}"
        name, path = str(entry["name"]), str(entry["path"])
        if name in seen:
            raise fail(f"artifact directory name {name!r} is declared twice", pointer + "/name")
        seen.add(name)
        if name in STATE_NAMES:
            raise fail(
                f"artifact directory name {name!r} is reserved for the host-state bindings",
                pointer + "/name",
            )
        problem = _path_problem(path) or _credential_problem(path, credential_entries)
        if problem is not None:
            raise fail(f"artifact directory path {path!r} {problem}", pointer + "/path")
        out.append(ArtifactDirectory(name, path, pointer))
    return tuple(out)


def _credential_problem(path: str, entries: Sequence[str]) -> str | None:
    for entry in entries:
        if path == entry or path.startswith(entry.rstrip("/") + "/"):
            return "lies in an agent CLI's credential location"
        if entry.startswith(path + "/"):
            return "holds an agent CLI's credential location"
    return None


def _path_problem(path: str) -> str | None:
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in path):
        return "holds a control character"
    if "\\" in path:
        return "holds a backslash"
    if path.startswith("/"):
        return "must be relative to the candidate's home"
    parts = path.split("/")
    if parts in (["."], [""]):
        return "grants the whole home"
    if any(part in ("", ".", "..") for part in parts):
        return "has an empty, '.' or '..' component"
    return None


def checked_artifact_directory(home: Path, directory: ArtifactDirectory) -> Path:
    """The directory under ``home`` once checked, without following any link; raises
    ``ValueError`` saying what makes it unusable evidence."""
    return checked_path(home, directory.path, "the candidate's home")


def checked_path(root: Path, path: str, where: str, *, file: bool = False) -> Path:
    """``root/path`` once checked without following any link: a link-free, hardlink-free tree
    of directories and regular files (or, with ``file``, one regular file with one link);
    ``ValueError`` says what makes it unusable evidence."""
    problem = _path_problem(path)
    if problem is not None:
        raise ValueError(f"~/{path} {problem}")
    current = root
    parts = ("", *path.split("/"))
    for index, part in enumerate(parts):
        current = current / part if part else current
        try:
            info = os.lstat(current)
        except FileNotFoundError:
            raise ValueError(f"~/{path} does not exist in {where}") from None
        if stat.S_ISLNK(info.st_mode):
            raise ValueError(f"~/{path} has a symbolic link on its way ({current})")
        if file and index == len(parts) - 1:
            if not stat.S_ISREG(info.st_mode):
                raise ValueError(f"~/{path} is not a regular file ({current})")
            if info.st_nlink > 1:
                raise ValueError(f"~/{path} is a hard link ({current})")
        elif not stat.S_ISDIR(info.st_mode):
            raise ValueError(f"~/{path} is not a directory ({current})")
    if not file:
        _check_tree(current, path)
    return current


def _check_tree(root: Path, label: str) -> None:
    """Every entry below ``root`` is a directory or a regular file with one link; at most
    ``MAX_ARTIFACT_DIRECTORY_ENTRIES`` entries, the root included."""
    count = 1
    pending = [root]
    while pending:
        with os.scandir(pending.pop()) as entries:
            for entry in entries:
                count += 1
                if count > MAX_ARTIFACT_DIRECTORY_ENTRIES:
                    raise ValueError(
                        f"~/{label} holds more than {MAX_ARTIFACT_DIRECTORY_ENTRIES} entries"
                    )
                info = entry.stat(follow_symlinks=False)
                inside = os.path.relpath(entry.path, root)
                if stat.S_ISLNK(info.st_mode):
                    raise ValueError(f"~/{label} holds a symbolic link {inside!r}")
                if stat.S_ISDIR(info.st_mode):
                    pending.append(Path(entry.path))
                elif not stat.S_ISREG(info.st_mode):
                    raise ValueError(f"~/{label} holds a special file {inside!r}")
                elif info.st_nlink > 1:
                    raise ValueError(f"~/{label} holds a hard link {inside!r}")


__all__ = [
    "ARTIFACT_VARIABLE",
    "STATE_NAMES",
    "ArtifactDirectory",
    "artifact_directories",
    "checked_artifact_directory",
    "checked_path",
]
