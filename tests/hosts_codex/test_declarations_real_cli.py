"""A case source's preparation declarations, honoured by the Codex host through the real Codex
CLI against the mock model.

The declared marketplace and repository skill are written into the trial's workspace before the
host starts (git-excluded, as an extension's artifacts are), then the host reads the marketplace
there, installs it into the trial's private ``CODEX_HOME`` and Codex injects the declared skill.

Positive: ``$demo:greet`` with a declared marketplace reaches the model as the plugin's skill,
the candidate can neither change what was installed by editing the workspace copy nor write the
private cache; ``$tidy`` declared as a repository invocation is injected. Negative controls: the
same workspace without the declaration (nothing installed or injected), a declared skill that is
missing and a declared marketplace whose name differs (the trial fails before the model is
asked), and declarations the host cannot honour (exit 64 before anything runs).
"""

from __future__ import annotations

import json
import shutil
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
from sevro_core.testing.mockmodel import Message, reply
from sevro_hosts_codex.host import ConfiguredCodexHost
from tests.experiments.mounted import git_workspace
from tests.hosts_codex.helpers import shell
from tests.hosts_codex.test_plugins_real_cli import (
    REPO_BODY,
    codex,
    configure,
    exit_codes,
    marketplace,
    observed,
    run,
)

pytestmark = pytest.mark.slow
__all__ = ["codex"]  # the fixture, shared with the configured-marketplace tests

MARKET = HostPreparation(
    codex_marketplace=CodexMarketplace("prepared/market", "sevro-local", ("demo",)),
    invocation=SkillInvocation("codex-plugin", "demo", "greet"),
)
REPOSITORY = HostPreparation(invocation=SkillInvocation("codex-repository", None, "tidy"))


def prepared_workspace(root: Path) -> Path:
    """A git workspace holding the marketplace and a repository skill, excluded from git as an
    extension's artifacts are."""
    _, workspace = git_workspace(root)
    shutil.copytree(marketplace(root), workspace / "prepared" / "market")
    skill = workspace / ".agents" / "skills" / "tidy"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(f"---\nname: tidy\ndescription: Tidies.\n---\n{REPO_BODY}\n")
    exclude = workspace / ".git" / "info" / "exclude"
    exclude.write_text("/prepared/\n/.agents/\n")
    return workspace


def first_input(server: Any, index: int = 0) -> str:
    return json.dumps(server.requests[index].json()["input"])


def test_a_declared_marketplace_is_installed_privately_and_its_skill_injected(
    codex: str, mock_model: Callable[..., Any], tmp_path: Path
) -> None:
    workspace = prepared_workspace(tmp_path)
    cache = tmp_path / "private" / "codex-home" / "plugins" / "cache" / "sevro-local" / "demo"
    installed = cache / "0.1.0" / "skills" / "greet" / "SKILL.md"
    copy = workspace / "prepared" / "market" / "plugins" / "demo" / "skills" / "greet"
    server = mock_model(
        [
            reply(shell(f"echo TAMPERED > {copy}/SKILL.md && cat {installed}")),
            reply(shell(f"echo TAMPERED >> {installed}")),
            reply(Message("greeted")),
        ]
    )
    plain = configure(codex, server, None)
    assert {"sevro.codex.plugin-marketplace", "sevro.codex.explicit-invocation"} <= (
        plain.capabilities
    )
    assert "sevro.codex.repository-invocation" in plain.capabilities
    configured = plain.prepared(MARKET)
    assert plain.prepared(NO_HOST_PREPARATION) is plain
    identity = configured.redacted_configuration()
    assert isinstance(identity, dict) and identity != plain.redacted_configuration()
    assert identity["preparation"] == {
        "codexMarketplace": {
            "artifactRoot": "prepared/market",
            "marketplaceName": "sevro-local",
            "pluginNames": ["demo"],
        },
        "invocation": {"kind": "codex-plugin", "pluginName": "demo", "skillName": "greet"},
    }
    result = run(configured, workspace, tmp_path, "Please use $demo:greet for the team.")
    assert result.error is None and not result.execution_failed, result.error
    first = first_input(server)
    assert "<name>demo:greet</name>" in first and "GREET-MARKER-7q" in first  # injected
    state, invocation = observed(result, "sevro.codex.explicit-invocation")
    assert state == "complete" and invocation["plugin"] == "demo"
    assert invocation["dispatched"] is True
    (tamper, *_) = exit_codes(result)
    assert tamper == 0  # the workspace copy is the candidate's to edit ...
    assert "GREET-MARKER-7q" in first_input(server, 1)  # ... the installed copy is unchanged
    assert "Read-only file system" in first_input(server, 2)  # the private cache is read-only
    assert "TAMPERED" not in installed.read_text()
    (hooks,) = [o for o in result.observations if o.id == "sevro.host.hooks"]
    assert hooks.completeness.value == "complete"
    assert [p["name"] for p in hooks.data["plugins"]] == ["demo"]  # type: ignore[index, union-attr]


