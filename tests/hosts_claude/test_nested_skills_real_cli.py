"""``sevro.claude.nested-skills`` through the real Claude Code CLI: the mock model asks for an
``Agent`` call, and the child session it starts (Claude Code sends the child's requests to the
same model) uses a skill or does not. A child's calls are the child's: never the parent's tool
calls, file reads, skill reads or hook activations."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from sevro_core.testing import SevroProject
from sevro_core.testing.mockmodel import Message, Reply, ToolCall, reply
from sevro_hosts_claude.testing import require_claude
from tests.hosts_claude.helpers import PROTOCOLS, run_claude
from tests.hosts_codex.helpers import observation, trial

pytestmark = pytest.mark.slow
SKILL = ".claude/skills/greet/SKILL.md"
BODY = "---\nname: greet\ndescription: How to greet.\n---\nSay PRIVATE-GREETING-7 politely.\n"
CHILD_PROMPT = "PRIVATE-CHILD-PROMPT-3: use the greet skill"
AGENT = ToolCall(
    "Agent",
    {"description": "greet helper", "prompt": CHILD_PROMPT, "subagent_type": "general-purpose"},
)


def _run(
    project: SevroProject, mock_model: Callable[..., Any], replies: list[Reply]
) -> tuple[dict[str, Any], Any]:
    server = mock_model(replies, protocols=PROTOCOLS)
    case = project.case(fixture={"files": {SKILL: BODY, "notes.md": "notes\n"}})
    result = run_claude(project, require_claude(), server, case)
    assert result.exit_code == 0, result.stdout + result.stderr
    assert server.remaining == 0 and not server.unexpected
    return trial(project), server


def _child_requests(server: Any) -> list[Any]:
    """The requests Claude Code made for a child session (it marks them as a subagent's)."""
    return [r for r in server.requests if "cc_is_subagent=true" in r.body.decode()]


def test_skills_a_child_agent_uses_are_nested_not_the_parents(
    sevro_project: SevroProject, mock_model: Callable[..., Any]
) -> None:
    document, server = _run(
        sevro_project,
        mock_model,
        [
            reply(AGENT),
            reply(ToolCall("Skill", {"skill": "greet"})),  # the child's first call
            reply(ToolCall("Read", {"file_path": SKILL})),  # and its second
            reply(Message("child done")),
            reply(Message("done")),
        ],
    )
    assert len(_child_requests(server)) == 3
    nested = observation(document, "sevro.claude.nested-skills")
    assert nested["completeness"] == "complete", nested
    assert nested["data"] == {
        "agents": [
            {
                "turn": 1,
                "ordinal": 1,
                "agentType": "general-purpose",
                "status": "completed",
                "toolCalls": 2,
                "skills": [
                    {"skill": "greet", "tool": "Skill", "ordinal": 1},
                    {"skill": "greet", "tool": "Read", "ordinal": 2},
                ],
                "path": [1],
            }
        ],
        "skills": ["greet"],
        "truncated": False,
    }
    # attributed to the child only: the parent made one call and read nothing
    calls = observation(document, "sevro.tool-calls")["data"]["calls"]
    assert [c["tool"] for c in calls] == ["Agent"]
    assert observation(document, "sevro.skills")["data"]["read"] == []
    assert observation(document, "sevro.file-reads")["data"]["reads"] == []
    hooked = observation(document, "sevro.host.skill-activations")
    assert hooked["completeness"] == "complete" and hooked["data"]["activations"] == []
    assert hooked["data"]["records"] >= 3  # the child's calls were hooked, and set aside
    # no private text of the child's in the nested evidence (its prompt, the skill's body)
    text = json.dumps(nested)
    assert "PRIVATE-CHILD-PROMPT-3" not in text and "PRIVATE-GREETING-7" not in text


def test_a_child_that_uses_no_skill_and_a_parent_read_are_not_nested(
    sevro_project: SevroProject, mock_model: Callable[..., Any]
) -> None:
    """Negative control: the child reads another file and only a page of the skill; the
    parent reads the skill itself (a parent read, not a nested one)."""
    document, _ = _run(
        sevro_project,
        mock_model,
        [
            reply(ToolCall("Read", {"file_path": SKILL})),  # the parent's own read
            reply(AGENT),
            reply(ToolCall("Read", {"file_path": "notes.md"})),
            reply(ToolCall("Read", {"file_path": SKILL, "limit": 2})),
            reply(Message("child done")),
            reply(Message("done")),
        ],
    )
    nested = observation(document, "sevro.claude.nested-skills")
    assert nested["completeness"] == "complete", nested
    (agent,) = nested["data"]["agents"]
    assert (agent["ordinal"], agent["toolCalls"], agent["skills"]) == (2, 2, [])
    assert nested["data"]["skills"] == []
    assert observation(document, "sevro.skills")["data"]["read"] == ["greet"]
    activations = observation(document, "sevro.host.skill-activations")["data"]["activations"]
    assert [(a["ordinal"], a["kind"]) for a in activations] == [(1, "whole")]


def test_a_grandchild_sessions_skill_is_nested_under_its_path(
    sevro_project: SevroProject, mock_model: Callable[..., Any]
) -> None:
    """The child makes an ``Agent`` call of its own; the grandchild uses the skill."""
    document, server = _run(
        sevro_project,
        mock_model,
        [
            reply(AGENT),
            reply(ToolCall("Read", {"file_path": "notes.md"}), AGENT),  # the child's two calls
            reply(ToolCall("Skill", {"skill": "greet"})),  # the grandchild's
            reply(Message("grandchild done")),
            reply(Message("child done")),
            reply(Message("done")),
        ],
    )
    nested = observation(document, "sevro.claude.nested-skills")
    assert nested["completeness"] == "complete", nested
    found = [(a["path"], a["toolCalls"], a["skills"]) for a in nested["data"]["agents"]]
    assert found == [
        ([1], 2, []),
        ([1, 2], 1, [{"skill": "greet", "tool": "Skill", "ordinal": 1}]),
    ], found
    assert nested["data"]["skills"] == ["greet"]
    assert len(_child_requests(server)) == 4


def test_a_turn_that_did_not_complete_leaves_nested_skills_partial(
    sevro_project: SevroProject, mock_model: Callable[..., Any]
) -> None:
    server = mock_model([reply(AGENT), Reply(status=500)], protocols=PROTOCOLS)
    case = sevro_project.case(fixture={"files": {SKILL: BODY}})
    run_claude(sevro_project, require_claude(), server, case)
    nested = observation(trial(sevro_project), "sevro.claude.nested-skills")
    assert nested["completeness"] == "partial", nested
    assert "did not complete" in nested["data"]["reason"]
