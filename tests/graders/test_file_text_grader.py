"""``sevro.file-text``: contains / equals / notContains over a bounded, strict UTF-8 read."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from sevro_core import limits
from sevro_core.errors import ConfigurationError
from sevro_core.states import CheckStatus, Completeness
from sevro_core.testing import grade, trial_view
from sevro_graders import workspace_entry
from sevro_graders.file_text_grader import FileTextGrader

grader = FileTextGrader()
CHANGELOG = "# Changes\n\n- fixed the parser\n"


def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir(parents=True)
    (root / "CHANGELOG.md").write_text(CHANGELOG)
    (root / "latin1.txt").write_bytes("caf\xe9".encode("latin-1"))
    (root / "bom.txt").write_bytes(b"\xef\xbb\xbfhello")
    (root / "docs").mkdir()
    (tmp_path / "secret.txt").write_text("fixed the parser")
    (root / "link.txt").symlink_to(tmp_path / "secret.txt")
    (root / "linkdir").symlink_to(tmp_path)
    os.mkfifo(root / "fifo")
    return root


def check(tmp_path: Path, config: dict[str, Any]) -> tuple[CheckStatus, str | None]:
    outcome = grade(grader, config, trial_view(workspace=workspace(tmp_path)))
    return outcome.status, outcome.detail


P, F, U = CheckStatus.PASSED, CheckStatus.FAILED, CheckStatus.UNAVAILABLE


@pytest.mark.parametrize(
    ("config", "expected", "detail"),
    [
        ({"contains": "fixed the parser"}, P, None),
        ({"contains": ["# Changes", "parser"]}, P, None),
        ({"contains": ["# Changes", "lexer"]}, F, "'CHANGELOG.md' does not contain contains[1]"),
        ({"contains": "FIXED"}, F, "'CHANGELOG.md' does not contain contains[0]"),
        ({"equals": CHANGELOG}, P, None),
        ({"equals": CHANGELOG.rstrip("\n")}, F, "'CHANGELOG.md' does not equal the expected text"),
        ({"notContains": "TODO"}, P, None),
        ({"notContains": ["TODO", "parser"]}, F, "'CHANGELOG.md' contains notContains[1]"),
        ({"contains": "parser", "notContains": "TODO"}, P, None),
        ({"equals": CHANGELOG, "notContains": "TODO"}, P, None),
    ],
)
def test_assertions(
    tmp_path: Path, config: dict[str, Any], expected: CheckStatus, detail: str | None
) -> None:
    assert check(tmp_path, {"path": "CHANGELOG.md", **config}) == (expected, detail)


@pytest.mark.parametrize("assertion", ["contains", "equals", "notContains"])
@pytest.mark.parametrize(
    ("path", "expected", "detail"),
    [
        ("NOTES.md", F, "'NOTES.md' does not exist"),
        ("docs", F, "'docs' is a directory, not a file"),
        ("link.txt", F, "'link.txt' is a symlink (not followed)"),
        ("fifo", F, "'fifo' is not a regular file"),
        ("latin1.txt", F, "'latin1.txt' is not valid UTF-8 (at byte 3)"),
        ("linkdir/secret.txt", U, "'linkdir' is a symlink (not followed)"),
    ],
)
def test_no_text_is_never_a_pass(
    tmp_path: Path, assertion: str, path: str, expected: CheckStatus, detail: str
) -> None:
    """A missing file fails notContains too: a check on a file's text needs the file."""
    config = {"path": path, assertion: "fixed the parser"}
    assert check(tmp_path, config) == (expected, detail)


def test_a_byte_order_mark_is_text(tmp_path: Path) -> None:
    assert check(tmp_path, {"path": "bom.txt", "equals": "\ufeffhello"}) == (P, None)
    assert check(tmp_path / "b", {"path": "bom.txt", "equals": "hello"})[0] is F


def test_a_file_over_the_bound_is_unavailable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(limits, "MAX_CHECKED_FILE_BYTES", len(CHANGELOG) - 1)
    for assertion in ("contains", "equals", "notContains"):
        status, detail = check(tmp_path / assertion, {"path": "CHANGELOG.md", assertion: "x"})
        assert status is U
        assert detail == f"'CHANGELOG.md' is larger than {len(CHANGELOG) - 1} bytes (not read)"
    monkeypatch.setattr(limits, "MAX_CHECKED_FILE_BYTES", len(CHANGELOG))
    assert check(tmp_path / "exact", {"path": "CHANGELOG.md", "contains": "parser"}) == (P, None)


def test_an_unreadable_file_is_unavailable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any) -> tuple[bytes, int]:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(workspace_entry, "read_confined", refuse)
    status, detail = check(tmp_path, {"path": "CHANGELOG.md", "notContains": "x"})
    assert (status, detail) == (U, "'CHANGELOG.md' cannot be read (Permission denied)")


def test_the_observation_records_the_bytes_read(tmp_path: Path) -> None:
    view = trial_view(workspace=workspace(tmp_path))
    outcome = grade(grader, {"path": "CHANGELOG.md", "contains": "x"}, view, check_id="log")
    (obs,) = outcome.observations
    assert obs.id == "sevro.observation.file-text.log"
    assert obs.completeness is Completeness.COMPLETE
    assert obs.data["byteLength"] == len(CHANGELOG)
    assert len(str(obs.data["sha256"])) == 64
    missing = grade(grader, {"path": "linkdir/x", "contains": "x"}, view, check_id="log")
    assert missing.observations[0].completeness is Completeness.UNAVAILABLE


@pytest.mark.parametrize(
    ("config", "pointer"),
    [
        ({"contains": "x"}, ""),
        ({"path": "a"}, ""),
        ({"path": "a", "contains": ""}, "/contains"),
        ({"path": "a", "contains": []}, "/contains"),
        ({"path": "a", "contains": [1]}, "/contains/0"),
        ({"path": "a", "notContains": ["x", ""]}, "/notContains/1"),
        ({"path": "a", "equals": ["x"]}, "/equals"),
        ({"path": "a", "contains": "x", "regex": "y"}, "/regex"),
        ({"path": "../a", "contains": "x"}, "/path"),
        ({"path": "/a", "contains": "x"}, "/path"),
    ],
)
def test_bad_configuration_is_refused_with_a_pointer(config: dict[str, Any], pointer: str) -> None:
    with pytest.raises(ConfigurationError) as caught:
        grader.compile(config)
    assert caught.value.pointer == pointer
