"""Claude credential discovery without a flag, in Sevro's precedence: ``--claude-credential-file``
(or ``--claude-api-key-env``) > ``ANTHROPIC_API_KEY`` / ``CLAUDE_CODE_OAUTH_TOKEN`` > the saved
``.credentials.json`` (``$CLAUDE_CONFIG_DIR`` or ``~/.claude``) > the macOS keychain. Every test
uses a fake HOME and clears the variables, so the operator's own login is never read. The real
CLI runs against the mock model, which shows which credential reached it."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sevro_core.api import Credentials, HostFailure
from sevro_core.testing import CliResult, SevroProject
from sevro_core.testing.mockmodel import Message, reply
from sevro_hosts_claude import credentials
from sevro_hosts_claude.credentials import Discovery, discover
from sevro_hosts_claude.testing import require_claude
from tests.hosts_claude.helpers import PROTOCOLS, bash, host_config
from tests.hosts_codex.helpers import retained_bytes, trial

NONE = Credentials(None, None)
KEY = "sk-ant-api-discovered-0123456789"
TOKEN = "sk-ant-oat01-discovered-0123456789"
SAVED = "sk-ant-oat01-saved-login-0123456789"
CLEARED = {"ANTHROPIC_API_KEY": "", "CLAUDE_CODE_OAUTH_TOKEN": "", "CLAUDE_CONFIG_DIR": ""}


def _login(token: str) -> str:
    """A saved login as Claude Code keeps it (the shape it sends as a bearer token)."""
    return credentials.oauth_document(token).decode()


def _home(tmp_path: Path, saved: str | None = None) -> Path:
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    if saved is not None:
        (home / ".claude" / ".credentials.json").write_text(saved)
    return home


# -- which route is selected ------------------------------------------------------------------


def test_the_precedence_of_the_routes(tmp_path: Path) -> None:
    home = _home(tmp_path, _login(SAVED))
    both = {"HOME": str(home), "ANTHROPIC_API_KEY": KEY, "CLAUDE_CODE_OAUTH_TOKEN": TOKEN}
    assert discover(Credentials(Path("/f.json"), None), both) is None  # a flag wins
    assert discover(Credentials(None, "OTHER"), both) is None
    assert discover(NONE, both) == Discovery("environment", variable="ANTHROPIC_API_KEY")
    oauth = {**both, "ANTHROPIC_API_KEY": ""}  # an empty variable is not set
    assert discover(NONE, oauth) == Discovery("environment", variable="CLAUDE_CODE_OAUTH_TOKEN")
    saved = home / ".claude" / ".credentials.json"
    assert discover(NONE, {"HOME": str(home)}) == Discovery("saved-credentials", file=saved)


def test_claude_config_dir_moves_the_saved_file_and_nothing_is_found_on_linux(
    tmp_path: Path,
) -> None:
    home = _home(tmp_path, _login(SAVED))
    config = tmp_path / "config"
    config.mkdir()
    moved = {"HOME": str(home), "CLAUDE_CONFIG_DIR": str(config)}
    assert discover(NONE, moved, "linux") is None  # not the one under HOME, and no keychain
    (config / ".credentials.json").write_text(_login(SAVED))
    found = discover(NONE, moved, "linux")
    assert found == Discovery("saved-credentials", file=config / ".credentials.json")
    assert discover(NONE, {"HOME": str(tmp_path / "nobody")}, "linux") is None
    assert discover(NONE, {"HOME": str(tmp_path / "nobody")}, "darwin") == Discovery("keychain")


@pytest.mark.parametrize("kind", ["empty", "directory", "dangling link"])
def test_a_selected_saved_file_that_is_unusable_fails_without_fallback(
    tmp_path: Path, kind: str
) -> None:
    home = _home(tmp_path)
    saved = home / ".claude" / ".credentials.json"
    if kind == "empty":
        saved.write_text("  \n")
    elif kind == "directory":
        saved.mkdir()
    else:
        saved.symlink_to(tmp_path / "missing.json")
    found = discover(NONE, {"HOME": str(home)}, "darwin")  # a keychain would come next
    assert found == Discovery("saved-credentials", file=saved)
    check = credentials.check(found)
    assert not check.ok and str(saved) in check.detail and check.fix


def test_the_keychain_route_fails_clearly_without_security(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Untested on Linux (no keychain): here only that a missing ``security`` is a clear
    failure, never a credential."""
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(HostFailure, match="keychain"):
        credentials.keychain_login()
    check = credentials.check(Discovery("keychain"))
    assert not check.ok and "keychain" in check.detail


def test_a_discovered_route_is_redacted_to_its_name() -> None:
    found = Discovery("environment", variable="CLAUDE_CODE_OAUTH_TOKEN")
    assert found.to_json() == {
        "route": "environment",
        "present": True,
        "variable": "CLAUDE_CODE_OAUTH_TOKEN",
    }
    saved = Discovery("saved-credentials", file=Path("/home/x/.claude/.credentials.json"))
    assert saved.to_json() == {"route": "saved-credentials", "present": True}


# -- through the real CLI ---------------------------------------------------------------------


def _run(
    project: SevroProject,
    server: Any,
    env: dict[str, str],
    *flags: str,
) -> CliResult:
    case = project.case(checks=[])
    return project.run(
        case,
        "--host",
        "claude",
        "--host-config",
        str(host_config(project, server)),
        "--model",
        "mock-model",
        "--claude-bin",
        require_claude(),
        *flags,
        env={**CLEARED, **env},
        timeout=180,
    )


