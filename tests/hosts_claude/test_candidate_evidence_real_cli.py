"""A real Claude Code run's transcripts reach checks (SEVRO_CANDIDATE_TRANSCRIPTS), and its
Bash sandbox lets the candidate write exactly its declared artifact directories: a check reads
what it wrote there, while the rest of its HOME and its config directory stay read-only."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sevro_core.isolation.runtime import load_runtime
from sevro_core.plugin.protocols import HostOptions
from sevro_core.testing import SevroProject
from sevro_core.testing.mockmodel import Message, reply
from sevro_hosts_claude.configuration import SANDBOX_TMP
from sevro_hosts_claude.host import ClaudeHost, ClaudeTrial
from sevro_hosts_claude.testing import require_claude
from tests.hosts_claude.helpers import API_KEY, API_KEY_ENV, PROTOCOLS, bash, run_claude
from tests.hosts_claude.test_judge_real_cli import request
from tests.hosts_codex.helpers import observation, trial

pytestmark = pytest.mark.slow

TRANSCRIPTS = (
    'cd "$SEVRO_CANDIDATE_TRANSCRIPTS" && grep -q \'"capture": "complete"\' index.json'
    ' && grep -q \'"path": "claude/sevro.claude.events"\' index.json'
    ' && grep -q "$(sha256sum claude/sevro.claude.events | cut -d" " -f1)" index.json'
    " && test -s claude/sevro.claude.events"
)
WRITE = 'mkdir -p "$HOME/.darrow/reviews" && echo passed > "$HOME/.darrow/reviews/r.md"'
ELSEWHERE = 'echo x > "$HOME/other.txt"'
CONFIG = 'echo x > "$CLAUDE_CONFIG_DIR/planted"'
CONFIG_AFTER = 'ls -A "$CLAUDE_CONFIG_DIR"; test ! -e "$CLAUDE_CONFIG_DIR/planted"'
ARTIFACT = 'grep -qx passed "$SEVRO_CANDIDATE_ARTIFACT_REVIEWS/r.md"'
NOT_ELSEWHERE = 'test ! -e "$HOME/other.txt"'  # a check's HOME is its own: see the command


def check(check_id: str, run: str) -> dict[str, Any]:
    return {"id": check_id, "grader": "sevro.shell", "configuration": {"run": run}}


def runtime_file(tmp_path: Path) -> Path:
    config = tmp_path / "runtime.json"
    directories = [{"name": "reviews", "path": ".darrow/reviews"}]
    document = {"format": "sevro.runtime.v1", "runtime": {"artifactDirectories": directories}}
    config.write_text(json.dumps(document))
    return config


def shown(server: Any) -> list[str]:
    """What the model was shown of each command, in order."""
    return [
        json.dumps(block.get("content"))
        for message in server.requests[-1].json()["messages"]
        if isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    ]


@pytest.mark.parametrize("declared", [False, True])
def test_a_real_claude_candidate_writes_only_its_declared_artifact_directory(
    sevro_project: SevroProject,
    mock_model: Callable[..., Any],
    tmp_path: Path,
    declared: bool,
) -> None:
    claude = require_claude()
    commands = [WRITE, ELSEWHERE, CONFIG, CONFIG_AFTER]
    replies = [reply(bash(command)) for command in commands]
    server = mock_model([*replies, reply(Message("ready"))], protocols=PROTOCOLS)
    workspaces = tmp_path / "workspaces"
    workspaces.mkdir()
    args: list[str] = ["--workspace-root", str(workspaces)]
    checks = [check("transcripts", TRANSCRIPTS)]
    if declared:
        args += ["--runtime-config-file", str(runtime_file(tmp_path))]
        checks.append(check("artifact", ARTIFACT))
    case = sevro_project.case(checks=checks)
    done = run_claude(sevro_project, claude, server, case, *args)
    document = trial(sevro_project)
    results = shown(server)
    ran = observation(document, "sevro.commands")["data"]["commands"]
    assert [c["command"] for c in ran] == commands, ran
    write, elsewhere, _, config = ran
    # The rest of HOME stays read-only (the sandbox ran: it is the filesystem that refused).
    assert elsewhere["exitCode"] != 0 and "Read-only file system" in results[1], results
    # The config directory is behind an empty scratch mount: a write there is gone by the next
    # command, and nothing of the real one (settings, API key) is visible.
    assert config["exitCode"] == 0 and "no output" in results[3], results
    found = {c["id"]: c for c in document["evidence"]["checks"]}
    assert found["transcripts"]["status"] == "passed", found
    assert done.exit_code == 0, done.stdout + done.stderr + json.dumps(found)
    if declared:
        assert write["exitCode"] == 0, (write, results[0])
        assert found["artifact"]["status"] == "passed", found
    else:
        assert write["exitCode"] != 0 and "Read-only file system" in results[0], results


def prepared(claude: str, tmp_path: Path, role: str) -> tuple[Path, dict[str, Any], list[str]]:
    """A trial of ``role`` prepared with the runtime file: its home, settings and argv."""
    tmp_path.mkdir()
    policy = load_runtime(tmp_path, runtime_file(tmp_path), ClaudeHost.credential_locations)
    assert policy is not None
    config = {"format": "sevro.claude-host.v1", "baseUrl": "http://127.0.0.1:9"}
    settings = {"claude.bin": claude, "claude.apiKeyEnv": API_KEY_ENV}
    options = HostOptions(
        config=config, settings=settings, role=role, runtime=policy.host_runtime()
    )
    asked = request(tmp_path, role, *(["Do the task."] if role == "candidate" else []))
    trial = ClaudeHost().configure(options).trial(asked)
    trial.prepare()
    assert isinstance(trial, ClaudeTrial)
    written = json.loads(trial.layout.settings_file.read_text())
    return trial.layout.home, written, trial.argv(1)


def test_only_the_candidate_is_granted_exactly_its_artifact_directories(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(API_KEY_ENV, API_KEY)
    claude = require_claude()
    home, settings, argv = prepared(claude, tmp_path / "candidate", "candidate")
    reviews = home / ".darrow" / "reviews"
    allowed = settings["sandbox"]["filesystem"]["allowWrite"]
    assert str(reviews) in allowed
    # Exactly the subtree: not the home, its parent, the config directory or the root above.
    for broader in (home, home / ".darrow", home.parent, home.parent / "claude-config"):
        assert str(broader) not in allowed, broader
    # Claude Code's sandbox skips a write grant that does not exist: the leaf is made, empty.
    assert reviews.is_dir() and not reviews.is_symlink() and list(reviews.iterdir()) == []
    assert "--safe-mode" not in argv
    # Negative control: a judge (same runtime value) is granted none and gets nothing made.
    judge_home, judge_settings, _ = prepared(claude, tmp_path / "judge", "comparator")
    assert judge_settings["sandbox"]["filesystem"]["allowWrite"] == [str(SANDBOX_TMP)]
    assert not (judge_home / ".darrow").exists()


def test_an_artifact_directory_the_claude_candidate_left_alone_is_empty_not_evidence(
    sevro_project: SevroProject,
    mock_model: Callable[..., Any],
    tmp_path: Path,
) -> None:
    claude = require_claude()
    server = mock_model([reply(Message("ready"))], protocols=PROTOCOLS)
    workspaces = tmp_path / "workspaces"
    workspaces.mkdir()
    empty = 'cd "$SEVRO_CANDIDATE_ARTIFACT_REVIEWS" && test -z "$(ls -A)"'
    case = sevro_project.case(checks=[check("artifact", ARTIFACT), check("empty", empty)])
    args = [
        "--workspace-root",
        str(workspaces),
        "--runtime-config-file",
        str(runtime_file(tmp_path)),
    ]
    done = run_claude(sevro_project, claude, server, case, *args)
    found = {c["id"]: c for c in trial(sevro_project)["evidence"]["checks"]}
    # sevro made the directory for Claude's sandbox: nothing in it is what a check sees, so a
    # check that wants the candidate's evidence fails (never passes) on an empty directory.
    assert found["artifact"]["status"] == "failed", found
    assert found["empty"]["status"] == "passed", found
    assert done.exit_code != 0
