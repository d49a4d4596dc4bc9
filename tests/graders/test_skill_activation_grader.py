"""``sevro.skill-activation``: positive and negative controls on the ``sevro.skills`` facts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sevro_core.errors import ConfigurationError, GradingError
from sevro_core.models import Observation, TrialView
from sevro_core.states import CheckStatus, Completeness
from sevro_graders.skill_activation_grader import SkillActivationGrader

grader = SkillActivationGrader()


def view(data: Any, completeness: Completeness = Completeness.COMPLETE) -> TrialView:
    observations = {}
    if data is not None:
        observations["sevro.skills"] = Observation(
            "sevro.skills", "sevro.host.codex", completeness, data
        )
    return TrialView(
        case_id="case",
        trial=1,
        final_message="done",
        final_message_complete=True,
        observations=observations,
        workspace=Path("/nonexistent-workspace"),
    )


def skills(offered: list[str], reads: list[tuple[str, str]]) -> dict[str, Any]:
    entries = [
        {"skill": name, "turn": 1, "ordinal": i, "status": status}
        for i, (name, status) in enumerate(reads)
    ]
    return {
        "offered": [
            {"name": n, "path": f".agents/skills/{n}/SKILL.md", "sha256": "0" * 64, "byteLength": 1}
            for n in offered
        ],
        "reads": entries,
        "read": [n for n, s in reads if s == "read"],
    }


def grade(configuration: dict[str, Any], data: Any, **kw: Any) -> Any:
    return grader.compile(configuration).grade("skill", view(data, **kw))


@pytest.mark.parametrize(
    ("configuration", "data", "status"),
    [
        ({"expect": "read"}, skills(["notes"], [("notes", "read")]), CheckStatus.PASSED),
        ({"expect": "read"}, skills(["notes"], []), CheckStatus.FAILED),
        ({"expect": "read"}, skills(["notes"], [("notes", "partial")]), CheckStatus.FAILED),
        (
            {"expect": "read", "skill": "b"},
            skills(["a", "b"], [("a", "read")]),
            CheckStatus.FAILED,
        ),
        (
            {"expect": "read", "skill": "b"},
            skills(["a", "b"], [("a", "partial"), ("b", "read")]),
            CheckStatus.PASSED,
        ),
        ({"expect": "not-read"}, skills(["notes"], []), CheckStatus.PASSED),
        ({"expect": "not-read"}, skills(["notes"], [("notes", "read")]), CheckStatus.FAILED),
        (
            {"expect": "not-read"},
            skills(["notes"], [("notes", "partial")]),
            CheckStatus.UNAVAILABLE,
        ),
        (
            {"expect": "not-read", "skill": "a"},
            skills(["a", "b"], [("b", "read")]),
            CheckStatus.PASSED,
        ),
    ],
)
def test_read_and_not_read(configuration: dict[str, Any], data: Any, status: CheckStatus) -> None:
    outcome = grade(configuration, data)
    assert outcome.status is status, outcome.detail
    assert outcome.grader == "sevro.skill-activation"
    assert outcome.evidence_refs == ("sevro.skills",)
    assert (outcome.detail is None) == (status is CheckStatus.PASSED)


def test_failure_details_name_the_skill() -> None:
    assert grade({"expect": "read"}, skills(["n"], [("n", "partial")])).detail == (
        "skill 'n' was not read in full (1 partial touch(es) only)"
    )
    assert grade({"expect": "not-read"}, skills(["n"], [("n", "read")])).detail == (
        "skill 'n' was read (turn 1, ordinal 0)"
    )


@pytest.mark.parametrize("expect", ["read", "not-read"])
@pytest.mark.parametrize("completeness", [Completeness.PARTIAL, Completeness.UNAVAILABLE])
def test_incomplete_evidence_is_unavailable_never_a_pass(
    expect: str, completeness: Completeness
) -> None:
    data = skills(["notes"], [("notes", "read")] if expect == "read" else [])
    outcome = grade({"expect": expect}, data, completeness=completeness)
    assert outcome.status is CheckStatus.UNAVAILABLE
    assert outcome.detail == f"skills observation {completeness.value}"


@pytest.mark.parametrize("expect", ["read", "not-read"])
def test_missing_evidence_is_unavailable(expect: str) -> None:
    outcome = grade({"expect": expect}, None)
    assert (outcome.status, outcome.detail) == (
        CheckStatus.UNAVAILABLE,
        "skills observation unavailable",
    )


@pytest.mark.parametrize(
    ("configuration", "offered", "message"),
    [
        ({"expect": "not-read"}, [], "no target skill: the workspace offers 0 skills"),
        ({"expect": "read"}, ["a", "b"], "offers 2 skills \\(a, b\\); name one"),
        ({"expect": "not-read", "skill": "typo"}, ["a"], "'typo' was not offered \\(offered: a\\)"),
    ],
)
def test_an_unresolvable_target_is_a_grading_error(
    configuration: dict[str, Any], offered: list[str], message: str
) -> None:
    with pytest.raises(GradingError, match=message):
        grade(configuration, skills(offered, []))


@pytest.mark.parametrize(
    "data",
    [{}, {"offered": [], "reads": [], "read": "x"}, {"offered": [1], "reads": [], "read": []}],
)
def test_malformed_evidence_is_a_grading_error(data: Any) -> None:
    with pytest.raises(GradingError, match="malformed"):
        grade({"expect": "read"}, data)


@pytest.mark.parametrize(
    ("configuration", "pointer"),
    [
        ({}, ""),
        ({"expect": "seen"}, "/expect"),
        ({"expect": "read", "skill": "../x"}, "/skill"),
        ({"expect": "read", "skill": ""}, "/skill"),
        ({"expect": "read", "turn": 1}, "/turn"),
    ],
)
def test_bad_configuration_is_refused_at_its_pointer(
    configuration: dict[str, Any], pointer: str
) -> None:
    with pytest.raises(ConfigurationError) as info:
        grader.compile(configuration)
    assert info.value.pointer == pointer


def test_plugin_facts() -> None:
    assert (grader.id, grader.version, grader.stage) == ("sevro.skill-activation", "1.0.0", 10)
    assert grader.requires == frozenset({"sevro.skills"})


def test_one_skill_mounted_for_two_hosts_is_one_target() -> None:
    data = skills(["notes"], [("notes", "read")])
    data["offered"].append({**data["offered"][0], "path": ".claude/skills/notes/SKILL.md"})
    assert grade({"expect": "read"}, data).status is CheckStatus.PASSED


def stamped(target: str | None, reads: list[tuple[str, str]]) -> dict[str, Any]:
    """An experiment arm's sevro.skills: two skills offered, the arm's target stamped."""
    return {**skills(["support", "target"], reads), "arm": "candidate", "target": target}


@pytest.mark.parametrize(
    ("configuration", "data", "status"),
    [
        ({"expect": "read"}, stamped("target", [("target", "read")]), CheckStatus.PASSED),
        ({"expect": "read"}, stamped("target", [("support", "read")]), CheckStatus.FAILED),
        ({"expect": "not-read"}, stamped("target", [("support", "read")]), CheckStatus.PASSED),
        ({"expect": "not-read"}, stamped("target", [("target", "read")]), CheckStatus.FAILED),
        # a named skill wins over the stamped target
        ({"expect": "read", "skill": "support"}, stamped("target", [("support", "read")]),
         CheckStatus.PASSED),
    ],
)  # fmt: skip
def test_the_arms_stamped_target_is_the_skill_checked(
    configuration: dict[str, Any], data: Any, status: CheckStatus
) -> None:
    outcome = grade(configuration, data)
    assert outcome.status is status, outcome.detail


def test_a_stamped_target_that_was_not_offered_or_no_target_is_a_grading_error() -> None:
    with pytest.raises(GradingError, match="target skill 'gone' was not offered"):
        grade({"expect": "read"}, stamped("gone", []))
    with pytest.raises(GradingError, match="no target skill: the workspace offers 2 skills"):
        grade({"expect": "read"}, stamped(None, []))


@pytest.mark.parametrize(
    ("configuration", "hook_evidence", "status"),
    [
        ({"expect": "not-read"}, False, CheckStatus.UNAVAILABLE),
        ({"expect": "not-read"}, True, CheckStatus.PASSED),
        ({"expect": "not-before-turn", "turn": 2}, False, CheckStatus.UNAVAILABLE),
        ({"expect": "not-before-turn", "turn": 2}, True, CheckStatus.PASSED),
        ({"expect": "read"}, True, CheckStatus.FAILED),
    ],
)
def test_complete_hook_evidence_settles_a_partial_touch_as_not_a_read(
    configuration: dict[str, Any], hook_evidence: bool, status: CheckStatus
) -> None:
    """A partial touch may have been a read, unless the host's passive hooks saw every tool
    call's returned content (``hookEvidence``) and found no activation."""
    data = skills(["notes"], [("notes", "partial")])
    if hook_evidence:
        data["hookEvidence"] = True
    assert grade(configuration, data).status is status


def test_hook_evidence_never_hides_a_read() -> None:
    data = skills(["notes"], [("notes", "partial"), ("notes", "read")])
    data["hookEvidence"] = True
    assert grade({"expect": "not-read"}, data).status is CheckStatus.FAILED
    assert grade({"expect": "read"}, data).status is CheckStatus.PASSED
