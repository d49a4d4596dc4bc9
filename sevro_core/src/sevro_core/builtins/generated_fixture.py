"""The generated Git fixture (``{"kind": "generated", "commits": [...], ...}``).

Every trial builds the same history: ``git init --initial-branch=main``, then for each commit
write its files, ``git add`` and ``git commit -m`` with a fixed identity and date, global and
system configuration ignored and hooks disabled. Two trials of a case therefore have the same
commit ids. Then the overlay, scaffolding commit, staging, tools and hooks
(:mod:`sevro_core.fixtures.overlay`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from attrs import frozen

from sevro_core.api import (
    FIXTURE_BRANCH,
    GIT_FIXTURE_CAPABILITIES,
    NO_FIXTURE_CONTEXT,
    ConfigurationError,
    FixtureContext,
    FixtureProvider,
    Git,
    GitOverlay,
    GitProbe,
    JsonValue,
    MaterialisedFixture,
    check_collisions,
    check_git_path,
    commit_paths,
    compile_overlay,
    describe_first_error,
    find_git,
    hookimpl,
    join_pointer,
    limits,
    validator,
    write_files,
    write_identity,
)

PROVIDER_ID = "sevro.fixture.generated"


@frozen
class Commit:
    message: str
    files: tuple[tuple[str, str], ...]


@frozen
class GeneratedFixture:
    git: str
    commits: tuple[Commit, ...]
    overlay: GitOverlay
    capabilities: frozenset[str] = GIT_FIXTURE_CAPABILITIES

    def identity(self) -> JsonValue:
        return {
            "kind": "generated",
            "commits": [{"message": c.message, "files": dict(c.files)} for c in self.commits],
            **self.overlay.identity(),
        }

    def materialise(self, workspace: Path) -> MaterialisedFixture:
        git = Git(self.git)
        git.run(
            "init", "-q", f"--initial-branch={FIXTURE_BRANCH}", "--template=", str(workspace),
            cwd=workspace,
        )  # fmt: skip
        write_identity(workspace)
        bound = git.bound(workspace)
        for entry in self.commits:
            write_files(workspace, entry.files)
            commit_paths(bound, workspace, [path for path, _ in entry.files], entry.message)
        bin_dir = self.overlay.apply(bound, workspace)
        return MaterialisedFixture(
            bin_dir=bin_dir, probe=GitProbe(git=git, workspace=workspace, source=PROVIDER_ID)
        )


class GeneratedFixtureProvider:
    """Owns fixtures with ``kind: "generated"``."""

    id = PROVIDER_ID
    version = "1.0.0"
    capabilities = GIT_FIXTURE_CAPABILITIES
    requires: frozenset[str] = frozenset()

    def accepts(self, declaration: Mapping[str, JsonValue]) -> bool:
        return declaration.get("kind") == "generated"

    def compile(
        self,
        declaration: Mapping[str, JsonValue],
        context: FixtureContext = NO_FIXTURE_CONTEXT,
    ) -> GeneratedFixture:
        found = describe_first_error(validator("fixture-generated.v1").iter_errors(declaration))
        if found is not None:
            raise ConfigurationError(found[1], found[0])
        commits, pointers, size = _compile_commits(declaration["commits"])
        overlay = compile_overlay(declaration)
        for path, _ in overlay.files:
            pointers.setdefault(path, join_pointer("/files", path))
        check_collisions(pointers, "", pointers)
        count = sum(len(c.files) for c in commits) + len(overlay.files)
        if count > limits.MAX_GIT_FIXTURE_FILES:
            raise ConfigurationError(
                f"commits and overlay declare {count} files; at most {limits.MAX_GIT_FIXTURE_FILES}"
            )
        size += overlay.byte_size
        if size > limits.MAX_GIT_FIXTURE_BYTES:
            raise ConfigurationError(
                f"paths, contents, messages and names exceed {limits.MAX_GIT_FIXTURE_BYTES} bytes"
            )
        git = find_git()
        if git is None:
            raise ConfigurationError("a generated Git fixture needs git, which is not on PATH")
        return GeneratedFixture(git=git, commits=commits, overlay=overlay)


def _compile_commits(declared: JsonValue) -> tuple[tuple[Commit, ...], dict[str, str], int]:
    """Validate each commit; return them, where each path first appeared, and their bytes."""
    assert isinstance(declared, list)
    commits = []
    tree: dict[str, str] = {}
    pointers: dict[str, str] = {}
    size = 0
    for index, entry in enumerate(declared):
        pointer = join_pointer("/commits", index)
        message = entry["message"]
        if "\0" in message:
            raise ConfigurationError("message contains NUL", pointer + "/message")
        if len(message.encode("utf-8")) > limits.MAX_COMMIT_MESSAGE_BYTES:
            raise ConfigurationError(
                f"message is longer than {limits.MAX_COMMIT_MESSAGE_BYTES} bytes",
                pointer + "/message",
            )
        files = entry["files"]
        for path in files:
            check_git_path(path, join_pointer(pointer, "files", path))
            pointers.setdefault(path, join_pointer(pointer, "files", path))
        if all(tree.get(path) == content for path, content in files.items()):
            raise ConfigurationError(
                "commit changes no file of the previous commit's tree", pointer + "/files"
            )
        tree.update(files)
        size += len(message.encode())
        size += sum(len(p.encode()) + len(c.encode()) for p, c in files.items())
        commits.append(Commit(message=message, files=tuple(sorted(files.items()))))
    return tuple(commits), pointers, size


_PROVIDER: FixtureProvider = GeneratedFixtureProvider()


@hookimpl
def sevro_register_fixtures(register: Callable[[FixtureProvider], None]) -> None:
    register(_PROVIDER)
