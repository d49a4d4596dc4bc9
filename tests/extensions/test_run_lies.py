"""A lying extension through ``sevro run``: each lie the runtime rules catch is a grading error
(exit 3) naming the rule, never a pass; the honest reference on the same trial passes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sevro_core.testing import SevroProject
from sevro_core.testing.cliresult import CliResult
from tests.extensions.conftest import REFERENCE

SAYS_HELLO = [[{"reply": {"text": "hello"}}]]
SILENT = [[{"write": {"path": "x.txt", "content": "x"}}]]
POLICY = "sevro-test.reference.strict"


def _run(project: SevroProject, node: str, steps: Any, lie: str | None, *extra: str) -> CliResult:
    command = project.write_json("extension/command.json", [node, str(REFERENCE)])
    configuration = project.write_json(
        "extension/private.json", {} if lie is None else {"lie": lie}
    )
    return project.run(
        *("--host", "scripted", "--host-config", project.script(default=steps)),
        *("--project-root", project.root, "--sandbox", "none"),
        *("--extension-command-file", str(command), "--extension-source-file", str(REFERENCE)),
        *("--extension-configuration-file", str(configuration)),
        *("--extension-redacted-configuration-file", str(configuration)),
        *("--case-id", "greets"),
        *extra,
    )


def _trial(result: CliResult) -> dict[str, Any]:
    path = Path(result.json()["evidencePath"]).parent / "cases" / "greets" / "trial-1.json"
    evidence: dict[str, Any] = json.loads(path.read_text())["evidence"]
    return evidence


LIES = {
    "cite-unknown": (SAYS_HELLO, (), "which is no known evidence"),
    "undeclared-check": (SAYS_HELLO, (), "which the case does not declare"),
    "foreign-prefix": (SAYS_HELLO, (), "whose id is not under its namespace"),
    "duplicate-check": (SAYS_HELLO, (), "twice"),
    "recommend-unasked": (SAYS_HELLO, (), "but no task-verdict policy is selected"),
    "withhold-recommendation": (
        SAYS_HELLO,
        ("--task-verdict-policy", POLICY),
        "returned no taskVerdictRecommendation",
    ),
    "pass-anyway": (SILENT, (), "which is not complete evidence"),
}


@pytest.mark.parametrize("lie", sorted(LIES))
def test_a_lying_extension_is_a_grading_error_never_a_pass(
    sevro_project: SevroProject, node: str, lie: str
) -> None:
    steps, extra, rule = LIES[lie]
    result = _run(sevro_project, node, steps, lie, *extra)
    assert result.exit_code == 3, result.stderr
    summary = result.json()
    assert summary["grading"]["status"] == "error"
    assert summary["task"]["verdict"] != "passed"
    trial = _trial(result)
    assert rule in json.dumps(trial), trial.get("extension")
    assert [c["status"] for c in trial["checks"]] == ["unavailable"]


def test_negative_control_the_honest_reference_passes_the_same_trials(
    sevro_project: SevroProject, node: str
) -> None:
    honest = _run(sevro_project, node, SAYS_HELLO, None, "--task-verdict-policy", POLICY)
    assert honest.exit_code == 0, honest.stderr
    assert honest.json()["task"]["verdict"] == "passed"
    silent = _run(sevro_project, node, SILENT, None)
    assert silent.exit_code == 4, silent.stderr  # the honest answer: unavailable, not an error
    assert [c["status"] for c in _trial(silent)["checks"]] == ["unavailable"]
