"""``sevro.context-text``: positive and negative controls on the ``sevro.host.context`` facts,
and ``unavailable`` whenever the text to judge was not (wholly) observed."""

from __future__ import annotations

from typing import Any

import pytest
from attrs import evolve

from sevro_core.api import CONTEXT_OBSERVATION
from sevro_core.errors import ConfigurationError, GradingError
from sevro_core.models import Observation, TrialView
from sevro_core.states import CheckStatus, Completeness
from sevro_core.testing import trial_view
from sevro_graders.context_text_grader import ContextTextGrader

grader = ContextTextGrader()

TWO_TURNS = {
    "turns": [
        {
            "turn": 1,
            "systemPrompt": "You are pi. Skill guidance: be brief.",
            "requests": [
                {"request": 1, "text": "Inspect the task."},
                {"request": 2, "text": 'Inspect the task.\n\nread({"path":"TASK.md"})'},
            ],
        },
        {
            "turn": 2,
            "systemPrompt": "You are pi. PROBE_MODE=injection-test",
            "requests": [{"request": 1, "text": "Complete it."}],
        },
    ]
}


def view(
    data: Any = TWO_TURNS,
    completeness: Completeness = Completeness.COMPLETE,
    *,
    turn: int | None = None,
    prompts: tuple[str, ...] = ("Inspect the task.", "Complete it."),
) -> TrialView:
    observations = (
        []
        if data is None
        else [Observation(CONTEXT_OBSERVATION, "sevro.host.x", completeness, data)]
    )
    return evolve(trial_view("done", observations=observations), turn=turn, prompts=prompts)


def grade(configuration: dict[str, Any], trial: TrialView | None = None) -> Any:
    return grader.compile(configuration).grade("ctx", trial if trial is not None else view())


@pytest.mark.parametrize(
    ("configuration", "trial", "status"),
    [
        # system prompt, the last turn by default
        ({"contains": "PROBE_MODE=injection-test"}, None, CheckStatus.PASSED),
        ({"contains": "Skill guidance"}, None, CheckStatus.FAILED),
        ({"notContains": "Skill guidance"}, None, CheckStatus.PASSED),
        ({"notContains": "PROBE_MODE"}, None, CheckStatus.FAILED),
        ({"equals": "You are pi. PROBE_MODE=injection-test"}, None, CheckStatus.PASSED),
        ({"equals": "You are pi."}, None, CheckStatus.FAILED),
        # the check's turn
        ({"contains": "Skill guidance"}, view(turn=1), CheckStatus.PASSED),
        ({"contains": "PROBE_MODE"}, view(turn=1), CheckStatus.FAILED),
        # provider context: last request by default, first, or a number
        ({"surface": "provider-context", "contains": "read("}, view(turn=1), CheckStatus.PASSED),
        ({"surface": "provider-context", "request": "first", "contains": "read("}, view(turn=1),
         CheckStatus.FAILED),
        ({"surface": "provider-context", "request": "first", "equals": "Inspect the task."},
         view(turn=1), CheckStatus.PASSED),
        ({"surface": "provider-context", "request": 2, "contains": "TASK.md"}, view(turn=1),
         CheckStatus.PASSED),
        ({"surface": "provider-context", "request": 2, "notContains": "TASK.md"}, view(turn=1),
         CheckStatus.FAILED),
        ({"surface": "provider-context", "contains": "Complete"}, None, CheckStatus.PASSED),
    ],
)  # fmt: skip
def test_positive_and_negative_controls(
    configuration: dict[str, Any], trial: TrialView | None, status: CheckStatus
) -> None:
    outcome = grade(configuration, trial)
    assert outcome.status is status, outcome.detail
    assert outcome.evidence_refs == (CONTEXT_OBSERVATION,)


@pytest.mark.parametrize(
    ("configuration", "trial", "detail"),
    [
        ({"contains": "x"}, view(None), "context observation unavailable"),
        ({"notContains": "x"}, view(completeness=Completeness.PARTIAL),
         "context observation partial"),
        # the case's last turn (3) was never reached: not replaced by turn 2
        ({"notContains": "x"}, view(prompts=("a", "b", "c")), "turn 3 was not observed"),
        ({"notContains": "x"}, view(turn=3), "turn 3 was not observed"),
        ({"surface": "provider-context", "request": 3, "notContains": "x"}, view(turn=1),
         "request 3 was not observed"),
        ({"notContains": "x"}, view({"turns": [{"turn": 1, "systemPrompt": None,
                                                "requests": []}]}, prompts=("a",)),
         "system prompt was not observed"),
        ({"surface": "provider-context", "notContains": "x"},
         view({"turns": [{"turn": 1, "systemPrompt": "s", "requests": []}]}, prompts=("a",)),
         "no model request"),
    ],
)  # fmt: skip
def test_missing_or_partial_evidence_is_unavailable(
    configuration: dict[str, Any], trial: TrialView, detail: str
) -> None:
    outcome = grade(configuration, trial)
    assert outcome.status is CheckStatus.UNAVAILABLE
    assert detail in (outcome.detail or "")


@pytest.mark.parametrize(
    "data",
    [
        {},
        {"turns": {}},
        {"turns": [{"turn": "1", "systemPrompt": "s", "requests": []}]},
        {"turns": [{"turn": 2, "systemPrompt": 1, "requests": []}]},
        {"turns": [{"turn": 2, "systemPrompt": "s", "requests": []}] * 2},
        {"turns": [{"turn": 2, "systemPrompt": "s", "requests": [{"request": 0, "text": "t"}]}]},
        {"turns": [{"turn": 2, "systemPrompt": "s", "requests": [{"request": 1}]}]},
    ],
)
def test_a_malformed_observation_is_a_grading_error(data: Any) -> None:
    with pytest.raises(GradingError, match=r"malformed sevro\.host\.context"):
        grade({"surface": "provider-context", "contains": "x"}, view(data))


@pytest.mark.parametrize(
    ("configuration", "pointer"),
    [
        ({}, ""),
        ({"contains": "a", "equals": "a"}, ""),
        ({"contains": ""}, "/contains"),
        ({"contains": "a", "surface": "tools"}, "/surface"),
        ({"contains": "a", "surface": "provider-context", "request": 0}, "/request"),
        ({"contains": "a", "surface": "provider-context", "request": "middle"}, "/request"),
        ({"contains": "a", "request": "first"}, "/request"),
        ({"contains": "a", "turn": 1}, "/turn"),
    ],
)
def test_bad_configuration_is_refused(configuration: dict[str, Any], pointer: str) -> None:
    with pytest.raises(ConfigurationError) as caught:
        grader.compile(configuration)
    assert caught.value.pointer == pointer


def test_it_requires_the_context_observation() -> None:
    assert grader.requires == frozenset({CONTEXT_OBSERVATION})
