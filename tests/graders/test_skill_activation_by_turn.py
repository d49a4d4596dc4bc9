"""``sevro.skill-activation`` by turn: ``read-by-turn N`` / ``not-before-turn N`` controls."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sevro_core.errors import ConfigurationError, GradingError
from sevro_core.models import Observation, TrialView
from sevro_core.states import CheckStatus, Completeness
from sevro_core.testing import SevroProject, require_sandbox
from sevro_graders.skill_activation_grader import SkillActivationGrader

grader = SkillActivationGrader()


def view(data: Any, completeness: Completeness = Completeness.COMPLETE) -> TrialView:
    observation = Observation("sevro.skills", "sevro.host.claude", completeness, data)
    return TrialView(
        case_id="case",
        trial=1,
        final_message="done",
        final_message_complete=True,
        observations={"sevro.skills": observation},
        workspace=Path("/nonexistent-workspace"),
    )


def skills(*reads: tuple[int, str]) -> dict[str, Any]:
    """The ``notes`` skill offered, with (turn, status) touches."""
    return {
        "offered": [{"name": "notes", "path": ".claude/skills/notes/SKILL.md"}],
        "reads": [
            {"skill": "notes", "turn": turn, "ordinal": i, "status": status}
            for i, (turn, status) in enumerate(reads)
        ],
        "read": ["notes"] if any(status == "read" for _, status in reads) else [],
    }


def grade(configuration: dict[str, Any], data: Any, **kw: Any) -> Any:
    return grader.compile(configuration).grade("skill", view(data, **kw))


BY_2 = {"expect": "read-by-turn", "turn": 2}
NOT_BEFORE_2 = {"expect": "not-before-turn", "turn": 2}
ON_2 = {"expect": "read-on-turn", "turn": 2}


@pytest.mark.parametrize(
    ("configuration", "data", "status"),
    [
        (BY_2, skills((1, "read")), CheckStatus.PASSED),
        (BY_2, skills((2, "read")), CheckStatus.PASSED),
        (BY_2, skills((3, "read")), CheckStatus.FAILED),
        (BY_2, skills(), CheckStatus.FAILED),
        (BY_2, skills((1, "partial")), CheckStatus.FAILED),
        (BY_2, skills((1, "partial"), (2, "read")), CheckStatus.PASSED),
        (NOT_BEFORE_2, skills(), CheckStatus.PASSED),
        (NOT_BEFORE_2, skills((2, "read")), CheckStatus.PASSED),
        (NOT_BEFORE_2, skills((3, "partial")), CheckStatus.PASSED),
        (NOT_BEFORE_2, skills((1, "read")), CheckStatus.FAILED),
        (NOT_BEFORE_2, skills((1, "partial")), CheckStatus.UNAVAILABLE),
        ({"expect": "not-before-turn", "turn": 1}, skills((1, "read")), CheckStatus.PASSED),
        (ON_2, skills((2, "read")), CheckStatus.PASSED),
        (ON_2, skills((2, "partial"), (2, "read")), CheckStatus.PASSED),
        (ON_2, skills((2, "read"), (3, "read")), CheckStatus.PASSED),
        (ON_2, skills((1, "read"), (2, "read")), CheckStatus.FAILED),
        (ON_2, skills((1, "read")), CheckStatus.FAILED),
        (ON_2, skills((3, "read")), CheckStatus.FAILED),
        (ON_2, skills((2, "partial")), CheckStatus.FAILED),
        (ON_2, skills(), CheckStatus.FAILED),
        (ON_2, skills((1, "partial"), (2, "read")), CheckStatus.UNAVAILABLE),
    ],
)
def test_controls(configuration: dict[str, Any], data: Any, status: CheckStatus) -> None:
    outcome = grade(configuration, data)
    assert outcome.status is status, outcome.detail


def test_details_name_the_turns() -> None:
    assert grade(BY_2, skills((3, "read"))).detail == (
        "skill 'notes' was not read in full by turn 2 (first read on turn 3)"
    )
    assert grade(NOT_BEFORE_2, skills((1, "read"))).detail == (
        "skill 'notes' was read before turn 2 (turn 1, ordinal 0)"
    )
    assert grade(ON_2, skills((3, "read"))).detail == (
        "skill 'notes' was not read in full on turn 2 (first read on turn 3)"
    )


@pytest.mark.parametrize("configuration", [BY_2, NOT_BEFORE_2, ON_2])
def test_partial_evidence_is_unavailable(configuration: dict[str, Any]) -> None:
    outcome = grade(configuration, skills(), completeness=Completeness.PARTIAL)
    assert outcome.status is CheckStatus.UNAVAILABLE


def test_a_read_without_a_turn_is_a_grading_error() -> None:
    data = skills((1, "read"))
    del data["reads"][0]["turn"]
    with pytest.raises(GradingError, match="malformed"):
        grade(BY_2, data)


@pytest.mark.parametrize(
    "configuration",
    [
        {"expect": "read-by-turn"},
        {"expect": "not-before-turn"},
        {"expect": "read-on-turn"},
        {"expect": "read", "turn": 1},
        {"expect": "read-by-turn", "turn": 0},
        {"expect": "read-by-turn", "turn": "2"},
    ],
)
def test_bad_turn_is_refused_with_a_pointer(configuration: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError) as caught:
        grader.compile(configuration)
    assert caught.value.pointer == "/turn"


# ---- end to end on the scripted host: the turn each read carries decides -----------------

SKILL_BODY = "---\nname: notes\ndescription: Takes notes.\n---\nWrite NOTES.md.\n"
READ_SKILL = {"read": {"path": ".agents/skills/notes/SKILL.md"}}
DONE = {"reply": {"text": "done"}}


@pytest.mark.parametrize(
    ("turns", "expected"),
    [
        ([[READ_SKILL, DONE], [DONE]], {"by-turn-1": "passed", "not-before-2": "failed"}),
        ([[DONE], [READ_SKILL, DONE]], {"by-turn-1": "failed", "not-before-2": "passed"}),
    ],
    ids=["read-on-turn-1", "read-on-turn-2"],
)
def test_turn_scoped_checks_on_the_scripted_host(
    turns: list[list[dict[str, Any]]], expected: dict[str, str], sevro_project: SevroProject
) -> None:
    require_sandbox()
    case = sevro_project.case(
        prompt="Take a note.",
        followUpPrompt="And another.",
        fixture={"files": {".agents/skills/notes/SKILL.md": SKILL_BODY}},
        checks=[
            {
                "id": "by-turn-1",
                "grader": "sevro.skill-activation",
                "configuration": {"expect": "read-by-turn", "turn": 1},
            },
            {
                "id": "not-before-2",
                "grader": "sevro.skill-activation",
                "configuration": {"expect": "not-before-turn", "turn": 2},
            },
        ],
    )
    done = sevro_project.run(case, "--host-config", sevro_project.script(default=turns))
    assert done.exit_code == 1, done.stdout + done.stderr
    (result,) = done.json()["cases"]
    (trial,) = result["trials"]
    document = json.loads(Path(trial["artifactPath"]).read_text())
    checks = {c["id"]: c["status"] for c in document["evidence"]["checks"]}
    assert checks == expected, checks
