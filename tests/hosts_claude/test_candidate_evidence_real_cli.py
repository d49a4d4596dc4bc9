"""A real Claude Code run's transcripts reach checks (SEVRO_CANDIDATE_TRANSCRIPTS); its Bash
sandbox does not let commands write their HOME, so a declared candidate
artifact directory it cannot create is a grading error, never a pass."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sevro_core.testing import SevroProject
from sevro_core.testing.mockmodel import Message, reply
from sevro_hosts_claude.testing import require_claude
from tests.hosts_claude.helpers import PROTOCOLS, bash, run_claude
from tests.hosts_codex.helpers import observation, trial

pytestmark = pytest.mark.slow

TRANSCRIPTS = (
    'cd "$SEVRO_CANDIDATE_TRANSCRIPTS" && grep -q \'"capture": "complete"\' index.json'
    ' && grep -q \'"path": "claude/sevro.claude.events"\' index.json'
    ' && grep -q "$(sha256sum claude/sevro.claude.events | cut -d" " -f1)" index.json'
    " && test -s claude/sevro.claude.events"
)
WRITE = 'mkdir -p "$HOME/.darrow/reviews" && echo passed > "$HOME/.darrow/reviews/r.json"'


def check(check_id: str, run: str) -> dict[str, Any]:
    return {"id": check_id, "grader": "sevro.shell", "configuration": {"run": run}}


@pytest.mark.parametrize("declared", [False, True])
def test_transcripts_and_an_unwritable_artifact_directory_of_a_real_claude_run(
    sevro_project: SevroProject,
    mock_model: Callable[..., Any],
    tmp_path: Path,
    declared: bool,
) -> None:
    claude = require_claude()
    server = mock_model([reply(bash(WRITE)), reply(Message("ready"))], protocols=PROTOCOLS)
    workspaces = tmp_path / "workspaces"
    workspaces.mkdir()
    args: list[str] = ["--workspace-root", str(workspaces)]
    if declared:
        config = tmp_path / "runtime.json"
        directories = [{"name": "reviews", "path": ".darrow/reviews"}]
        config.write_text(
            json.dumps(
                {"format": "sevro.runtime.v1", "runtime": {"artifactDirectories": directories}}
            )
        )
        args += ["--runtime-config-file", str(config)]
    case = sevro_project.case(checks=[check("transcripts", TRANSCRIPTS)])
    done = run_claude(sevro_project, claude, server, case, *args)
    document = trial(sevro_project)
    shown = [  # what the model was shown of the command
        block
        for message in server.requests[-1].json()["messages"]
        if isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    ]
    assert "Read-only file system" in json.dumps(shown), shown  # not a sandbox that failed
    (found,) = document["evidence"]["checks"]
    (command,) = observation(document, "sevro.commands")["data"]["commands"]
    assert command["exitCode"] != 0, "Claude's Bash sandbox keeps its HOME read-only"
    if not declared:
        assert done.exit_code == 0, done.stdout + done.stderr + json.dumps(found)
        assert found["status"] == "passed"
    else:
        assert found["status"] == "unavailable", found
        assert "does not exist in the candidate's home" in found["detail"]
        assert done.exit_code != 0
