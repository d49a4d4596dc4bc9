"""The three separate states (execution, grading, task verdict), their reductions and exit codes.

These follow Sevro's results v1. Where Sevro's docs and code disagree on case aggregation, sevro
follows the code: any ``not_assessed`` trial makes the case ``not_assessed`` (see
`docs/results.md`).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence


class Execution(enum.StrEnum):
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"
    NOT_RUN = "not_run"


class Grading(enum.StrEnum):
    COMPLETED = "completed"
    ERROR = "error"
    UNAVAILABLE = "unavailable"
    NOT_REQUESTED = "not_requested"


class Verdict(enum.StrEnum):
    PASSED = "passed"
    FAILED = "failed"
    NOT_ASSESSED = "not_assessed"


class CheckStatus(enum.StrEnum):
    PASSED = "passed"
    FAILED = "failed"
    UNAVAILABLE = "unavailable"


class Completeness(enum.StrEnum):
    COMPLETE = "complete"
    PARTIAL = "partial"
    UNAVAILABLE = "unavailable"


class ExitCode(enum.IntEnum):
    OK = 0
    TASK_FAILED = 1
    EXECUTION_FAILED = 2
    GRADING_ERROR = 3
    EVIDENCE_UNAVAILABLE = 4
    SPEND_CEILING = 5
    """The run stopped at its spend ceiling: no call past it started (``docs/spend.md``)."""
    INVOCATION = 64
    INTERNAL = 70
    SIGINT = 130
    SIGTERM = 143


def trial_grading(
    execution: Execution,
    *,
    grader_error: bool,
    declared_checks: int,
    outcomes: Sequence[CheckStatus],
    required_evidence_missing: bool,
) -> Grading:
    """Reduce one trial's check outcomes to its grading state (Sevro ``assessTrial`` step 1)."""
    if grader_error:
        return Grading.ERROR
    if execution is not Execution.COMPLETED:
        return Grading.NOT_REQUESTED
    if (
        required_evidence_missing
        or CheckStatus.UNAVAILABLE in outcomes
        or len(outcomes) < declared_checks
    ):
        return Grading.UNAVAILABLE
    if declared_checks == 0:
        return Grading.NOT_REQUESTED
    return Grading.COMPLETED


def aggregate_execution(states: Iterable[Execution]) -> Execution:
    present = set(states)
    for state in (Execution.FAILED, Execution.CANCELLED, Execution.NOT_RUN):
        if state in present:
            return state
    return Execution.COMPLETED


def aggregate_grading(states: Iterable[Grading]) -> Grading:
    present = set(states)
    for state in (Grading.ERROR, Grading.UNAVAILABLE, Grading.COMPLETED):
        if state in present:
            return state
    return Grading.NOT_REQUESTED


def case_verdict(verdicts: Sequence[Verdict], threshold: float) -> Verdict:
    """A case passes when passed/total >= threshold; any unassessed trial leaves it unassessed."""
    if not verdicts or Verdict.NOT_ASSESSED in verdicts:
        return Verdict.NOT_ASSESSED
    passed = sum(1 for v in verdicts if v is Verdict.PASSED)
    return Verdict.PASSED if passed / len(verdicts) >= threshold else Verdict.FAILED


def run_verdict(case_verdicts: Sequence[Verdict]) -> Verdict:
    """A run fails when any case fails; otherwise an unassessed case leaves it unassessed."""
    if Verdict.FAILED in case_verdicts:
        return Verdict.FAILED
    if not case_verdicts or Verdict.NOT_ASSESSED in case_verdicts:
        return Verdict.NOT_ASSESSED
    return Verdict.PASSED


def exit_code_for(
    execution: Execution,
    grading: Grading,
    verdict: Verdict,
    *,
    dry: bool,
    signal_exit: ExitCode | None = None,
) -> ExitCode:
    """Map the run's aggregate onto an exit code, with Sevro's precedence."""
    if signal_exit is not None:
        return signal_exit
    if execution in (Execution.FAILED, Execution.CANCELLED) or (
        execution is Execution.NOT_RUN and not dry
    ):
        return ExitCode.EXECUTION_FAILED
    if grading is Grading.ERROR:
        return ExitCode.GRADING_ERROR
    if grading is Grading.UNAVAILABLE:
        return ExitCode.EVIDENCE_UNAVAILABLE
    if verdict is Verdict.FAILED:
        return ExitCode.TASK_FAILED
    return ExitCode.OK
