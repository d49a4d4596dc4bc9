"""``sevro.resource-read``: pass, fail, unavailable and bad configuration controls."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sevro_core.errors import ConfigurationError, GradingError
from sevro_core.models import Observation, TrialView
from sevro_core.states import CheckStatus, Completeness
from sevro_graders.resource_read_grader import ResourceReadGrader

grader = ResourceReadGrader()
SKILL_MD = ".agents/skills/notes/SKILL.md"
GUIDE = ".agents/skills/notes/references/guide.md"


def reads(*entries: tuple[str, bool], unresolved: int = 0, turn: int = 1) -> dict[str, Any]:
    return {
        "reads": [
            {"turn": turn, "ordinal": i, "path": p, "complete": c, "how": "cat"}
            for i, (p, c) in enumerate(entries, start=1)
        ],
        "unresolved": [{"turn": turn, "ordinal": 99}] * unresolved,
        "instructionsFile": "AGENTS.md",
    }


def skills(*names: str, complete: bool = True) -> Observation:
    offered = [{"name": n, "path": f".agents/skills/{n}/SKILL.md"} for n in names]
    data = {"offered": offered, "reads": [], "read": []}
    state = Completeness.COMPLETE if complete else Completeness.PARTIAL
    return Observation("sevro.skills", "sevro.host.scripted", state, data)


def view(
    data: Any,
    completeness: Completeness = Completeness.COMPLETE,
    offered: Observation | None = None,
) -> TrialView:
    observations = {}
    if data is not None:
        observations["sevro.file-reads"] = Observation(
            "sevro.file-reads", "sevro.host.scripted", completeness, data
        )
    observations["sevro.skills"] = offered if offered is not None else skills("notes")
    return TrialView(
        case_id="case",
        trial=1,
        final_message="done",
        final_message_complete=True,
        observations=observations,
        workspace=Path("/nonexistent-workspace"),
    )


def grade(configuration: dict[str, Any], data: Any, **kw: Any) -> Any:
    return grader.compile(configuration).grade("r", view(data, **kw))


SKILL_READ = {"resource": "skill", "expect": "read"}
SKILL_NOT_READ = {"resource": "skill", "expect": "not-read"}
GUIDE_READ = {"resource": "skill", "path": "references/guide.md", "expect": "read"}
WORK_READ = {"resource": "workspace", "path": "src/app.py", "expect": "read"}
WORK_NOT_READ = {"resource": "workspace", "path": "src/app.py", "expect": "not-read"}
CONTEXT_READ = {"resource": "context", "expect": "read"}


@pytest.mark.parametrize(
    ("configuration", "data", "status"),
    [
        (SKILL_READ, reads((SKILL_MD, True)), CheckStatus.PASSED),
        (SKILL_READ, reads((SKILL_MD, False)), CheckStatus.FAILED),
        (SKILL_READ, reads(), CheckStatus.FAILED),
        (SKILL_READ, reads((GUIDE, True)), CheckStatus.FAILED),
        (SKILL_READ, reads(unresolved=1), CheckStatus.UNAVAILABLE),
        (SKILL_NOT_READ, reads(), CheckStatus.PASSED),
        (SKILL_NOT_READ, reads((GUIDE, True)), CheckStatus.PASSED),
        (SKILL_NOT_READ, reads((SKILL_MD, False)), CheckStatus.FAILED),
        (SKILL_NOT_READ, reads((SKILL_MD, True)), CheckStatus.FAILED),
        (SKILL_NOT_READ, reads(unresolved=1), CheckStatus.UNAVAILABLE),
        (GUIDE_READ, reads((GUIDE, True)), CheckStatus.PASSED),
        (GUIDE_READ, reads((SKILL_MD, True)), CheckStatus.FAILED),
        (WORK_READ, reads(("src/app.py", True)), CheckStatus.PASSED),
        (WORK_READ, reads(("src/app.py", False)), CheckStatus.FAILED),
        (WORK_READ, reads(("src/app.pyc", True)), CheckStatus.FAILED),
        (WORK_NOT_READ, reads(("README.md", True)), CheckStatus.PASSED),
        (WORK_NOT_READ, reads(("src/app.py", False)), CheckStatus.FAILED),
        (CONTEXT_READ, reads(("AGENTS.md", True)), CheckStatus.PASSED),
        (CONTEXT_READ, reads(("CLAUDE.md", True)), CheckStatus.FAILED),
        (
            CONTEXT_READ,
            {**reads(("AGENTS.md", True)), "instructionsFile": None},
            CheckStatus.UNAVAILABLE,
        ),
    ],
)
def test_controls(configuration: dict[str, Any], data: Any, status: CheckStatus) -> None:
    outcome = grade(configuration, data)
    assert outcome.status is status, outcome.detail
    assert outcome.grader == "sevro.resource-read"
    assert outcome.evidence_refs[0] == "sevro.file-reads"


def test_failures_say_what_happened() -> None:
    detail = grade(SKILL_NOT_READ, reads((SKILL_MD, False))).detail
    assert "touched" in detail and "turn 1, ordinal 1" in detail and "cat" in detail
    assert "1 partial touch(es) only" in grade(SKILL_READ, reads((SKILL_MD, False))).detail


@pytest.mark.parametrize("completeness", [Completeness.PARTIAL, Completeness.UNAVAILABLE])
def test_partial_or_missing_evidence_is_unavailable(completeness: Completeness) -> None:
    for configuration in (SKILL_READ, SKILL_NOT_READ, WORK_NOT_READ):
        full = reads((SKILL_MD, True), ("src/app.py", True))
        assert grade(configuration, full, completeness=completeness).status is (
            CheckStatus.UNAVAILABLE
        )
    assert grade(WORK_NOT_READ, None).status is CheckStatus.UNAVAILABLE


def test_a_skill_needs_complete_skill_evidence() -> None:
    outcome = grader.compile(SKILL_READ).grade(
        "r", view(reads((SKILL_MD, True)), offered=skills("notes", complete=False))
    )
    assert outcome.status is CheckStatus.UNAVAILABLE


def test_a_skill_mounted_for_two_clis_is_one_skill() -> None:
    both = Observation(
        "sevro.skills",
        "sevro.host.scripted",
        Completeness.COMPLETE,
        {
            "offered": [
                {"name": "notes", "path": ".agents/skills/notes/SKILL.md"},
                {"name": "notes", "path": ".claude/skills/notes/SKILL.md"},
            ],
            "reads": [],
            "read": [],
        },
    )
    data = reads((".claude/skills/notes/SKILL.md", True))
    assert grader.compile(SKILL_READ).grade("r", view(data, offered=both)).status is (
        CheckStatus.PASSED
    )


def test_the_target_skill_must_be_unambiguous_and_offered() -> None:
    two = skills("a", "b")
    with pytest.raises(GradingError, match="offers 2 skills"):
        grader.compile(SKILL_READ).grade("r", view(reads(), offered=two))
    with pytest.raises(GradingError, match="not offered"):
        grader.compile({**SKILL_READ, "skill": "c"}).grade("r", view(reads(), offered=two))


def test_only_reads_up_to_the_checks_turn_count() -> None:
    """Needs the check-level ``turn`` (``TrialView.turn``) the coordinator adds for issue 15."""
    data = {
        "reads": [{"turn": 2, "ordinal": 1, "path": "src/app.py", "complete": True}],
        "unresolved": [{"turn": 2, "ordinal": 2}],
        "instructionsFile": None,
    }
    whole = view(data)
    observations = dict(whole.observations)
    kwargs: dict[str, Any] = {"observations": observations, "turn": 1}
    early = TrialView(
        case_id="case",
        trial=1,
        final_message="done",
        final_message_complete=True,
        workspace=whole.workspace,
        **kwargs,
    )
    assert grader.compile(WORK_READ).grade("r", early).status is CheckStatus.FAILED
    assert grader.compile(WORK_NOT_READ).grade("r", early).status is CheckStatus.PASSED
    assert grader.compile(WORK_READ).grade("r", whole).status is CheckStatus.PASSED
    assert grader.compile(WORK_NOT_READ).grade("r", whole).status is CheckStatus.FAILED


@pytest.mark.parametrize(
    "data",
    [
        {"reads": "x"},
        {"reads": [{"turn": 1, "path": 3, "complete": True}]},
        {"reads": [{"turn": "1", "path": "a", "complete": True}]},
        {"reads": [], "unresolved": [{"turn": None}]},
        {"reads": [], "instructionsFile": 4},
    ],
)
def test_malformed_evidence_is_a_grading_error(data: Any) -> None:
    with pytest.raises(GradingError, match=r"malformed sevro\.file-reads"):
        grade(WORK_READ, data)


@pytest.mark.parametrize(
    ("configuration", "pointer"),
    [
        ({"resource": "skill"}, ""),
        ({"resource": "file", "expect": "read"}, "/resource"),
        ({"resource": "skill", "expect": "seen"}, "/expect"),
        ({"resource": "workspace", "expect": "read"}, "/path"),
        ({"resource": "workspace", "path": "/etc/passwd", "expect": "read"}, "/path"),
        ({"resource": "workspace", "path": "../x", "expect": "read"}, "/path"),
        ({"resource": "skill", "path": "a/../../b", "expect": "read"}, "/path"),
        ({"resource": "context", "path": "AGENTS.md", "expect": "read"}, "/path"),
        ({"resource": "workspace", "skill": "a", "path": "x", "expect": "read"}, "/skill"),
        ({"resource": "skill", "skill": "../x", "expect": "read"}, "/skill"),
        ({"resource": "skill", "expect": "read", "extra": 1}, "/extra"),
    ],
)
def test_bad_configuration_is_refused_with_a_pointer(
    configuration: dict[str, Any], pointer: str
) -> None:
    with pytest.raises(ConfigurationError) as caught:
        grader.compile(configuration)
    assert caught.value.pointer == pointer
