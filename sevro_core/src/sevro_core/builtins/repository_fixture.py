"""The repository fixture (``{"sourceRef": "name", ...}``): a clean local repository, cloned.

The operator declares sources with ``--case-source-root`` and ``--case-source-map-file``
(:mod:`sevro_core.run.sources`). At load time the source must be a repository's top level with a
commit, a clean status (untracked files count) and no submodules; its commit enters the
fixture identity. Every trial re-checks the source, clones that exact commit without hardlinks
or checkout, checks it out detached, verifies HEAD, removes every remote and re-checks the
source, so a source that changed during a run cannot silently alter a trial.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from attrs import frozen

from sevro_core.api import (
    GIT_FIXTURE_CAPABILITIES,
    NO_FIXTURE_CONTEXT,
    ConfigurationError,
    FixtureContext,
    FixtureProvider,
    Git,
    GitError,
    GitOverlay,
    GitProbe,
    JsonValue,
    MaterialisedFixture,
    compile_overlay,
    describe_first_error,
    find_git,
    hookimpl,
    join_pointer,
    limits,
    validator,
    write_identity,
)

PROVIDER_ID = "sevro.fixture.repository"
_SYMLINK, _TREE, _GITLINK = b"120000", b"040000", b"160000"


class SourceChangedError(RuntimeError):
    """The source repository is no longer what was checked at load time."""


@frozen
class RepositoryFixture:
    git: str
    source_ref: str
    source: Path
    revision: str
    overlay: GitOverlay
    capabilities: frozenset[str] = GIT_FIXTURE_CAPABILITIES

    def identity(self) -> JsonValue:
        return {
            "kind": "repository",
            "sourceRef": self.source_ref,
            "revision": self.revision,
            **self.overlay.identity(),
        }

    def materialise(self, workspace: Path) -> MaterialisedFixture:
        git = Git(self.git)
        self._recheck(git, "before cloning")
        git.run(
            "clone", "-q", "--local", "--no-hardlinks", "--no-checkout", "--template=",
            str(self.source), str(workspace), cwd=workspace,
        )  # fmt: skip
        bound = git.bound(workspace)
        bound.run("checkout", "-q", "--detach", self.revision, cwd=workspace)
        head = bound.revision(workspace)
        if head != self.revision:
            raise SourceChangedError(f"the clone's HEAD is {head}, not {self.revision}")
        for remote in bound.text("remote", cwd=workspace).split():
            bound.run("remote", "remove", remote, cwd=workspace)
        write_identity(workspace)
        bin_dir = self.overlay.apply(bound, workspace)
        self._recheck(git, "after cloning")
        return MaterialisedFixture(
            bin_dir=bin_dir, probe=GitProbe(git=git, workspace=workspace, source=PROVIDER_ID)
        )

    def _recheck(self, git: Git, when: str) -> None:
        try:
            revision = git.revision(self.source)
            dirty = _dirty(git, self.source)
        except GitError as exc:
            message = f"source {self.source_ref!r} unreadable {when}: {exc}"
            raise SourceChangedError(message) from exc
        if revision != self.revision or dirty is not None:
            raise SourceChangedError(
                f"source {self.source_ref!r} ({self.source}) changed {when}: HEAD {revision}, "
                f"expected {self.revision}" + (f"; {dirty}" if dirty else "")
            )


class RepositoryFixtureProvider:
    """Owns fixtures with ``sourceRef`` (and ``kind: "repository"``)."""

    id = PROVIDER_ID
    version = "1.0.0"
    capabilities = GIT_FIXTURE_CAPABILITIES
    requires: frozenset[str] = frozenset()

    def accepts(self, declaration: Mapping[str, JsonValue]) -> bool:
        kind = declaration.get("kind")
        return "sourceRef" in declaration and kind in (None, "repository")

    def compile(
        self,
        declaration: Mapping[str, JsonValue],
        context: FixtureContext = NO_FIXTURE_CONTEXT,
    ) -> RepositoryFixture:
        found = describe_first_error(validator("fixture-repository.v1").iter_errors(declaration))
        if found is not None:
            raise ConfigurationError(found[1], found[0])
        ref = declaration["sourceRef"]
        assert isinstance(ref, str)
        if context.sources is None:
            raise ConfigurationError(
                "a repository fixture needs --case-source-root and --case-source-map-file",
                "/sourceRef",
            )
        source = context.sources.sources.get(ref)
        if source is None:
            raise ConfigurationError(
                f"unknown source {ref!r}; {context.sources.map_file} declares "
                f"{context.sources.describe()}",
                "/sourceRef",
            )
        if not source.is_dir():
            raise ConfigurationError(
                f"source {ref!r} ({source}) is not a directory; a repository fixture clones one",
                "/sourceRef",
            )
        overlay = compile_overlay(declaration)
        if overlay.byte_size > limits.MAX_GIT_FIXTURE_BYTES:
            raise ConfigurationError(f"overlay exceeds {limits.MAX_GIT_FIXTURE_BYTES} bytes")
        git = find_git()
        if git is None:
            raise ConfigurationError("a repository fixture needs git, which is not on PATH")
        try:
            revision, tree = _inspect(Git(git), ref, source)
        except GitError as exc:
            raise ConfigurationError(f"source {ref!r} ({source}): {exc}", "/sourceRef") from None
        _check_overlay(overlay, tree)
        return RepositoryFixture(
            git=git, source_ref=ref, source=source, revision=revision, overlay=overlay
        )


def _inspect(git: Git, ref: str, source: Path) -> tuple[str, dict[str, bytes]]:
    """Refuse anything but a clean, committed top level without submodules."""

    def refuse(problem: str) -> ConfigurationError:
        return ConfigurationError(f"source {ref!r} ({source}) {problem}", "/sourceRef")

    top = Path(git.text("rev-parse", "--show-toplevel", cwd=source)).resolve()
    if top != source:
        raise refuse(f"is not the top level of its Git repository ({top})")
    done = git.run("rev-parse", "--verify", "-q", "HEAD^{commit}", cwd=source, allowed_exits=(0, 1))
    if done.exit_code != 0:
        raise refuse("has no commit")
    revision = git.revision(source)
    dirty = _dirty(git, source)
    if dirty is not None:
        raise refuse(f"is not clean: {dirty}; commit or remove them (untracked files count)")
    listing = git.run(
        "ls-tree", "-r", "-t", "-z", "--full-tree", revision, cwd=source,
        limit=limits.MAX_SOURCE_LISTING_BYTES,
    )  # fmt: skip
    tree: dict[str, bytes] = {}
    for record in listing.stdout.split(b"\0"):
        if record:
            meta, _, path = record.partition(b"\t")
            tree[path.decode("utf-8", "surrogateescape")] = meta.split(b" ")[0]
    submodules = sorted(p for p, mode in tree.items() if mode == _GITLINK)
    if submodules or ".gitmodules" in tree:
        named = ", ".join(submodules) or ".gitmodules"
        raise refuse(f"has submodules ({named}), which repository fixtures refuse")
    return revision, tree


def _dirty(git: Git, source: Path) -> str | None:
    """A short description of uncommitted or untracked paths, or None when clean."""
    done = git.run(
        "status", "--porcelain=v1", "-z", "--untracked-files=all", "--ignore-submodules=none",
        cwd=source, truncate=True,
    )  # fmt: skip
    records = [r for r in done.stdout.split(b"\0") if r]
    if not records:
        return None
    first = records[0].decode("utf-8", "backslashreplace")
    more = "+" if done.truncated else ""
    return f"{len(records)}{more} changed or untracked path(s), e.g. {first!r}"


def _check_overlay(overlay: GitOverlay, tree: Mapping[str, bytes]) -> None:
    """Overlays may replace source files, never a symlink, a directory or a case variant."""
    folded = {path.casefold(): path for path in tree}
    for path, _ in overlay.files:
        pointer = join_pointer("/files", path)
        parts = path.split("/")
        for depth in range(1, len(parts) + 1):
            prefix = "/".join(parts[:depth])
            last = depth == len(parts)
            mode = tree.get(prefix)
            other = folded.get(prefix.casefold())
            if mode is None and other is not None:
                raise ConfigurationError(
                    f"path {path!r} collides with source path {other!r} (ignoring case)", pointer
                )
            if mode == _SYMLINK:
                raise ConfigurationError(
                    f"path {path!r} targets {prefix!r}, a symlink in the source; "
                    "overlays cannot write through or replace symlinks",
                    pointer,
                )
            if last and mode == _TREE:
                raise ConfigurationError(f"path {path!r} is a directory in the source", pointer)
            if not last and mode not in (None, _TREE):
                raise ConfigurationError(
                    f"path {path!r} needs directory {prefix!r}, which is a file in the source",
                    pointer,
                )


_PROVIDER: FixtureProvider = RepositoryFixtureProvider()


@hookimpl
def sevro_register_fixtures(register: Callable[[FixtureProvider], None]) -> None:
    register(_PROVIDER)
