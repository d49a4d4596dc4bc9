"""The ``app-server`` entrypoint through the real Codex CLI against the mock model: one root
thread over stdio JSON-RPC, native goal continuation turns, and every way it must fail."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sevro_core.testing import SevroProject
from sevro_core.testing.mockmodel import Message, ToolCall, reply
from sevro_hosts_codex.testing import require_codex
from tests.core.activation_controls import activations, fixture
from tests.hosts_codex.helpers import observation, run_codex, shell, trial

pytestmark = pytest.mark.slow
READY = {"id": "ready", "grader": "sevro.regex", "configuration": {"pattern": "^ready$"}}
APP = ("--codex-entrypoint", "app-server")
SKILLS = ".agents/skills"


@pytest.fixture
def codex() -> str:
    return require_codex()


def goal_runtime(tmp_path: Path, native_goal: bool = True) -> Path:
    path = tmp_path / "runtime.json"
    document = {"format": "sevro.runtime.v1", "hooks": {"nativeGoal": native_goal}}
    path.write_text(json.dumps(document))
    return path


def test_a_plain_trial_end_to_end(
    sevro_project: SevroProject, codex: str, mock_model: Callable[..., Any]
) -> None:
    skill = f"{SKILLS}/greet/SKILL.md"
    server = mock_model([reply(shell(f"cat {skill}")), reply(Message("ready"))])
    case = sevro_project.case(fixture=fixture(SKILLS), checks=[READY])
    result = run_codex(sevro_project, codex, server, case, *APP)
    assert result.exit_code == 0, result.stdout + result.stderr
    assert result.json()["task"]["verdict"] == "passed"
    document = trial(sevro_project)
    evidence = document["evidence"]
    assert evidence["usage"]["complete"] is False and evidence["usage"]["inputTokens"] is None
    commands = observation(document, "sevro.commands")["data"]["commands"]
    assert [c["exitCode"] for c in commands] == [0] and skill in commands[0]["command"]
    assert observation(document, "sevro.skills")["data"]["read"] == ["greet"]
    found = activations(document)
    assert found["completeness"] == "complete", found
    assert [a["skill"] for a in found["data"]["activations"]] == ["greet"]
    turns = observation(document, "sevro.codex.turns")["data"]["turns"]
    assert [t["nativeTurns"] for t in turns] == [1]
    goal = observation(document, "sevro.host.native-goal")
    assert goal["completeness"] == "complete" and goal["data"]["status"] == "none"
    assert goal["data"]["policy"] is False
    calls = observation(document, "sevro.codex.native-calls")
    assert calls["completeness"] == "complete" and calls["data"]["threadId"] == turns[0]["threadId"]
    assert [a["id"] for a in evidence["artifactRefs"]] == ["sevro.codex.events"]
