"""The generated Git fixture: deterministic history, overlay, staging, tools, hooks, refusals."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest

from sevro_core.builtins.generated_fixture import GeneratedFixtureProvider
from sevro_core.builtins.inline_fixture import InlineFixtureProvider
from sevro_core.errors import ConfigurationError
from sevro_core.fixtures.workspace import create_workspace, remove_tree
from sevro_core.plugin.protocols import MaterialisedFixture
from sevro_core.testing import require_tool

provider = GeneratedFixtureProvider()
BASIC: dict[str, Any] = {
    "kind": "generated",
    "commits": [{"message": "chore: initialize", "files": {"README.md": "base\n"}}],
}
BASIC_COMMIT = "25f87e4807431d88bb775a4c9dc0e8bb3ed95115"  # plain `git commit -m`, same env


@pytest.fixture(autouse=True)
def _git() -> None:
    require_tool("git")


def git(workspace: Path, *args: str) -> str:
    env = {"PATH": "/usr/bin:/bin", "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
    done = subprocess.run(
        ["git", *args], cwd=workspace, capture_output=True, text=True, env=env, check=True
    )
    return done.stdout


def build(tmp_path: Path, declaration: dict[str, Any]) -> tuple[Path, MaterialisedFixture]:
    workspace = create_workspace(tmp_path)
    return workspace, provider.compile(declaration).materialise(workspace)


def test_accepts_only_generated_and_inline_keeps_refusing_it() -> None:
    assert provider.accepts(BASIC)
    assert not provider.accepts({"files": {}})
    assert not provider.accepts({"sourceRef": "repo"})
    assert not InlineFixtureProvider().accepts(BASIC)


def test_history_is_byte_identical_and_ignores_the_operators_git(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hostile = tmp_path / "hostile.gitconfig"
    hostile.write_text("[user]\n\tname = Someone\n[commit]\n\tgpgSign = true\n")
    for name, value in {
        "GIT_CONFIG_GLOBAL": str(hostile),
        "GIT_AUTHOR_NAME": "Leak",
        "GIT_COMMITTER_DATE": "2020-02-02T00:00:00+00:00",
        "GIT_DIR": str(tmp_path / "elsewhere"),
        "GIT_INDEX_FILE": str(tmp_path / "index"),
    }.items():
        monkeypatch.setenv(name, value)
    first, _ = build(tmp_path, BASIC)
    second, _ = build(tmp_path, BASIC)
    monkeypatch.undo()
    assert git(first, "rev-parse", "HEAD").strip() == BASIC_COMMIT
    assert git(second, "rev-parse", "HEAD").strip() == BASIC_COMMIT
    assert git(first, "symbolic-ref", "HEAD").strip() == "refs/heads/main"
    log = git(first, "log", "--format=%an <%ae>|%cn <%ce>|%aI|%cI|%B")
    assert log == (
        "Sevro Fixture <fixture@sevro.invalid>|Sevro Fixture <fixture@sevro.invalid>|"
        "2000-01-01T00:00:00+00:00|2000-01-01T00:00:00+00:00|chore: initialize\n\n"
    )
    assert git(first, "config", "user.email").strip() == "fixture@sevro.invalid"
    assert not (first / ".git" / "hooks").exists()  # no machine-specific template hooks


def test_commits_stack_and_messages_are_stored_as_git_commit_m_does(tmp_path: Path) -> None:
    declaration = {
        "kind": "generated",
        "commits": [
            {"message": "one", "files": {"a.txt": "1\n", "src/b.py": "b = 1\n"}},
            {"message": "  two  \n\n\n\nbody line   \n\n", "files": {"src/b.py": "b = 2\n"}},
        ],
    }
    workspace, _ = build(tmp_path, declaration)
    assert git(workspace, "log", "--format=%B%x00") == "  two\n\nbody line\n\x00\none\n\x00\n"
    assert git(workspace, "show", "HEAD:src/b.py") == "b = 2\n"
    assert git(workspace, "show", "HEAD:a.txt") == "1\n"
    assert git(workspace, "status", "--porcelain") == ""


def test_overlay_staging_and_scaffolding(tmp_path: Path) -> None:
    overlay = {
        **BASIC,
        "files": {"README.md": "edited\n", "notes/todo.md": "todo\n"},
        "staged": ["README.md"],
    }
    workspace, _ = build(tmp_path, overlay)
    assert git(workspace, "rev-parse", "HEAD").strip() == BASIC_COMMIT
    assert git(workspace, "diff", "--cached", "--name-only") == "README.md\n"
    assert git(workspace, "status", "--porcelain", "--untracked-files=all") == (
        "M  README.md\n?? notes/todo.md\n"
    )
    scaffolded, _ = build(tmp_path, {**overlay, "commitFiles": True})
    subjects = git(scaffolded, "log", "--format=%s")
    assert subjects == "Add evaluation scaffolding\nchore: initialize\n"
    assert git(scaffolded, "status", "--porcelain", "--untracked-files=all") == ""
    again, _ = build(tmp_path, {**overlay, "commitFiles": True})
    assert git(again, "rev-parse", "HEAD") == git(scaffolded, "rev-parse", "HEAD")


def test_an_empty_history_is_allowed(tmp_path: Path) -> None:
    workspace, fixture = build(tmp_path, {"kind": "generated", "commits": [], "files": {"a": "x"}})
    assert fixture.probe is not None
    from sevro_core.models import CancelToken

    assert fixture.probe.baseline(CancelToken()) == {"baseRevision": None}
    assert git(workspace, "status", "--porcelain") == "?? a\n"


def test_tools_and_hooks_are_installed_executable_inside_git(tmp_path: Path) -> None:
    declaration = {
        **BASIC,
        "bin": {"run-tests": "#!/bin/sh\necho ok\n", "Lint.sh": "#!/bin/sh\n"},
        "hooks": {"pre-commit": "#!/bin/sh\nexit 1\n"},
        "files": {"x": "y"},
        "commitFiles": True,  # committed before the failing hook exists
    }
    workspace, fixture = build(tmp_path, declaration)
    assert fixture.bin_dir == workspace / ".git" / "fixture-bin"
    assert fixture.bin_dir == fixture.bin_dir.resolve()
    for path in (fixture.bin_dir / "run-tests", workspace / ".git/hooks/pre-commit"):
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o755
    ran = subprocess.run([fixture.bin_dir / "run-tests"], capture_output=True, check=True)
    assert ran.stdout == b"ok\n"
    assert git(workspace, "log", "-1", "--format=%s") == "Add evaluation scaffolding\n"
    plain, without = build(tmp_path, BASIC)
    assert without.bin_dir is None
    remove_tree(workspace)
    remove_tree(plain)
    assert not workspace.exists() and not plain.exists()


def test_identity_is_normalised_and_holds_everything() -> None:
    explicit = {**BASIC, "files": {}, "staged": [], "commitFiles": False, "hooks": {}, "bin": {}}
    assert provider.compile(BASIC).identity() == provider.compile(explicit).identity()
    assert provider.compile(BASIC).identity() == {
        "kind": "generated",
        "commits": [{"message": "chore: initialize", "files": {"README.md": "base\n"}}],
        "files": {},
        "staged": [],
        "commitFiles": False,
        "bin": {},
        "hooks": {},
    }
    with_tool = provider.compile({**BASIC, "bin": {"t": "#!/bin/sh\n"}}).identity()
    assert with_tool != provider.compile(BASIC).identity()


def commit(files: dict[str, str], message: str = "m") -> dict[str, Any]:
    return {"message": message, "files": files}


@pytest.mark.parametrize(
    ("declaration", "pointer", "fragment"),
    [
        ({"commits": [commit({".git/config": "x"})]}, "/commits/0/files/.git~1config", ".git"),
        ({"commits": [], "files": {"a/.GIT/hooks/x": "x"}}, "/files/a~1.GIT~1hooks~1x", ".git"),
        ({"commits": [commit({"../x": "x"})]}, "/commits/0/files/..~1x", "'..'"),
        (
            {"commits": [commit({"README.md": "a"})], "files": {"readme.md": "b"}},
            "/files/readme.md",
            "collides",
        ),
        (
            {"commits": [commit({"a": "file"}), commit({"a/b": "under it"})]},
            "/commits/1/files/a~1b",
            "collides",
        ),
        ({"commits": [], "files": {"a": "x"}, "staged": ["b"]}, "/staged/0", "not a key"),
        (
            {"commits": [], "files": {"a": "x", "A": "y"}, "staged": ["a"]},
            "/files/a",
            "collides",
        ),
        (
            {"commits": [], "files": {"a": "x"}, "staged": ["a", "a"]},
            "/staged/1",
            "repeats",
        ),
        ({"commits": [], "commitFiles": True}, "/commitFiles", "non-empty files"),
        ({"commits": [commit({"a": str(i)}) for i in range(129)]}, "/commits", "more than 128"),
        ({"commits": [commit({"a": "x"}, " \n\t")]}, "/commits/0/message", "does not match"),
        ({"commits": [commit({"a": "x"}, "é" * 2100)]}, "/commits/0/message", "4096 bytes"),
        ({"commits": [commit({"a": "x"}, "a\0b")]}, "/commits/0/message", "NUL"),
        ({"commits": [commit({})]}, "/commits/0/files", "should be non-empty"),
        ({"commits": [commit({"a": "x"}), commit({"a": "x"})]}, "/commits/1/files", "no file"),
        ({"commits": [], "bin": {"9tool": "x"}}, "/bin", "does not match"),
        ({"commits": [], "bin": {"tool": "x", "TOOL": "y"}}, "/bin/TOOL", "collides"),
        ({"commits": [], "bin": {"t": "a\0b"}}, "/bin/t", "NUL"),
        ({"commits": [], "bin": {"t": "x" * (1 << 20 | 1)}}, "/bin", "1048576 bytes"),
        ({"commits": [], "hooks": {"Pre-commit": "x"}}, "/hooks", "does not match"),
        ({"commits": [], "extra": 1}, "/extra", "unknown key"),
    ],
)
def test_refusals_name_the_pointer(
    declaration: dict[str, Any], pointer: str, fragment: str
) -> None:
    with pytest.raises(ConfigurationError) as info:
        provider.compile({"kind": "generated", **declaration})
    assert info.value.pointer == pointer, info.value.message
    assert fragment in info.value.message


def test_totals_are_bounded() -> None:
    many = {f"f{i}": "" for i in range(600)}
    more = {f"g{i}": "" for i in range(600)}
    with pytest.raises(ConfigurationError, match="1200 files; at most 1024"):
        provider.compile({"kind": "generated", "commits": [commit(many)], "files": more})
    big = "x" * (17 << 20)
    with pytest.raises(ConfigurationError, match="exceed 33554432 bytes"):
        provider.compile(
            {"kind": "generated", "commits": [commit({"a": big})], "files": {"b": big}}
        )