def test_negative_control_the_same_workspace_without_the_declaration_installs_nothing(
    codex: str, mock_model: Callable[..., Any], tmp_path: Path
) -> None:
    workspace = prepared_workspace(tmp_path)
    server = mock_model([reply(Message("done"))])
    configured = configure(codex, server, None)
    result = run(configured, workspace, tmp_path, "Please use $demo:greet for the team.")
    assert result.error is None, result.error
    assert "GREET-MARKER-7q" not in first_input(server)  # no plugin: nothing injected
    assert observed(result, "sevro.codex.explicit-invocation") == ("complete", None)
    assert "sevro.host.hooks" not in {o.id for o in result.observations}
    assert not (tmp_path / "private" / "codex-home" / "plugins" / "cache").exists()


def test_a_declared_repository_invocation_is_injected_and_a_missing_one_fails_first(
    codex: str, mock_model: Callable[..., Any], tmp_path: Path
) -> None:
    workspace = prepared_workspace(tmp_path / "present")
    server = mock_model([reply(Message("tidied"))])
    configured = configure(codex, server, None).prepared(REPOSITORY)
    result = run(configured, workspace, tmp_path / "present", "Use $tidy on the repo.")
    assert result.error is None, result.error
    assert "TIDY-MARKER-3k" in first_input(server)
    assert observed(result, "sevro.codex.repository-invocation") == (
        "complete",
        {"token": "$tidy", "skill": "tidy", "turn": 1, "occurrences": 1, "dispatched": True},
    )
    _, empty = git_workspace(tmp_path / "missing")
    server = mock_model([reply(Message("never"))])
    configured = configure(codex, server, None).prepared(REPOSITORY)
    result = run(configured, empty, tmp_path / "missing", "Use $tidy on the repo.")
    assert result.execution_failed and result.error is not None
    assert "declared invocation $tidy names no skill" in result.error
    assert server.requests == []


def test_a_declared_marketplace_under_another_name_fails_before_the_model(
    codex: str, mock_model: Callable[..., Any], tmp_path: Path
) -> None:
    workspace = prepared_workspace(tmp_path)
    server = mock_model([reply(Message("never"))])
    market = CodexMarketplace("prepared/market", "other-name", ("demo",))
    configured = configure(codex, server, None).prepared(evolve(MARKET, codex_marketplace=market))
    result = run(configured, workspace, tmp_path, "Please use $demo:greet.")
    assert result.execution_failed and result.error is not None
    assert "named 'sevro-local', not 'other-name'" in result.error
    assert server.requests == []
    state, _ = observed(result, "sevro.codex.explicit-invocation")
    assert state == "partial"


@pytest.mark.parametrize(
    ("preparation", "message"),
    [
        (HostPreparation(claude_plugin_dirs=("plugins/x",)), "cannot honour claudePluginDirs"),
        (
            HostPreparation(invocation=SkillInvocation("claude-repository", None, "tidy")),
            "cannot honour a claude-repository skill invocation",
        ),
        (
            HostPreparation(codex_marketplace=CodexMarketplace("../out", "m", ("demo",))),
            "must be a relative directory inside the workspace",
        ),
        (
            HostPreparation(codex_marketplace=CodexMarketplace("m", "m", ("demo", "demo"))),
            "names must be unique",
        ),
        (
            HostPreparation(invocation=SkillInvocation("codex-plugin", "demo", "greet")),
            "which no declared or configured Codex plugin marketplace installs",
        ),
    ],
)
def test_declarations_the_codex_host_cannot_honour_are_refused_before_anything_runs(
    codex: str,
    mock_model: Callable[..., Any],
    preparation: HostPreparation,
    message: str,
) -> None:
    configured = configure(codex, mock_model([]), None)
    with pytest.raises(InvocationError, match=message):
        configured.prepared(preparation)


def test_a_declared_marketplace_beside_a_configured_one_and_a_judge_are_refused(
    codex: str, mock_model: Callable[..., Any], tmp_path: Path
) -> None:
    server = mock_model([])
    configured = configure(codex, server, marketplace(tmp_path))
    with pytest.raises(InvocationError, match="already names a plugin marketplace"):
        configured.prepared(MARKET)
    # an invocation of a configured marketplace's plugin is honoured
    prepared = configured.prepared(evolve(MARKET, codex_marketplace=None))
    assert isinstance(prepared, ConfiguredCodexHost)
    judge = evolve(configure(codex, server, None), role="semantic")
    with pytest.raises(InvocationError, match="judge takes no preparation"):
        judge.prepared(REPOSITORY)
