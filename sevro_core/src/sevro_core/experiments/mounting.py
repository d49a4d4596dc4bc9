"""Installing an arm's skills and context into a trial's workspace, where its host looks.

The workspace holds a fixture, which is untrusted: every directory on the way is opened with
``O_NOFOLLOW`` relative to its parent, so a symlink planted by the fixture (``.agents`` pointing
out of the workspace) refuses the mount instead of writing outside. A skill the fixture already
ships under the same name is refused too: two versions of one skill must never be offered.
In a Git fixture the installed paths are added to ``.git/info/exclude``, so they are neither
reported as changes nor committed by the agent.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Sequence
from pathlib import Path

from attrs import frozen

from sevro_core.errors import InvocationError
from sevro_core.experiments.bundles import parse_front_matter
from sevro_core.experiments.sources import EXECUTABLE_MODE, SourceTree
from sevro_core.formats.fileio import read_at_most, write_all
from sevro_core.limits import MAX_MOUNTED_SKILLS, MAX_SKILL_FILE_BYTES
from sevro_core.plugin.protocols import SkillPlaces

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_APPEND = os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
"""``O_NONBLOCK``: a FIFO planted by the fixture refuses the open (ENXIO) instead of blocking."""
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
CONTEXT_SEPARATOR = b"\n\n"


class MountError(Exception):
    """The arm cannot be installed in this workspace (a fixture conflict or an unsafe path)."""


@frozen
class MountedSkillBundle:
    name: str
    tree: SourceTree


@frozen
class Mounted:
    """What was installed, as workspace-relative POSIX paths."""

    skills: tuple[str, ...]
    instructions: str | None
    instructions_appended: bool


def mount_arm(
    workspace: Path,
    places: SkillPlaces,
    skills: Sequence[MountedSkillBundle],
    context: Sequence[SourceTree],
) -> Mounted:
    """Install ``skills`` under ``places.skills_dir`` and ``context`` as the instructions file."""
    root = os.open(workspace, _DIR_FLAGS)
    try:
        _refuse_renamed_twins(root, places.skills_dir, {skill.name for skill in skills})
        installed = tuple(_install_skill(root, places.skills_dir, skill) for skill in skills)
        instructions, appended = _install_context(root, _instructions_file(root, places), context)
        excluded = [f"/{path}/" for path in installed]
        if instructions is not None and not appended:
            excluded.append(f"/{instructions}")
        if excluded:
            _exclude_from_git(root, excluded)
    finally:
        os.close(root)
    return Mounted(installed, instructions, appended)


def _plain(name: str, where: str) -> str:
    """``name`` as one path component: never empty, ``.``, ``..`` or holding a ``/``."""
    if name in ("", ".", "..") or "/" in name or "\0" in name:
        raise MountError(f"{where}: {name!r} is not a plain file name")
    return name


def _open_dirs(root: int, parts: Sequence[str], *, create: bool) -> int:
    """Open ``parts`` below ``root`` one component at a time, never following a symlink; a
    directory it creates is ``0700`` whatever the umask."""
    current = os.dup(root)
    try:
        for part in parts:
            _plain(part, "/".join(parts))
            created = False
            if create:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o700, dir_fd=current)
                    created = True
            try:
                child = os.open(part, _DIR_FLAGS, dir_fd=current)
            except OSError as exc:
                raise MountError(f"{'/'.join(parts)}: {part!r} is not a plain directory") from exc
            os.close(current)
            current = child
            if created:
                os.fchmod(current, 0o700)
    except BaseException:
        os.close(current)
        raise
    return current


def _refuse_renamed_twins(root: int, skills_dir: str, names: set[str]) -> None:
    """Refuse a fixture skill that declares one of ``names`` under another directory name: the
    CLI offers skills by their declared name, so the arm's would be offered twice."""
    if not names:
        return
    try:
        directory = _open_dirs(root, skills_dir.split("/"), create=False)
    except MountError:
        return  # absent; one that is not a plain directory is refused when installing
    try:
        entries = sorted(os.listdir(directory))
        if len(entries) > MAX_MOUNTED_SKILLS:
            raise MountError(
                f"the fixture's {skills_dir} has more than {MAX_MOUNTED_SKILLS} entries: they "
                "cannot all be checked against the arm's skills"
            )
        for entry in entries:
            declared = None if entry in names else _declared_name(directory, entry)
            if declared in names:
                raise MountError(
                    f"the fixture's {skills_dir}/{entry} declares the skill name {declared!r}: "
                    "the arm's skill would be offered twice"
                )
    finally:
        os.close(directory)


