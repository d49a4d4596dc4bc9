"""The case source ``sevro.extension`` opened directly (the CLI tests drive it end to end)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from attrs import evolve

from sevro_core.api import (
    FINAL_MESSAGE_OBSERVATION,
    CancelToken,
    CaseSourceRequest,
    Completeness,
    EvaluationInput,
    Execution,
    InstrumentationOffer,
    InvocationError,
    Observation,
    OpenedCaseSource,
)
from sevro_extensions.lifecycle import ExtensionCaseSource
from tests.extensions.conftest import REFERENCE


def _opened(
    node: str,
    tmp_path: Path,
    *,
    configuration: Path | None = None,
    offers: tuple[InstrumentationOffer, ...] = (),
) -> OpenedCaseSource:
    command = tmp_path / "command.json"
    command.write_text(f'["{node}", "{REFERENCE}"]')
    request = CaseSourceRequest(
        command_file=command,
        source_files=(REFERENCE,),
        configuration_file=configuration,
        redacted_configuration_file=configuration,
        case_id="greets",
        task_verdict_policy=None,
        replaced_graders=(),
        project_root=tmp_path,
        condition="passive",
        host_id="sevro.host.scripted",
        model="scripted",
        effort="none",
        host_capabilities=frozenset(offer.id for offer in offers),
        instrumentation=offers,
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


def test_requested_instrumentation_is_negotiated_recorded_and_checked(
    node: str, tmp_path: Path
) -> None:
    """``prepare`` asks for an offered, negotiated observer: requested and applied are
    recorded (and enter the identity); a trial without its observation is a mismatch."""
    wanted = "sevro.claude.tool-calls"  # an optional capability of the reference extension
    config = tmp_path / "private.json"
    config.write_text(json.dumps({"sevro-test.instrument": [wanted]}))
    opened = _opened(
        node,
        tmp_path,
        configuration=config,
        offers=(InstrumentationOffer(wanted, changes_execution=False),),
    )
    agreed = {"requested": [{"id": wanted, "configuration": {}}]}
    agreed["applied"] = agreed["requested"]
    assert opened.preparations["greets"].record["instrumentation"] == agreed
    assert opened.identity["instrumentation"] == agreed
    evaluator = opened.evaluator
    missing = evaluator.evaluate(_trial(None))
    assert missing.error is not None and "sevro.instrumentation.mismatch" in missing.error
    seen = Observation(wanted, "sevro.host", Completeness.COMPLETE, {})
    applied = evaluator.evaluate(
        evolve(_trial(None), observations={**_trial(None).observations, wanted: seen})
    )
    assert applied.error is None


def test_instrumentation_the_host_does_not_offer_is_refused(node: str, tmp_path: Path) -> None:
    config = tmp_path / "private.json"
    config.write_text(json.dumps({"sevro-test.instrument": ["sevro.claude.tool-calls"]}))
    with pytest.raises(InvocationError, match="does not offer"):
        _opened(node, tmp_path, configuration=config)
