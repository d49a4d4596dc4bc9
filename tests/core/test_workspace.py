from __future__ import annotations

import contextlib
import os
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from sevro_core.fixtures.workspace import (
    WorkspaceEscapeError,
    create_workspace,
    list_confined,
    read_confined,
    remove_tree,
    write_confined,
)


def test_remove_tree_repairs_permissions_and_never_follows_links(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("keep")
    ws = create_workspace(tmp_path)
    locked = ws / "locked" / "inner"
    locked.mkdir(parents=True)
    (locked / "f").write_text("x")
    os.chmod(locked, 0)
    os.chmod(ws / "locked", 0o500)
    (ws / "link-dir").symlink_to(outside)
    (ws / "link-file").symlink_to(outside / "keep.txt")
    remove_tree(ws)
    assert not ws.exists()
    assert (outside / "keep.txt").read_text() == "keep"


def test_write_confined_refuses_symlinks(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    ws = create_workspace(tmp_path)
    (ws / "escape").symlink_to(outside)
    (ws / "file-link").symlink_to(outside / "target")
    with pytest.raises(WorkspaceEscapeError):
        write_confined(ws, "escape/x.txt", b"no")
    with pytest.raises(WorkspaceEscapeError):
        write_confined(ws, "file-link", b"no")
    assert list(outside.iterdir()) == []
    write_confined(ws, "new/dir/file.txt", b"yes")
    assert (ws / "new/dir/file.txt").read_bytes() == b"yes"


def test_read_confined_bounds_and_refuses_links(tmp_path: Path) -> None:
    ws = create_workspace(tmp_path)
    (ws / "big").write_bytes(b"x" * 100)
    data, size = read_confined(ws, "big", 10)
    assert (data, size) == (b"x" * 10, 100)
    secret = tmp_path / "secret"
    secret.write_text("s")
    (ws / "s").symlink_to(secret)
    with pytest.raises(WorkspaceEscapeError):
        read_confined(ws, "s", 10)
    with pytest.raises(FileNotFoundError):
        read_confined(ws, "missing", 10)


def test_read_confined_refuses_a_fifo_without_blocking(tmp_path: Path) -> None:
    ws = create_workspace(tmp_path)
    os.mkfifo(ws / "pipe")
    with pytest.raises(IsADirectoryError, match="not a regular file"):
        read_confined(ws, "pipe", 100)


def test_list_confined_lists_without_following_links_and_bounds(tmp_path: Path) -> None:
    ws = create_workspace(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("s")
    (ws / "docs" / "sub").mkdir(parents=True)
    (ws / "docs" / "b.md").write_text("b")
    (ws / "docs" / "a.md").write_text("a")
    (ws / "docs" / "link.md").symlink_to(outside / "secret.md")
    (ws / "out").symlink_to(outside)
    found = list_confined(ws, "docs", 10)
    assert found is not None
    assert [name for name, _ in found] == ["a.md", "b.md", "link.md", "sub"]
    modes = dict(found)
    assert stat.S_ISREG(modes["a.md"]) and stat.S_ISDIR(modes["sub"])
    assert stat.S_ISLNK(modes["link.md"])  # the link itself, not its target
    assert list_confined(ws, "docs", 3) is None
    assert [name for name, _ in list_confined(ws, "", 10) or []] == ["docs", "out"]
    with pytest.raises(WorkspaceEscapeError):
        list_confined(ws, "out", 10)
    with pytest.raises(FileNotFoundError):
        list_confined(ws, "missing", 10)


@pytest.mark.parametrize("relative", ["../x", "a/../../x", "/etc/passwd", "a//b", "./a", ".."])
def test_confined_access_refuses_paths_that_are_not_plain(tmp_path: Path, relative: str) -> None:
    ws = create_workspace(tmp_path)
    (tmp_path / "x").write_text("outside")
    with pytest.raises(WorkspaceEscapeError):
        read_confined(ws, relative, 10)
    with pytest.raises(WorkspaceEscapeError):
        write_confined(ws, relative, b"no")
    with pytest.raises(WorkspaceEscapeError):
        list_confined(ws, relative, 10)
    assert (tmp_path / "x").read_text() == "outside"


@contextlib.contextmanager
def deep_tree(root: Path, depth: int) -> Iterator[None]:
    """``root/d/d/.../d/f`` for the block; removed after it (pytest's own cleanup would recurse)."""
    make_deep_tree(root, depth)
    try:
        yield
    finally:
        remove_tree(root / "d")


def make_deep_tree(root: Path, depth: int) -> None:
    """``root/d/d/.../d/f`` ``depth`` levels deep, built by descriptor so no path is too long."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(depth):
            os.mkdir("d", dir_fd=fd)
            child = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = child
        leaf = os.open("f", os.O_WRONLY | os.O_CREAT, 0o600, dir_fd=fd)
        os.close(leaf)
        os.mkfifo("fifo", dir_fd=fd)
        os.symlink("/", "up", dir_fd=fd)
        os.chmod(fd, 0o500)
    finally:
        os.close(fd)


def test_remove_tree_removes_a_tree_deeper_than_recursion_and_path_limits(
    tmp_path: Path,
) -> None:
    ws = create_workspace(tmp_path)
    make_deep_tree(ws, 3000)  # deeper than the recursion limit and 4096-byte PATH_MAX
    try:
        remove_tree(ws)
    finally:
        if ws.exists():  # keep pytest's recursive cleanup of tmp_path working for everyone
            subprocess.run(["rm", "-rf", str(ws)], check=False)
    assert not ws.exists()
    assert sorted(os.listdir(tmp_path)) == []


def test_remove_tree_removes_a_wide_tree(tmp_path: Path) -> None:
    ws = create_workspace(tmp_path)
    for index in range(3000):
        (ws / f"dir-{index}").mkdir()
        (ws / f"dir-{index}" / "f").write_text("x")
        (ws / f"file-{index}").write_text("x")
    remove_tree(ws)
    assert not ws.exists()


def test_remove_tree_stops_when_a_directory_is_swapped_under_it(tmp_path: Path) -> None:
    """Climbing back through ``..`` checks identity, so a moved directory is never misremoved."""
    import sevro_core.fixtures.workspace as workspace

    ws = create_workspace(tmp_path)
    (ws / "a" / "b").mkdir(parents=True)
    keep = tmp_path / "elsewhere"
    keep.mkdir()
    real_enter = workspace._enter

    def enter_and_move(parent_fd: int, name: str) -> tuple[int, object]:
        opened = real_enter(parent_fd, name)
        if name == "b":
            (ws / "a").rename(keep / "a")
        return opened

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(workspace, "_enter", enter_and_move)
        with pytest.raises(OSError, match="moved during removal"):
            remove_tree(ws)
    assert (keep / "a").is_dir()
