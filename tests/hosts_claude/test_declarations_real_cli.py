"""A case source's preparation declarations, honoured by the Claude host through the real Claude
Code CLI against the mock model.

The declared plugin root and repository skill are written into the trial's workspace before the
host starts (git-excluded, as an extension's artifacts are).

Positive: a declared plugin root becomes a ``--plugin-dir``, so ``/acme:tidy`` reaches the model
as the plugin's skill; ``/greet`` declared as a repository invocation (with
``--claude-project-settings``) runs the repository skill. Negative controls: the same workspace
without the declaration (no plugin loaded, nothing expanded), a declared skill that does not
exist (the trial fails before Claude Code starts), a repository invocation without project
settings and declarations the host cannot honour (exit 64 before anything runs).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from attrs import evolve

from sevro_core.api import (
    NO_HOST_PREPARATION,
    CodexMarketplace,
    HostPreparation,
    InvocationError,
    SkillInvocation,
)
from sevro_core.models import CancelToken, HostRequest, HostResult
from sevro_core.plugin.protocols import HostOptions
from sevro_core.testing.mockmodel import Message, MockModelServer, reply
from sevro_hosts_claude.host import ClaudeHost, ConfiguredClaudeHost
from sevro_hosts_claude.testing import require_claude
from tests.experiments.mounted import git_workspace
from tests.hosts_claude.helpers import API_KEY, API_KEY_ENV, PROTOCOLS

pytestmark = pytest.mark.slow

PLUGIN = HostPreparation(
    claude_plugin_dirs=("prepared/acme",),
    invocation=SkillInvocation("claude-plugin", "acme", "tidy"),
)
REPOSITORY = HostPreparation(invocation=SkillInvocation("claude-repository", None, "greet"))
TIDY = "---\nname: tidy\ndescription: Tidies.\n---\nTidy with TIDY-K3.\n"
GREET = "---\nname: greet\ndescription: Greets people.\n---\nSay hello warmly, GREET-Q9.\n"


@pytest.fixture
def claude(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(API_KEY_ENV, API_KEY)
    return require_claude()


@pytest.fixture
def model(mock_model: Callable[..., Any]) -> Callable[..., MockModelServer]:
    return lambda replies: mock_model(replies, protocols=PROTOCOLS)


def configure(
    claude: str, server: MockModelServer, *, project_settings: bool = False
) -> ConfiguredClaudeHost:
    config = {
        "format": "sevro.claude-host.v1",
        "baseUrl": server.origin,
        "turnTimeoutSeconds": 60,
        "maxRetries": 0,
    }
    settings = {"claude.bin": claude, "claude.apiKeyEnv": API_KEY_ENV}
    if project_settings:
        settings["claude.projectSettings"] = "true"
    options = HostOptions(config=config, model="mock-model", settings=settings)
    return ClaudeHost().configure(options)


def prepared_workspace(root: Path, *, skill: bool = True) -> Path:
    """A git workspace holding a plugin root and a repository skill, excluded from git as an
    extension's artifacts are."""
    _, workspace = git_workspace(root)
    plugin = workspace / "prepared" / "acme"
    (plugin / ".claude-plugin").mkdir(parents=True)
    manifest = {"name": "acme", "version": "1.0.0"}
    (plugin / ".claude-plugin" / "plugin.json").write_text(json.dumps(manifest))
    (plugin / "skills" / "tidy").mkdir(parents=True)
    (plugin / "skills" / "tidy" / "SKILL.md").write_text(TIDY)
    if skill:
        (workspace / ".claude" / "skills" / "greet").mkdir(parents=True)
        (workspace / ".claude" / "skills" / "greet" / "SKILL.md").write_text(GREET)
    (workspace / ".git" / "info" / "exclude").write_text("/prepared/\n/.claude/\n")
    return workspace


def run(configured: ConfiguredClaudeHost, workspace: Path, root: Path, prompt: str) -> HostResult:
    private = root / "private"
    private.mkdir(mode=0o700)
    request = HostRequest(
        case_id="declared",
        trial=1,
        prompts=(prompt,),
        workspace=workspace,
        condition="passive",
        cancel=CancelToken(),
        private_root=private,
    )
    return configured.run(request)


def data(result: HostResult, ident: str) -> Any:
    (found,) = [o for o in result.observations if o.id == ident]
    return str(found.completeness.value), found.data


