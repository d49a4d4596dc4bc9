"""``sevro.tool-call``: positive and negative controls on the ``sevro.tool-calls`` facts."""

from __future__ import annotations

from typing import Any

import pytest

from sevro_core.errors import ConfigurationError, GradingError
from sevro_core.models import Observation, TrialView
from sevro_core.states import CheckStatus, Completeness
from sevro_core.testing import trial_view
from sevro_graders.tool_call_grader import ToolCallGrader

grader = ToolCallGrader()


def view(data: Any, completeness: Completeness = Completeness.COMPLETE) -> TrialView:
    """The test kit's trial, with the ``sevro.tool-calls`` observation when ``data`` is given."""
    found = Observation("sevro.tool-calls", "sevro.host.claude", completeness, data)
    return trial_view("done", observations=[] if data is None else [found])


def call(kind: str, status: str | None = "completed", **fields: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {"turn": 1, "ordinal": 0, "kind": kind, **fields}
    if status is not None:
        entry["status"] = status
    return entry


# Shapes as the hosts record them: Claude Code names every tool, Codex only its kind.
CLAUDE_BASH = call("command_execution", tool="Bash")
CLAUDE_BASH_FAILED = call("command_execution", "failed", tool="Bash")
CLAUDE_READ = call("tool_call", tool="Read", paths=["/work/src/app.py"])
CLAUDE_SKILL = call("tool_call", tool="Skill", skill="notes")
CODEX_COMMAND = call("command_execution")
CODEX_EDIT = call("file_change", paths=["/w/CHANGELOG.md", "/w/src/a.py"])
CODEX_RUNNING = call("command_execution", "in_progress")


def calls(*entries: dict[str, Any]) -> dict[str, Any]:
    return {"calls": list(entries)}


def grade(configuration: dict[str, Any], data: Any, **kw: Any) -> Any:
    return grader.compile(configuration).grade("tool", view(data, **kw))


@pytest.mark.parametrize(
    ("configuration", "data", "status"),
    [
        ({"tool": "Bash", "expect": "made"}, calls(CLAUDE_BASH), CheckStatus.PASSED),
        ({"tool": "Bash", "expect": "made"}, calls(CLAUDE_READ), CheckStatus.FAILED),
        ({"tool": "Bash", "expect": "made"}, calls(), CheckStatus.FAILED),
        ({"tool": "command_execution", "expect": "made"}, calls(CODEX_COMMAND), CheckStatus.PASSED),
        ({"tool": "command_execution", "expect": "made"}, calls(CLAUDE_BASH), CheckStatus.PASSED),
        ({"tool": ["Read", "Grep"], "expect": "made"}, calls(CLAUDE_READ), CheckStatus.PASSED),
        ({"tool": "Bash", "expect": "not-made"}, calls(CLAUDE_READ), CheckStatus.PASSED),
        ({"tool": "Bash", "expect": "not-made"}, calls(CLAUDE_BASH), CheckStatus.FAILED),
        ({"tool": "Bash", "expect": "succeeded"}, calls(CLAUDE_BASH), CheckStatus.PASSED),
        ({"tool": "Bash", "expect": "succeeded"}, calls(CLAUDE_BASH_FAILED), CheckStatus.FAILED),
        ({"tool": "Bash", "expect": "failed"}, calls(CLAUDE_BASH_FAILED), CheckStatus.PASSED),
        ({"tool": "Bash", "expect": "failed"}, calls(CLAUDE_BASH), CheckStatus.FAILED),
        (
            {"tool": "command_execution", "expect": "succeeded"},
            calls(CODEX_RUNNING),
            CheckStatus.UNAVAILABLE,
        ),
        (
            {"tool": "command_execution", "expect": "succeeded"},
            calls(CODEX_RUNNING, CODEX_COMMAND),
            CheckStatus.PASSED,
        ),
        (
            {
                "tool": "file_change",
                "arguments": {"paths": {"regex": "CHANGELOG\\.md$"}},
                "expect": "made",
            },
            calls(CODEX_EDIT),
            CheckStatus.PASSED,
        ),
        (
            {"tool": "file_change", "arguments": {"paths": {"regex": "README"}}, "expect": "made"},
            calls(CODEX_EDIT),
            CheckStatus.FAILED,
        ),
        (
            {"tool": "Skill", "arguments": {"skill": "notes"}, "expect": "made"},
            calls(CLAUDE_SKILL),
            CheckStatus.PASSED,
        ),
        (
            {"tool": "Skill", "arguments": {"skill": "note"}, "expect": "made"},
            calls(CLAUDE_SKILL),
            CheckStatus.FAILED,
        ),
        (
            {"tool": "command_execution", "expect": "succeeded", "count": {"max": 1}},
            calls(CODEX_COMMAND, CODEX_RUNNING),
            CheckStatus.UNAVAILABLE,
        ),
        (
            {"tool": "command_execution", "expect": "succeeded", "count": {"max": 2}},
            calls(CODEX_COMMAND, CODEX_RUNNING),
            CheckStatus.PASSED,
        ),
        (
            {"tool": "Bash", "expect": "made", "count": {"min": 2}},
            calls(CLAUDE_BASH, CLAUDE_BASH),
            CheckStatus.PASSED,
        ),
        (
            {"tool": "Bash", "expect": "made", "count": {"min": 2}},
            calls(CLAUDE_BASH),
            CheckStatus.FAILED,
        ),
        (
            {"tool": "Bash", "expect": "made", "count": {"max": 1}},
            calls(CLAUDE_BASH, CLAUDE_BASH),
            CheckStatus.FAILED,
        ),
        (
            {"tool": "Bash", "expect": "made", "count": {"min": 0, "max": 0}},
            calls(),
            CheckStatus.PASSED,
        ),
    ],
)
def test_controls(configuration: dict[str, Any], data: Any, status: CheckStatus) -> None:
    outcome = grade(configuration, data)
    assert outcome.status is status, outcome.detail
    assert outcome.evidence_refs == ("sevro.tool-calls",)


@pytest.mark.parametrize("completeness", [Completeness.PARTIAL, Completeness.UNAVAILABLE])
def test_incomplete_evidence_is_unavailable_never_passed(completeness: Completeness) -> None:
    outcome = grade({"tool": "Bash", "expect": "not-made"}, calls(), completeness=completeness)
    assert outcome.status is CheckStatus.UNAVAILABLE
    assert completeness.value in (outcome.detail or "")


def test_missing_observation_is_unavailable() -> None:
    assert grade({"tool": "Bash", "expect": "not-made"}, None).status is CheckStatus.UNAVAILABLE


@pytest.mark.parametrize("data", [{}, {"calls": "x"}, {"calls": [1]}, {"calls": [{"turn": 1}]}])
def test_malformed_observation_is_a_grading_error(data: Any) -> None:
    with pytest.raises(GradingError, match="malformed"):
        grade({"tool": "Bash", "expect": "not-made"}, data)


def test_failure_detail_names_the_call() -> None:
    outcome = grade({"tool": "Bash", "expect": "not-made"}, calls(CLAUDE_BASH))
    assert outcome.detail == "1 matching call(s); first Bash at turn 1, ordinal 0"


@pytest.mark.parametrize(
    ("configuration", "pointer"),
    [
        ({"expect": "made"}, ""),
        ({"tool": "Bash"}, ""),
        ({"tool": "Bash", "expect": "maybe"}, "/expect"),
        ({"tool": [], "expect": "made"}, "/tool"),
        ({"tool": "Bash", "expect": "made", "arguments": {"command": "ls"}}, "/arguments/command"),
        (
            {"tool": "Bash", "expect": "made", "arguments": {"paths": {"regex": "("}}},
            "/arguments/paths/regex",
        ),
        ({"tool": "Bash", "expect": "made", "count": {"min": 3, "max": 1}}, "/count/max"),
        ({"tool": "Bash", "expect": "not-made", "count": {"min": 1}}, "/count"),
        ({"tool": "Bash", "expect": "made", "extra": 1}, "/extra"),
    ],
)
def test_bad_configuration_is_refused_with_a_pointer(
    configuration: dict[str, Any], pointer: str
) -> None:
    with pytest.raises(ConfigurationError) as caught:
        grader.compile(configuration)
    assert caught.value.pointer == pointer


# --- the call's argument text (skill-eval's argumentContains / argumentNotContains) ----------

PYTEST = call("command_execution", tool="Bash", text='{"command":"pytest -q tests/unit"}')
RM = call("command_execution", tool="Bash", text='{"command":"rm -rf build"}')
CUT = call("command_execution", tool="Bash", text='{"command":"pytest -q tes', textTruncated=True)
CUT_RM = call("command_execution", tool="Bash", text='{"command":"rm -rf /tm', textTruncated=True)
RUNS_PYTEST = {"tool": "Bash", "arguments": {"text": {"contains": "pytest"}}}
UNIT_ONLY = {"contains": ["pytest", "tests/unit"], "notContains": "--lf"}


@pytest.mark.parametrize(
    ("configuration", "data", "status"),
    [
        ({**RUNS_PYTEST, "expect": "made"}, calls(RM, PYTEST), CheckStatus.PASSED),
        ({**RUNS_PYTEST, "expect": "made"}, calls(RM), CheckStatus.FAILED),
        ({**RUNS_PYTEST, "expect": "not-made"}, calls(RM), CheckStatus.PASSED),
        ({**RUNS_PYTEST, "expect": "not-made"}, calls(PYTEST), CheckStatus.FAILED),
        ({**RUNS_PYTEST, "expect": "succeeded"}, calls(PYTEST), CheckStatus.PASSED),
        (
            {"tool": "Bash", "arguments": {"text": UNIT_ONLY}, "expect": "made"},
            calls(PYTEST),
            CheckStatus.PASSED,
        ),
        (
            {"tool": "Bash", "arguments": {"text": {"notContains": "rm "}}, "expect": "made"},
            calls(RM),
            CheckStatus.FAILED,
        ),
        # a call whose recorded text was cut short: it may or may not hold the wanted text
        (
            {"tool": "Bash", "arguments": {"text": {"contains": "tests/unit"}}, "expect": "made"},
            calls(CUT),
            CheckStatus.UNAVAILABLE,
        ),
        (
            {
                "tool": "Bash",
                "arguments": {"text": {"contains": "tests/unit"}},
                "expect": "not-made",
            },
            calls(CUT),
            CheckStatus.UNAVAILABLE,
        ),
        (
            {"tool": "Bash", "arguments": {"text": {"contains": "pytest"}}, "expect": "made"},
            calls(CUT),
            CheckStatus.PASSED,
        ),  # the kept part already shows it
        (
            {"tool": "Bash", "arguments": {"text": {"notContains": "rm "}}, "expect": "made"},
            calls(CUT_RM),
            CheckStatus.FAILED,
        ),  # the kept part already rules it out
        (
            {**RUNS_PYTEST, "expect": "made"},
            calls(call("command_execution", tool="Bash")),
            CheckStatus.UNAVAILABLE,
        ),  # no text recorded: unknown, never ruled out
    ],
)
def test_argument_text_controls(
    configuration: dict[str, Any], data: Any, status: CheckStatus
) -> None:
    outcome = grade(configuration, data)
    assert outcome.status is status, outcome.detail


@pytest.mark.parametrize(
    ("text", "pointer"),
    [
        ({}, "/arguments/text"),
        ({"contains": ""}, "/arguments/text"),
        ({"contains": []}, "/arguments/text"),
        ({"contains": "a", "regex": "b"}, "/arguments/text"),
    ],
)
def test_bad_argument_text_filters_are_refused(text: Any, pointer: str) -> None:
    with pytest.raises(ConfigurationError) as raised:
        grader.compile({"tool": "Bash", "expect": "made", "arguments": {"text": text}})
    assert raised.value.pointer.startswith(pointer), raised.value
