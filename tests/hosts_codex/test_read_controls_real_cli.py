"""Item 5's read controls through the real Codex CLI: one trial in which the scripted model runs
every control command, then a resource read graded by ``sevro.resource-read``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from sevro_core.testing import SevroProject
from sevro_core.testing.mockmodel import Message, ToolCall, reply
from sevro_hosts_codex.testing import require_codex
from tests.core.read_controls import BODY, NOTES, check_controls, controls
from tests.hosts_codex.helpers import observation, run_codex, shell, trial

pytestmark = pytest.mark.slow
SKILLS = ".agents/skills"


def test_codex_commands_are_classified_as_the_issue_says(
    sevro_project: SevroProject, mock_model: Callable[..., Any]
) -> None:
    codex = require_codex()
    forms = controls(SKILLS)
    tone = f"{SKILLS}/greet/references/tone.md"
    server = mock_model(
        [
            *(reply(shell(command)) for command, _ in forms),
            reply(shell(f"sed -n '1,200p' {tone}")),
            # the stream does not report an exec_command's workdir; the hook's record does
            reply(ToolCall("exec_command", {"cmd": "cat SKILL.md", "workdir": f"{SKILLS}/greet"})),
            reply(Message("ready")),
        ]
    )
    check = {
        "id": "tone",
        "grader": "sevro.resource-read",
        "configuration": {"resource": "skill", "path": "references/tone.md", "expect": "read"},
    }
    case = sevro_project.case(
        checks=[check],
        fixture={
            "files": {f"{SKILLS}/greet/SKILL.md": BODY, tone: "Be kind.\n", "notes.md": NOTES}
        },
    )
    result = run_codex(sevro_project, codex, server, case)
    assert result.json()["task"]["verdict"] == "passed", result.stdout
    document = trial(sevro_project)
    commands = check_controls(document, SKILLS)
    assert all(c["exitCode"] == 0 for c in commands), commands
    reads = observation(document, "sevro.file-reads")["data"]
    assert reads["instructionsFile"] == "AGENTS.md"
    assert not reads["unresolved"], reads["unresolved"]
    last = [
        (r["path"], r["complete"])
        for r in reads["reads"]
        if r["ordinal"] == commands[-1]["ordinal"]
    ]
    assert last == [(f"{SKILLS}/greet/SKILL.md", True)], last
    assert observation(document, "sevro.skills")["data"]["read"] == ["greet"]
