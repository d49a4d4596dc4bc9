"""The case source ``sevro.extension`` opened directly (the CLI tests drive it end to end)."""

from __future__ import annotations

from pathlib import Path

from sevro_core.api import (
    FINAL_MESSAGE_OBSERVATION,
    CancelToken,
    CaseSourceRequest,
    Completeness,
    EvaluationInput,
    Execution,
    Observation,
    OpenedCaseSource,
)
from sevro_extensions.lifecycle import ExtensionCaseSource
from tests.extensions.conftest import REFERENCE


def _opened(node: str, tmp_path: Path) -> OpenedCaseSource:
    command = tmp_path / "command.json"
    command.write_text(f'["{node}", "{REFERENCE}"]')
    request = CaseSourceRequest(
        command_file=command,
        source_files=(REFERENCE,),
        configuration_file=None,
        redacted_configuration_file=None,
        case_id="greets",
        task_verdict_policy=None,
        replaced_graders=(),
        project_root=tmp_path,
        condition="passive",
        host_id="sevro.host.scripted",
        model="scripted",
        effort="none",
        host_capabilities=frozenset(),
    )
    return ExtensionCaseSource().open(request, CancelToken())


def _trial(cancel: CancelToken | None) -> EvaluationInput:
    final = Observation(
        FINAL_MESSAGE_OBSERVATION, "sevro.engine", Completeness.COMPLETE, {"byteLength": 5}
    )
    return EvaluationInput(
        case_id="greets",
        execution=Execution.COMPLETED,
        error_code=None,
        observations={final.id: final},
        builtin=(),
        artifacts=(),
        final_message="hello",
        cancel=cancel,
    )


def test_an_interrupted_run_ends_the_evaluate_call(node: str, tmp_path: Path) -> None:
    opened = _opened(node, tmp_path)
    evaluator = opened.evaluator
    passed = evaluator.evaluate(_trial(CancelToken()))
    assert passed.error is None and passed.outcomes[0].status.value == "passed"
    cancelled = CancelToken()
    cancelled.cancel("SIGINT")
    result = evaluator.evaluate(_trial(cancelled))
    assert result.error == "extension evaluate failed: extension call cancelled"
    assert not result.outcomes and result.recommendation is None
