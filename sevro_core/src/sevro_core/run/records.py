"""A trial as the run sees it once it is over: its states, checks and where its evidence is.

The scheduler collects these, the runner checkpoints them, the result documents aggregate them
and resume rebuilds them from trial files an earlier attempt persisted. Reading one needs
nothing of the engine, so `sevro report` can aggregate without loading it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from attrs import frozen

from sevro_core.models import CheckOutcome, TrialStates, unit_key
from sevro_core.states import CheckStatus, Execution, Grading, Verdict
from sevro_core.store.spendgate import SPEND_STOP_CODE

EXECUTOR_LOST_CODE = "sevro.executor.lost"
"""The execution error of a trial whose remote worker or node died: a failure, never a pass,
and run again on resume (the run state cannot say how far it got)."""


@frozen
class TrialRecord:
    """A finished (or never admitted) trial, as the aggregator and the CLI need it."""

    case_id: str
    trial: int
    states: TrialStates
    checks: tuple[CheckOutcome, ...]
    path: Path | None
    error_code: str | None = None
    document: Mapping[str, Any] | None = None
    attempt: int = 1
    sha256: str | None = None
    arm: str | None = None
    """The experiment arm the trial belongs to (None in a plain run)."""

    @property
    def unit(self) -> str:
        """What the run keys the trial by with its number: the case, or ``case@arm``."""
        return unit_key(self.case_id, self.arm)

    @classmethod
    def from_document(cls, document: Mapping[str, Any], path: Path, sha256: str) -> TrialRecord:
        """Rebuild the record of a trial persisted by an earlier attempt."""
        evidence = document["evidence"]
        error_code = evidence["execution"].get("errorCode")
        if error_code is None and evidence["grading"]["error"] is not None:
            error_code = "sevro.grader.error"
        checks = tuple(
            CheckOutcome(
                c["id"],
                c["grader"],
                CheckStatus(c["status"]),
                c.get("detail"),
                tuple(c["evidenceRefs"]),
                part_of=c.get("partOf"),
            )
            for c in evidence["checks"]
        )
        states = TrialStates(
            Execution(evidence["execution"]["status"]),
            Grading(evidence["grading"]["status"]),
            Verdict(evidence["task"]["verdict"]),
        )
        return cls(
            case_id=document["caseId"],
            trial=document["trial"],
            states=states,
            checks=checks,
            path=path,
            error_code=error_code,
            document=document,
            attempt=evidence["attempt"],
            sha256=sha256,
            arm=document.get("arm"),
        )

    def summary(self) -> dict[str, Any]:
        return {
            "trial": self.trial,
            "execution": self.states.execution.value,
            "grading": self.states.grading.value,
            "task": self.states.verdict.value,
            "checks": [_check_summary(c) for c in self.checks],
            "artifactPath": str(self.path) if self.path is not None else None,
        }


def _check_summary(check: CheckOutcome) -> dict[str, Any]:
    """A check's line in the CLI result: an assertion names the check it is part of, so a
    consumer of ``--json`` does not count it as a declared check."""
    out: dict[str, Any] = {"id": check.id, "grader": check.grader, "status": check.status.value}
    if check.part_of is not None:
        out["partOf"] = check.part_of
    return out


def not_admitted(
    case_id: str, trial: int, *, cancelled: bool, arm: str | None = None, spend: bool = False
) -> TrialRecord:
    """A trial the scheduler never started (the run was cancelled or stopped admitting;
    ``spend``: its spend ceiling stopped it)."""
    execution = Execution.CANCELLED if cancelled else Execution.NOT_RUN
    code = "sevro.run.cancelled" if cancelled else "sevro.run.not-admitted"
    if spend and not cancelled:
        code = SPEND_STOP_CODE
    return TrialRecord(
        arm=arm,
        case_id=case_id,
        trial=trial,
        states=TrialStates(execution, Grading.NOT_REQUESTED, Verdict.NOT_ASSESSED),
        checks=(),
        path=None,
        error_code=code,
    )
