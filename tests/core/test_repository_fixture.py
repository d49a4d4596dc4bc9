"""Repository fixtures and case sources: clean committed sources only, cloned per trial."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from sevro_core.builtins.repository_fixture import RepositoryFixtureProvider, SourceChangedError
from sevro_core.errors import ConfigurationError, InvocationError
from sevro_core.fixtures.workspace import create_workspace
from sevro_core.plugin.protocols import CaseSources, FixtureContext
from sevro_core.run.sources import load_case_sources
from sevro_core.testing import require_tool

provider = RepositoryFixtureProvider()


@pytest.fixture(autouse=True)
def _git() -> None:
    require_tool("git")


def git(cwd: Path, *args: str) -> str:
    env = {
        "PATH": "/usr/bin:/bin",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_AUTHOR_NAME": "Source",
        "GIT_AUTHOR_EMAIL": "source@example.invalid",
        "GIT_COMMITTER_NAME": "Source",
        "GIT_COMMITTER_EMAIL": "source@example.invalid",
    }
    done = subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, env=env, check=True
    )
    return done.stdout


def make_source(root: Path, name: str = "repo", files: dict[str, str] | None = None) -> Path:
    source = root / name
    source.mkdir(parents=True)
    git(source, "init", "-q", "-b", "trunk")
    for path, content in (files or {"README.md": "source\n", "src/a.py": "a = 1\n"}).items():
        (source / path).parent.mkdir(parents=True, exist_ok=True)
        (source / path).write_text(content)
    git(source, "add", "-A")
    git(source, "commit", "-qm", "source commit")
    git(source, "remote", "add", "origin", "https://example.invalid/repo.git")
    return source


def sources(root: Path, mapping: dict[str, Any]) -> CaseSources:
    map_file = root / "sources.json"
    map_file.write_text(json.dumps(mapping))
    loaded = load_case_sources(root, map_file)
    assert loaded is not None
    return loaded


def context_for(root: Path, source: Path) -> FixtureContext:
    return FixtureContext(sources=sources(root, {"repo": source.as_uri()}))


def test_accepts_source_refs() -> None:
    assert provider.accepts({"sourceRef": "repo"})
    assert provider.accepts({"kind": "repository", "sourceRef": "repo"})
    assert not provider.accepts({"kind": "generated", "sourceRef": "repo"})
    assert not provider.accepts({"files": {}})


def test_clones_the_exact_commit_without_remotes(tmp_path: Path) -> None:
    root = tmp_path / "sources"
    source = make_source(root)
    revision = git(source, "rev-parse", "HEAD").strip()
    declaration = {
        "sourceRef": "repo",
        "files": {"README.md": "overlay\n", "NEW.md": "new\n"},
        "staged": ["NEW.md"],
        "bin": {"check": "#!/bin/sh\n"},
    }
    fixture = provider.compile(declaration, context_for(root, source))
    assert fixture.identity() == {
        "kind": "repository",
        "sourceRef": "repo",
        "revision": revision,
        "files": {"NEW.md": "new\n", "README.md": "overlay\n"},
        "staged": ["NEW.md"],
        "commitFiles": False,
        "bin": {"check": "#!/bin/sh\n"},
        "hooks": {},
    }
    workspace = create_workspace(tmp_path)
    materialised = fixture.materialise(workspace)
    assert git(workspace, "rev-parse", "HEAD").strip() == revision
    assert git(workspace, "remote") == ""
    assert git(workspace, "status", "--porcelain") == "A  NEW.md\n M README.md\n"
    assert materialised.bin_dir == workspace / ".git/fixture-bin"
    stat = os.stat(workspace / "src/a.py")
    assert stat.st_ino != os.stat(source / "src/a.py").st_ino
    objects = [p for p in (workspace / ".git/objects").rglob("*") if p.is_file()]
    assert objects and all(os.stat(p).st_nlink == 1 for p in objects)  # no hardlinks
    assert git(source, "status", "--porcelain") == ""  # the source is untouched
    assert materialised.probe is not None


def test_scaffolding_commit_is_deterministic(tmp_path: Path) -> None:
    root = tmp_path / "sources"
    source = make_source(root)
    fixture = provider.compile(
        {"sourceRef": "repo", "files": {"tests/t.sh": "exit 0\n"}, "commitFiles": True},
        context_for(root, source),
    )
    heads = []
    for _ in range(2):
        workspace = create_workspace(tmp_path)
        fixture.materialise(workspace)
        heads.append(git(workspace, "log", "--format=%H %s %an %aI", "-1"))
    assert heads[0] == heads[1]
    assert " Add evaluation scaffolding Sevro Fixture 2000-01-01T00:00:00+00:00" in heads[0]


def test_a_source_that_changes_during_a_run_is_refused_per_trial(tmp_path: Path) -> None:
    root = tmp_path / "sources"
    source = make_source(root)
    fixture = provider.compile({"sourceRef": "repo"}, context_for(root, source))
    (source / "README.md").write_text("dirty\n")
    with pytest.raises(SourceChangedError, match="changed before cloning"):
        fixture.materialise(create_workspace(tmp_path))
    git(source, "commit", "-qam", "moved on")
    with pytest.raises(SourceChangedError, match="expected"):
        fixture.materialise(create_workspace(tmp_path))


def refusal(declaration: dict[str, Any], context: FixtureContext) -> ConfigurationError:
    with pytest.raises(ConfigurationError) as info:
        provider.compile(declaration, context)
    return info.value


def test_a_file_source_is_not_a_repository(tmp_path: Path) -> None:
    root = tmp_path / "sources"
    source = make_source(root)
    context = FixtureContext(sources=sources(root, {"repo": (source / "README.md").as_uri()}))
    refused = refusal({"sourceRef": "repo"}, context)
    assert "is not a directory; a repository fixture clones one" in refused.message
    assert refused.pointer == "/sourceRef"
    assert provider.compile({"sourceRef": "repo"}, context_for(root, source))


def test_dirty_untracked_uncommitted_and_nested_sources_are_refused(tmp_path: Path) -> None:
    root = tmp_path / "sources"
    dirty = make_source(root, "dirty")
    (dirty / "README.md").write_text("changed\n")
    untracked = make_source(root, "untracked")
    (untracked / "stray.txt").write_text("x")
    ignored = make_source(root, "ignored", {".gitignore": "*.log\n", "a": "a"})
    (ignored / "build.log").write_text("ignored files do not count")
    empty = root / "empty"
    empty.mkdir()
    git(empty, "init", "-q")
    nested = make_source(root, "outer")
    (nested / "inner").mkdir()
    (root / "plain").mkdir()
    context = FixtureContext(
        sources=sources(
            root,
            {
                name: (root / path).as_uri()
                for name, path in {
                    "dirty": "dirty",
                    "untracked": "untracked",
                    "ignored": "ignored",
                    "empty": "empty",
                    "nested": "outer/inner",
                    "plain": "plain",
                }.items()
            },
        )
    )
    assert "is not clean: 1 changed or untracked path(s), e.g. ' M README.md'" in (
        refusal({"sourceRef": "dirty"}, context).message
    )
    assert "'?? stray.txt'" in refusal({"sourceRef": "untracked"}, context).message
    provider.compile({"sourceRef": "ignored"}, context)
    assert "has no commit" in refusal({"sourceRef": "empty"}, context).message
    assert "is not the top level" in refusal({"sourceRef": "nested"}, context).message
    assert "not a git repository" in refusal({"sourceRef": "plain"}, context).message.lower()
    unknown = refusal({"sourceRef": "nope"}, context)
    assert unknown.pointer == "/sourceRef" and "declares dirty, empty, ignored" in unknown.message
    missing = refusal({"sourceRef": "repo"}, FixtureContext())
    assert "needs --case-source-root and --case-source-map-file" in missing.message


def test_submodules_are_refused(tmp_path: Path) -> None:
    root = tmp_path / "sources"
    inner = make_source(root, "inner")
    outer = make_source(root, "outer")
    git(outer, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(inner), "lib")
    git(outer, "commit", "-qm", "add submodule")
    error = refusal({"sourceRef": "repo"}, context_for(root, outer))
    assert "has submodules (lib)" in error.message


def test_overlays_cannot_target_symlinks_directories_or_git(tmp_path: Path) -> None:
    root = tmp_path / "sources"
    source = make_source(root, files={"README.md": "r\n", "docs/guide.md": "g\n"})
    (source / "link").symlink_to("docs")
    (source / "file-link").symlink_to("README.md")
    git(source, "add", "-A")
    git(source, "commit", "-qm", "links")
    context = context_for(root, source)
    cases = {
        "link/x.md": "a symlink in the source",
        "file-link": "a symlink in the source",
        "docs": "is a directory in the source",
        "README.md/x": "which is a file in the source",
        "readme.md": "collides with source path 'README.md'",
        "DOCS/new.md": "collides with source path 'docs'",
        ".git/config": "inside .git",
    }
    for path, fragment in cases.items():
        error = refusal({"sourceRef": "repo", "files": {path: "x"}}, context)
        assert fragment in error.message, (path, error.message)
        assert error.pointer == "/files/" + path.replace("/", "~1")
    provider.compile(
        {"sourceRef": "repo", "files": {"README.md": "replaced", "docs/new.md": "n"}}, context
    )


def test_source_maps_must_stay_inside_the_root(tmp_path: Path) -> None:
    root = tmp_path / "sources"
    source = make_source(root)
    outside = make_source(tmp_path, "outside")
    (root / "escape").symlink_to(outside)
    (root / "inside-link").symlink_to(source)
    os.mkfifo(root / "fifo")
    assert sources(root, {"a": (root / "inside-link").as_uri()}).sources["a"] == source
    readme = source / "README.md"
    assert sources(root, {"a": readme.as_uri()}).sources["a"] == readme, "files are sources too"
    for url, fragment in {
        (root / "escape").as_uri(): "outside --case-source-root",
        outside.as_uri(): "outside --case-source-root",
        "https://example.invalid/repo": "is not a file:/// URL",
        "file://host/tmp/x": "is not a file:/// URL",
        (root / "missing").as_uri(): "does not exist",
        (root / "fifo").as_uri(): "neither a directory nor a regular file",
    }.items():
        with pytest.raises(InvocationError) as info:
            sources(root, {"a": url})
        assert fragment in info.value.message, url
        assert info.value.pointer == "/a"
    with pytest.raises(InvocationError, match="source id must match"):
        sources(root, {"bad id": source.as_uri()})
    with pytest.raises(InvocationError, match="must be given together"):
        load_case_sources(root, None)
    assert load_case_sources(None, None) is None
