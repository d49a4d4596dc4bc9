"""Three turns through the real Codex and Claude Code CLIs against the mock model: every later
turn resumes the first turn's session, each turn's stream is kept under its own id, and checks
with ``turn`` grade the workspace, reply, changed files and tool calls that turn left."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from sevro_core.testing import CliResult, SevroProject, require_sandbox
from sevro_core.testing.mockmodel import Message, MockModelServer, reply
from sevro_hosts_claude.testing import require_claude
from sevro_hosts_codex.testing import require_codex
from tests.e2e.helpers import assert_valid_evidence, trial_evidence
from tests.hosts_claude.helpers import PROTOCOLS, bash, run_claude
from tests.hosts_codex.helpers import run_codex, shell

pytestmark = pytest.mark.slow

PROMPTS = ["Write one.", "Now write two.", "Now write two."]  # a repeated turn text is allowed


def check(check_id: str, grader: str, turn: int | None, **config: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"id": check_id, "grader": f"sevro.{grader}", "configuration": config}
    return out if turn is None else {**out, "turn": turn}


WROTE_TWO = {
    "tool": ["Bash", "command_execution"],
    "arguments": {"text": {"contains": "printf two", "notContains": "printf one"}},
    "expect": "succeeded",
}
CHECKS = [
    check("t2-wrote-two", "tool-call", 2, **WROTE_TWO),
    check("t1-one", "file-text", 1, path="a.txt", equals="one"),
    check("t1-changed", "changed-paths", 1, equal=["a.txt"]),
    check("t1-reply", "response-text", 1, equals="first"),
    check("t2-two", "file-text", 2, path="a.txt", equals="two"),
    check("t2-changed", "changed-paths", 2, equal=["a.txt", "b.txt"]),
    check("t2-reply", "response-text", 2, equals="second"),
    check("final-reply", "response-text", None, equals="third"),
    # negative controls: what is true at the end was not true after turn 1
    check("t1-b-absent", "path", 1, path="b.txt", expect="absent"),
    check("t1-not-two", "file-text", 1, path="a.txt", equals="two"),
    check("t1-not-b", "changed-paths", 1, include=["b.txt"]),
    check("t1-not-second", "response-text", 1, contains="second"),
    check("t1-wrote-two", "tool-call", 1, **WROTE_TWO),
]
FAILING = {"t1-not-two", "t1-not-b", "t1-not-second", "t1-wrote-two"}


def script(command: Callable[[str], Any]) -> list[Any]:
    return [
        reply(command("printf one > a.txt")),
        reply(Message("first")),
        reply(command("printf two > a.txt && printf b > b.txt")),
        reply(Message("second")),
        reply(Message("third")),
    ]


def assert_three_turns(
    project: SevroProject, done: CliResult, server: MockModelServer, host: str
) -> None:
    evidence = trial_evidence(done.json())
    found = {c["id"]: c["status"] for c in evidence["checks"]}
    assert found == {c["id"]: "failed" if c["id"] in FAILING else "passed" for c in CHECKS}, (
        found,
        evidence["checks"],
    )
    assert done.exit_code == 1, done.stdout + done.stderr
    assert evidence["turnsCompleted"] == 3
    assert [a["id"] for a in evidence["artifactRefs"]] == [
        f"sevro.{host}.events",
        f"sevro.{host}.follow-up-events",
        f"sevro.{host}.follow-up-events.3",
    ]
    observations = {o["id"]: o["data"] for o in evidence["observations"]}
    sessions = {
        t.get("threadId", t.get("sessionId")) for t in observations[f"sevro.{host}.turns"]["turns"]
    }
    assert len(sessions) == 1, sessions
    assert [t["reply"] for t in observations["sevro.observation.turns"]["turns"]] == [
        "first",
        "second",
        "third",
    ]
    assert {c["turn"] for c in observations["sevro.commands"]["commands"]} == {1, 2}
    # the third request carries the whole session: both earlier prompts and replies
    last = json.dumps(server.requests[-1].json())
    assert all(p in last for p in PROMPTS[:2]) and "first" in last and "second" in last
    assert_valid_evidence(done.json())


def case(project: SevroProject) -> Any:
    return project.write_json(
        "case.json",
        {
            "id": "example",
            "turns": PROMPTS,
            "fixture": {"files": {"README.md": "x\n"}},
            "checks": CHECKS,
            "requiredEvidence": [],
        },
    )


def test_codex_resumes_one_thread_for_every_turn(
    sevro_project: SevroProject, mock_model: Callable[..., Any]
) -> None:
    codex = require_codex()
    require_sandbox()
    server = mock_model(script(shell))
    done = run_codex(sevro_project, codex, server, case(sevro_project))
    assert_three_turns(sevro_project, done, server, "codex")


def test_claude_code_resumes_one_session_for_every_turn(
    sevro_project: SevroProject, mock_model: Callable[..., Any]
) -> None:
    claude = require_claude()
    require_sandbox()
    server = mock_model(script(bash), protocols=PROTOCOLS)
    done = run_claude(sevro_project, claude, server, case(sevro_project))
    assert_three_turns(sevro_project, done, server, "claude")
