"""``sevro.path``: exists / absent / kind, judged without following symlinks."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from sevro_core.errors import ConfigurationError
from sevro_core.states import CheckStatus, Completeness
from sevro_core.testing import grade, trial_view
from sevro_graders.path_grader import PathGrader

grader = PathGrader()


def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "CHANGELOG.md").write_text("# Changes\n")
    (root / "src" / "pkg" / "a.py").write_text("")
    outside = tmp_path / "outside"
    (outside / "inner").mkdir(parents=True)
    (outside / "secret.txt").write_text("x")
    (root / "link-out").symlink_to(outside)
    (root / "dangling").symlink_to(tmp_path / "nowhere")
    os.mkfifo(root / "fifo")
    return root


def status(tmp_path: Path, config: dict[str, Any]) -> tuple[CheckStatus, str | None]:
    outcome = grade(grader, config, trial_view(workspace=workspace(tmp_path)))
    return outcome.status, outcome.detail


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ({"path": "CHANGELOG.md", "expect": "exists"}, CheckStatus.PASSED),
        ({"path": "CHANGELOG.md", "expect": "exists", "kind": "file"}, CheckStatus.PASSED),
        ({"path": "CHANGELOG.md", "expect": "exists", "kind": "directory"}, CheckStatus.FAILED),
        ({"path": "CHANGELOG.md", "expect": "absent"}, CheckStatus.FAILED),
        ({"path": "src/pkg", "expect": "exists", "kind": "directory"}, CheckStatus.PASSED),
        ({"path": "src/pkg/a.py", "expect": "exists", "kind": "any"}, CheckStatus.PASSED),
        ({"path": "NOTES.md", "expect": "exists"}, CheckStatus.FAILED),
        ({"path": "NOTES.md", "expect": "absent"}, CheckStatus.PASSED),
        # below a regular file nothing can exist
        ({"path": "CHANGELOG.md/x", "expect": "absent"}, CheckStatus.PASSED),
        ({"path": "src/missing/deeper", "expect": "absent"}, CheckStatus.PASSED),
        # a symlink is itself an entry (even dangling), never followed
        ({"path": "link-out", "expect": "exists"}, CheckStatus.PASSED),
        ({"path": "link-out", "expect": "exists", "kind": "symlink"}, CheckStatus.PASSED),
        ({"path": "link-out", "expect": "exists", "kind": "directory"}, CheckStatus.FAILED),
        ({"path": "dangling", "expect": "exists"}, CheckStatus.PASSED),
        ({"path": "dangling", "expect": "absent"}, CheckStatus.FAILED),
        ({"path": "fifo", "expect": "exists", "kind": "file"}, CheckStatus.FAILED),
        ({"path": "fifo", "expect": "exists"}, CheckStatus.PASSED),
        # what lies behind a symlinked directory cannot be told without following it
        ({"path": "link-out/secret.txt", "expect": "exists"}, CheckStatus.UNAVAILABLE),
        ({"path": "link-out/secret.txt", "expect": "absent"}, CheckStatus.UNAVAILABLE),
        ({"path": "link-out/nothing", "expect": "absent"}, CheckStatus.UNAVAILABLE),
    ],
)
def test_expectations(tmp_path: Path, config: dict[str, Any], expected: CheckStatus) -> None:
    found, detail = status(tmp_path, config)
    assert found is expected, detail
    assert (detail is None) == (found is CheckStatus.PASSED)


def test_details_name_what_was_found(tmp_path: Path) -> None:
    assert status(tmp_path, {"path": "CHANGELOG.md", "expect": "absent"})[1] == (
        "'CHANGELOG.md' exists (file)"
    )
    assert status(tmp_path / "b", {"path": "x", "expect": "exists"})[1] == "'x' does not exist"
    detail = status(tmp_path / "c", {"path": "link-out", "expect": "exists", "kind": "file"})[1]
    assert detail == "'link-out' is a symlink, expected a file"
    detail = status(tmp_path / "d", {"path": "link-out/secret.txt", "expect": "exists"})[1]
    assert detail == "'link-out' is a symlink (not followed)"


def test_the_outcome_carries_its_own_observation(tmp_path: Path) -> None:
    view = trial_view(workspace=workspace(tmp_path))
    outcome = grade(grader, {"path": "src", "expect": "exists"}, view, check_id="has-src")
    (obs,) = outcome.observations
    assert obs.id == "sevro.observation.path.has-src"
    assert outcome.evidence_refs == (obs.id,)
    assert (obs.completeness, dict(obs.data)) == (
        Completeness.COMPLETE,
        {"path": "src", "kind": "directory"},
    )
    odd = grade(grader, {"path": "src", "expect": "exists"}, view, check_id="Has_Src")
    assert odd.observations[0].id.startswith("sevro.observation.path.") and "_" not in (
        odd.observations[0].id
    )


def test_a_missing_workspace_is_unavailable_never_passed() -> None:
    for expect in ("exists", "absent"):
        outcome = grade(grader, {"path": "x", "expect": expect}, trial_view())
        assert outcome.status is CheckStatus.UNAVAILABLE
        assert outcome.detail == "the workspace is unavailable"


def test_an_uninspectable_directory_is_unavailable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = workspace(tmp_path)
    real = os.lstat

    def refuse(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        if str(path).endswith("src/pkg"):
            raise PermissionError(13, "Permission denied")
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os, "lstat", refuse)
    config = {"path": "src/pkg/a.py", "expect": "absent"}
    outcome = grade(grader, config, trial_view(workspace=root))
    assert outcome.status is CheckStatus.UNAVAILABLE
    assert outcome.detail == "'src/pkg' cannot be inspected (Permission denied)"


@pytest.mark.parametrize(
    ("config", "pointer", "message"),
    [
        ({"expect": "exists"}, "", "exactly one of path and glob"),
        ({"path": "a"}, "", "expect"),
        ({"path": "a", "expect": "present"}, "/expect", ""),
        ({"path": "a", "expect": "exists", "kind": "fifo"}, "/kind", ""),
        ({"path": "a", "expect": "absent", "kind": "file"}, "", ""),
        ({"path": "a", "expect": "exists", "glob": "*"}, "", "exactly one"),
        ({"path": "", "expect": "exists"}, "/path", ""),
        ({"path": "/etc/passwd", "expect": "exists"}, "/path", "absolute"),
        ({"path": "../x", "expect": "exists"}, "/path", "'..'"),
        ({"path": "a//b", "expect": "exists"}, "/path", "empty"),
        ({"path": 3, "expect": "exists"}, "/path", ""),
    ],
)
def test_bad_configuration_is_refused_with_a_pointer(
    config: dict[str, Any], pointer: str, message: str
) -> None:
    with pytest.raises(ConfigurationError) as caught:
        grader.compile(config)
    assert caught.value.pointer == pointer
    assert message in str(caught.value)


# ---- globs -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("config", "expected", "detail"),
    [
        ({"glob": "src/**/*.py", "expect": "exists"}, CheckStatus.PASSED, None),
        ({"glob": "**/a.py", "expect": "exists"}, CheckStatus.PASSED, None),
        ({"glob": "src/**", "expect": "exists", "kind": "file"}, CheckStatus.PASSED, None),
        (
            {"glob": "src/*", "expect": "exists", "kind": "file"},
            CheckStatus.FAILED,
            "nothing matches 'src/*'",
        ),
        ({"glob": "*.md", "expect": "exists"}, CheckStatus.PASSED, None),
        ({"glob": "CHANGELOG.?d", "expect": "exists"}, CheckStatus.PASSED, None),
        ({"glob": "*.md", "expect": "absent"}, CheckStatus.FAILED, "'CHANGELOG.md' matches '*.md'"),
        ({"glob": "src/**/*.rs", "expect": "absent"}, CheckStatus.PASSED, None),
        (
            {"glob": "src/**/*.rs", "expect": "exists"},
            CheckStatus.FAILED,
            "nothing matches 'src/**/*.rs'",
        ),
        ({"glob": "*.txt", "expect": "absent"}, CheckStatus.PASSED, None),
        ({"glob": "link-out", "expect": "exists", "kind": "symlink"}, CheckStatus.PASSED, None),
        # a symlinked directory could hide a match: absence is not claimed
        (
            {"glob": "**/secret.txt", "expect": "absent"},
            CheckStatus.UNAVAILABLE,
            "no match seen, but 'dangling' is a symlink (not followed)",
        ),
        (
            {"glob": "link-out/*", "expect": "exists"},
            CheckStatus.UNAVAILABLE,
            "no match seen, but 'link-out' is a symlink (not followed)",
        ),
    ],
)
def test_globs(
    tmp_path: Path, config: dict[str, Any], expected: CheckStatus, detail: str | None
) -> None:
    assert status(tmp_path, config) == (expected, detail)


def test_a_glob_walk_over_the_bound_is_unavailable_unless_it_matched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sevro_core import limits

    root = tmp_path / "ws"
    (root / "many").mkdir(parents=True)
    for index in range(10):
        (root / "many" / f"f{index}.txt").write_text("")
    monkeypatch.setattr(limits, "MAX_PATH_GLOB_ENTRIES", 5)
    view = trial_view(workspace=root)
    far = grade(grader, {"glob": "**/*.py", "expect": "absent"}, view)
    assert (far.status, far.detail) == (
        CheckStatus.UNAVAILABLE,
        "no match seen, but more than 5 entries (not all seen)",
    )
    near = grade(grader, {"glob": "many/f0.txt", "expect": "exists"}, view)
    assert near.status is CheckStatus.PASSED
    assert near.observations[0].data == {
        "glob": "many/f0.txt",
        "match": "many/f0.txt",
        "entriesSeen": 2,
    }


def test_a_glob_walks_the_top_level_git_directory_only_when_it_names_it(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    (root / ".git" / "refs").mkdir(parents=True)
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (root / "sub" / ".git").mkdir(parents=True)
    view = trial_view(workspace=root)
    assert grade(grader, {"glob": "**/HEAD", "expect": "absent"}, view).status is CheckStatus.PASSED
    assert grade(grader, {"glob": ".git/HEAD", "expect": "exists"}, view).status is (
        CheckStatus.PASSED
    )
    assert grade(grader, {"glob": "**/.git", "expect": "exists"}, view).status is (
        CheckStatus.PASSED
    )


def test_a_glob_in_a_missing_workspace_is_unavailable() -> None:
    outcome = grade(grader, {"glob": "*", "expect": "absent"}, trial_view())
    assert (outcome.status, outcome.detail) == (
        CheckStatus.UNAVAILABLE,
        "the workspace is unavailable",
    )


@pytest.mark.parametrize(
    ("config", "pointer"),
    [
        ({"glob": "*", "path": "a", "expect": "exists"}, ""),
        ({"glob": "[ab].py", "expect": "exists"}, "/glob"),
        ({"glob": "{a,b}.py", "expect": "exists"}, "/glob"),
        ({"glob": "../*", "expect": "exists"}, "/glob"),
        ({"glob": "/*", "expect": "exists"}, "/glob"),
        ({"glob": "", "expect": "exists"}, "/glob"),
        ({"glob": "*", "expect": "absent", "kind": "file"}, ""),
    ],
)
def test_bad_globs_are_refused_with_a_pointer(config: dict[str, Any], pointer: str) -> None:
    with pytest.raises(ConfigurationError) as caught:
        grader.compile(config)
    assert caught.value.pointer == pointer


@pytest.mark.parametrize(
    ("glob", "path", "matches"),
    [
        ("*", "a", True),
        ("*", "a/b", False),
        ("**", "a/b/c", True),
        ("src/**", "src", False),
        ("src/**", "src/a/b", True),
        ("src/**/*.py", "src/a.py", True),
        ("src/**/*.py", "src/x/y/a.py", True),
        ("src/**/*.py", "src/x/y/a.pyc", False),
        ("**/**/a", "a", True),
        ("a/**/b/**/c", "a/x/b/c", True),
        ("a/**/b/**/c", "a/x/c", False),
        ("?.md", "a.md", True),
        ("?.md", "ab.md", False),
        ("*.md", ".hidden.md", True),
        ("a*b*c", "aXbYc", True),
        ("a*b*c", "aXbY", False),
        ("*a*a*a*a*a*a*a*a*a*a*a*b", "a" * 250, False),
    ],
)
def test_glob_semantics(glob: str, path: str, matches: bool) -> None:
    from sevro_graders.path_glob import compile_glob

    assert compile_glob({"glob": glob}).matches(path) is matches
