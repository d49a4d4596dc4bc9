"""`sevro doctor --host codex` on one screen, with a fix for each failure."""

from __future__ import annotations

from pathlib import Path

import pytest

from sevro_core.testing import SevroProject
from sevro_hosts_codex.testing import require_codex


@pytest.mark.slow
def test_doctor_reports_binary_version_auth_and_a_working_sandbox(
    sevro_project: SevroProject,
) -> None:
    codex = require_codex()
    result = sevro_project.sevro(
        "doctor",
        "--host",
        "codex",
        "--codex-bin",
        codex,
        "--codex-api-key-env",
        "SEVRO_DOC_KEY",
        env={"SEVRO_DOC_KEY": "sk-doctor"},
    )
    assert result.exit_code == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "sevro doctor: sevro.host.codex"
    assert [line.split()[1] for line in lines[1:]] == [
        "binary:",
        "version:",
        "auth:",
        "pid-namespace:",
        "sandbox:",
    ]
    assert "codex-cli 0.171.0" in result.stdout and "sk-doctor" not in result.stdout


def test_doctor_names_a_fix_for_each_failure(sevro_project: SevroProject) -> None:
    result = sevro_project.sevro("doctor", "--host", "codex", "--codex-bin", "/nonexistent/codex")
    assert result.exit_code == 1
    assert "FAIL binary" in result.stdout and "fix: npm install" in result.stdout


def test_codex_flags_need_the_codex_host(sevro_project: SevroProject) -> None:
    case = sevro_project.case()
    result = sevro_project.run(case, "--codex-bin", "/x/codex")
    assert result.exit_code == 64 and "--codex-bin (codex.bin) needs --host codex" in result.stderr


@pytest.mark.slow
@pytest.mark.parametrize(
    ("flags", "env", "reason"),
    [
        ((), {}, "no credential configured"),
        (("--codex-api-key-env", "SEVRO_UNSET_KEY"), {}, "$SEVRO_UNSET_KEY is not set"),
        (("--codex-api-key-env", "SEVRO_EMPTY_KEY"), {"SEVRO_EMPTY_KEY": ""}, "is not set"),
        (("--codex-auth-file", "/nonexistent/auth.json"), {}, "is missing or empty"),
    ],
)
def test_a_run_without_a_usable_credential_is_refused_before_any_trial(
    sevro_project: SevroProject, flags: tuple[str, ...], env: dict[str, str], reason: str
) -> None:
    """The doctor's auth check, at plan time: exit 64 with its reason, never a silent retry."""
    codex = require_codex()
    case = sevro_project.case()
    result = sevro_project.run(
        case, "--host", "codex", "--codex-bin", codex, *flags, env={"SEVRO_UNSET_KEY": "", **env}
    )
    assert result.exit_code == 64, result.stdout + result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("sevro: error: --host codex: ") and reason in line, line
    assert "sevro doctor --host codex" in line
    assert not sevro_project.results.exists() or not any(sevro_project.results.iterdir())
    doctor = sevro_project.sevro("doctor", "--host", "codex", "--codex-bin", codex, *flags, env=env)
    assert doctor.exit_code == 1 and "FAIL auth" in doctor.stdout and reason in doctor.stdout


@pytest.mark.slow
def test_doctor_fails_the_pid_namespace_check_without_unshare(
    sevro_project: SevroProject, tmp_path: Path
) -> None:
    codex = require_codex()
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    flags = ("--codex-bin", codex, "--codex-api-key-env", "SEVRO_DOC_KEY")
    env = {"SEVRO_DOC_KEY": "sk-doctor", "PATH": str(empty)}
    result = sevro_project.sevro("doctor", "--host", "codex", *flags, env=env)
    assert result.exit_code == 1
    assert "FAIL pid-namespace" in result.stdout and "util-linux" in result.stdout
    system = {**env, "PATH": "/usr/local/bin:/usr/bin:/bin"}  # the control: unshare is there
    with_unshare = sevro_project.sevro("doctor", "--host", "codex", *flags, env=system)
    assert "ok   pid-namespace: each turn runs in its own PID namespace" in with_unshare.stdout
