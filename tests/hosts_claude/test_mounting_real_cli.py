"""An arm mounted at the Claude host's declared places reaches the real Claude Code's model.

The workspace is a real Git fixture (the mount is Git-excluded), the arm is installed with
``mount_arm`` at ``ClaudeHost.skill_places``, and the host runs the real ``claude`` against the
mock Messages server: the skill's name and description and the context text are in the request
the mock receives, and a ``Read`` of the mounted ``SKILL.md`` is a ``read``. Negative controls:
with nothing mounted, and with the arm at Codex's places, the skill is not offered and the same
``Read`` reads nothing.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sevro_core.experiments.mounting import mount_arm
from sevro_core.models import CancelToken, HostRequest, HostResult
from sevro_core.plugin.protocols import HostOptions, SkillPlaces, skill_places_of
from sevro_core.testing.mockmodel import Message, MockModelServer, ToolCall, reply
from sevro_hosts_claude.host import ClaudeHost
from sevro_hosts_claude.testing import require_claude
from tests.experiments.mounted import (
    DESCRIPTION,
    NAME,
    SKILL,
    arm,
    git_workspace,
    requests_text,
    skills_of,
)
from tests.hosts_claude.helpers import API_KEY, API_KEY_ENV, PROTOCOLS

pytestmark = pytest.mark.slow

CODEX_PLACES = SkillPlaces(".agents/skills", "AGENTS.md")


@pytest.fixture
def claude(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(API_KEY_ENV, API_KEY)
    return require_claude()


def run_claude(claude: str, server: MockModelServer, workspace: Path, tmp_path: Path) -> HostResult:
    config = {
        "format": "sevro.claude-host.v1",
        "baseUrl": server.origin,
        "turnTimeoutSeconds": 60,
        "maxRetries": 0,
    }
    settings = {"claude.bin": claude, "claude.apiKeyEnv": API_KEY_ENV}
    options = HostOptions(config=config, model="mock-model", settings=settings)
    configured = ClaudeHost().configure(options)
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    request = HostRequest(
        case_id="mounted",
        trial=1,
        prompts=("Balance the books.",),
        workspace=workspace,
        condition="passive",
        cancel=CancelToken(),
        private_root=private,
    )
    result = configured.run(request)
    assert result.error is None and not result.execution_failed, result.error
    return result


def script(mock_model: Callable[..., Any]) -> MockModelServer:
    """The same model in every test: it reads the skill where Claude Code would offer it."""
    read = ToolCall("Read", {"file_path": f".claude/skills/{NAME}/SKILL.md"})
    replies = [reply(read), reply(Message("balanced"))]
    server: MockModelServer = mock_model(replies, protocols=PROTOCOLS)
    return server


def test_a_mounted_skill_and_context_reach_the_model_and_a_read_is_observed(
    claude: str, mock_model: Callable[..., Any], tmp_path: Path
) -> None:
    git, workspace = git_workspace(tmp_path)
    places = skill_places_of(ClaudeHost())
    assert places is not None
    skill, context = arm(tmp_path)
    mount_arm(workspace, places, [skill], [context])
    assert git.run("status", "--porcelain", "-uall", cwd=workspace).stdout == b""
    server = script(mock_model)
    result = run_claude(claude, server, workspace, tmp_path)
    first = json.dumps(server.requests[0].json())
    assert NAME in first and DESCRIPTION in first  # Claude Code listed the mounted skill
    assert "House rule k9w2" in first  # and the mounted CLAUDE.md
    skills = skills_of(result)
    assert [s["name"] for s in skills["offered"]] == [NAME]
    assert skills["read"] == [NAME]
    # the stream's read, and the same read as the passive hook saw its returned content
    reads = [(r["skill"], r["status"], r.get("via")) for r in skills["reads"]]
    assert reads == [(NAME, "read", None), (NAME, "read", "hooks")]
    assert result.final_message == "balanced"


def test_negative_control_nothing_mounted_nothing_offered_nothing_read(
    claude: str, mock_model: Callable[..., Any], tmp_path: Path
) -> None:
    _, workspace = git_workspace(tmp_path)
    server = script(mock_model)
    skills = skills_of(run_claude(claude, server, workspace, tmp_path))
    text = requests_text(server)
    assert NAME not in json.dumps(server.requests[0].json())  # the model alone names it later
    assert DESCRIPTION not in text and "House rule k9w2" not in text
    assert skills["offered"] == [] and skills["read"] == [] and skills["reads"] == []


def test_negative_control_an_arm_at_codexs_places_is_not_offered_to_claude_code(
    claude: str, mock_model: Callable[..., Any], tmp_path: Path
) -> None:
    _, workspace = git_workspace(tmp_path)
    skill, context = arm(tmp_path)
    mount_arm(workspace, CODEX_PLACES, [skill], [context])
    assert (workspace / ".agents" / "skills" / NAME / "SKILL.md").read_text() == SKILL
    assert os.path.isfile(workspace / "AGENTS.md")
    server = script(mock_model)
    skills = skills_of(run_claude(claude, server, workspace, tmp_path))
    text = requests_text(server)
    assert NAME not in json.dumps(server.requests[0].json())
    assert DESCRIPTION not in text  # Claude Code does not look in .agents/skills
    # Claude Code 2.1.332 does read a root AGENTS.md as well as CLAUDE.md (docs/hosts/claude.md)
    assert "House rule k9w2" in text
    assert skills["offered"] == [] and skills["read"] == []
