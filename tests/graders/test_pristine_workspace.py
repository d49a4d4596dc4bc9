"""``"workspace": "pristine"`` on sevro.shell and sevro.verifier: the command runs in a fresh copy
of the case's fixture, never the agent's workspace, and a copy that cannot be made is a grading
error (docs/evaluator-resources.md#pristine-copy)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from attrs import evolve

from sevro_core.errors import ConfigurationError, GradingError
from sevro_core.models import TrialIsolation
from sevro_core.testing import SevroProject, require_sandbox, trial_view
from sevro_graders.check_workspace import check_isolation
from sevro_graders.shell_grader import ShellGrader
from sevro_graders.verifier_grader import VerifierGrader
from tests.e2e.helpers import assert_valid_evidence, trial_evidence


class _Isolation:
    """Stands for a sandbox: only identity matters to ``check_isolation``."""

    def run(self, *args: Any, **kwargs: Any) -> Any:  # pragma: no cover - never called
        raise AssertionError("not run")

    def home(self, role: str) -> Path:  # pragma: no cover - never called
        raise AssertionError("not asked")


def test_final_is_the_trial_s_own_sandbox_and_pristine_the_copy() -> None:
    own, copy = _Isolation(), _Isolation()
    removed: list[bool] = []

    @contextmanager
    def pristine() -> Iterator[TrialIsolation]:
        yield copy
        removed.append(True)

    view = evolve(trial_view(), isolation=own, pristine=pristine)
    with check_isolation(view, "final") as isolation:
        assert isolation is own
    with check_isolation(view, "pristine") as isolation:
        assert isolation is copy and not removed
    assert removed == [True], "the copy is removed after the check"


def test_a_copy_that_cannot_be_made_is_a_grading_error() -> None:
    @contextmanager
    def broken() -> Iterator[TrialIsolation]:
        raise OSError("no space left")
        yield _Isolation()  # pragma: no cover

    view = evolve(trial_view(), isolation=_Isolation(), pristine=broken)
    with (
        pytest.raises(GradingError, match="could not be made: no space left"),
        check_isolation(view, "pristine"),
    ):
        pass
    alone = evolve(trial_view(), isolation=_Isolation())
    with pytest.raises(GradingError, match="outside a trial"), check_isolation(alone, "pristine"):
        pass
    with check_isolation(alone, "final"):
        pass  # the control: the agent's workspace needs no copy


def test_other_workspace_values_are_refused() -> None:
    for grader, run in ((ShellGrader(), "true"), (VerifierGrader(), ["true"])):
        with pytest.raises(ConfigurationError) as caught:
            grader.compile({"run": run, "workspace": "agent"})
        assert caught.value.pointer == "/workspace"
        grader.compile({"run": run, "workspace": "pristine"})


# ---- through the real CLI, a Git fixture and the sandbox -------------------------------------


def shell(check_id: str, run: str, **extra: Any) -> dict[str, Any]:
    return {"id": check_id, "grader": "sevro.shell", "configuration": {"run": run, **extra}}


VERIFY = (
    'got=$(cat answer.txt); out=$(cat "$SEVRO_FINAL_OUTPUT");'
    ' p=false; [ "$got" = original ] && [ "$out" = 42 ] && [ ! -e extra.txt ] && p=true;'
    ' printf \'[{"id": "answer-only", "passed": %s}]\' "$p"'
)
CHECKS = [
    shell(
        "pristine-sees-original",
        'grep -qx original answer.txt && test ! -e extra.txt && grep -qx 42 "$SEVRO_FINAL_OUTPUT"',
        workspace="pristine",
    ),
    shell("pristine-is-a-copy", "pwd", workspace="pristine", expectRegex="sevro-pristine-"),
    shell("final-sees-the-edit", "grep -qx forged answer.txt && test -e extra.txt"),
    shell("pristine-not-forged", "grep -qx forged answer.txt", workspace="pristine"),
    {
        "id": "verifier",
        "grader": "sevro.verifier",
        "configuration": {
            "run": ["/bin/sh", "-c", VERIFY],
            "workspace": "pristine",
            "critical": ["answer-only"],
        },
    },
]


@pytest.mark.parametrize("kind", ["generated", "files"])
def test_a_pristine_check_sees_the_fixture_not_the_agent_s_edits(
    sevro_project: SevroProject, tmp_path: Path, kind: str
) -> None:
    require_sandbox()
    files = {"answer.txt": "original\n"}
    fixture: dict[str, Any] = (
        {"kind": "generated", "commits": [{"message": "m", "files": files}]}
        if kind == "generated"
        else {"files": files}
    )
    case = sevro_project.case(fixture=fixture, checks=CHECKS)
    command = "echo forged > answer.txt && echo x > extra.txt"
    host = sevro_project.script(
        default=[[{"run": {"command": command}}, {"reply": {"text": "42"}}]]
    )
    root = tmp_path / "workspaces"
    root.mkdir()
    done = sevro_project.run(case, "--host-config", host, "--workspace-root", root)
    assert_valid_evidence(done.json())
    statuses = {c["id"]: c["status"] for c in trial_evidence(done.json())["checks"]}
    assert statuses == {
        "pristine-sees-original": "passed",
        "pristine-is-a-copy": "passed",
        "final-sees-the-edit": "passed",
        "pristine-not-forged": "failed",
        "verifier": "passed",
        "verifier/answer-only": "passed",
    }, done.stdout + done.stderr
    assert done.exit_code == 1, "the negative control fails the trial"
    assert not [p.name for p in root.iterdir() if p.name.startswith("sevro-pristine-")]


def test_the_default_workspace_is_the_agent_s(sevro_project: SevroProject) -> None:
    require_sandbox()
    case = sevro_project.case(
        fixture={"files": {"answer.txt": "original\n"}},
        checks=[shell("final", "grep -qx forged answer.txt")],
    )
    host = sevro_project.script(
        default=[[{"run": {"command": "echo forged > answer.txt"}}, {"reply": {"text": "ok"}}]]
    )
    done = sevro_project.run(case, "--host-config", host)
    assert done.exit_code == 0, done.stdout + done.stderr
    assert json.loads(json.dumps(trial_evidence(done.json())["checks"]))[0]["status"] == "passed"