def test_a_declared_plugin_root_is_loaded_and_its_skill_invoked(
    claude: str, model: Callable[..., MockModelServer], tmp_path: Path
) -> None:
    workspace = prepared_workspace(tmp_path)
    server = model([reply(Message("tidied"))])
    plain = configure(claude, server)
    assert {"sevro.claude.plugin-dirs", "sevro.claude.explicit-invocation"} <= plain.capabilities
    assert "sevro.claude.repository-invocation" not in plain.capabilities
    assert plain.prepared(NO_HOST_PREPARATION) is plain
    configured = plain.prepared(PLUGIN)
    identity = configured.redacted_configuration()
    assert isinstance(identity, dict) and identity != plain.redacted_configuration()
    assert identity["preparation"] == {
        "claudePluginDirs": ["prepared/acme"],
        "invocation": {"kind": "claude-plugin", "pluginName": "acme", "skillName": "tidy"},
    }
    result = run(configured, workspace, tmp_path, "/acme:tidy the repo")
    assert result.error is None and not result.execution_failed, result.error
    first = json.dumps(server.requests[0].json())
    assert "<command-name>/acme:tidy</command-name>" in first and "TIDY-K3" in first
    assert data(result, "sevro.claude.plugin-dirs") == (
        "complete",
        {"plugins": [{"dir": "prepared/acme", "name": "acme", "loaded": True, "skills": ["tidy"]}]},
    )
    assert data(result, "sevro.claude.explicit-invocation") == (
        "complete",
        {"invocation": {"plugin": "acme", "skill": "tidy", "listed": True}},
    )


def test_negative_control_the_same_workspace_without_the_declaration_loads_no_plugin(
    claude: str, model: Callable[..., MockModelServer], tmp_path: Path
) -> None:
    workspace = prepared_workspace(tmp_path)
    server = model([reply(Message("done"))])
    result = run(configure(claude, server), workspace, tmp_path, "/acme:tidy the repo")
    assert result.error is None, result.error
    assert "TIDY-K3" not in json.dumps(server.requests[0].json())
    assert data(result, "sevro.claude.plugin-dirs") == ("complete", {"plugins": []})
    assert data(result, "sevro.claude.explicit-invocation") == ("complete", {"invocation": None})


def test_a_declared_repository_invocation_runs_the_repository_skill(
    claude: str, model: Callable[..., MockModelServer], tmp_path: Path
) -> None:
    workspace = prepared_workspace(tmp_path)
    server = model([reply(Message("greeted"))])
    configured = configure(claude, server, project_settings=True).prepared(REPOSITORY)
    assert "sevro.claude.repository-invocation" in configured.capabilities
    result = run(configured, workspace, tmp_path, "/greet the team")
    assert result.error is None and not result.execution_failed, result.error
    first = json.dumps(server.requests[0].json())
    assert "<command-name>/greet</command-name>" in first and "GREET-Q9" in first
    assert data(result, "sevro.claude.repository-invocation") == (
        "complete",
        {
            "projectSettings": True,
            "settingsFile": False,
            "invocation": {"skill": "greet", "listed": True},
        },
    )


@pytest.mark.parametrize(
    ("preparation", "prompt"),
    [(REPOSITORY, "/greet the team"), (PLUGIN, "/acme:other the repo"), (PLUGIN, "Do /acme:tidy")],
    ids=["missing-repository-skill", "missing-plugin-skill", "not-opening-the-prompt"],
)
def test_a_declared_invocation_naming_no_skill_fails_before_claude_code_starts(
    claude: str,
    model: Callable[..., MockModelServer],
    tmp_path: Path,
    preparation: HostPreparation,
    prompt: str,
) -> None:
    workspace = prepared_workspace(tmp_path, skill=False)
    server = model([reply(Message("never"))])
    if "other" in prompt:
        other = SkillInvocation("claude-plugin", "acme", "other")
        preparation = evolve(preparation, invocation=other)
    configured = configure(claude, server, project_settings=True).prepared(preparation)
    result = run(configured, workspace, tmp_path, prompt)
    assert result.execution_failed and result.error is not None
    assert "the declared invocation" in result.error
    assert server.requests == []


@pytest.mark.parametrize(
    ("preparation", "message"),
    [
        (REPOSITORY, "needs --claude-project-settings"),
        (
            HostPreparation(codex_marketplace=CodexMarketplace("m", "m", ("p",))),
            "cannot honour codexMarketplace",
        ),
        (
            HostPreparation(invocation=SkillInvocation("codex-repository", None, "greet")),
            "cannot honour a codex-repository skill invocation",
        ),
        (HostPreparation(claude_plugin_dirs=("a", "a/b")), "claudePluginDirs: overlaps 'a'"),
        (HostPreparation(claude_plugin_dirs=("../out",)), "claudePluginDirs: must be a relative"),
        (
            HostPreparation(invocation=SkillInvocation("claude-plugin", "acme", "tidy")),
            "no claudePluginDirs or pluginDirs are declared",
        ),
    ],
)
def test_declarations_the_claude_host_cannot_honour_are_refused_before_anything_runs(
    claude: str,
    model: Callable[..., MockModelServer],
    preparation: HostPreparation,
    message: str,
) -> None:
    configured = configure(claude, model([]))
    with pytest.raises(InvocationError, match=message):
        configured.prepared(preparation)


def test_a_judge_takes_no_declarations(claude: str, model: Callable[..., MockModelServer]) -> None:
    judge = evolve(configure(claude, model([])), role="semantic")
    with pytest.raises(InvocationError, match="judge takes no preparation"):
        judge.prepared(PLUGIN)
