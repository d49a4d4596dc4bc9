"""Seed parity of the Claude host through the real Claude Code CLI against the mock model.

``Write`` is offered only with ``--claude-allow-write``; a fixture's ``.claude/settings.json``
fails the trial before Claude Code starts unless ``--claude-project-settings`` (and is then
really loaded, with a ``sevro.claude.repository-invocation`` receipt); a follow-up records
``sevro.claude.continuation``. Each with its negative control.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sevro_core.models import CancelToken, HostRequest, HostResult
from sevro_core.plugin.protocols import HostOptions
from sevro_core.testing import SevroProject
from sevro_core.testing.mockmodel import Message, MockModelServer, ToolCall, reply
from sevro_hosts_claude.host import ClaudeHost
from sevro_hosts_claude.testing import require_claude
from tests.hosts_claude.helpers import API_KEY, API_KEY_ENV, PROTOCOLS, bash, run_claude
from tests.hosts_codex.helpers import observation, trial

pytestmark = pytest.mark.slow

READY = {"id": "ready", "grader": "sevro.regex", "configuration": {"pattern": "^ready$"}}
SETTINGS = {".claude/settings.json": json.dumps({"env": {"PROJECT_MARK": "loaded-q7"}})}
GREET = "---\nname: greet\ndescription: Greets people.\n---\nSay hello warmly.\n"


@pytest.fixture
def claude() -> str:
    return require_claude()


@pytest.fixture
def model(mock_model: Callable[..., Any]) -> Callable[..., MockModelServer]:
    return lambda replies: mock_model(replies, protocols=PROTOCOLS)


def latest_trial(project: SevroProject) -> dict[str, Any]:
    """The trial document of the project's latest run (a test here may run twice)."""
    newest = max(
        project.results.glob("*/cases/example/trial-1.json"), key=lambda p: p.stat().st_mtime
    )
    document: dict[str, Any] = json.loads(newest.read_text())
    return document


def offered_tools(server: MockModelServer) -> list[str]:
    tools = server.requests[0].json()["tools"]
    return sorted(t["name"] for t in tools if t["name"] != "DeferredToolPlaceholder")


def test_write_is_offered_only_with_claude_allow_write(
    sevro_project: SevroProject, claude: str, model: Callable[..., MockModelServer]
) -> None:
    case = sevro_project.case(checks=[READY])
    default = model([reply(Message("ready"))])
    result = run_claude(sevro_project, claude, default, case)
    assert result.exit_code == 0, result.stdout + result.stderr
    assert offered_tools(default) == ["Agent", "Bash", "Edit", "Read", "Skill"]
    document = trial(sevro_project)
    turns = observation(document, "sevro.claude.turns")["data"]["turns"]
    assert "Write" not in turns[0]["tools"]
    asked = model([reply(Message("ready"))])
    result = run_claude(sevro_project, claude, asked, case, "--claude-allow-write")
    assert result.exit_code == 0, result.stdout + result.stderr
    assert offered_tools(asked) == ["Agent", "Bash", "Edit", "Read", "Skill", "Write"]


def test_project_settings_are_refused_without_the_switch_and_loaded_with_it(
    sevro_project: SevroProject, claude: str, model: Callable[..., MockModelServer]
) -> None:
    files = {**SETTINGS, ".claude/skills/greet/SKILL.md": GREET}
    case = sevro_project.case(prompt="/greet the team", fixture={"files": files}, checks=[READY])
    refused = model([reply(bash("echo mark=$PROJECT_MARK")), reply(Message("ready"))])
    result = run_claude(sevro_project, claude, refused, case)
    assert result.exit_code != 0
    document = latest_trial(sevro_project)
    assert document["evidence"]["execution"]["status"] == "failed"
    assert "--claude-project-settings" in document["evidence"]["execution"]["message"]
    assert refused.requests == []  # Claude Code never started
    ids = [o["id"] for o in document["evidence"]["observations"]]
    assert "sevro.claude.repository-invocation" not in ids

    loaded = model([reply(bash("echo mark=$PROJECT_MARK")), reply(Message("ready"))])
    result = run_claude(sevro_project, claude, loaded, case, "--claude-project-settings")
    assert result.exit_code == 0, result.stdout + result.stderr
    document = latest_trial(sevro_project)
    (command,) = observation(document, "sevro.commands")["data"]["commands"]
    assert command["exitCode"] == 0
    assert "mark=loaded-q7" in json.dumps(loaded.requests[1].json())  # the env was applied
    first = json.dumps(loaded.requests[0].json())
    assert "<command-name>/greet</command-name>" in first and "Say hello warmly." in first
    receipt = observation(document, "sevro.claude.repository-invocation")
    assert receipt["completeness"] == "complete"
    assert receipt["data"] == {
        "projectSettings": True,
        "settingsFile": True,
        "invocation": {"skill": "greet", "listed": True},
    }


