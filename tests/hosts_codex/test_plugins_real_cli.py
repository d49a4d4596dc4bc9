"""A local plugin marketplace installed per trial, and explicit invocation receipts, through the
real Codex CLI against the mock model.

Positive: the configured marketplace is installed into the trial's private ``CODEX_HOME`` with
``codex plugin marketplace add`` / ``codex plugin add``, Codex injects the plugin skill a
``$plugin:skill`` mention names (the mock sees its body), commands may read the private plugin
cache but not the rest of ``CODEX_HOME``, and ``sevro.codex.explicit-invocation`` records the
dispatch; ``$skill`` of a repository skill gives ``sevro.codex.repository-invocation``.
Negative controls: no mention (nothing injected, ``null``), a repeated token (not dispatched), a
linked repository skill (``null``), a marketplace that lists other plugins or holds a link
(refused before anything runs), and a marketplace changed after configuration (the trial fails
before the model is asked).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sevro_core.models import CancelToken, HostRequest, HostResult
from sevro_core.plugin.protocols import HostOptions
from sevro_core.testing import SevroProject
from sevro_core.testing.mockmodel import Message, MockModelServer, reply
from sevro_hosts_codex.host import CodexHost, ConfiguredCodexHost
from sevro_hosts_codex.testing import require_codex
from tests.core.activation_controls import activations, fixture
from tests.experiments.mounted import git_workspace
from tests.hosts_codex.helpers import (
    API_KEY,
    API_KEY_ENV,
    PRICES,
    PROVIDER_KEY_ENV,
    host_config,
    observation,
    run_codex,
    shell,
    trial,
)

pytestmark = pytest.mark.slow

BODY = "Greet with the phrase GREET-MARKER-7q."
REPO_BODY = "Tidy with TIDY-MARKER-3k."


@pytest.fixture
def codex(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(API_KEY_ENV, API_KEY)
    return require_codex()


def marketplace(
    root: Path, listed: tuple[str, ...] = ("demo",), installation: str = "AVAILABLE"
) -> Path:
    market = root / "market"
    (market / ".agents" / "plugins").mkdir(parents=True)
    entries = [
        {
            "name": n,
            "source": {"source": "local", "path": f"./plugins/{n}"},
            "policy": {"installation": installation, "authentication": "ON_INSTALL"},
            "category": "Coding",
        }
        for n in listed
    ]
    document = {"name": "sevro-local", "plugins": entries}
    (market / ".agents" / "plugins" / "marketplace.json").write_text(json.dumps(document))
    plugin = market / "plugins" / "demo"
    (plugin / ".codex-plugin").mkdir(parents=True)
    manifest = {"name": "demo", "version": "0.1.0", "description": "d", "skills": "./skills/"}
    (plugin / ".codex-plugin" / "plugin.json").write_text(json.dumps(manifest))
    (plugin / "skills" / "greet").mkdir(parents=True)
    text = f"---\nname: greet\ndescription: Greets people.\n---\n{BODY}\n"
    (plugin / "skills" / "greet" / "SKILL.md").write_text(text)
    return market


def configure(codex: str, server: MockModelServer, market: Path | None) -> ConfiguredCodexHost:
    config: dict[str, Any] = {
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
    if market is not None:
        config["marketplace"] = {"path": str(market), "plugins": ["demo"]}
    settings = {"codex.bin": codex, "codex.apiKeyEnv": API_KEY_ENV}
    options = HostOptions(config=config, model="mock-model", settings=settings)
    return CodexHost().configure(options)


def run(
    configured: ConfiguredCodexHost, workspace: Path, tmp_path: Path, prompt: str
) -> HostResult:
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    request = HostRequest(
        case_id="plugins",
        trial=1,
        prompts=(prompt,),
        workspace=workspace,
        condition="passive",
        cancel=CancelToken(),
        private_root=private,
    )
    return configured.run(request)


def observed(result: HostResult, ident: str) -> tuple[str, Any]:
    (found,) = [o for o in result.observations if o.id == ident]
    return str(found.completeness.value), found.data["invocation"]


def exit_codes(result: HostResult) -> list[Any]:
    (commands,) = [o for o in result.observations if o.id == "sevro.commands"]
    listed = commands.data["commands"]
    assert isinstance(listed, list)
    return [c["exitCode"] for c in listed if isinstance(c, dict)]


def test_a_marketplace_plugin_is_installed_per_trial_and_its_explicit_skill_dispatched(
    codex: str, mock_model: Callable[..., Any], tmp_path: Path
) -> None:
    _, workspace = git_workspace(tmp_path)
    cache = tmp_path / "private" / "codex-home" / "plugins" / "cache" / "sevro-local" / "demo"
    skill = cache / "0.1.0" / "skills" / "greet" / "SKILL.md"
    home = tmp_path / "private" / "codex-home"
    server = mock_model(
        [
            reply(shell(f"cat {skill}")),
            reply(shell(f"cat {home}/config.toml")),
            reply(Message("greeted")),
        ]
    )
    configured = configure(codex, server, marketplace(tmp_path))
    identity = configured.redacted_configuration()
    assert isinstance(identity, dict)
    assert identity["marketplace"]["plugins"][0]["name"] == "demo"  # type: ignore[index]
    assert str(identity["marketplace"]["digest"]).startswith("sha256:")  # type: ignore[index]
    result = run(configured, workspace, tmp_path, "Please use $demo:greet for the team.")
    assert result.error is None and not result.execution_failed, result.error
    first = json.dumps(server.requests[0].json()["input"])
    assert "<name>demo:greet</name>" in first and "GREET-MARKER-7q" in first  # injected
    state, invocation = observed(result, "sevro.codex.explicit-invocation")
    assert state == "complete"
    assert invocation == {
        "token": "$demo:greet",
        "skill": "greet",
        "plugin": "demo",
        "turn": 1,
        "occurrences": 1,
        "dispatched": True,
    }
    cat_cache, cat_config = exit_codes(result)
    assert cat_cache == 0  # the private plugin cache is readable
    assert cat_config != 0  # the rest of CODEX_HOME is not
    assert observed(result, "sevro.codex.repository-invocation") == ("complete", None)
    assert "sevro.codex.explicit-invocation" in configured.capabilities


def test_negative_controls_no_mention_and_a_repeated_token(
    codex: str, mock_model: Callable[..., Any], tmp_path: Path
) -> None:
    for label, prompt in (("none", "Greet the team."), ("twice", "$demo:greet then $demo:greet")):
        root = tmp_path / label
        _, workspace = git_workspace(root)
        server = mock_model([reply(Message("done"))])
        configured = configure(codex, server, marketplace(root))
        result = run(configured, workspace, root, prompt)
        assert result.error is None, result.error
        state, invocation = observed(result, "sevro.codex.explicit-invocation")
        first = json.dumps(server.requests[0].json()["input"])
        if label == "none":
            assert "GREET-MARKER-7q" not in first and invocation is None and state == "complete"
        else:
            assert invocation["occurrences"] == 2 and invocation["dispatched"] is False


def test_repository_invocation_receipt_and_its_linked_skill_negative_control(
    codex: str, mock_model: Callable[..., Any], tmp_path: Path
) -> None:
    seen = {}
    for label in ("plain", "linked"):
        root = tmp_path / label
        _, workspace = git_workspace(root)
        skills = workspace / ".agents" / "skills" / "tidy"
        skills.mkdir(parents=True)
        text = f"---\nname: tidy\ndescription: Tidies.\n---\n{REPO_BODY}\n"
        if label == "plain":
            (skills / "SKILL.md").write_text(text)
        else:
            (root / "elsewhere.md").write_text(text)
            os.symlink(root / "elsewhere.md", skills / "SKILL.md")
        server = mock_model([reply(Message("tidied"))])
        configured = configure(codex, server, None)
        # advertised without a marketplace too (a case source may declare one), its receipt
        # then names no invocation: no plugin is installed
        assert "sevro.codex.explicit-invocation" in configured.capabilities
        result = run(configured, workspace, root, "Use $tidy on the repo, then $HOME stays.")
        assert result.error is None, result.error
        assert observed(result, "sevro.codex.explicit-invocation") == ("complete", None)
        seen[label] = observed(result, "sevro.codex.repository-invocation")
        if label == "plain":
            assert "TIDY-MARKER-3k" in json.dumps(server.requests[0].json()["input"])
    assert seen["plain"] == (
        "complete",
        {"token": "$tidy", "skill": "tidy", "turn": 1, "occurrences": 1, "dispatched": True},
    )
    assert seen["linked"] == ("complete", None)


def test_a_marketplace_changed_after_configuration_fails_the_trial_before_the_model(
    codex: str, mock_model: Callable[..., Any], tmp_path: Path
) -> None:
    _, workspace = git_workspace(tmp_path)
    server = mock_model([reply(Message("never"))])
    market = marketplace(tmp_path)
    configured = configure(codex, server, market)
    (market / "plugins" / "demo" / "skills" / "greet" / "SKILL.md").write_text("changed\n")
    result = run(configured, workspace, tmp_path, "Please use $demo:greet.")
    assert result.execution_failed and result.error is not None
    assert "changed since the run was configured" in result.error
    assert server.requests == []
    state, invocation = observed(result, "sevro.codex.explicit-invocation")
    assert state == "partial" and invocation is None
    again = configure(codex, server, market).redacted_configuration()
    before = configured.redacted_configuration()
    assert isinstance(again, dict) and isinstance(before, dict)
    assert again["marketplace"] != before["marketplace"]  # a changed skill: another identity


def bad_marketplaces(root: Path) -> dict[str, tuple[Any, str]]:
    """Marketplace settings each refused before anything runs, with the reason shown."""
    listed = marketplace(root / "listed", listed=("demo", "extra"))
    linked = marketplace(root / "linked")
    os.symlink("/etc/hostname", linked / "plugins" / "demo" / "skills" / "greet" / "extra.md")
    hooked = marketplace(root / "hooked")
    (hooked / "plugins" / "demo" / ".lsp.json").write_text("{}")
    served = marketplace(root / "served")
    manifest = served / "plugins" / "demo" / ".codex-plugin" / "plugin.json"
    manifest.write_text(json.dumps({"name": "demo", "version": "1", "mcpServers": {}}))
    remote = marketplace(root / "remote")
    document = {"name": "sevro-local", "plugins": [{"name": "demo", "source": "owner/repo"}]}
    (remote / ".agents" / "plugins" / "marketplace.json").write_text(json.dumps(document))
    return {
        "other plugins": ({"path": str(listed), "plugins": ["demo"]}, "exactly the configured"),
        "a link": ({"path": str(linked), "plugins": ["demo"]}, "is a link"),
        "lsp": ({"path": str(hooked), "plugins": ["demo"]}, ".lsp.json"),
        "mcp": ({"path": str(served), "plugins": ["demo"]}, "mcpServers"),
        "remote": ({"path": str(remote), "plugins": ["demo"]}, "local source"),
        "relative": ({"path": "market", "plugins": ["demo"]}, "absolute directory"),
        "missing": ({"path": str(root / "nowhere"), "plugins": ["demo"]}, "missing"),
        "no plugins": ({"path": str(listed), "plugins": []}, "1 to 16"),
        "bad name": ({"path": str(listed), "plugins": ["Demo"]}, "unique name"),
    }


def test_bad_marketplaces_exit_64_with_one_line_before_anything_runs(
    sevro_project: SevroProject, codex: str, mock_model: Callable[..., Any], tmp_path: Path
) -> None:
    server = mock_model([])
    case = sevro_project.case()
    for label, (setting, reason) in bad_marketplaces(tmp_path).items():
        done = run_codex(sevro_project, codex, server, case, config={"marketplace": setting})
        assert done.exit_code == 64, (label, done.stdout, done.stderr)
        assert reason in done.stderr, (label, done.stderr)
        assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, label
        assert not sevro_project.results.exists(), label
    assert server.requests == []
    judge = {**json.loads(host_config(sevro_project, server).read_text())}
    judge["marketplace"] = {"path": str(marketplace(tmp_path / "judge")), "plugins": ["demo"]}
    judge_config = sevro_project.write_json("judge-host.json", judge)
    case = sevro_project.case(
        checks=[{"id": "c1", "grader": "sevro.semantic", "configuration": {"proposition": "ok"}}]
    )
    done = run_codex(
        sevro_project,
        codex,
        server,
        case,
        "--semantic-host",
        "codex",
        "--semantic-host-config",
        str(judge_config),
    )
    assert done.exit_code == 64 and "takes no plugin marketplace" in done.stderr, done.stderr
    assert done.stderr.count("\n") == 1 and server.requests == []


def test_sevro_run_records_the_receipt_and_the_marketplace_in_the_identity(
    sevro_project: SevroProject, codex: str, mock_model: Callable[..., Any], tmp_path: Path
) -> None:
    market = marketplace(tmp_path)
    case = sevro_project.case(prompt="Use $demo:greet please.", fixture=fixture(".agents/skills"))
    setting = {"marketplace": {"path": str(market), "plugins": ["demo"]}}
    # The install rewrites the private config.toml: the passive activation hook must survive it.
    server = mock_model([reply(shell("cat .agents/skills/greet/SKILL.md")), reply(Message("ok"))])
    done = run_codex(sevro_project, codex, server, case, config=setting)
    assert done.exit_code in (0, 1), done.stderr
    document = trial(sevro_project)
    found = observation(document, "sevro.codex.explicit-invocation")
    assert found["completeness"] == "complete"
    assert found["data"]["invocation"]["dispatched"] is True
    assert "GREET-MARKER-7q" in json.dumps(server.requests[0].json()["input"])
    assert "GREET-MARKER-7q" not in json.dumps(document)  # no skill body in the evidence
    found = [(a["skill"], a["kind"]) for a in activations(document)["data"]["activations"]]
    assert activations(document)["completeness"] == "complete" and found == [("greet", "whole")]


def test_a_plugin_codex_refuses_to_install_fails_the_trial_before_the_model(
    codex: str, mock_model: Callable[..., Any], tmp_path: Path
) -> None:
    """The real CLI refuses ``plugin add`` for a plugin its marketplace marks unavailable:
    the trial fails with Codex's reason, the model is never asked, the receipt is partial."""
    _, workspace = git_workspace(tmp_path)
    server = mock_model([reply(Message("never"))])
    configured = configure(codex, server, marketplace(tmp_path, installation="NOT_AVAILABLE"))
    result = run(configured, workspace, tmp_path, "Please use $demo:greet.")
    assert result.execution_failed and result.error is not None
    assert "codex plugin add" in result.error and "not available for install" in result.error
    assert "backtrace" not in result.error.lower()
    assert server.requests == []
    assert observed(result, "sevro.codex.explicit-invocation") == ("partial", None)
