"""Item 5's read controls through the real Claude Code CLI: one trial runs every control command
through its Bash tool, then its Read tool (whole, ranged, another file) and its Skill tool."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from sevro_core.testing import SevroProject
from sevro_core.testing.mockmodel import Message, ToolCall, reply
from sevro_hosts_claude.testing import require_claude
from tests.core.read_controls import BODY, NOTES, check_controls, controls
from tests.hosts_claude.helpers import PROTOCOLS, bash, run_claude
from tests.hosts_codex.helpers import observation, trial

pytestmark = pytest.mark.slow
SKILLS = ".claude/skills"
SKILL = f"{SKILLS}/greet/SKILL.md"
OTHER = "---\nname: other\ndescription: Another skill.\n---\nDo other things.\n"


def resource(check_id: str, **configuration: Any) -> dict[str, Any]:
    return {"id": check_id, "grader": "sevro.resource-read", "configuration": configuration}


def run(
    project: SevroProject, mock_model: Callable[..., Any], calls: list[Any], checks: list[Any]
) -> dict[str, Any]:
    server = mock_model([*(reply(c) for c in calls), reply(Message("ready"))], protocols=PROTOCOLS)
    case = project.case(
        checks=checks,
        fixture={
            "files": {
                SKILL: BODY,
                f"{SKILLS}/other/SKILL.md": OTHER,
                "notes.md": NOTES,
                "CLAUDE.md": "Be brief.\n",
            }
        },
    )
    result = run_claude(project, require_claude(), server, case)
    assert result.exit_code in (0, 1), result.stdout + result.stderr
    document = trial(project)
    document["checks"] = {
        c["id"]: c["status"] for c in result.json()["cases"][0]["trials"][0]["checks"]
    }
    return document


def test_bash_commands_are_classified_as_the_issue_says(
    sevro_project: SevroProject, mock_model: Callable[..., Any]
) -> None:
    calls = [bash(command) for command, _ in controls(SKILLS)]
    # Claude Code's shell keeps the directory of the last control (the skill's own).
    calls.append(bash("cat SKILL.md"))
    checks = [resource("greet", resource="skill", skill="greet", expect="read")]
    document = run(sevro_project, mock_model, calls, checks)
    commands = check_controls(document, SKILLS)
    last = commands[-1]
    reads = observation(document, "sevro.file-reads")["data"]
    after_cd = [r for r in reads["reads"] if r["ordinal"] == last["ordinal"]]
    assert [(r["path"], r["complete"]) for r in after_cd] == [(SKILL, True)]
    assert reads["instructionsFile"] == "CLAUDE.md"
    assert document["checks"] == {"greet": "passed"}


def test_read_and_skill_tools_are_classified(
    sevro_project: SevroProject, mock_model: Callable[..., Any]
) -> None:
    calls = [
        ToolCall("Read", {"file_path": SKILL}),  # 1: whole, line-numbered: read
        ToolCall("Read", {"file_path": SKILL, "limit": 4}),  # 2: front matter only: partial
        ToolCall("Read", {"file_path": SKILL, "offset": 3}),  # 3: misses lines: partial
        ToolCall("Read", {"file_path": "notes.md"}),  # 4: another file
        ToolCall("Skill", {"skill": "other"}),  # 5: Launching skill + injected body: read
        bash(f"ls {SKILLS}/greet && wc -c {SKILL}"),  # 6: not a read
    ]
    checks = [
        resource("other", resource="skill", skill="other", expect="read"),
        resource("greet-untouched", resource="skill", skill="greet", expect="not-read"),
        resource("notes", resource="workspace", path="notes.md", expect="read"),
        resource("context", resource="context", expect="not-read"),
    ]
    document = run(sevro_project, mock_model, calls, checks)
    reads = observation(document, "sevro.file-reads")["data"]["reads"]
    assert [(r["ordinal"], r["path"], r["complete"], r["how"]) for r in reads] == [
        (1, SKILL, True, "Read"),
        (2, SKILL, False, "Read"),
        (3, SKILL, False, "Read"),
        (4, "notes.md", True, "Read"),
        (5, f"{SKILLS}/other/SKILL.md", True, "Skill"),
    ]
    skills = observation(document, "sevro.skills")["data"]
    assert skills["read"] == ["greet", "other"]
    assert document["checks"] == {
        "other": "passed",
        "greet-untouched": "failed",
        "notes": "passed",
        "context": "passed",
    }


def test_a_skill_call_without_the_injected_body_is_not_a_read(
    sevro_project: SevroProject, mock_model: Callable[..., Any]
) -> None:
    """Negative control: an unknown skill fails to launch; the name alone proves nothing."""
    calls = [ToolCall("Skill", {"skill": "missing"}), bash("echo other")]
    checks = [resource("other", resource="skill", skill="other", expect="not-read")]
    document = run(sevro_project, mock_model, calls, checks)
    assert observation(document, "sevro.file-reads")["data"]["reads"] == []
    assert observation(document, "sevro.skills")["data"]["read"] == []
    assert document["checks"] == {"other": "passed"}