def test_a_repository_invocation_receipt_names_no_skill_for_a_plain_prompt(
    sevro_project: SevroProject, claude: str, model: Callable[..., MockModelServer]
) -> None:
    """Negative control: a prompt opening with a name that is no repository skill."""
    case = sevro_project.case(
        prompt="/nothing-here please", fixture={"files": {"a.txt": "a\n"}}, checks=[READY]
    )
    server = model([reply(Message("ready"))])
    result = run_claude(sevro_project, claude, server, case, "--claude-project-settings")
    assert result.exit_code == 0, result.stdout + result.stderr
    receipt = observation(trial(sevro_project), "sevro.claude.repository-invocation")
    assert receipt["data"] == {"projectSettings": True, "settingsFile": False, "invocation": None}


def test_claude_code_refuses_the_candidates_writes_to_project_settings(
    sevro_project: SevroProject, claude: str, model: Callable[..., MockModelServer]
) -> None:
    """Why no check after a turn is needed: the Bash sandbox denies the write and ``dontAsk``
    denies the Write tool, so the follow-up starts without project settings."""
    shell = bash("mkdir -p .claude && echo '{}' > .claude/settings.json")
    write = ToolCall("Write", {"file_path": ".claude/settings.json", "content": "{}\n"})
    replies = [reply(shell), reply(write), reply(Message("one")), reply(Message("ready"))]
    server = model(replies)
    case = sevro_project.case(prompt="One.", followUpPrompt="Two.", checks=[READY])
    result = run_claude(sevro_project, claude, server, case, "--claude-allow-write")
    assert result.exit_code == 0, result.stdout + result.stderr
    document = trial(sevro_project)
    (command,) = observation(document, "sevro.commands")["data"]["commands"]
    assert command["exitCode"] == 1  # "Permission denied" from Claude Code's sandbox
    calls = observation(document, "sevro.tool-calls")["data"]["calls"]
    assert [(c["tool"], c["status"]) for c in calls] == [("Bash", "failed"), ("Write", "failed")]
    turns = observation(document, "sevro.claude.turns")["data"]["turns"]
    assert turns[0]["permissionDenials"] == 1


