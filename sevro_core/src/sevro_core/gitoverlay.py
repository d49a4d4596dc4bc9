"""What both Git fixture kinds put on top of their history: files, staging, tools and hooks.

Per trial, after the history exists: write the overlay ``files`` into the working tree,
commit them as "Add evaluation scaffolding" when ``commitFiles`` is true, ``git add`` the
``staged`` paths, then install ``bin`` tools and ``hooks``. Sevro's order, Sevro's rules.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from attrs import field, frozen

from sevro_core.errors import ConfigurationError, join_pointer
from sevro_core.fixturepaths import check_git_path
from sevro_core.fixturetools import FixtureTools, compile_tools
from sevro_core.git import SCAFFOLDING_MESSAGE, Git
from sevro_core.jsonio import JsonValue
from sevro_core.workspace import write_confined

IDENTITY_CONFIG = b"[user]\n\tname = Sevro Fixture\n\temail = fixture@sevro.invalid\n"
"""Appended to every fixture's ``.git/config`` so any host can commit without a global identity."""


@frozen
class GitOverlay:
    """A validated overlay: files, staged paths, the scaffolding flag, tools and hooks."""

    files: tuple[tuple[str, str], ...] = ()
    staged: tuple[str, ...] = ()
    commit_files: bool = False
    tools: FixtureTools = field(factory=FixtureTools)

    @property
    def byte_size(self) -> int:
        """Paths, contents, staged names, tool names and contents, in UTF-8 bytes."""
        files = sum(len(p.encode()) + len(c.encode()) for p, c in self.files)
        return files + sum(len(p.encode()) for p in self.staged) + self.tools.byte_size

    def identity(self) -> dict[str, JsonValue]:
        return {
            "files": dict(self.files),
            "staged": list(self.staged),
            "commitFiles": self.commit_files,
            **self.tools.identity(),
        }

    def apply(self, git: Git, workspace: Path) -> Path | None:
        """Write, commit, stage and install; return the tool directory, if any."""
        write_files(workspace, self.files)
        if self.commit_files:
            paths = [path for path, _ in self.files]
            commit(git, workspace, paths, SCAFFOLDING_MESSAGE, allow_empty=True)
        if self.staged:
            add(git, workspace, self.staged)
        return self.tools.install(workspace)


def compile_overlay(declaration: Mapping[str, JsonValue]) -> GitOverlay:
    """Validate ``files``, ``staged``, ``commitFiles``, ``hooks`` and ``bin`` (pointers relative
    to the fixture object)."""
    files = declaration.get("files", {})
    assert isinstance(files, dict)  # the fixture's schema ran first
    for path in files:
        check_git_path(path, join_pointer("/files", path))
    staged = declaration.get("staged", [])
    assert isinstance(staged, list)
    seen: dict[str, int] = {}
    for index, path in enumerate(staged):
        pointer = join_pointer("/staged", index)
        if path not in files:
            raise ConfigurationError(f"staged path {path!r} is not a key of files", pointer)
        if path.casefold() in seen:
            raise ConfigurationError(
                f"staged path {path!r} repeats /staged/{seen[path.casefold()]} (ignoring case)",
                pointer,
            )
        seen[path.casefold()] = index
    commit_files = bool(declaration.get("commitFiles", False))
    if commit_files and not files:
        raise ConfigurationError("commitFiles needs a non-empty files overlay", "/commitFiles")
    return GitOverlay(
        files=tuple(sorted(files.items())),
        staged=tuple(staged),
        commit_files=commit_files,
        tools=compile_tools(declaration),
    )


def write_files(workspace: Path, files: Iterable[tuple[str, str]]) -> None:
    """Create or replace working-tree files, never through a symlink."""
    for path, content in files:
        write_confined(workspace, path, content.encode("utf-8"))


def add(git: Git, workspace: Path, paths: Iterable[str]) -> None:
    """``git add`` literal paths, passed on stdin so no argument list can grow too long."""
    names = b"\0".join(p.encode("utf-8") for p in paths)
    git.run("add", "--pathspec-from-file=-", "--pathspec-file-nul", cwd=workspace, stdin=names)


def commit(
    git: Git, workspace: Path, paths: Iterable[str], message: str, *, allow_empty: bool = False
) -> None:
    """Stage ``paths`` and commit them with the fixed identity and date (hooks off)."""
    add(git, workspace, paths)
    extra = ("--allow-empty",) if allow_empty else ()
    git.run("commit", "-q", "--no-verify", *extra, "-m", message, cwd=workspace)


def write_identity(workspace: Path) -> None:
    """Give the repository a local committer identity (see :data:`IDENTITY_CONFIG`)."""
    with open(workspace / ".git" / "config", "ab") as config:
        config.write(IDENTITY_CONFIG)
