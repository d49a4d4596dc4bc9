"""`sevro doctor --host claude` on one screen, with a fix for each failure."""

from __future__ import annotations

import pytest

from sevro_core.testing import SevroProject
from sevro_hosts_claude.testing import require_claude

DISCOVERED = ("ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN", "CLAUDE_CONFIG_DIR")


@pytest.mark.slow
def test_doctor_reports_binary_version_auth_and_a_working_sandbox(
    sevro_project: SevroProject,
) -> None:
    claude = require_claude()
    result = sevro_project.sevro(
        "doctor",
        "--host",
        "claude",
        "--claude-bin",
        claude,
        "--claude-api-key-env",
        "SEVRO_DOC_KEY",
        env={"SEVRO_DOC_KEY": "sk-doctor"},
    )
    assert result.exit_code == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "sevro doctor: sevro.host.claude"
    names = [line.split()[1] for line in lines[1:]]
    assert names == ["binary:", "version:", "auth:", "sandbox-tools:", "sandbox:"]
    assert "2.1.332 (Claude Code)" in result.stdout and "sk-doctor" not in result.stdout


def test_doctor_names_a_fix_for_each_failure(sevro_project: SevroProject) -> None:
    result = sevro_project.sevro("doctor", "--host", "claude", "--claude-bin", "/nonexistent/c")
    assert result.exit_code == 1
    assert "FAIL binary" in result.stdout and "fix: npm install" in result.stdout


def test_claude_flags_need_the_claude_host(sevro_project: SevroProject) -> None:
    case = sevro_project.case()
    result = sevro_project.run(case, "--claude-bin", "/x/claude")
    assert result.exit_code == 64
    assert "--claude-bin (claude.bin) needs --host claude" in result.stderr


@pytest.mark.slow
@pytest.mark.parametrize(
    ("flags", "env", "reason"),
    [
        ((), {}, "no credential configured"),
        (("--claude-api-key-env", "SEVRO_UNSET_KEY"), {}, "$SEVRO_UNSET_KEY is not set"),
        (("--claude-credential-file", "/nonexistent/c.json"), {}, "is missing or empty"),
    ],
)
def test_a_run_without_a_usable_credential_is_refused_before_any_trial(
    sevro_project: SevroProject, flags: tuple[str, ...], env: dict[str, str], reason: str
) -> None:
    """The doctor's auth check, at plan time: exit 64 with its reason, never a failed trial.
    A fake HOME and cleared variables: no credential is discovered (never the operator's)."""
    claude = require_claude()
    case = sevro_project.case()
    env = {**env, "HOME": str(sevro_project.root), **dict.fromkeys(DISCOVERED, "")}
    result = sevro_project.run(case, "--host", "claude", "--claude-bin", claude, *flags, env=env)
    assert result.exit_code == 64, result.stdout + result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("sevro: error: --host claude: ") and reason in line, line
    assert "sevro doctor --host claude" in line
    assert not sevro_project.results.exists() or not any(sevro_project.results.iterdir())
    doctor = sevro_project.sevro(
        "doctor", "--host", "claude", "--claude-bin", claude, *flags, env=env
    )
    assert doctor.exit_code == 1 and "FAIL auth" in doctor.stdout and reason in doctor.stdout
