"""The Codex host as a judge: the real ``codex`` against the mock Responses server.

A judge's Codex is offered no tool at all (the request the mock model receives lists none),
runs with the restriction flags, a read-only workspace and its own ``CODEX_HOME``, and hands
back the model's reply verbatim, good or bad, with its usage. Negative control: the same host
configured as the candidate offers its tools.
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sevro_core.api import ConfigurationError
from sevro_core.models import CancelToken, HostRequest, HostResult
from sevro_core.plugin.protocols import HostOptions
from sevro_core.testing.mockmodel import Message, MockModelServer, reply
from sevro_hosts_codex.host import CodexHost, ConfiguredCodexHost
from sevro_hosts_codex.testing import require_codex
from tests.hosts_codex.helpers import (
    API_KEY,
    API_KEY_ENV,
    INJECTION,
    JUDGE_REPLIES,
    PRICES,
    PROVIDER_KEY_ENV,
    judge_prompt,
)

pytestmark = pytest.mark.slow


@pytest.fixture
def codex(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(API_KEY_ENV, API_KEY)
    return require_codex()


def configure(codex: str, base_url: str, role: str) -> ConfiguredCodexHost:
    config = {
        "format": "sevro.codex-host.v1",
        "modelProvider": {
            "id": "mock",
            "baseUrl": base_url,
            "envKey": PROVIDER_KEY_ENV,
            "requestMaxRetries": 0,
            "streamMaxRetries": 0,
        },
        "turnTimeoutSeconds": 60,
        "prices": PRICES,
    }
    settings = {"codex.bin": codex, "codex.apiKeyEnv": API_KEY_ENV}
    options = HostOptions(config=config, model="mock-model", settings=settings, role=role)
    configured = CodexHost().configure(options)
    assert isinstance(configured, ConfiguredCodexHost)
    return configured


def request(tmp_path: Path, role: str, *prompts: str, **extra: Any) -> HostRequest:
    workspace, private = tmp_path / "judge-workspace", tmp_path / "judge-private"
    workspace.mkdir(exist_ok=True)
    private.mkdir(mode=0o700, exist_ok=True)
    return HostRequest(
        case_id="judged",
        trial=1,
        prompts=prompts or (judge_prompt(),),
        workspace=workspace,
        condition="passive",
        cancel=CancelToken(),
        private_root=private,
        role=role,
        **extra,
    )


def judge(codex: str, server: MockModelServer, tmp_path: Path, role: str) -> HostResult:
    return configure(codex, server.base_url, role).run(request(tmp_path, role))


@pytest.mark.parametrize("kind", sorted(JUDGE_REPLIES))
def test_a_judge_is_offered_no_tool_and_its_reply_comes_back_verbatim(
    codex: str, mock_model: Callable[..., Any], tmp_path: Path, kind: str
) -> None:
    text = JUDGE_REPLIES[kind]
    server = mock_model([reply(Message(text))])
    result = judge(codex, server, tmp_path, "semantic")
    assert result.error is None and result.complete, result.error
    assert result.final_message == text  # malformed, wrong id, extra key, oversized alike
    (sent,) = server.requests
    assert sent.tools == ()  # nothing to run, read, search, view or ask with
    assert INJECTION in str(sent.json()["input"])  # the prompt goes in as it is, as data
    assert result.usage.complete and result.usage.input_tokens == 100
    assert result.usage.output_tokens == 10 and result.usage.cost_usd == 0.00025
    assert list((tmp_path / "judge-workspace").iterdir()) == []


def test_negative_control_the_candidate_is_offered_its_tools(
    codex: str, mock_model: Callable[..., Any], tmp_path: Path
) -> None:
    server = mock_model([reply(Message(JUDGE_REPLIES["correct"]))])
    result = judge(codex, server, tmp_path, "candidate")
    assert result.complete, result.error
    tools = server.requests[0].tools
    assert tools is not None and "exec_command" in tools and "web_search" in tools


def test_the_judge_restrictions_are_in_its_argv_config_and_redacted_configuration(
    codex: str, tmp_path: Path
) -> None:
    host = configure(codex, "http://127.0.0.1:9/v1", "advisory")
    fixture_bin = tmp_path / "fixture-bin"
    fixture_bin.mkdir()
    asked = request(
        tmp_path, "advisory", environment={"FIXTURE_TOKEN": "f1"}, fixture_bin_dir=fixture_bin
    )
    trial = host.trial(asked)
    trial.prepare()
    argv = trial.argv(1)
    for feature in ("shell_tool", "view_image", "multi_agent", "goals", "apps", "plugins"):
        assert argv[argv.index(feature) - 1] == "--disable"
    no_ask = "tools.experimental_request_user_input.enabled=false"
    for override in ('web_search="disabled"', no_ask, "skills.include_instructions=false"):
        assert argv[argv.index(override) - 1] == "-c"
    assert "--ephemeral" in argv and argv[-3:] == ["-C", str(asked.workspace), "-"]
    codex_home = Path(trial.env["CODEX_HOME"])
    assert codex_home.parent == asked.private_root
    config = tomllib.loads((codex_home / "config.toml").read_text())
    profile = config["permissions"]["sevro"]
    assert profile["filesystem"][":workspace_roots"] == {".": "read"}
    assert profile["network"] == {"enabled": False}
    assert config["approval_policy"] == "never" and "mcp_servers" not in config
    assert "FIXTURE_TOKEN" not in trial.env and str(fixture_bin) not in trial.env["PATH"]
    assert "FIXTURE_TOKEN" not in config["shell_environment_policy"]["set"]
    redacted = host.redacted_configuration()
    assert isinstance(redacted, dict) and redacted["role"] == "advisory"
    assert redacted["judge"]["tools"] == "none"  # type: ignore[index,call-overload]
    assert redacted["sandbox"]["workspace"] == "read"  # type: ignore[index,call-overload]


def test_negative_control_the_candidate_keeps_its_tools_writable_workspace_and_identity(
    codex: str, tmp_path: Path
) -> None:
    host = configure(codex, "http://127.0.0.1:9/v1", "candidate")
    trial = host.trial(request(tmp_path, "candidate", "Do the task."))
    trial.prepare()
    assert "--disable" not in trial.argv(1)
    config = tomllib.loads((Path(trial.env["CODEX_HOME"]) / "config.toml").read_text())
    assert config["permissions"]["sevro"]["filesystem"][":workspace_roots"] == {".": "write"}
    redacted = host.redacted_configuration()
    assert isinstance(redacted, dict) and "role" not in redacted and "judge" not in redacted


@pytest.mark.parametrize(
    ("configured", "asked", "prompts", "reason"),
    [
        ("candidate", "semantic", 1, "configured for role 'candidate' was asked to run as"),
        ("semantic", "candidate", 1, "configured for role 'semantic' was asked to run as"),
        ("semantic", "semantic", 2, "the semantic judge answers one prompt, not 2"),
    ],
)
def test_a_request_the_configuration_cannot_honour_fails_before_codex_starts(
    codex: str,
    mock_model: Callable[..., Any],
    tmp_path: Path,
    configured: str,
    asked: str,
    prompts: int,
    reason: str,
) -> None:
    server = mock_model([reply(Message("pass"))])
    host = configure(codex, server.base_url, configured)
    result = host.run(request(tmp_path, asked, *(["Judge."] * prompts)))
    assert result.execution_failed and not result.complete and result.final_message is None
    assert result.error is not None and reason in result.error
    assert server.requests == []


def test_an_unknown_role_is_refused_at_configure(codex: str) -> None:
    with pytest.raises(ConfigurationError, match="unknown role 'referee'"):
        configure(codex, "http://127.0.0.1:9/v1", "referee")
