"""The identity of a project without Git: every entry, any depth, special files never opened."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from sevro_core.run.provenance import project_provenance
from tests.core.test_workspace import deep_tree


@pytest.fixture(autouse=True)
def no_hang() -> Iterator[None]:
    def expire(signum: int, frame: object) -> None:
        raise TimeoutError("blocked on a special file")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(20)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def digest(root: Path) -> str:
    found = project_provenance(root, [])
    assert found["revision"] is None
    return str(found["digest"])


def test_a_fifo_is_recorded_by_kind_and_never_opened(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a")
    plain = digest(tmp_path)
    os.mkfifo(tmp_path / "pipe")
    with_fifo = digest(tmp_path)  # would block forever if the FIFO were opened
    assert with_fifo != plain
    (tmp_path / "pipe").unlink()
    (tmp_path / "pipe").write_text("")
    assert digest(tmp_path) not in (plain, with_fifo)


def test_links_to_directories_and_depth_beyond_recursion_count(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a")
    plain = digest(tmp_path)
    (tmp_path / "to-etc").symlink_to("/etc")
    linked = digest(tmp_path)
    assert linked != plain
    with deep_tree(tmp_path, 1100):
        assert digest(tmp_path) != linked
    assert digest(tmp_path) == linked


def test_excluded_directories_do_not_count(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a")
    results = tmp_path / "results"
    results.mkdir()
    before = project_provenance(tmp_path, [results])["digest"]
    (results / "run.json").write_text("{}")
    os.mkfifo(results / "pipe")
    assert project_provenance(tmp_path, [results])["digest"] == before
