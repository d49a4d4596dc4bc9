"""An arm mounted at the Codex host's declared places reaches the real Codex CLI's model.

The workspace is a real Git fixture (the mount is Git-excluded), the arm is installed with
``mount_arm`` at ``CodexHost.skill_places``, and the host runs the real ``codex`` against the
mock Responses server: the skill's name and description and the context text are in the
request the mock receives, and a ``cat`` of the mounted ``SKILL.md`` is a ``read``. Negative
controls: with nothing mounted, and with the arm at Claude Code's places, the skill is not
offered and the same ``cat`` reads nothing.
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
from sevro_core.testing.mockmodel import Message, MockModelServer, reply
from sevro_hosts_codex.host import CodexHost
from sevro_hosts_codex.testing import require_codex
from tests.experiments.mounted import (
    DESCRIPTION,
    NAME,
    SKILL,
    arm,
    git_workspace,
    requests_text,
    skills_of,
)
from tests.hosts_codex.helpers import API_KEY, API_KEY_ENV, PRICES, PROVIDER_KEY_ENV, shell

pytestmark = pytest.mark.slow

CLAUDE_PLACES = SkillPlaces(".claude/skills", "CLAUDE.md")
CODEX_PLAIN = SkillPlaces(".agents/skills", "AGENTS.md")
"""Codex's places without the override: what a mount that ignored it would do."""


@pytest.fixture
def codex(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(API_KEY_ENV, API_KEY)
    return require_codex()


def run_codex(codex: str, server: MockModelServer, workspace: Path, tmp_path: Path) -> HostResult:
    config = {
        "format": "sevro.codex-host.v1",
        "modelProvider": {
            "id": "mock",
            "baseUrl": server.base_url,
            "envKey": PROVIDER_KEY_ENV,
            "requestMaxRetries": 0,
            "streamMaxRetries": 0,
        },
        "turnTimeoutSeconds": 60,
        "prices": PRICES,
    }
    settings = {"codex.bin": codex, "codex.apiKeyEnv": API_KEY_ENV}
    options = HostOptions(config=config, model="mock-model", settings=settings)
    configured = CodexHost().configure(options)
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
    """The same model in every test: it reads the skill where Codex would offer it."""
    cat = shell(f"cat .agents/skills/{NAME}/SKILL.md")
    server: MockModelServer = mock_model([reply(cat), reply(Message("balanced"))])
    return server


def test_a_mounted_skill_and_context_reach_the_model_and_a_read_is_observed(
    codex: str, mock_model: Callable[..., Any], tmp_path: Path
) -> None:
    git, workspace = git_workspace(tmp_path)
    places = skill_places_of(CodexHost())
    assert places is not None
    skill, context = arm(tmp_path)
    mount_arm(workspace, places, [skill], [context])
    assert git.run("status", "--porcelain", "-uall", cwd=workspace).stdout == b""
    server = script(mock_model)
    result = run_codex(codex, server, workspace, tmp_path)
    first = json.dumps(server.requests[0].json()["input"])
    assert NAME in first and DESCRIPTION in first  # Codex listed the mounted skill
    assert "House rule k9w2" in first  # and the mounted AGENTS.md
    skills = skills_of(result)
    assert [s["name"] for s in skills["offered"]] == [NAME]
    assert skills["read"] == [NAME]
    # the stream's read, and the same read as the passive hook saw its returned content
    reads = [(r["skill"], r["status"], r.get("via")) for r in skills["reads"]]
    assert reads == [(NAME, "read", None), (NAME, "read", "hooks")]
    assert result.final_message == "balanced"


def test_negative_control_nothing_mounted_nothing_offered_nothing_read(
    codex: str, mock_model: Callable[..., Any], tmp_path: Path
) -> None:
    _, workspace = git_workspace(tmp_path)
    server = script(mock_model)
    skills = skills_of(run_codex(codex, server, workspace, tmp_path))
    text = requests_text(server)
    assert NAME not in json.dumps(server.requests[0].json())  # the model alone names it later
    assert DESCRIPTION not in text and "House rule k9w2" not in text
    assert skills["offered"] == [] and skills["read"] == [] and skills["reads"] == []


def test_negative_control_an_arm_at_claude_codes_places_is_not_offered_to_codex(
    codex: str, mock_model: Callable[..., Any], tmp_path: Path
) -> None:
    _, workspace = git_workspace(tmp_path)
    skill, context = arm(tmp_path)
    mount_arm(workspace, CLAUDE_PLACES, [skill], [context])
    assert (workspace / ".claude" / "skills" / NAME / "SKILL.md").read_text() == SKILL
    assert os.path.isfile(workspace / "CLAUDE.md")
    server = script(mock_model)
    skills = skills_of(run_codex(codex, server, workspace, tmp_path))
    text = requests_text(server)
    assert NAME not in json.dumps(server.requests[0].json())
    assert DESCRIPTION not in text  # Codex does not look in .claude/skills
    assert "House rule k9w2" not in text  # nor read CLAUDE.md
    assert skills["offered"] == [] and skills["read"] == []


def test_context_reaches_codex_past_a_fixtures_agents_override(
    codex: str, mock_model: Callable[..., Any], tmp_path: Path
) -> None:
    """Codex reads ``AGENTS.override.md`` instead of ``AGENTS.md``: written to AGENTS.md the
    arm's context would never reach the model (the negative control shows it), so the host
    declares the override and the context is appended there."""
    seen: dict[str, tuple[bool, bool]] = {}
    declared = skill_places_of(CodexHost())
    assert declared is not None and declared.overrides == ("AGENTS.override.md",)
    for label, places in (("declared", declared), ("without", CODEX_PLAIN)):
        root = tmp_path / label
        _, workspace = git_workspace(root)
        (workspace / "AGENTS.override.md").write_text("Override rule z3p8.\n")
        skill, context = arm(root)
        mount_arm(workspace, places, [skill], [context])
        server = script(mock_model)
        run_codex(codex, server, workspace, root)
        first = json.dumps(server.requests[0].json()["input"])
        seen[label] = ("Override rule z3p8" in first, "House rule k9w2" in first)
    assert seen == {"declared": (True, True), "without": (True, False)}
