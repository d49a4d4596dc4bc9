"""`sevro doctor --host codex` on one screen, with a fix for each failure."""

from __future__ import annotations

import pytest

from sevro_core.testing import SevroProject, require_codex


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
    assert [line.split()[1] for line in lines[1:]] == ["binary:", "version:", "auth:", "sandbox:"]
    assert "codex-cli 0.171.0" in result.stdout and "sk-doctor" not in result.stdout


def test_doctor_names_a_fix_for_each_failure(sevro_project: SevroProject) -> None:
    result = sevro_project.sevro("doctor", "--host", "codex", "--codex-bin", "/nonexistent/codex")
    assert result.exit_code == 1
    assert "FAIL binary" in result.stdout and "fix: npm install" in result.stdout


def test_codex_flags_need_the_codex_host(sevro_project: SevroProject) -> None:
    case = sevro_project.case()
    result = sevro_project.run(case, "--codex-bin", "/x/codex")
    assert result.exit_code == 64 and "--codex-bin needs --host codex" in result.stderr