def _discovery(project: SevroProject) -> Any:
    (path,) = project.results.glob("*/run.json")
    run = json.loads(path.read_text())
    return run["configuration"]["redacted"]["hostConfiguration"]["candidate"].get(
        "credentialDiscovery"
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    ("variable", "value", "header", "sent"),
    [
        ("ANTHROPIC_API_KEY", KEY, "x-api-key", KEY),
        ("CLAUDE_CODE_OAUTH_TOKEN", TOKEN, "authorization", f"Bearer {TOKEN}"),
    ],
)
def test_a_credential_in_the_environment_reaches_only_the_model(
    sevro_project: SevroProject,
    mock_model: Callable[..., Any],
    tmp_path: Path,
    variable: str,
    value: str,
    header: str,
    sent: str,
) -> None:
    """Positive: the variable is used without a flag (over a saved login); the agent's Bash
    sees neither it nor the value, and nothing retained holds the value."""
    server = mock_model([reply(bash("env")), reply(Message("ready"))], protocols=PROTOCOLS)
    home = _home(tmp_path, _login(SAVED))
    result = _run(sevro_project, server, {"HOME": str(home), variable: value})
    assert result.exit_code == 0, result.stdout + result.stderr
    assert {r.headers.get(header) for r in server.requests} == {sent}
    shown = server.requests[-1].body.decode()
    assert "CLAUDE_CONFIG_DIR=" in shown  # the command's environment reached the model
    assert value not in shown and variable not in shown
    assert value.encode() not in retained_bytes(sevro_project)
    assert _discovery(sevro_project) == {
        "route": "environment",
        "present": True,
        "variable": variable,
    }
    assert trial(sevro_project)["result"]["execution"] == "completed"


@pytest.mark.slow
def test_a_saved_login_is_used_and_a_flag_wins_over_it(
    sevro_project: SevroProject, mock_model: Callable[..., Any], tmp_path: Path
) -> None:
    home = _home(tmp_path, _login(SAVED))
    server = mock_model([reply(Message("ready"))], protocols=PROTOCOLS)
    result = _run(sevro_project, server, {"HOME": str(home)})
    assert result.exit_code == 0, result.stdout + result.stderr
    (request,) = server.requests
    assert request.headers["authorization"] == f"Bearer {SAVED}"
    assert _discovery(sevro_project) == {"route": "saved-credentials", "present": True}
    assert SAVED.encode() not in retained_bytes(sevro_project)
    # negative: --claude-credential-file wins over the variable and the saved login
    flagged = tmp_path / "flagged.json"
    flagged.write_text(_login(TOKEN))
    other = mock_model([reply(Message("ready"))], protocols=PROTOCOLS)
    env = {"HOME": str(home), "ANTHROPIC_API_KEY": KEY}
    project = SevroProject(sevro_project.root / "second")
    project.root.mkdir()
    result = _run(project, other, env, "--claude-credential-file", str(flagged))
    assert result.exit_code == 0, result.stdout + result.stderr
    (request,) = other.requests
    assert request.headers["authorization"] == f"Bearer {TOKEN}"
    assert "x-api-key" not in request.headers
    assert _discovery(project) is None


@pytest.mark.slow
@pytest.mark.parametrize(
    ("saved", "reason"),
    [(None, "no credential configured"), ("", "is empty")],
)
def test_no_usable_credential_is_refused_before_any_trial(
    sevro_project: SevroProject,
    mock_model: Callable[..., Any],
    tmp_path: Path,
    saved: str | None,
    reason: str,
) -> None:
    """Negative: nothing found, or a selected saved file that is empty (no fallback)."""
    server = mock_model([], protocols=PROTOCOLS)
    home = _home(tmp_path, saved)
    result = _run(sevro_project, server, {"HOME": str(home)})
    assert result.exit_code == 64, result.stdout + result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert reason in line and "Traceback" not in result.stderr
    assert not server.requests
    assert not sevro_project.results.exists() or not any(sevro_project.results.iterdir())


@pytest.mark.slow
def test_doctor_reports_the_route(sevro_project: SevroProject, tmp_path: Path) -> None:
    home = _home(tmp_path, _login(SAVED))
    claude = require_claude()
    env = {**CLEARED, "HOME": str(home)}
    saved = sevro_project.sevro("doctor", "--host", "claude", "--claude-bin", claude, env=env)
    detail = f"ok   auth: saved credentials {home}/.claude/.credentials.json (copied per trial)"
    assert detail in saved.stdout, saved.stdout
    assert SAVED not in saved.stdout
    keyed = sevro_project.sevro(
        "doctor", "--host", "claude", "--claude-bin", claude, env={**env, "ANTHROPIC_API_KEY": KEY}
    )
    assert "ok   auth: $ANTHROPIC_API_KEY from the environment (present)" in keyed.stdout
    assert KEY not in keyed.stdout
    nothing = sevro_project.sevro(
        "doctor", "--host", "claude", "--claude-bin", claude, env={**env, "HOME": str(tmp_path)}
    )
    assert nothing.exit_code == 1 and "FAIL auth: no credential configured" in nothing.stdout
