"""``sevro.git-head``: compares the fixture's post-host HEAD facts; never reads the workspace."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sevro_core.errors import ConfigurationError, GradingError
from sevro_core.models import Observation, TrialView
from sevro_core.states import CheckStatus, Completeness
from sevro_graders.git_head_grader import GitHeadGrader

BASE = "a" * 40
OTHER = "b" * 40
grader = GitHeadGrader()


def view(
    data: dict[str, Any] | None, completeness: Completeness = Completeness.COMPLETE
) -> TrialView:
    observations = {}
    if data is not None:
        observations["sevro.observation.git-head"] = Observation(
            "sevro.observation.git-head", "sevro.fixture.generated", completeness, data
        )
    return TrialView(
        case_id="case",
        trial=1,
        final_message="done",
        final_message_complete=True,
        observations=observations,
        workspace=Path("/nonexistent-workspace"),
    )


def facts(current: str | None, ancestor: bool) -> dict[str, Any]:
    return {"baseRevision": BASE, "currentRevision": current, "baseAncestor": ancestor}


@pytest.mark.parametrize(
    ("kind", "data", "status"),
    [
        ("changed", facts(OTHER, True), CheckStatus.PASSED),
        ("changed", facts(BASE, True), CheckStatus.FAILED),
        ("unchanged", facts(BASE, True), CheckStatus.PASSED),
        ("unchanged", facts(OTHER, True), CheckStatus.FAILED),
        ("base-ancestor", facts(OTHER, True), CheckStatus.PASSED),
        ("base-ancestor", facts(BASE, True), CheckStatus.PASSED),
        ("base-ancestor", facts(OTHER, False), CheckStatus.FAILED),
        (
            "changed",
            {"baseRevision": None, "currentRevision": OTHER, "baseAncestor": True},
            CheckStatus.PASSED,
        ),
    ],
)
def test_kinds(kind: str, data: dict[str, Any], status: CheckStatus) -> None:
    outcome = grader.compile({"kind": kind}).grade("head", view(data))
    assert outcome.status is status
    assert outcome.evidence_refs == ("sevro.observation.git-head",)
    assert (outcome.detail is None) == (status is CheckStatus.PASSED)


def test_unreadable_git_state_is_a_grading_error() -> None:
    data = {"baseRevision": BASE, "currentRevision": None, "error": "git state unreadable: boom"}
    with pytest.raises(GradingError, match="boom"):
        grader.compile({"kind": "changed"}).grade("head", view(data, Completeness.UNAVAILABLE))


def test_a_missing_observation_is_unavailable() -> None:
    outcome = grader.compile({"kind": "unchanged"}).grade("head", view(None))
    assert outcome.status is CheckStatus.UNAVAILABLE


@pytest.mark.parametrize(
    ("configuration", "pointer"),
    [({}, ""), ({"kind": "moved"}, "/kind"), ({"kind": "changed", "extra": 1}, "/extra")],
)
def test_configuration_is_checked(configuration: dict[str, Any], pointer: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        grader.compile(configuration)
    assert info.value.pointer == pointer
