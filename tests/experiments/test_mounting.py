"""Installing an arm into a trial's workspace: byte-exact skills, context, the fixture's
symlinks refused, same-named skills refused, and a Git fixture left clean.

Every refusal has its negative control: the same mount into a plain workspace succeeds.
"""

from __future__ import annotations

import os
import signal
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from sevro_core.experiments.mounting import (
    CONTEXT_SEPARATOR,
    Mounted,
    MountedSkillBundle,
    MountError,
    mount_arm,
)
from sevro_core.experiments.sources import (
    DirectorySource,
    SourceFile,
    SourceTree,
    read_source,
)
from sevro_core.fixtures.git import Git
from sevro_core.limits import MAX_MOUNTED_SKILLS
from sevro_core.plugin.protocols import SkillPlaces
from sevro_core.testing import require_tool

PLACES = SkillPlaces(".agents/skills", "AGENTS.md")
NESTED = SkillPlaces(".claude/skills", ".claude/CLAUDE.md")
SKILL = b"---\nname: release-notes\ndescription: Write release notes.\n---\nBody\n"
SCRIPT = b"#!/bin/sh\necho collect\n"


class Blocked(BaseException):
    """Not an ``OSError`` (as ``TimeoutError`` is): the mount cannot mistake it for a refusal."""


@pytest.fixture(autouse=True)
def no_hang() -> Iterator[None]:
    """A special file (a FIFO) must refuse the mount, never block it."""

    def expire(signum: int, frame: object) -> None:
        raise Blocked("the mount blocked on a special file")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(5)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def bundle(root: Path, name: str = "release-notes") -> MountedSkillBundle:
    """A real bundle on disk, read as a directory source (a resource, a nested script)."""
    directory = root / f"source-{name}"
    (directory / "scripts").mkdir(parents=True)
    (directory / "SKILL.md").write_bytes(SKILL.replace(b"release-notes", name.encode()))
    (directory / "reference.md").write_bytes(b"# Reference\n\xff binary \x00 byte\n")
    (directory / "scripts" / "collect.sh").write_bytes(SCRIPT)
    (directory / "scripts" / "collect.sh").chmod(0o755)
    return MountedSkillBundle(name, read_source(DirectorySource(directory)))


def context(root: Path, name: str, **files: bytes) -> SourceTree:
    directory = root / f"context-{name}"
    directory.mkdir(parents=True)
    for path, data in files.items():
        (directory / path).write_bytes(data)
    return read_source(DirectorySource(directory))


def workspace(root: Path) -> Path:
    path = root / "workspace"
    path.mkdir(parents=True)
    return path


def tree_of(root: Path) -> dict[str, tuple[int, bytes | str]]:
    """Every entry under ``root`` (not following links): mode and content or link target."""
    found: dict[str, tuple[int, bytes | str]] = {}
    for path in sorted(root.rglob("*")):
        info = path.lstat()
        if stat.S_ISLNK(info.st_mode):
            found[path.relative_to(root).as_posix()] = (info.st_mode, os.readlink(path))
        elif stat.S_ISREG(info.st_mode):
            found[path.relative_to(root).as_posix()] = (info.st_mode, path.read_bytes())
        else:
            found[path.relative_to(root).as_posix()] = (info.st_mode, "")
    return found


# -- skills ---------------------------------------------------------------------------------------


def test_a_bundle_is_installed_byte_exact_with_its_modes(tmp_path: Path) -> None:
    skill = bundle(tmp_path)
    ws = workspace(tmp_path)
    mounted = mount_arm(ws, PLACES, [skill], [])
    assert mounted == Mounted((".agents/skills/release-notes",), None, False)
    installed = ws / ".agents" / "skills" / "release-notes"
    for entry in skill.tree.files:
        path = installed / entry.path
        assert path.read_bytes() == entry.data
        expected = 0o700 if entry.mode == "100755" else 0o600
        assert stat.S_IMODE(path.lstat().st_mode) == expected, entry.path
    assert sorted(p.relative_to(installed).as_posix() for p in installed.rglob("*")) == [
        "SKILL.md",
        "reference.md",
        "scripts",
        "scripts/collect.sh",
    ]
    assert os.access(installed / "scripts" / "collect.sh", os.X_OK)
    assert not os.access(installed / "reference.md", os.X_OK)
    assert not (ws / "AGENTS.md").exists()  # no context: no instructions file


