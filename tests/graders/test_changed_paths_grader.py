"""``sevro.changed-paths``: positive and negative controls on the ``sevro.files-changed`` facts."""

from __future__ import annotations

from typing import Any

import pytest

from sevro_core.errors import ConfigurationError, GradingError
from sevro_core.models import Observation, TrialView
from sevro_core.states import CheckStatus, Completeness
from sevro_core.testing import trial_view
from sevro_graders.changed_paths_grader import ChangedPathsGrader
from sevro_graders.path_glob import compile_glob

grader = ChangedPathsGrader()


def view(data: Any, completeness: Completeness = Completeness.COMPLETE) -> TrialView:
    """The test kit's trial, with the ``sevro.files-changed`` observation when ``data`` is given."""
    found = Observation("sevro.files-changed", "sevro.host.codex", completeness, data)
    return trial_view("done", observations=[] if data is None else [found])


def changed(*paths: str) -> dict[str, Any]:
    return {"changes": [{"path": p, "change": "modified"} for p in paths]}


def grade(configuration: dict[str, Any], data: Any, **kw: Any) -> Any:
    return grader.compile(configuration).grade("paths", view(data, **kw))


@pytest.mark.parametrize(
    ("glob", "path", "matches"),
    [
        ("CHANGELOG.md", "CHANGELOG.md", True),
        ("CHANGELOG.md", "docs/CHANGELOG.md", False),
        ("*.md", "README.md", True),
        ("*.md", "docs/README.md", False),
        ("src/**", "src/a.py", True),
        ("src/**", "src/pkg/deep/a.py", True),
        ("src/**", "srcx/a.py", False),
        ("**/*.py", "a.py", True),
        ("**/*.py", "src/pkg/a.py", True),
        ("**/*.py", "src/pkg/a.pyc", False),
        ("src/**/test_*.py", "src/test_a.py", True),
        ("src/**/test_*.py", "src/x/y/test_a.py", True),
        ("a?.txt", "ab.txt", True),
        ("a?.txt", "a/.txt", False),
        ("a.txt", "abtxt", False),
        ("a*b*c*d*e*f*g*h*i*j*k*z", "a" * 4000 + "y", False),  # linear, never backtracks
    ],
)
def test_globs(glob: str, path: str, matches: bool) -> None:
    assert compile_glob({"glob": glob}).matches(path) is matches


@pytest.mark.parametrize(
    ("configuration", "data", "status"),
    [
        ({"include": ["CHANGELOG.md"]}, changed("CHANGELOG.md", "src/a.py"), CheckStatus.PASSED),
        ({"include": ["CHANGELOG.md"]}, changed("src/a.py"), CheckStatus.FAILED),
        ({"include": ["CHANGELOG.md", "src/**"]}, changed("CHANGELOG.md"), CheckStatus.FAILED),
        ({"exclude": ["src/**"]}, changed("CHANGELOG.md"), CheckStatus.PASSED),
        ({"exclude": ["src/**"]}, changed("CHANGELOG.md", "src/x/a.py"), CheckStatus.FAILED),
        ({"exclude": ["src/**"]}, changed(), CheckStatus.PASSED),
        ({"equal": ["CHANGELOG.md"]}, changed("CHANGELOG.md"), CheckStatus.PASSED),
        ({"equal": ["CHANGELOG.md"]}, changed("CHANGELOG.md", "x.txt"), CheckStatus.FAILED),
        ({"equal": ["CHANGELOG.md", "NOTES.md"]}, changed("CHANGELOG.md"), CheckStatus.FAILED),
        ({"equal": ["docs/**"]}, changed("docs/a.md", "docs/b/c.md"), CheckStatus.PASSED),
        ({"equal": []}, changed(), CheckStatus.PASSED),
        ({"equal": []}, changed("a"), CheckStatus.FAILED),
        (
            {"include": ["CHANGELOG.md"], "exclude": ["src/**"]},
            changed("CHANGELOG.md", "src/a.py"),
            CheckStatus.FAILED,
        ),
    ],
)
def test_controls(configuration: dict[str, Any], data: Any, status: CheckStatus) -> None:
    outcome = grade(configuration, data)
    assert outcome.status is status, outcome.detail
    assert outcome.evidence_refs == ("sevro.files-changed",)


def test_failure_details_name_the_paths() -> None:
    outcome = grade({"equal": ["CHANGELOG.md"], "exclude": ["src/**"]}, changed("src/a.py"))
    assert outcome.detail == (
        "changed outside 'equal': 'src/a.py'; no changed path matches 'equal' glob(s) "
        "'CHANGELOG.md'; changed an excluded path: 'src/a.py'"
    )


@pytest.mark.parametrize("completeness", [Completeness.PARTIAL, Completeness.UNAVAILABLE])
def test_incomplete_evidence_is_unavailable_never_passed(completeness: Completeness) -> None:
    outcome = grade({"exclude": ["src/**"]}, changed(), completeness=completeness)
    assert outcome.status is CheckStatus.UNAVAILABLE
    assert completeness.value in (outcome.detail or "")


def test_missing_observation_is_unavailable() -> None:
    assert grade({"exclude": ["src/**"]}, None).status is CheckStatus.UNAVAILABLE


@pytest.mark.parametrize("data", [{}, {"changes": "x"}, {"changes": [{"change": "added"}]}])
def test_malformed_observation_is_a_grading_error(data: Any) -> None:
    with pytest.raises(GradingError, match="malformed"):
        grade({"exclude": ["src/**"]}, data)


@pytest.mark.parametrize(
    ("configuration", "pointer"),
    [
        ({}, ""),
        ({"includes": ["a"]}, "/includes"),
        ({"include": "a"}, "/include"),
        ({"include": [""]}, "/include/0"),
        ({"exclude": ["ok", "/etc/passwd"]}, "/exclude/1"),
        ({"equal": ["../x"]}, "/equal/0"),
        ({"equal": ["a//b"]}, "/equal/0"),
        ({"include": ["./a"]}, "/include/0"),
        ({"include": ["ok", "[ab].txt"]}, "/include/1"),  # sevro.path's rules: no classes
        ({"exclude": ["{a,b}.md"]}, "/exclude/0"),
    ],
)
def test_bad_configuration_is_refused_with_a_pointer(
    configuration: dict[str, Any], pointer: str
) -> None:
    with pytest.raises(ConfigurationError) as caught:
        grader.compile(configuration)
    assert caught.value.pointer == pointer
