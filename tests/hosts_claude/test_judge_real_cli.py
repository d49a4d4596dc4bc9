"""The Claude host as a judge: the real ``claude`` against the mock Messages server.

A judge's Claude Code is offered no tool at all (the request the mock model receives lists
none; its ``system/init`` lists no tool, MCP server, skill or command), runs with the
restriction flags in a sandbox whose workspace is read-only, with its own configuration
directory, and hands back the model's reply verbatim, good or bad, with its usage. Negative
control: the same host configured as the candidate offers its tools.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sevro_core.api import ConfigurationError
from sevro_core.models import CancelToken, HostRequest, HostResult
from sevro_core.plugin.protocols import HostOptions
from sevro_core.prices import Price, PriceTable
from sevro_core.testing.mockmodel import Message, MockModelServer, reply
from sevro_hosts_claude.configuration import SANDBOX_TMP
from sevro_hosts_claude.host import ClaudeHost, ConfiguredClaudeHost
from sevro_hosts_claude.testing import require_claude
from tests.hosts_claude.helpers import API_KEY, API_KEY_ENV, PROTOCOLS
from tests.hosts_codex.helpers import INJECTION, JUDGE_REPLIES, judge_prompt

pytestmark = pytest.mark.slow


@pytest.fixture
def claude(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(API_KEY_ENV, API_KEY)
    return require_claude()


@pytest.fixture
def model(mock_model: Callable[..., Any]) -> Callable[..., MockModelServer]:
    return lambda replies: mock_model(replies, protocols=PROTOCOLS)


def configure(
    claude: str, origin: str, role: str, prices: PriceTable | None = None
) -> ConfiguredClaudeHost:
    config = {
        "format": "sevro.claude-host.v1",
        "baseUrl": origin,
        "turnTimeoutSeconds": 60,
        "maxRetries": 0,
    }
    settings = {"claude.bin": claude, "claude.apiKeyEnv": API_KEY_ENV}
    options = HostOptions(
        config=config, model="mock-model", settings=settings, role=role, prices=prices
    )
    configured = ClaudeHost().configure(options)
    assert isinstance(configured, ConfiguredClaudeHost)
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


def judge(claude: str, server: MockModelServer, tmp_path: Path, role: str) -> HostResult:
    return configure(claude, server.origin, role).run(request(tmp_path, role))


def triples(argv: list[str]) -> list[list[str]]:
    return [argv[i : i + 3] for i in range(len(argv))]


def init_event(result: HostResult) -> dict[str, Any]:
    (events,) = [a for a in result.artifacts if a.id == "sevro.claude.events"]
    first = json.loads(events.content.splitlines()[0])
    assert first["type"] == "system" and first["subtype"] == "init"
    return dict(first)


@pytest.mark.parametrize("kind", sorted(JUDGE_REPLIES))
def test_a_judge_is_offered_no_tool_and_its_reply_comes_back_verbatim(
    claude: str, model: Callable[..., MockModelServer], tmp_path: Path, kind: str
) -> None:
    text = JUDGE_REPLIES[kind]
    server = model([reply(Message(text))])
    result = judge(claude, server, tmp_path, "semantic")
    assert result.error is None and result.complete, result.error
    assert result.final_message == text  # malformed, wrong id, extra key, oversized alike
    (sent,) = [r for r in server.requests if r not in server.unexpected]
    assert sent.tools == ()  # nothing to run, read, edit, launch or delegate with
    assert INJECTION in json.dumps(sent.json()["messages"])  # the prompt goes in as data
    init = init_event(result)
    assert init["tools"] == [] and init["mcp_servers"] == []
    assert init["skills"] == [] and init["slash_commands"] == []
    assert init["permissionMode"] == "dontAsk"
    assert result.usage.complete and result.usage.input_tokens == 100
    assert result.usage.output_tokens == 10 and result.usage.reported_cost_usd is not None
    assert list((tmp_path / "judge-workspace").iterdir()) == []


def test_a_judge_call_is_priced_from_the_runs_table(
    claude: str, model: Callable[..., MockModelServer], tmp_path: Path
) -> None:
    server = model([reply(Message(JUDGE_REPLIES[sorted(JUDGE_REPLIES)[0]]))])
    price = Price(input=1, cached_input=0.5, output=4, reasoning=4, source="t")
    table = PriceTable("t", "2026-12-05", {"mock-model": price})
    result = configure(claude, server.origin, "semantic", table).run(request(tmp_path, "semantic"))
    assert result.usage.complete and result.usage.reported_cost_usd is not None
    assert result.usage.cost_usd == pytest.approx((80 * 1 + 20 * 0.5 + 10 * 4) / 1e6)


def test_negative_control_the_candidate_is_offered_its_tools(
    claude: str, model: Callable[..., MockModelServer], tmp_path: Path
) -> None:
    server = model([reply(Message(JUDGE_REPLIES["correct"]))])
    result = judge(claude, server, tmp_path, "candidate")
    assert result.complete, result.error
    tools = server.requests[0].tools
    assert tools is not None and {"Bash", "Read", "Edit", "Skill"} <= set(tools)
    assert "Bash" in init_event(result)["tools"]


def test_the_judge_restrictions_are_in_its_argv_settings_and_redacted_configuration(
    claude: str, tmp_path: Path
) -> None:
    host = configure(claude, "http://127.0.0.1:9", "comparator")
    fixture_bin = tmp_path / "fixture-bin"
    fixture_bin.mkdir()
    asked = request(
        tmp_path, "comparator", environment={"FIXTURE_TOKEN": "f1"}, fixture_bin_dir=fixture_bin
    )
    trial = host.trial(asked)
    trial.prepare()
    argv = trial.argv(1)
    claude_argv = argv[argv.index("-p") - 1 :]
    assert claude_argv[claude_argv.index("--tools") + 1] == ""
    assert claude_argv[claude_argv.index("--setting-sources") + 1] == ""
    assert claude_argv[claude_argv.index("--mcp-config") + 1] == '{"mcpServers":{}}'
    for flag in ("--safe-mode", "--disable-slash-commands", "--strict-mcp-config"):
        assert flag in claude_argv
    assert "--allowedTools" not in claude_argv and "--resume" not in claude_argv
    workspace = str(asked.workspace)
    wrapper = argv[: argv.index("-p") - 1]
    assert ["--ro-bind", workspace, workspace] in triples(wrapper)
    assert ["--bind", workspace, workspace] not in triples(wrapper)
    assert str(fixture_bin) not in wrapper and str(fixture_bin) not in trial.env["PATH"]
    assert "FIXTURE_TOKEN" not in trial.env
    config_dir = Path(trial.env["CLAUDE_CONFIG_DIR"])
    assert config_dir.parent == asked.private_root
    settings = json.loads((config_dir / "sevro-settings.json").read_text())
    assert settings["permissions"]["allow"] == []
    # Its only writable directory is its private temp directory, seen at the short path.
    assert settings["sandbox"]["filesystem"]["allowWrite"] == [str(SANDBOX_TMP)]
    private_tmp = str(asked.private_root / "tmp")
    assert ["--bind", private_tmp, str(SANDBOX_TMP)] in triples(wrapper)
    assert trial.env["TMPDIR"] == str(SANDBOX_TMP)
    redacted = host.redacted_configuration()
    assert isinstance(redacted, dict) and redacted["role"] == "comparator"
    assert redacted["tools"] == [] and redacted["judge"]["tools"] == "none"  # type: ignore[index,call-overload]


def test_negative_control_the_candidate_keeps_its_tools_writable_workspace_and_identity(
    claude: str, tmp_path: Path
) -> None:
    host = configure(claude, "http://127.0.0.1:9", "candidate")
    asked = request(tmp_path, "candidate", "Do the task.")
    trial = host.trial(asked)
    trial.prepare()
    argv = trial.argv(1)
    assert "--safe-mode" not in argv and argv[argv.index("--tools") + 1] != ""
    workspace = str(asked.workspace)
    assert ["--bind", workspace, workspace] in triples(argv)
    redacted = host.redacted_configuration()
    assert isinstance(redacted, dict) and "role" not in redacted and "judge" not in redacted


@pytest.mark.parametrize(
    ("configured", "asked", "prompts", "reason"),
    [
        ("candidate", "advisory", 1, "configured for role 'candidate' was asked to run as"),
        ("advisory", "candidate", 1, "configured for role 'advisory' was asked to run as"),
        ("advisory", "advisory", 2, "the advisory judge answers one prompt, not 2"),
    ],
)
def test_a_request_the_configuration_cannot_honour_fails_before_claude_starts(
    claude: str,
    model: Callable[..., MockModelServer],
    tmp_path: Path,
    configured: str,
    asked: str,
    prompts: int,
    reason: str,
) -> None:
    server = model([reply(Message("pass"))])
    host = configure(claude, server.origin, configured)
    result = host.run(request(tmp_path, asked, *(["Judge."] * prompts)))
    assert result.execution_failed and not result.complete and result.final_message is None
    assert result.error is not None and reason in result.error
    assert server.requests == []


def test_an_unknown_role_is_refused_at_configure(claude: str) -> None:
    with pytest.raises(ConfigurationError, match="unknown role 'referee'"):
        configure(claude, "http://127.0.0.1:9", "referee")
