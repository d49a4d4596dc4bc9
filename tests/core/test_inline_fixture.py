from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from sevro_core.builtins.inline_fixture import InlineFixtureProvider
from sevro_core.errors import ConfigurationError
from sevro_core.fixtures.workspace import create_workspace, remove_tree

provider = InlineFixtureProvider()


@pytest.mark.parametrize(
    ("path", "fragment"),
    [
        ("/etc/passwd", "absolute"),
        ("a/../b", "'..' part"),
        ("./a", "'.' or '..'"),
        ("a//b", "empty"),
        ("a\\b", "backslash"),
        ("C:x", "colon"),
        ("a\0b", "NUL"),
        ("a/", "empty"),
        ("x" * 1025, "longer than 1024"),
        ("/".join(["d"] * 33), "deeper than 32"),
    ],
)
def test_unsafe_paths_are_refused(path: str, fragment: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        provider.compile({"files": {path: "x"}})
    assert fragment in info.value.message
    assert info.value.pointer.startswith("/files")


@pytest.mark.parametrize(
    "files",
    [
        {"README.md": "a", "readme.MD": "b"},
        {"Docs": "file", "docs/a.txt": "under it"},
        {"src/A.py": "", "SRC/b.py": "", "src": "x"},
    ],
)
def test_case_insensitive_collisions(files: dict[str, str]) -> None:
    with pytest.raises(ConfigurationError, match="collides"):
        provider.compile({"files": files})


def test_shape_is_validated() -> None:
    with pytest.raises(ConfigurationError) as info:
        provider.compile({"files": {"a": 1}})
    assert info.value.pointer == "/files/a"
    with pytest.raises(ConfigurationError, match="unknown key 'extra'"):
        provider.compile({"files": {}, "extra": True})


def test_accepts_only_its_shape() -> None:
    assert provider.accepts({"files": {}})
    assert provider.accepts({"kind": "inline", "files": {}})
    assert not provider.accepts({"kind": "generated", "commits": []})
    assert not provider.accepts({"sourceRef": "repo"})


def test_materialise_writes_private_files(tmp_path: Path) -> None:
    fixture = provider.compile({"files": {"a/b/c.txt": "deep", "a/x.txt": "é", "top": ""}})
    workspace = create_workspace(tmp_path)
    assert stat.S_IMODE(os.stat(workspace).st_mode) == 0o700
    assert workspace == workspace.resolve()
    fixture.materialise(workspace)
    assert (workspace / "a/b/c.txt").read_text() == "deep"
    assert (workspace / "a/x.txt").read_text(encoding="utf-8") == "é"
    assert stat.S_IMODE(os.stat(workspace / "a/b").st_mode) == 0o700
    assert stat.S_IMODE(os.stat(workspace / "top").st_mode) == 0o600
    assert fixture.identity() == {"files": {"a/b/c.txt": "deep", "a/x.txt": "é", "top": ""}}
    remove_tree(workspace)
    assert not workspace.exists()
