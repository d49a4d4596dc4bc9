"""Workspace copies taken when a turn settles, and the views of a past turn built from them:
an untrusted workspace is never followed out of, nothing is skipped silently, and evidence of
later turns never leaks into an earlier turn's view."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sevro_core.fixtures import snapshots
from sevro_core.fixtures.snapshots import copy_workspace
from sevro_core.models import HostResult, Observation
from sevro_core.run.turns import TurnRecorder
from sevro_core.states import Completeness
from sevro_core.testing import trial_view


def tree(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): (f"-> {os.readlink(p)}" if p.is_symlink() else p.read_text())
        for p in sorted(root.rglob("*"))
        if p.is_symlink() or p.is_file()
    }


def test_a_copy_keeps_files_modes_and_links_without_following_them(tmp_path: Path) -> None:
    source = tmp_path / "ws"
    (source / "src").mkdir(parents=True)
    (source / "src" / "run.sh").write_text("echo hi\n")
    (source / "src" / "run.sh").chmod(0o755)
    (source / "notes.txt").write_text("one")
    (source / "passwd").symlink_to("/etc/passwd")
    (source / "etc").symlink_to("/etc")
    assert copy_workspace(source, tmp_path / "copy")
    assert tree(tmp_path / "copy") == {
        "etc": "-> /etc",
        "notes.txt": "one",
        "passwd": "-> /etc/passwd",
        "src/run.sh": "echo hi\n",
    }
    assert os.stat(tmp_path / "copy" / "src" / "run.sh").st_mode & 0o100
    assert not (tmp_path / "copy" / "etc").resolve().is_relative_to(tmp_path)  # a link, kept


def test_a_special_file_or_a_bound_makes_the_copy_partial(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = tmp_path / "ws"
    source.mkdir()
    os.mkfifo(source / "pipe")  # never opened: a FIFO would block a reader
    assert not copy_workspace(source, tmp_path / "a")
    (source / "pipe").unlink()
    (source / "big.txt").write_text("x" * 100)
    monkeypatch.setattr(snapshots, "MAX_TURN_SNAPSHOT_BYTES", 99)
    assert not copy_workspace(source, tmp_path / "b")
    monkeypatch.setattr(snapshots, "MAX_TURN_SNAPSHOT_BYTES", 100)
    monkeypatch.setattr(snapshots, "MAX_TURN_SNAPSHOT_ENTRIES", 0)
    assert not copy_workspace(source, tmp_path / "c")
    monkeypatch.setattr(snapshots, "MAX_TURN_SNAPSHOT_ENTRIES", 1)
    assert copy_workspace(source, tmp_path / "d")


def commands(*turns: int) -> Observation:
    entries = [{"turn": t, "ordinal": i, "command": f"c{i}"} for i, t in enumerate(turns)]
    return Observation("sevro.commands", "h", Completeness.COMPLETE, {"commands": entries})


def skills(*reads: tuple[int, str]) -> Observation:
    entries = [{"skill": "notes", "turn": t, "ordinal": 0, "status": s} for t, s in reads]
    data = {"offered": [{"name": "notes"}], "reads": entries, "read": ["notes"]}
    return Observation("sevro.skills", "h", Completeness.COMPLETE, data)


def recorder(tmp_path: Path, turns: int = 3) -> TurnRecorder:
    workspace, private = tmp_path / "ws", tmp_path / "private"
    workspace.mkdir()
    private.mkdir()
    (workspace / "a.txt").write_text("zero")
    found = TurnRecorder(turns, frozenset({1, 3}), workspace, private)
    found.begin()
    return found


def test_a_past_turns_view_holds_only_what_that_turn_left(tmp_path: Path) -> None:
    turns = recorder(tmp_path)
    (turns.workspace / "a.txt").write_text("one")
    turns.settle(1, "first")
    turns.settle(1, "again")  # a host reporting a turn twice is ignored
    turns.settle(4, "out of range")
    (turns.workspace / "a.txt").write_text("two")
    turns.settle(2, None)
    turns.settle(3, "third")
    result = HostResult(
        "third",
        complete=True,
        observations=(commands(1, 2, 3), skills((1, "partial"), (2, "read"))),
        turns_completed=3,
    )
    final = trial_view("third", workspace=turns.workspace, observations=result.observations)
    first = turns.view(final, result, 1)
    assert not isinstance(first, str)
    assert (first.turn, first.final_message, first.isolation) == (1, "first", None)
    assert (first.workspace / "a.txt").read_text() == "one"
    assert [c["turn"] for c in first.observations["sevro.commands"].data["commands"]] == [1]
    assert first.observations["sevro.skills"].data["read"] == []  # recounted from turn 1 only
    last = turns.view(final, result, 3)
    assert not isinstance(last, str) and last.workspace == turns.workspace and last.turn == 3
    assert turns.view(final, result, 2) == "turn 2's workspace was not kept"
    assert [t["reply"] for t in turns.observation().data["turns"]] == ["first", None, "third"]


def test_a_turn_that_never_settled_is_no_view(tmp_path: Path) -> None:
    turns = recorder(tmp_path)
    result = HostResult(None, complete=False, turns_completed=0)
    view = turns.view(trial_view(None), result, 1)
    assert view == "turn 1 never settled (the host completed 0)"
