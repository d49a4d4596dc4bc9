"""The workspace change account: iterative over any depth, partial (never wrong) beyond bounds."""

from __future__ import annotations

from pathlib import Path

import pytest

import sevro_core.fixtures.changes as changes_module
from sevro_core.fixtures.changes import changes, snapshot
from tests.core.test_workspace import deep_tree


def test_a_tree_deeper_than_the_recursion_limit_is_digested(tmp_path: Path) -> None:
    before = snapshot(tmp_path)
    with deep_tree(tmp_path, 1100):  # 2200-byte paths: deeper than recursion, within PATH_MAX
        after = snapshot(tmp_path)
    assert before.complete and after.complete
    leaf = "d/" * 1100 + "f"
    assert after.entries[leaf][0] == "file"
    assert after.entries["d/" * 1100 + "up"][0] == "symlink"
    added = {c["path"] for c in changes(before, after)["changes"]}  # type: ignore[index]
    assert added == {leaf, "d/" * 1100 + "up"}  # the FIFO is neither a file nor followed


def test_beyond_path_max_the_account_is_partial(tmp_path: Path) -> None:
    with deep_tree(tmp_path, 3000):
        after = snapshot(tmp_path)
    assert not after.complete
    assert all(path.startswith("d/") for path in after.entries)


def test_every_file_but_git_internals_is_digested(tmp_path: Path) -> None:
    for name in ("b/x", "a/y", "a/z/w", "c"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(name)
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "HEAD").write_text("ignored")
    whole = snapshot(tmp_path)
    assert whole.complete and set(whole.entries) == {"a/y", "a/z/w", "b/x", "c"}


def test_directories_count_toward_the_scan_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(changes_module, "MAX_CHANGE_SCAN_FILES", 50)
    for index in range(60):
        (tmp_path / f"empty-{index}").mkdir()
    assert not snapshot(tmp_path).complete
    for index in range(20):
        (tmp_path / f"empty-{index}").rmdir()
    assert snapshot(tmp_path).complete
