"""One case file, graded on the Codex host and on the Claude host, against the mock model."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from sevro_core.testing import SevroProject
from sevro_core.testing.mockmodel import Message, ToolCall, reply
from sevro_hosts_claude.testing import require_claude
from sevro_hosts_codex.testing import require_codex
from tests.hosts_claude.helpers import PROTOCOLS, bash, run_claude
from tests.hosts_codex.helpers import observation, run_codex, shell, trial

pytestmark = pytest.mark.slow

SKILL = "---\nname: greet\ndescription: Greets people.\n---\nSay hello warmly.\n"
WORK = "printf 'hello\\n' > hello.txt && rm gone.txt"
CASE = {
    "prompt": "Greet, then write hello.txt.",
    "fixture": {
        "files": {
            ".agents/skills/greet/SKILL.md": SKILL,
            ".claude/skills/greet/SKILL.md": SKILL,
            "gone.txt": "bye\n",
        }
    },
    "checks": [
        {"id": "ready", "grader": "sevro.regex", "configuration": {"pattern": "^ready$"}},
        {"id": "skill", "grader": "sevro.skill-activation", "configuration": {"expect": "read"}},
    ],
}


def _summary(project: SevroProject) -> dict[str, Any]:
    document = trial(project)
    changes = observation(document, "sevro.files-changed")["data"]["changes"]
    skills = observation(document, "sevro.skills")["data"]
    commands = observation(document, "sevro.commands")["data"]["commands"]
    return {
        "verdict": document["task"]["verdict"] if "task" in document else None,
        "changes": [(c["path"], c["change"], c.get("sha256")) for c in changes],
        "offered": [s["name"] for s in skills["offered"]],
        "read": skills["read"],
        "lastCommandExit": commands[-1]["exitCode"],
        "usageKnown": document["evidence"]["usage"]["inputTokens"] is not None,
    }


def test_the_same_case_grades_the_same_on_codex_and_claude(
    tmp_path: Any, mock_model: Callable[..., Any]
) -> None:
    codex, claude = require_codex(), require_claude()
    projects = {}
    for name in ("codex", "claude"):
        root = tmp_path / name
        root.mkdir()
        projects[name] = SevroProject(root.resolve())
    codex_project, claude_project = projects["codex"], projects["claude"]
    case_codex = codex_project.case(**CASE)
    case_claude = claude_project.case(**CASE)
    assert case_codex.read_bytes() == case_claude.read_bytes()

    codex_server = mock_model(
        [
            reply(shell("cat .agents/skills/greet/SKILL.md")),
            reply(shell(WORK)),
            reply(Message("ready")),
        ]
    )
    claude_server = mock_model(
        [
            reply(ToolCall("Read", {"file_path": ".claude/skills/greet/SKILL.md"})),
            reply(bash(WORK)),
            reply(Message("ready")),
        ],
        protocols=PROTOCOLS,
    )
    on_codex = run_codex(codex_project, codex, codex_server, case_codex)
    on_claude = run_claude(claude_project, claude, claude_server, case_claude)
    assert on_codex.json()["task"]["verdict"] == "passed", on_codex.stdout
    assert on_claude.json()["task"]["verdict"] == "passed", on_claude.stdout
    codex_summary, claude_summary = _summary(codex_project), _summary(claude_project)
    assert codex_summary == claude_summary
    assert claude_summary["read"] == ["greet"]
    assert [c[0] for c in claude_summary["changes"]] == ["gone.txt", "hello.txt"]
