"""Skill activation evidence shared by agent-CLI hosts.

A skill is *offered* when its ``SKILL.md`` (``<skills dir>/<name>/SKILL.md``, in the skills
directory the host's agent CLI reads, such as ``.agents/skills``) is mounted in the workspace at
the start of the trial (the agent CLI discovers and lists it to the model). It is *read* only
when a completed, direct, whole-file read of that path returned its exact body; any other
command that touches the file (a page, a grep, a pipe, a failed or truncated read) is ``partial``
and never counts as a read. Hosts feed commands in; this module owns the rules.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import stat
from collections.abc import Sequence
from pathlib import Path

from attrs import frozen

from sevro_core.fixtures.workspace import WorkspaceEscapeError, read_confined
from sevro_core.formats.jsonio import JsonValue
from sevro_core.limits import MAX_MOUNTED_SKILLS, MAX_SKILL_FILE_BYTES

SKILLS_DIR = ".agents/skills"
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_SHELL_WRAPPERS = ("/bin/bash", "/usr/bin/bash", "bash", "/bin/sh", "/usr/bin/sh", "sh", "/bin/zsh")


@frozen
class MountedSkill:
    name: str
    path: str  # workspace-relative, POSIX
    sha256: str | None
    byte_length: int | None
    body: str | None  # None when too large, not UTF-8 or unreadable: never matched

    def to_json(self) -> dict[str, JsonValue]:
        return {
            "name": self.name,
            "path": self.path,
            "sha256": self.sha256,
            "byteLength": self.byte_length,
        }


def discover_skills(
    workspace: Path, skills_dir: str = SKILLS_DIR
) -> tuple[tuple[MountedSkill, ...], bool]:
    """Mounted skills under ``skills_dir`` (each CLI has its own), sorted by name, and whether
    the listing is complete. No component of ``skills_dir`` may be a symlink."""
    base = workspace / skills_dir
    parts = skills_dir.split("/")
    try:
        for part in (workspace.joinpath(*parts[: i + 1]) for i in range(len(parts))):
            if not stat.S_ISDIR(os.lstat(part).st_mode):
                return (), True
        names = sorted(os.listdir(base))
    except FileNotFoundError:
        return (), True
    except OSError:
        return (), False
    complete = len(names) <= MAX_MOUNTED_SKILLS
    found = []
    for name in names[:MAX_MOUNTED_SKILLS]:
        if not _NAME_RE.match(name):
            complete = False
            continue
        relative = f"{skills_dir}/{name}/SKILL.md"
        try:
            data, size = read_confined(workspace, relative, MAX_SKILL_FILE_BYTES)
        except (FileNotFoundError, NotADirectoryError):
            continue
        except (WorkspaceEscapeError, OSError):
            found.append(MountedSkill(name, relative, None, None, None))
            complete = False
            continue
        body: str | None = None
        if len(data) == size:
            try:
                body = data.decode("utf-8")
            except UnicodeDecodeError:
                body = None
        digest = hashlib.sha256(data).hexdigest() if len(data) == size else None
        found.append(MountedSkill(name, relative, digest, size, body))
    return tuple(found), complete


def _inner_command(command: str) -> list[str] | None:
    """The argv a shell wrapper like ``/bin/bash -lc '<inner>'`` runs, or None if not simple."""
    try:
        argv = shlex.split(command)
    except ValueError:
        return None
    if len(argv) == 3 and argv[0] in _SHELL_WRAPPERS and argv[1] in ("-c", "-lc"):
        try:
            return shlex.split(argv[2])
        except ValueError:
            return None
    return argv


def _targets(skill: MountedSkill, workspace: Path, path: str) -> bool:
    candidates = {skill.path, f"./{skill.path}", str(workspace / skill.path)}
    return path in candidates


def classify_read(
    skill: MountedSkill, workspace: Path, command: str, output: str, exit_code: int | None
) -> str | None:
    """``read``, ``partial`` or None (the command does not touch this skill's file)."""
    if f"{skill.name}/SKILL.md" not in command:
        return None
    inner = _inner_command(command)
    direct = (
        inner is not None
        and len(inner) == 2
        and inner[0] in ("cat", "/bin/cat", "/usr/bin/cat")
        and _targets(skill, workspace, inner[1])
    )
    if direct and exit_code == 0 and skill.body is not None and skill.body in output:
        return "read"
    return "partial"


def skills_data(
    offered: Sequence[MountedSkill], reads: Sequence[dict[str, JsonValue]]
) -> dict[str, JsonValue]:
    """The ``sevro.skills`` observation: offered skills, every touch, and those read in full."""
    read_names: list[JsonValue] = []
    for entry in reads:
        if entry["status"] == "read" and entry["skill"] not in read_names:
            read_names.append(entry["skill"])
    return {
        "offered": [s.to_json() for s in offered],
        "reads": list(reads),
        "read": read_names,
    }