def test_modes_are_exact_whatever_the_umask(tmp_path: Path) -> None:
    previous = os.umask(0o177)  # would leave directories without their search bit
    try:
        ws = workspace(tmp_path)
        mount_arm(ws, PLACES, [bundle(tmp_path)], [])
    finally:
        os.umask(previous)
    installed = ws / ".agents/skills/release-notes"
    assert stat.S_IMODE((installed / "scripts/collect.sh").stat().st_mode) == 0o700
    assert stat.S_IMODE((installed / "SKILL.md").stat().st_mode) == 0o600
    for directory in (ws / ".agents", ws / ".agents/skills", installed, installed / "scripts"):
        assert stat.S_IMODE(directory.stat().st_mode) == 0o700, directory


def test_several_skills_go_side_by_side_next_to_the_fixtures_own(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    own = ws / ".agents" / "skills" / "fixture-skill" / "SKILL.md"
    own.parent.mkdir(parents=True)
    own.write_bytes(b"the fixture's\n")
    mounted = mount_arm(ws, PLACES, [bundle(tmp_path, "alpha"), bundle(tmp_path, "beta")], [])
    assert mounted.skills == (".agents/skills/alpha", ".agents/skills/beta")
    assert own.read_bytes() == b"the fixture's\n"
    assert (ws / ".agents/skills/beta/SKILL.md").read_bytes().startswith(b"---\nname: beta\n")


def test_a_skill_the_fixture_already_has_is_refused(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    own = ws / ".agents" / "skills" / "release-notes" / "SKILL.md"
    own.parent.mkdir(parents=True)
    own.write_bytes(b"the fixture's version\n")
    with pytest.raises(MountError, match=r"already has \.agents/skills/release-notes"):
        mount_arm(ws, PLACES, [bundle(tmp_path)], [])
    assert tree_of(ws / ".agents/skills/release-notes") == {
        "SKILL.md": (own.lstat().st_mode, b"the fixture's version\n")
    }
    # a same-named *file* or *link* is refused the same way, and nothing is followed
    outside = tmp_path / "outside"
    outside.mkdir()
    for kind in ("file", "link"):
        other = workspace(tmp_path / kind)
        (other / ".agents" / "skills").mkdir(parents=True)
        entry = other / ".agents" / "skills" / "release-notes"
        if kind == "file":
            entry.write_bytes(b"x")
        else:
            entry.symlink_to(outside, target_is_directory=True)
        with pytest.raises(MountError, match="already has"):
            mount_arm(other, PLACES, [bundle(tmp_path / kind)], [])
    assert list(outside.iterdir()) == []


def test_a_skill_name_or_file_path_that_is_not_one_plain_component_is_refused(
    tmp_path: Path,
) -> None:
    """Names come validated from SKILL.md and paths canonical from a source; the mount still
    refuses what would climb out, whoever built the bundle."""
    ws = workspace(tmp_path / "deep" / "er")
    escape = SourceFile("../../../escaped", "100644", "0" * 64, 1, b"x")
    for skill in (
        MountedSkillBundle("../../../../escaped", SourceTree(DirectorySource(tmp_path), ())),
        MountedSkillBundle("ok", SourceTree(DirectorySource(tmp_path), (escape,))),
    ):
        with pytest.raises(MountError, match="plain"):
            mount_arm(ws, PLACES, [skill], [])
    assert not list(tmp_path.rglob("escaped"))


# -- context --------------------------------------------------------------------------------------


def test_context_files_are_joined_into_a_new_instructions_file(tmp_path: Path) -> None:
    first = context(tmp_path, "one", **{"b.md": b"Second.\n\n\n", "a.md": b"First."})
    second = context(tmp_path, "two", **{"AGENTS.md": b"Third.\n"})
    ws = workspace(tmp_path)
    mounted = mount_arm(ws, PLACES, [], [first, second])
    assert mounted == Mounted((), "AGENTS.md", False)
    # source order, then path order within a source; one blank line between; one final newline
    assert (ws / "AGENTS.md").read_bytes() == b"First.\n\nSecond.\n\nThird.\n"
    assert stat.S_IMODE((ws / "AGENTS.md").stat().st_mode) == 0o600


def test_context_is_appended_to_the_fixtures_own_instructions(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    (ws / "AGENTS.md").write_bytes(b"Fixture rule.\n")
    mounted = mount_arm(ws, PLACES, [], [context(tmp_path, "c", **{"x.md": b"Arm rule.\n"})])
    assert mounted == Mounted((), "AGENTS.md", True)
    expected = b"Fixture rule.\n" + CONTEXT_SEPARATOR + b"Arm rule.\n"
    assert (ws / "AGENTS.md").read_bytes() == expected


def test_a_nested_instructions_file_gets_its_directory(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    mounted = mount_arm(ws, NESTED, [bundle(tmp_path)], [context(tmp_path, "c", **{"x": b"R"})])
    assert mounted.instructions == ".claude/CLAUDE.md"
    assert (ws / ".claude" / "CLAUDE.md").read_bytes() == b"R\n"
    assert (ws / ".claude" / "skills" / "release-notes" / "SKILL.md").read_bytes() == SKILL


def test_context_sources_without_files_write_nothing(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    empty = SourceTree(DirectorySource(tmp_path), ())
    assert mount_arm(ws, PLACES, [], [empty]) == Mounted((), None, False)
    assert list(ws.iterdir()) == []


# -- the fixture's symlinks and special files -----------------------------------------------------


def _outside(tmp_path: Path) -> Path:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "AGENTS.md").write_bytes(b"outside\n")
    return outside


@pytest.mark.parametrize("component", [".agents", ".agents/skills"])
def test_a_symlinked_skills_directory_refuses_and_writes_nothing_outside(
    tmp_path: Path, component: str
) -> None:
    outside = _outside(tmp_path)
    before = tree_of(outside)
    ws = workspace(tmp_path)
    link = ws / component
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(outside, target_is_directory=True)
    with pytest.raises(MountError, match="not a plain directory"):
        mount_arm(ws, PLACES, [bundle(tmp_path)], [])
    assert tree_of(outside) == before


def test_a_dangling_symlink_is_not_created_through(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    (ws / ".agents").symlink_to(tmp_path / "would-be-created")
    with pytest.raises(MountError):
        mount_arm(ws, PLACES, [bundle(tmp_path)], [])
    assert not (tmp_path / "would-be-created").exists()


def test_a_symlinked_instructions_file_refuses_and_writes_nothing_outside(
    tmp_path: Path,
) -> None:
    outside = _outside(tmp_path)
    before = tree_of(outside)
    ws = workspace(tmp_path)
    (ws / "AGENTS.md").symlink_to(outside / "AGENTS.md")
    with pytest.raises(MountError, match="not a regular file"):
        mount_arm(ws, PLACES, [], [context(tmp_path, "c", **{"x.md": b"Arm rule."})])
    assert tree_of(outside) == before
    # and a link on the way to a nested instructions file
    nested = workspace(tmp_path / "nested")
    (nested / ".claude").symlink_to(outside, target_is_directory=True)
    with pytest.raises(MountError, match="not a plain directory"):
        mount_arm(nested, NESTED, [], [context(tmp_path / "nested", "c", **{"x": b"R"})])
    assert tree_of(outside) == before


@pytest.mark.parametrize("kind", ["fifo", "directory"])
def test_an_instructions_file_that_is_not_a_regular_file_refuses(tmp_path: Path, kind: str) -> None:
    ws = workspace(tmp_path)
    if kind == "fifo":
        os.mkfifo(ws / "AGENTS.md")
    else:
        (ws / "AGENTS.md").mkdir()
    with pytest.raises(MountError, match="not a regular file"):
        mount_arm(ws, PLACES, [], [context(tmp_path, "c", **{"x.md": b"Arm rule."})])


def test_negative_control_the_same_mounts_succeed_in_a_plain_workspace(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    mounted = mount_arm(
        ws, PLACES, [bundle(tmp_path)], [context(tmp_path, "c", **{"x.md": b"Arm rule."})]
    )
    assert mounted == Mounted((".agents/skills/release-notes",), "AGENTS.md", False)


# -- Git fixtures ---------------------------------------------------------------------------------


def git_for_tests() -> Git:
    return Git(require_tool("git"))


def git_fixture(tmp_path: Path, *, own_instructions: bool = False) -> tuple[Git, Path]:
    """A real repository with one commit, as a Git fixture's workspace is."""
    git = git_for_tests()
    ws = workspace(tmp_path)
    git.run("init", "-q", "-b", "main", str(ws), cwd=ws)
    (ws / "README.md").write_bytes(b"# Project\n")
    if own_instructions:
        (ws / "AGENTS.md").write_bytes(b"Fixture rule.\n")
    git.run("add", "-A", cwd=ws)
    git.run("commit", "-q", "-m", "Fixture", cwd=ws)
    return git, ws


def porcelain(git: Git, ws: Path) -> list[str]:
    return git.run("status", "--porcelain", "-uall", cwd=ws).stdout.decode().splitlines()


def test_a_git_fixture_stays_clean_because_the_mount_is_excluded(tmp_path: Path) -> None:
    git, ws = git_fixture(tmp_path)
    mount_arm(ws, PLACES, [bundle(tmp_path)], [context(tmp_path, "c", **{"x.md": b"Rule."})])
    assert porcelain(git, ws) == []
    exclude = (ws / ".git" / "info" / "exclude").read_text()
    assert "/.agents/skills/release-notes/\n/AGENTS.md\n" in exclude
    # negative control: without the exclude entries the same files are untracked changes
    (ws / ".git" / "info" / "exclude").write_text("")
    assert sorted(porcelain(git, ws)) == [
        "?? .agents/skills/release-notes/SKILL.md",
        "?? .agents/skills/release-notes/reference.md",
        "?? .agents/skills/release-notes/scripts/collect.sh",
        "?? AGENTS.md",
    ]


def test_the_exclusion_is_anchored_and_keeps_the_fixtures_own_entries(tmp_path: Path) -> None:
    git, ws = git_fixture(tmp_path)
    exclude = ws / ".git" / "info" / "exclude"
    exclude.write_text("*.log\n")
    mount_arm(ws, PLACES, [bundle(tmp_path)], [])
    assert exclude.read_text().startswith("*.log\n")
    # a same-named directory elsewhere is not hidden by the mount's entry
    (ws / "docs" / ".agents" / "skills" / "release-notes").mkdir(parents=True)
    (ws / "docs" / ".agents" / "skills" / "release-notes" / "x").write_bytes(b"x")
    assert porcelain(git, ws) == ["?? docs/.agents/skills/release-notes/x"]


def test_context_appended_to_tracked_instructions_shows_as_a_modification(
    tmp_path: Path,
) -> None:
    """Git ignores exclude entries for tracked files: the append is visible, not hidden."""
    git, ws = git_fixture(tmp_path, own_instructions=True)
    mounted = mount_arm(ws, PLACES, [], [context(tmp_path, "c", **{"x.md": b"Arm rule."})])
    assert mounted.instructions_appended
    assert porcelain(git, ws) == [" M AGENTS.md"]
    assert "/AGENTS.md" not in (ws / ".git" / "info" / "exclude").read_text()


def test_a_gitfile_gets_no_exclude_and_is_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "real-git-dir"
    (outside / "info").mkdir(parents=True)
    ws = workspace(tmp_path)
    (ws / ".git").write_bytes(f"gitdir: {outside}\n".encode())
    mount_arm(ws, PLACES, [bundle(tmp_path)], [])
    assert (ws / ".git").read_bytes() == f"gitdir: {outside}\n".encode()
    assert list((outside / "info").iterdir()) == []


def test_a_symlinked_git_directory_gets_no_exclude_and_is_not_followed(tmp_path: Path) -> None:
    git = git_for_tests()
    outside = tmp_path / "outside-repo"
    outside.mkdir()
    git.run("init", "-q", str(outside), cwd=outside)
    before = tree_of(outside / ".git")
    ws = workspace(tmp_path)
    (ws / ".git").symlink_to(outside / ".git", target_is_directory=True)
    mount_arm(ws, PLACES, [bundle(tmp_path)], [])
    assert tree_of(outside / ".git") == before


@pytest.mark.parametrize("component", ["info", "info/exclude"])
def test_a_symlink_inside_git_refuses_and_writes_nothing_outside(
    tmp_path: Path, component: str
) -> None:
    outside = _outside(tmp_path)
    (outside / "exclude").write_bytes(b"outside\n")
    before = tree_of(outside)
    _, ws = git_fixture(tmp_path)
    link = ws / ".git" / component
    if link.is_dir() and not link.is_symlink():
        for child in link.iterdir():
            child.unlink()
        link.rmdir()
    elif link.exists():
        link.unlink()
    target = outside if component == "info" else outside / "exclude"
    link.symlink_to(target, target_is_directory=component == "info")
    with pytest.raises(MountError):
        mount_arm(ws, PLACES, [bundle(tmp_path)], [])
    assert tree_of(outside) == before


def test_an_exclude_that_is_a_fifo_refuses_instead_of_blocking(tmp_path: Path) -> None:
    _, ws = git_fixture(tmp_path)
    exclude = ws / ".git" / "info" / "exclude"
    exclude.unlink(missing_ok=True)
    os.mkfifo(exclude)
    with pytest.raises(MountError, match="exclude"):
        mount_arm(ws, PLACES, [bundle(tmp_path)], [])


# -- instructions files the CLI reads instead ------------------------------------------------------

OVERRIDING = SkillPlaces(".agents/skills", "AGENTS.md", ("AGENTS.override.md",))


def test_context_goes_into_an_override_the_fixture_has(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    (ws / "AGENTS.md").write_bytes(b"Shadowed.\n")
    (ws / "AGENTS.override.md").write_bytes(b"Override.\n")
    rule = context(tmp_path, "c", **{"x.md": b"Arm rule."})
    assert mount_arm(ws, OVERRIDING, [], [rule]) == Mounted((), "AGENTS.override.md", True)
    assert (ws / "AGENTS.override.md").read_bytes() == b"Override.\n\n\nArm rule.\n"
    assert (ws / "AGENTS.md").read_bytes() == b"Shadowed.\n"
    # negative control: without an override in the fixture, the usual file
    plain = workspace(tmp_path / "plain")
    assert mount_arm(plain, OVERRIDING, [], [rule]) == Mounted((), "AGENTS.md", False)
    assert not (plain / "AGENTS.override.md").exists()


def test_an_override_that_is_a_link_refuses_and_writes_nothing_outside(tmp_path: Path) -> None:
    outside = _outside(tmp_path)
    before = tree_of(outside)
    ws = workspace(tmp_path)
    (ws / "AGENTS.override.md").symlink_to(outside / "AGENTS.md")
    with pytest.raises(MountError, match=r"AGENTS\.override\.md is not a regular file"):
        mount_arm(ws, OVERRIDING, [], [context(tmp_path, "c", **{"x.md": b"Arm rule."})])
    assert tree_of(outside) == before
    assert not (ws / "AGENTS.md").exists()


def test_skill_places_refuse_an_override_outside_the_workspace() -> None:
    with pytest.raises(ValueError, match="inside the workspace"):
        SkillPlaces(".agents/skills", "AGENTS.md", ("../AGENTS.override.md",))


# -- a fixture skill under another directory name -------------------------------------------------


def _fixture_skill(ws: Path, directory: str, data: bytes) -> Path:
    path = ws / ".agents" / "skills" / directory / "SKILL.md"
    path.parent.mkdir(parents=True)
    path.write_bytes(data)
    return path


def test_a_fixture_skill_declaring_the_same_name_elsewhere_is_refused(tmp_path: Path) -> None:
    """The CLIs offer skills by their declared name: a fixture's ``old-notes/`` declaring
    ``release-notes`` would put two versions of the skill before the model."""
    ws = workspace(tmp_path)
    _fixture_skill(ws, "old-notes", SKILL)
    with pytest.raises(MountError, match=r"old-notes declares the skill name 'release-notes'"):
        mount_arm(ws, PLACES, [bundle(tmp_path)], [])
    assert not (ws / ".agents" / "skills" / "release-notes").exists()


def test_negative_controls_other_names_and_unreadable_fixture_skills_do_not_refuse(
    tmp_path: Path,
) -> None:
    ws = workspace(tmp_path)
    _fixture_skill(ws, "other", SKILL.replace(b"release-notes", b"other"))
    _fixture_skill(ws, "broken", b"---\nname: [release-notes\n---\n")  # malformed YAML
    _fixture_skill(ws, "no-front-matter", b"release-notes\n")
    fifo = _fixture_skill(ws, "fifo", b"")
    fifo.unlink()
    os.mkfifo(fifo)  # must not block the check
    outside = tmp_path / "outside-skill"
    outside.mkdir()
    (outside / "SKILL.md").write_bytes(SKILL)
    (ws / ".agents/skills/linked").symlink_to(outside, target_is_directory=True)  # not followed
    mounted = mount_arm(ws, PLACES, [bundle(tmp_path)], [])
    assert mounted.skills == (".agents/skills/release-notes",)


def test_more_fixture_entries_than_can_be_checked_refuses(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    skills = ws / ".agents" / "skills"
    skills.mkdir(parents=True)
    for number in range(MAX_MOUNTED_SKILLS + 1):
        (skills / f"s{number}").mkdir()
    with pytest.raises(MountError, match="cannot all be checked"):
        mount_arm(ws, PLACES, [bundle(tmp_path)], [])
    (skills / "s0").rmdir()  # negative control: at the bound, the mount proceeds
    assert mount_arm(ws, PLACES, [bundle(tmp_path / "again")], []).skills
