"""A skill-creator trigger eval set through the real Claude Code and Codex CLIs against the mock
model: the model reads the mounted skill for some queries (Claude Code's ``Read`` of
``.claude/skills/NAME/SKILL.md``, Codex's ``cat .agents/skills/NAME/SKILL.md``) and answers others
directly; the trigger statistics count exactly those reads."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from sevro_core.testing import CliResult, SevroProject, require_sandbox
from sevro_core.testing.mockmodel import Message, MockModelServer, Reply, ToolCall, reply
from sevro_hosts_claude.testing import require_claude
from sevro_hosts_codex.testing import require_codex
from tests.e2e.helpers import assert_valid_evidence
from tests.hosts_claude.helpers import PROTOCOLS, run_claude
from tests.hosts_codex.helpers import run_codex, shell

pytestmark = pytest.mark.slow

NAME = "zephyr-ledger"
EVALS = [
    {"query": "Balance the zephyr ledger q7v4", "should_trigger": True},
    {"query": "Say hello in French", "should_trigger": False},
    {"query": "Name a colour", "should_trigger": False},
]


def script(read: ToolCall, first: ToolCall | None = None) -> list[Reply]:
    """--jobs 1, one arm: the queries run in order. The model consults the skill for the first
    (right; with ``first`` when given) and the third (wrong: a false positive), and answers the
    second directly."""
    return [
        reply(first or read),
        reply(Message("balanced")),
        reply(Message("Bonjour")),
        reply(read),
        reply(Message("blue")),
    ]


def check(done: CliResult, server: MockModelServer) -> None:
    assert done.exit_code == 1, done.stdout + done.stderr  # the third query fails not-read
    assert server.remaining == 0 and not server.unexpected
    first_requests = [json.dumps(server.requests[i].json()) for i in (0, 2, 3)]
    for text, entry in zip(first_requests, EVALS, strict=True):
        assert entry["query"] in text  # each trial's first request carries its own query
    run = assert_valid_evidence(done.json())
    (arm,) = run["statistics"]["triggers"]["arms"]
    assert [q["triggered"] for q in arm["queries"]] == [1, 0, 1]
    assert [q["notTriggered"] for q in arm["queries"]] == [0, 1, 0]
    pooled = arm["pooled"]
    assert pooled["recall"]["value"] == 1.0
    assert pooled["precision"]["value"] == 0.5
    assert (pooled["partial"], pooled["unavailable"]) == (0, 0)


def inputs(project: SevroProject) -> Any:
    project.skill("skills/ledger", NAME, "Balances zephyr ledgers q7v4.", "Add twice.\n")
    return project.write_json("evals.json", EVALS)


FLAGS = ("--skill", "skills/ledger", "--trials", "1", "--jobs", "1")


def test_claude_code_reads_decide_precision_and_recall(
    sevro_project: SevroProject, mock_model: Callable[..., Any]
) -> None:
    claude = require_claude()
    require_sandbox()
    evals = inputs(sevro_project)
    read = ToolCall("Read", {"file_path": f".claude/skills/{NAME}/SKILL.md"})
    skill_tool = ToolCall("Skill", {"skill": NAME})  # how Claude Code itself consults a skill
    server = mock_model(script(read, skill_tool), protocols=PROTOCOLS)
    check(run_claude(sevro_project, claude, server, evals, *FLAGS), server)


def test_codex_reads_decide_precision_and_recall(
    sevro_project: SevroProject, mock_model: Callable[..., Any]
) -> None:
    codex = require_codex()
    require_sandbox()
    evals = inputs(sevro_project)
    server = mock_model(script(shell(f"cat .agents/skills/{NAME}/SKILL.md")))
    check(run_codex(sevro_project, codex, server, evals, *FLAGS), server)
