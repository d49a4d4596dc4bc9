"""``sevro run`` with an extension whose ``prepare`` installs a git-excluded executable and runs
a fixture setup: the real CLI, the scripted host and a Node extension, end to end."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sevro_core.testing import SevroProject
from sevro_core.testing.cliresult import CliResult

PREPARING = Path(__file__).resolve().parent / "preparing.js"
CHECKS_THE_WORKSPACE = [
    [
        # the artifact is there and executable, the setup ran, and Git does not see the artifact
        # (the word is spelled so that this script, kept in evidence, does not contain it)
        {"run": {"command": './tools/check.sh && grep -qx "s3tup-$(echo w0rd)" SETUP-RAN'}},
        {"run": {"command": 'test -z "$(git status --porcelain tools)"'}},
        {"reply": {"text": "ready"}},
    ]
]


def _run(
    project: SevroProject,
    node: str,
    case_id: str,
    steps: list[list[dict[str, Any]]] = CHECKS_THE_WORKSPACE,
) -> CliResult:
    command = project.write_json("extension/command.json", [node, str(PREPARING)])
    host = project.script(default=steps)
    return project.run(
        *("--host", "scripted", "--host-config", host, "--project-root", project.root),
        *("--sandbox", "none", "--case-id", case_id),
        *("--extension-command-file", command, "--extension-source-file", PREPARING),
    )


def _trial(result: CliResult, case_id: str) -> dict[str, Any]:
    path = Path(result.json()["evidencePath"]).parent / "cases" / case_id / "trial-1.json"
    evidence: dict[str, Any] = json.loads(path.read_text())["evidence"]
    return evidence


def test_the_prepared_workspace_is_what_the_host_sees(
    sevro_project: SevroProject, node: str
) -> None:
    result = _run(sevro_project, node, "prepared")
    assert result.exit_code == 0, result.stderr
    assert result.json()["task"]["verdict"] == "passed"
    preparation = _trial(result, "prepared")["extension"]["preparation"]
    assert preparation["artifacts"][0]["relativePath"] == "tools/check.sh"
    assert preparation["artifacts"][0]["executable"] is True
    assert len(preparation["fixtureSetupDigest"]) == 64
    evidence = Path(result.json()["evidencePath"]).parent
    kept = "".join(path.read_text() for path in evidence.rglob("*.json"))
    assert "s3tup-w0rd" not in kept, "setup values never reach evidence"


def test_a_workspace_without_the_preparation_fails_the_same_checks(
    sevro_project: SevroProject, node: str
) -> None:
    """Negative control of the checks themselves: a file the preparation did not write."""
    steps = [[{"run": {"command": "test -f NOT-PREPARED"}}, {"reply": {"text": "ready"}}]]
    result = _run(sevro_project, node, "prepared", steps)
    assert result.exit_code == 1, result.stderr
    assert result.json()["task"]["verdict"] == "failed"


def test_a_failing_setup_fails_the_fixture_before_the_host_starts(
    sevro_project: SevroProject, node: str
) -> None:
    """Negative control: the same extension, a setup that exits 9."""
    result = _run(sevro_project, node, "setup-fails")
    assert result.exit_code == 70, result.stderr
    assert "fixture setup exited with status 9" in result.stderr
    assert "could not be prepared" in result.stderr
