"""What the comparator is shown of a pair: each side from its persisted evidence (verified
against the recorded digests, bounded, truncation flagged), the base fixture materialised afresh
without any arm (text files only, no .git, no symlinks followed, bounded, removed afterwards)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from sevro_core.builtins.generated_fixture import GeneratedFixtureProvider
from sevro_core.builtins.inline_fixture import InlineFixtureProvider
from sevro_core.judges import subjects
from sevro_core.judges.subjects import SubjectError, base_files, judged_result, read_base_files
from sevro_core.limits import MAX_JUDGED_RESULT_BYTES
from sevro_core.plugin.protocols import MaterialisedFixture
from sevro_core.store.evidence import EvidenceStore
from sevro_core.testing import require_tool


def store(tmp_path: Path) -> EvidenceStore:
    return EvidenceStore(tmp_path / "results", "run-1")


def workspace_observation(
    completeness: str = "complete", diff_truncated: bool = False
) -> dict[str, Any]:
    return {
        "id": "sevro.observation.workspace",
        "source": "sevro.fixture.generated",
        "completeness": completeness,
        "data": {"diffTruncated": diff_truncated},
    }


def evidence(
    evidence_store: EvidenceStore,
    message: bytes | None,
    diff: bytes | None,
    observation: dict[str, Any] | None = None,
) -> dict[str, Any]:
    raw = None if message is None else evidence_store.write_blob("c@b", "trial-1-raw.txt", message)
    refs = []
    if diff is not None:
        refs.append(
            {
                "id": "sevro.git.diff",
                **evidence_store.write_blob("c@b", "trial-1-sevro.git.diff.bin", diff),
            }
        )
    return {
        "rawResult": raw,
        "artifactRefs": refs,
        "observations": [] if observation is None else [observation],
    }


def test_a_side_is_its_final_message_and_diff(tmp_path: Path) -> None:
    s = store(tmp_path)
    result = judged_result(
        s.run_dir, evidence(s, b"done \xe2\x9c\x93", b"+x\n", workspace_observation())
    )
    assert (result.final_message, result.diff) == ("done \u2713", "+x\n")
    assert (result.final_message_truncated, result.diff_truncated) == (False, False)


def test_a_fixture_without_git_has_no_diff_and_a_silent_agent_no_message(tmp_path: Path) -> None:
    s = store(tmp_path)
    result = judged_result(s.run_dir, evidence(s, None, None))
    assert (result.final_message, result.diff, result.diff_truncated) == (None, None, False)


def test_beyond_the_bound_a_side_is_cut_and_flagged(tmp_path: Path) -> None:
    s = store(tmp_path)
    big = b"a" * (MAX_JUDGED_RESULT_BYTES + 10)
    result = judged_result(s.run_dir, evidence(s, big, big, workspace_observation()))
    assert result.final_message is not None and result.diff is not None
    assert len(result.final_message) == len(result.diff) == MAX_JUDGED_RESULT_BYTES
    assert result.final_message_truncated and result.diff_truncated
    exact = b"a" * MAX_JUDGED_RESULT_BYTES  # negative control: at the bound nothing is cut
    result = judged_result(s.run_dir, evidence(s, exact, exact, workspace_observation()))
    assert not result.final_message_truncated and not result.diff_truncated


@pytest.mark.parametrize(
    "observation", [workspace_observation(diff_truncated=True), workspace_observation("partial")]
)
def test_a_diff_the_probe_cut_or_could_not_complete_is_flagged(
    tmp_path: Path, observation: dict[str, Any]
) -> None:
    s = store(tmp_path)
    assert judged_result(s.run_dir, evidence(s, b"m", b"+x\n", observation)).diff_truncated


def test_evidence_that_is_missing_changed_or_unavailable_is_refused(tmp_path: Path) -> None:
    s = store(tmp_path)
    with pytest.raises(SubjectError, match="unavailable"):
        judged_result(s.run_dir, evidence(s, b"m", None, workspace_observation("unavailable")))
    with pytest.raises(SubjectError, match="exactly one diff"):
        judged_result(s.run_dir, evidence(s, b"m", None, workspace_observation()))
    changed = evidence(s, b"message", b"+x\n", workspace_observation())
    (s.run_dir / changed["rawResult"]["path"]).write_bytes(b"massage")
    with pytest.raises(SubjectError, match="digest"):
        judged_result(s.run_dir, changed)
    gone = evidence(s, b"m", b"+x\n", workspace_observation())
    os.unlink(s.run_dir / gone["artifactRefs"][0]["path"])
    with pytest.raises(SubjectError, match="unreadable"):
        judged_result(s.run_dir, gone)
    escaping = evidence(s, b"m", None)
    escaping["rawResult"] = {**escaping["rawResult"], "path": "../outside.txt"}
    with pytest.raises(SubjectError):
        judged_result(s.run_dir, escaping)


def test_the_base_is_the_fixtures_text_files_and_the_directory_is_removed(tmp_path: Path) -> None:
    fixture = InlineFixtureProvider().compile(
        {
            "files": {
                "src/app.py": "print('hi')\n",
                "README.md": "# app\n",
                "data/blob.bin": "a\u0000b",
            }
        }
    )
    root = tmp_path / "root"
    root.mkdir()
    found = base_files(fixture, root)
    assert dict(found.files) == {"README.md": "# app\n", "src/app.py": "print('hi')\n"}
    assert list(found.files) == ["README.md", "src/app.py"]  # path order
    assert found.truncated is False
    assert list(root.iterdir()) == []


def test_a_git_fixture_shows_its_files_but_not_git(tmp_path: Path) -> None:
    require_tool("git")
    fixture = GeneratedFixtureProvider().compile(
        {
            "kind": "generated",
            "commits": [{"message": "init", "files": {"lib.py": "x = 1\n"}}],
            "files": {"notes.txt": "uncommitted\n"},
            "bin": {"tool": "#!/bin/sh\necho tool\n"},
        }
    )
    found = base_files(fixture, tmp_path)
    assert dict(found.files) == {"lib.py": "x = 1\n", "notes.txt": "uncommitted\n"}


class Hostile:
    """A fixture that leaves a symlink to a secret outside, a FIFO and a non-UTF-8 file."""

    capabilities: frozenset[str] = frozenset()

    def __init__(self, secret: Path) -> None:
        self.secret = secret

    def identity(self) -> Any:
        return {}

    def materialise(self, workspace: Path) -> MaterialisedFixture:
        (workspace / "ok.txt").write_text("fine\n")
        (workspace / "link.txt").symlink_to(self.secret)
        (workspace / "dir-link").symlink_to(self.secret.parent, target_is_directory=True)
        os.mkfifo(workspace / "pipe")
        (workspace / "latin1.txt").write_bytes(b"caf\xe9\n")
        return MaterialisedFixture()


def test_symlinks_fifos_and_binaries_are_never_shown(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = outside / "secret.txt"
    secret.write_text("SECRET\n")
    found = base_files(Hostile(secret), tmp_path)
    assert dict(found.files) == {"ok.txt": "fine\n"}
    assert "SECRET" not in "".join(found.files.values())


def test_beyond_the_bounds_files_are_left_out_and_flagged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a.txt").write_text("x" * 10)
    (tmp_path / "b.txt").write_text("y" * 100)
    (tmp_path / "c.txt").write_text("z" * 10)
    monkeypatch.setattr(subjects, "MAX_JUDGED_BASE_FILES_BYTES", 40)
    found = read_base_files(tmp_path)
    assert dict(found.files) == {"a.txt": "x" * 10, "c.txt": "z" * 10}  # b does not fit
    assert found.truncated is True
    monkeypatch.setattr(subjects, "MAX_JUDGED_BASE_FILES_BYTES", 135)  # 3 paths + 120 bytes
    found = read_base_files(tmp_path)
    assert (len(found.files), found.truncated) == (3, False)
    monkeypatch.setattr(subjects, "MAX_JUDGED_BASE_FILE_ENTRIES", 2)
    found = read_base_files(tmp_path)
    assert (len(found.files), found.truncated) == (2, True)
