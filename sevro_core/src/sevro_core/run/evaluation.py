"""A case source's part of a trial: its preparation installed, its evaluation merged.

The engine calls these around the built-in steps (fixture, preparation, host, built-in checks,
evaluation, verdict). An evaluation that failed or broke a rule is a grading error, never a
pass; an extension's recommendation becomes the verdict only through the engine's guard.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from attrs import frozen

from sevro_core.limits import MAX_DIAGNOSTIC_CHARS
from sevro_core.models import CancelToken, CheckOutcome, HostResult, Observation
from sevro_core.plugin.casesources import (
    CasePreparation,
    EvaluationArtifact,
    EvaluationInput,
    EvaluationResult,
    TrialEvaluator,
)
from sevro_core.run.planning import PlannedCase
from sevro_core.states import CheckStatus, Completeness, Execution, Verdict
from sevro_core.vocabulary import FINAL_MESSAGE_OBSERVATION

_VERDICTS = {
    "passed": Verdict.PASSED,
    "failed": Verdict.FAILED,
    "not_assessed": Verdict.NOT_ASSESSED,
}


@frozen
class Executed:
    """How the candidate's execution ended, as the evaluator is told."""

    execution: Execution
    error: tuple[str, str] | None
    result: HostResult | None


def install_preparation(
    preparation: CasePreparation,
    workspace: Path,
    *,
    git: bool,
    fixture_bin_dir: Path | None,
    settings: tuple[Path, CancelToken],
) -> None:
    """Install one case's preparation in a trial's fixture (raises on failure)."""
    project_root, cancel = settings
    preparation.install(
        workspace,
        git=git,
        fixture_bin_dir=fixture_bin_dir,
        project_root=project_root,
        cancel=cancel,
    )


def evaluate_trial(
    evaluator: TrialEvaluator,
    case_id: str,
    executed: Executed,
    observations: Mapping[str, Observation],
    graded: tuple[Sequence[CheckOutcome], tuple[EvaluationArtifact, ...]],
    cancel: CancelToken,
) -> EvaluationResult:
    """Ask the evaluator; anything it raises is an evaluation error (never a pass)."""
    outcomes, artifacts = graded
    final = observations.get(FINAL_MESSAGE_OBSERVATION)
    result = executed.result
    complete = final is not None and final.completeness is Completeness.COMPLETE
    trial = EvaluationInput(
        case_id=case_id,
        execution=executed.execution,
        error_code=executed.error[0] if executed.error is not None else None,
        observations=dict(observations),
        builtin=tuple(outcomes),
        artifacts=artifacts,
        final_message=result.final_message if result is not None and complete else None,
        cancel=cancel,
    )
    try:
        return evaluator.evaluate(trial)
    except Exception as exc:  # an evaluator bug is a grading error, never a pass
        return EvaluationResult(error=f"evaluation failed: {type(exc).__name__}: {exc}")


def merge_evaluation(
    planned: PlannedCase,
    outcomes: Sequence[CheckOutcome],
    grader_error: dict[str, str] | None,
    evaluation: EvaluationResult,
) -> tuple[list[CheckOutcome], dict[str, str] | None]:
    """The built-in outcomes with the extension's, in the case's check order: each extension
    check takes the evaluation's outcome of the same id (none: it has no outcome, so grading is
    unavailable). An evaluation error makes every extension check unavailable and the trial's
    grading an error."""
    extension = [c.declaration for c in planned.checks if c.extension]
    by_id = {o.id: o for o in evaluation.outcomes}
    error = evaluation.error
    if error is not None and extension:
        grader_error = grader_error or {
            "checkId": extension[0].id,
            "message": error[:MAX_DIAGNOSTIC_CHARS],
        }
    elif error is not None:
        grader_error = grader_error or {"checkId": "-", "message": error[:MAX_DIAGNOSTIC_CHARS]}
    merged: dict[str, list[CheckOutcome]] = {}
    for outcome in outcomes:
        merged.setdefault(outcome.part_of or outcome.id, []).append(outcome)
    for declaration in extension:
        found = by_id.get(declaration.id)
        if error is not None or found is None:
            detail = f"grader error: {error}" if error is not None else None
            if detail is not None:
                merged[declaration.id] = [
                    CheckOutcome(
                        declaration.id, declaration.grader, CheckStatus.UNAVAILABLE, detail
                    )
                ]
            continue
        merged[declaration.id] = [
            CheckOutcome(
                declaration.id,
                declaration.grader,
                found.status,
                detail=found.detail,
                evidence_refs=found.evidence_refs,
            )
        ]
    ordered = [o for c in planned.case.checks for o in merged.get(c.id, [])]
    return ordered, grader_error


def recommended_verdict(evaluation: EvaluationResult | None) -> Verdict:
    """The extension policy's recommendation as a verdict; none is not assessed."""
    if evaluation is None or evaluation.error is not None or evaluation.recommendation is None:
        return Verdict.NOT_ASSESSED
    return _VERDICTS.get(evaluation.recommendation, Verdict.NOT_ASSESSED)