def test_settings_made_between_turns_fail_the_follow_up_before_it_starts(
    claude: str,
    model: Callable[..., MockModelServer],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(API_KEY_ENV, API_KEY)
    server = model([reply(Message("one")), reply(Message("two"))])

    def settled(number: int) -> None:
        (tmp_path / "ws" / ".claude").mkdir()
        (tmp_path / "ws" / ".claude" / "settings.json").write_text("{}\n")

    result = run_direct(claude, server, tmp_path, settled)
    assert result.execution_failed and result.error is not None
    assert "before turn 2" in result.error and "--claude-project-settings" in result.error
    assert len(server.requests) == 1  # the follow-up never reached the model


def run_direct(
    claude: str, server: MockModelServer, tmp_path: Path, settled: Callable[[int], None]
) -> HostResult:
    config = {
        "format": "sevro.claude-host.v1",
        "baseUrl": server.origin,
        "turnTimeoutSeconds": 60,
        "maxRetries": 0,
    }
    settings = {"claude.bin": claude, "claude.apiKeyEnv": API_KEY_ENV}
    configured = ClaudeHost().configure(
        HostOptions(config=config, model="mock-model", settings=settings)
    )
    workspace, private = tmp_path / "ws", tmp_path / "private"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("first\n")
    private.mkdir(mode=0o700)
    request = HostRequest(
        case_id="continued",
        trial=1,
        prompts=("One.", "Two."),
        workspace=workspace,
        condition="passive",
        cancel=CancelToken(),
        private_root=private,
        turn_settled=lambda number, _reply: settled(number),
    )
    return configured.run(request)


@pytest.mark.parametrize("changed", [False, True])
def test_continuation_records_the_session_and_a_workspace_changed_between_turns(
    claude: str,
    model: Callable[..., MockModelServer],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    changed: bool,
) -> None:
    monkeypatch.setenv(API_KEY_ENV, API_KEY)
    server = model([reply(Message("one")), reply(Message("two"))])

    def settled(number: int) -> None:
        if changed and number == 1:  # something other than the candidate touched it
            (tmp_path / "ws" / "notes.txt").write_text("edited between turns\n")

    result = run_direct(claude, server, tmp_path, settled)
    assert result.error is None and result.final_message == "two", result.error
    (found,) = [o for o in result.observations if o.id == "sevro.claude.continuation"]
    assert found.completeness == "complete"
    turns = next(o for o in result.observations if o.id == "sevro.claude.turns").data["turns"]
    assert found.data == {
        "sessionId": turns[0]["sessionId"],
        "followUps": [{"turn": 2, "resumedSession": True, "workspaceUnchanged": not changed}],
    }
    assert "notes.txt" not in json.dumps(found.data)  # no file names kept


def test_no_continuation_receipt_for_a_single_prompt(
    sevro_project: SevroProject, claude: str, model: Callable[..., MockModelServer]
) -> None:
    server = model([reply(Message("ready"))])
    case = sevro_project.case(checks=[READY])
    assert run_claude(sevro_project, claude, server, case).exit_code == 0
    ids = [o["id"] for o in trial(sevro_project)["evidence"]["observations"]]
    assert "sevro.claude.continuation" not in ids
    assert "sevro.claude.repository-invocation" not in ids


PLUGIN = {
    "plugins/acme/.claude-plugin/plugin.json": json.dumps({"name": "acme", "version": "1.0.0"}),
    "plugins/acme/skills/tidy/SKILL.md": "---\nname: tidy\ndescription: Tidies.\n---\nTidy k3.\n",
}


def plugin_ids(document: dict[str, Any]) -> set[str]:
    return {o["id"] for o in document["evidence"]["observations"]} & {
        "sevro.claude.plugin-dirs",
        "sevro.claude.explicit-invocation",
    }


@pytest.mark.parametrize("declared", [True, False])
def test_a_declared_plugin_directory_is_loaded_and_its_skill_invoked_explicitly(
    sevro_project: SevroProject,
    claude: str,
    model: Callable[..., MockModelServer],
    declared: bool,
) -> None:
    """Negative control: the same fixture without ``pluginDirs`` loads no plugin."""
    server = model([reply(Message("ready"))])
    case = sevro_project.case(prompt="/acme:tidy now", fixture={"files": PLUGIN}, checks=[READY])
    config = {"pluginDirs": ["plugins/acme"]} if declared else None
    result = run_claude(sevro_project, claude, server, case, config=config)
    assert result.exit_code == 0, result.stdout + result.stderr
    first = json.dumps(server.requests[0].json())
    assert ("Tidy k3." in first) is declared  # Claude Code expanded /acme:tidy
    assert ("<command-name>/acme:tidy</command-name>" in first) is declared
    document = trial(sevro_project)
    if not declared:  # the receipts are always there (advertised), naming no plugin
        assert plugin_ids(document) == {
            "sevro.claude.plugin-dirs",
            "sevro.claude.explicit-invocation",
        }
        assert observation(document, "sevro.claude.plugin-dirs")["data"] == {"plugins": []}
        invoked = observation(document, "sevro.claude.explicit-invocation")
        assert invoked["data"] == {"invocation": None}
        return
    dirs = observation(document, "sevro.claude.plugin-dirs")
    assert dirs["completeness"] == "complete"
    assert dirs["data"] == {
        "plugins": [{"dir": "plugins/acme", "name": "acme", "loaded": True, "skills": ["tidy"]}]
    }
    invoked = observation(document, "sevro.claude.explicit-invocation")
    assert invoked["data"] == {"invocation": {"plugin": "acme", "skill": "tidy", "listed": True}}


def test_no_explicit_invocation_for_a_skill_the_plugin_does_not_have(
    sevro_project: SevroProject, claude: str, model: Callable[..., MockModelServer]
) -> None:
    server = model([reply(Message("ready"))])
    case = sevro_project.case(prompt="/acme:other now", fixture={"files": PLUGIN}, checks=[READY])
    config = {"pluginDirs": ["plugins/acme"]}
    assert run_claude(sevro_project, claude, server, case, config=config).exit_code == 0
    invoked = observation(trial(sevro_project), "sevro.claude.explicit-invocation")
    assert invoked["data"] == {"invocation": None}


@pytest.mark.parametrize(
    ("dirs", "message"),
    [
        (["../outside"], "/pluginDirs/0"),
        (["plugins", "plugins/acme"], "overlaps 'plugins'"),
        ([], "/pluginDirs"),
    ],
)
def test_malformed_plugin_dirs_exit_64_before_anything_runs(
    sevro_project: SevroProject,
    claude: str,
    model: Callable[..., MockModelServer],
    dirs: list[str],
    message: str,
) -> None:
    server = model([reply(Message("ready"))])
    case = sevro_project.case(fixture={"files": PLUGIN}, checks=[READY])
    result = run_claude(sevro_project, claude, server, case, config={"pluginDirs": dirs})
    assert result.exit_code == 64 and message in result.stderr, result.stderr
    assert "Traceback" not in result.stderr and server.requests == []


def test_a_plugin_directory_without_a_manifest_fails_before_claude_code_starts(
    sevro_project: SevroProject, claude: str, model: Callable[..., MockModelServer]
) -> None:
    server = model([reply(Message("ready"))])
    files = {"plugins/acme/skills/tidy/SKILL.md": PLUGIN["plugins/acme/skills/tidy/SKILL.md"]}
    case = sevro_project.case(fixture={"files": files}, checks=[READY])
    result = run_claude(
        sevro_project, claude, server, case, config={"pluginDirs": ["plugins/acme"]}
    )
    assert result.exit_code != 0
    document = trial(sevro_project)
    assert "has no .claude-plugin/plugin.json" in document["evidence"]["execution"]["message"]
    assert server.requests == []
    assert observation(document, "sevro.claude.plugin-dirs")["completeness"] == "partial"
