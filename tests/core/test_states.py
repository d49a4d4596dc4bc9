from __future__ import annotations

import pytest

from sevro_core.states import (
    CheckStatus,
    Execution,
    ExitCode,
    Grading,
    Verdict,
    aggregate_execution,
    aggregate_grading,
    case_verdict,
    exit_code_for,
    run_verdict,
    trial_grading,
)

P, F, U = CheckStatus.PASSED, CheckStatus.FAILED, CheckStatus.UNAVAILABLE


@pytest.mark.parametrize(
    ("execution", "error", "declared", "outcomes", "missing", "expected"),
    [
        (Execution.COMPLETED, True, 2, [P], False, Grading.ERROR),
        (Execution.FAILED, True, 2, [], False, Grading.ERROR),
        (Execution.FAILED, False, 2, [], False, Grading.NOT_REQUESTED),
        (Execution.NOT_RUN, False, 1, [], False, Grading.NOT_REQUESTED),
        (Execution.COMPLETED, False, 2, [P, U], False, Grading.UNAVAILABLE),
        (Execution.COMPLETED, False, 2, [P], False, Grading.UNAVAILABLE),
        (Execution.COMPLETED, False, 1, [P], True, Grading.UNAVAILABLE),
        (Execution.COMPLETED, False, 0, [], True, Grading.UNAVAILABLE),
        (Execution.COMPLETED, False, 0, [], False, Grading.NOT_REQUESTED),
        (Execution.COMPLETED, False, 2, [P, F], False, Grading.COMPLETED),
    ],
)
def test_trial_grading(execution, error, declared, outcomes, missing, expected) -> None:  # type: ignore[no-untyped-def]
    assert (
        trial_grading(
            execution,
            grader_error=error,
            declared_checks=declared,
            outcomes=outcomes,
            required_evidence_missing=missing,
        )
        is expected
    )


def test_aggregation_precedence() -> None:
    assert (
        aggregate_execution([Execution.COMPLETED, Execution.NOT_RUN, Execution.CANCELLED])
        is Execution.CANCELLED
    )
    assert aggregate_execution([Execution.CANCELLED, Execution.FAILED]) is Execution.FAILED
    assert aggregate_execution([Execution.COMPLETED]) is Execution.COMPLETED
    assert (
        aggregate_grading([Grading.COMPLETED, Grading.UNAVAILABLE, Grading.ERROR]) is Grading.ERROR
    )
    assert aggregate_grading([Grading.NOT_REQUESTED, Grading.COMPLETED]) is Grading.COMPLETED
    assert aggregate_grading([Grading.NOT_REQUESTED]) is Grading.NOT_REQUESTED


def test_case_verdict_threshold_and_unassessed_dominance() -> None:
    ok, bad, na = Verdict.PASSED, Verdict.FAILED, Verdict.NOT_ASSESSED
    assert case_verdict([ok, ok, bad], 2 / 3) is ok
    assert case_verdict([ok, ok, bad], 0.7) is bad
    assert case_verdict([ok, ok, ok], 1.0) is ok
    assert case_verdict([ok, na, ok], 0.5) is na
    assert case_verdict([bad, na], 0.5) is na
    assert case_verdict([], 1.0) is na


def test_run_verdict() -> None:
    ok, bad, na = Verdict.PASSED, Verdict.FAILED, Verdict.NOT_ASSESSED
    assert run_verdict([ok, na, bad]) is bad
    assert run_verdict([ok, na]) is na
    assert run_verdict([ok, ok]) is ok


@pytest.mark.parametrize(
    ("execution", "grading", "verdict", "dry", "signal", "code"),
    [
        (Execution.COMPLETED, Grading.COMPLETED, Verdict.PASSED, False, None, ExitCode.OK),
        (Execution.COMPLETED, Grading.COMPLETED, Verdict.FAILED, False, None, ExitCode.TASK_FAILED),
        (Execution.FAILED, Grading.ERROR, Verdict.FAILED, False, None, ExitCode.EXECUTION_FAILED),
        (
            Execution.CANCELLED,
            Grading.NOT_REQUESTED,
            Verdict.NOT_ASSESSED,
            False,
            None,
            ExitCode.EXECUTION_FAILED,
        ),
        (
            Execution.NOT_RUN,
            Grading.NOT_REQUESTED,
            Verdict.NOT_ASSESSED,
            False,
            None,
            ExitCode.EXECUTION_FAILED,
        ),
        (Execution.NOT_RUN, Grading.NOT_REQUESTED, Verdict.NOT_ASSESSED, True, None, ExitCode.OK),
        (Execution.COMPLETED, Grading.ERROR, Verdict.FAILED, False, None, ExitCode.GRADING_ERROR),
        (
            Execution.COMPLETED,
            Grading.UNAVAILABLE,
            Verdict.FAILED,
            False,
            None,
            ExitCode.EVIDENCE_UNAVAILABLE,
        ),
        (
            Execution.COMPLETED,
            Grading.NOT_REQUESTED,
            Verdict.NOT_ASSESSED,
            False,
            None,
            ExitCode.OK,
        ),
        (
            Execution.FAILED,
            Grading.ERROR,
            Verdict.FAILED,
            False,
            ExitCode.SIGTERM,
            ExitCode.SIGTERM,
        ),
    ],
)
def test_exit_codes(execution, grading, verdict, dry, signal, code) -> None:  # type: ignore[no-untyped-def]
    assert exit_code_for(execution, grading, verdict, dry=dry, signal_exit=signal) is code