def _declared_name(directory: int, entry: str) -> str | None:
    """The ``name`` in ``entry/SKILL.md``'s front matter; None when there is no readable one
    (a link, a special file or malformed front matter is not followed or parsed)."""
    try:
        skill = os.open(entry, _DIR_FLAGS, dir_fd=directory)
    except OSError:
        return None
    try:
        fd = os.open("SKILL.md", _READ, dir_fd=skill)
    except OSError:
        return None
    finally:
        os.close(skill)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = read_at_most(fd, MAX_SKILL_FILE_BYTES)
        name = parse_front_matter(data, f"{entry}/SKILL.md").get("name")
    except (OSError, InvocationError):
        return None
    finally:
        os.close(fd)
    return name if isinstance(name, str) else None


def _install_skill(root: int, skills_dir: str, skill: MountedSkillBundle) -> str:
    relative = f"{skills_dir}/{_plain(skill.name, 'skill name')}"
    parent = _open_dirs(root, skills_dir.split("/"), create=True)
    try:
        try:
            os.mkdir(skill.name, 0o700, dir_fd=parent)
        except FileExistsError:
            raise MountError(
                f"the fixture already has {relative}: the arm's skill {skill.name!r} would be "
                "offered twice"
            ) from None
        target = os.open(skill.name, _DIR_FLAGS, dir_fd=parent)
        os.fchmod(target, 0o700)
    finally:
        os.close(parent)
    try:
        for entry in skill.tree.files:
            *dirs, name = entry.path.split("/")
            directory = _open_dirs(target, dirs, create=True)
            try:
                mode = 0o700 if entry.mode == EXECUTABLE_MODE else 0o600
                _write_new(directory, _plain(name, entry.path), entry.data, mode)
            finally:
                os.close(directory)
    finally:
        os.close(target)
    return relative


def _write_new(directory: int, name: str, data: bytes, mode: int) -> None:
    fd = os.open(name, _NEW_FILE, mode, dir_fd=directory)
    try:
        os.fchmod(fd, mode)
        write_all(fd, data)
    finally:
        os.close(fd)


def _instructions_file(root: int, places: SkillPlaces) -> str:
    """The file the CLI will read: the first override the fixture has, else the usual one."""
    for override in places.overrides:
        try:
            os.stat(override, dir_fd=root, follow_symlinks=False)
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError as exc:
            raise MountError(f"the fixture's {override} cannot be inspected: {exc}") from exc
        return override  # appended to (a link or a special file there is refused)
    return places.instructions_file


def _install_context(
    root: int, instructions_file: str, context: Sequence[SourceTree]
) -> tuple[str | None, bool]:
    """Concatenate every context file (source order, then path order) into the instructions
    file; appended after the fixture's own when it has one (always, for an override)."""
    chunks = [entry.data for tree in context for entry in tree.files]
    if not chunks:
        return None, False
    data = CONTEXT_SEPARATOR.join(chunk.rstrip(b"\n") for chunk in chunks) + b"\n"
    *dirs, name = instructions_file.split("/")
    directory = _open_dirs(root, dirs, create=True)
    try:
        try:
            _write_new(directory, name, data, 0o600)
            return instructions_file, False
        except FileExistsError:
            pass
        try:
            fd = os.open(name, _APPEND, dir_fd=directory)
        except OSError as exc:
            raise MountError(f"the fixture's {instructions_file} is not a regular file") from exc
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise MountError(f"the fixture's {instructions_file} is not a regular file")
            write_all(fd, CONTEXT_SEPARATOR + data)
        finally:
            os.close(fd)
        return instructions_file, True
    finally:
        os.close(directory)


def _exclude_from_git(root: int, patterns: Sequence[str]) -> None:
    """Add ``patterns`` to ``.git/info/exclude`` when the workspace is a plain Git checkout."""
    try:
        if not stat.S_ISDIR(os.stat(".git", dir_fd=root, follow_symlinks=False).st_mode):
            return  # no repository, or a gitfile: nothing of ours to write into
    except FileNotFoundError:
        return
    info = _open_dirs(root, [".git", "info"], create=True)
    try:
        fd = os.open(
            "exclude",
            _APPEND | os.O_CREAT,
            0o600,
            dir_fd=info,
        )
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise MountError(".git/info/exclude is not a regular file")
            lines = ["", "# sevro: the arm's skills and context", *patterns, ""]
            write_all(fd, "\n".join(lines).encode())
        finally:
            os.close(fd)
    except OSError as exc:
        raise MountError(f".git/info/exclude could not be written: {exc}") from exc
    finally:
        os.close(info)
