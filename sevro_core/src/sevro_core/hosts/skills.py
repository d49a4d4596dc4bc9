"""Skill activation evidence shared by agent-CLI hosts.

A skill is *offered* when its ``SKILL.md`` (``<skills dir>/<name>/SKILL.md``, in the skills
directory the host's agent CLI reads, such as ``.agents/skills``) is mounted in the workspace at
the start of the trial (the agent CLI discovers and lists it to the model); both CLIs list
every mounted skill in every request, so a skill's name in a stream is never evidence of a read.
It is *read* only when a command or tool call verifiably showed the agent its whole body, as it
was mounted: the whole-file command forms of :mod:`sevro_core.hosts.reads` (``cat``, ``cat -n``,
``sed -n '1,Np'``, ``head -n N`` covering every line, ``cat FILE | cat``, ``cd DIR && cat
SKILL.md``...), a CLI's file-read tool returning the whole file, or its skill tool
followed by the body (front matter removed). Any other touch is ``partial`` (front matter only,
``grep``, a failed or truncated read) and never counts; ``ls``, ``wc``, ``stat``, another file,
or naming the path in a reply do not touch it at all. Hosts feed commands in; this module and
:mod:`sevro_core.hosts.reads` own the rules.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path

from attrs import frozen

from sevro_core.fixtures.workspace import WorkspaceEscapeError, read_confined
from sevro_core.formats.jsonio import JsonValue
from sevro_core.hosts.reads import FileRead, WorkspaceFiles, command_reads
from sevro_core.limits import MAX_MOUNTED_SKILLS, MAX_SKILL_FILE_BYTES

SKILLS_DIR = ".agents/skills"
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


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


def skill_files(skills: Sequence[MountedSkill]) -> dict[str, str | None]:
    """Each mounted skill's body as it was when the trial started, by path: reads are checked
    against what the agent was offered, not what the file holds later."""
    return {skill.path: skill.body for skill in skills}


def skill_touches(
    skills: Sequence[MountedSkill], reads: Sequence[FileRead]
) -> list[tuple[MountedSkill, str]]:
    """The mounted skills ``reads`` touched: ``read`` when one read was complete, else
    ``partial``; in the order of the skills."""
    touched = []
    for skill in skills:
        statuses = [r.complete for r in reads if r.path == skill.path]
        if statuses:
            touched.append((skill, "read" if any(statuses) else "partial"))
    return touched


def classify_read(
    skill: MountedSkill, workspace: Path, command: str, output: str, exit_code: int | None
) -> str | None:
    """``read``, ``partial`` or None (the command does not touch this skill's file)."""
    files = WorkspaceFiles(workspace, skill_files([skill]))
    found = command_reads(command, output, exit_code, files)
    touched = skill_touches([skill], found.reads)
    return touched[0][1] if touched else None


def skills_data(
    offered: Sequence[MountedSkill],
    reads: Sequence[dict[str, JsonValue]],
    activations: Sequence[Mapping[str, JsonValue]] = (),
    hook_evidence: bool = False,
) -> dict[str, JsonValue]:
    """The ``sevro.skills`` observation: offered skills, every touch, and those read in full.

    ``activations`` are the entries of a complete ``sevro.host.skill-activations`` observation
    (it also sees reads composed from pages, which no single command proves): each is a ``read``
    entry marked ``"via": "hooks"`` (its ordinal is the hook's), so the summary agrees with it;
    ``hook_evidence`` (that observation is complete) adds ``"hookEvidence": true``: every
    ``partial`` touch is then known not to have been a read."""
    entries = [dict(e) for e in reads]
    for found in activations:
        entry: dict[str, JsonValue] = {"skill": found["skill"], "turn": found["turn"]}
        entries.append({**entry, "ordinal": found["ordinal"], "status": "read", "via": "hooks"})
    read_names: list[JsonValue] = []
    for entry in entries:
        if entry["status"] == "read" and entry["skill"] not in read_names:
            read_names.append(entry["skill"])
    data: dict[str, JsonValue] = {
        "offered": [s.to_json() for s in offered],
        "reads": list(entries),
        "read": read_names,
    }
    if hook_evidence:
        data["hookEvidence"] = True
    return data
