"""Aggregation of trial records into case and run states, and the result documents.

``sevro.cli-result.v1`` is what ``--json`` prints and what ``run.json`` embeds; a pre-run
failure has its own minimal form (``runId: null``, exit 64 or 70).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sevro_core.limits import MAX_DIAGNOSTIC_CHARS
from sevro_core.states import (
    Execution,
    ExitCode,
    Grading,
    Verdict,
    aggregate_execution,
    aggregate_grading,
    case_verdict,
    exit_code_for,
    run_verdict,
)

if TYPE_CHECKING:  # `sevro report` imports this module and must not load the engine
    from sevro_core.run.engine import TrialRecord

CLI_RESULT_FORMAT = "sevro.cli-result.v1"


def _first_code(records: Sequence[TrialRecord], predicate: Any) -> str | None:
    return next((r.error_code for r in records if predicate(r) and r.error_code), None)


def case_summary(case_id: str, records: Sequence[TrialRecord], threshold: float) -> dict[str, Any]:
    verdicts = [r.states.verdict for r in records]
    passed = sum(1 for v in verdicts if v is Verdict.PASSED)
    assessed = all(v is not Verdict.NOT_ASSESSED for v in verdicts)
    return {
        "caseId": case_id,
        "execution": aggregate_execution(r.states.execution for r in records).value,
        "grading": aggregate_grading(r.states.grading for r in records).value,
        "task": case_verdict(verdicts, threshold).value,
        "trialCount": len(records),
        "passedTrials": passed,
        "passRate": (passed / len(records)) if records and assessed else None,
        "trials": [r.summary() for r in records],
    }


def cli_result(
    *,
    run_id: str,
    case_ids: Sequence[str],
    records: Sequence[TrialRecord],
    threshold: float,
    dry: bool,
    evidence_path: Path,
    signal_exit: ExitCode | None = None,
    diagnostic: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    cases = [
        case_summary(cid, [r for r in records if r.case_id == cid], threshold) for cid in case_ids
    ]
    execution = aggregate_execution(Execution(c["execution"]) for c in cases)
    grading = aggregate_grading(Grading(c["grading"]) for c in cases)
    verdict = run_verdict([Verdict(c["task"]) for c in cases])
    code = exit_code_for(execution, grading, verdict, dry=dry, signal_exit=signal_exit)
    execution_part: dict[str, Any] = {"status": execution.value}
    failed_code = _first_code(
        records, lambda r: r.states.execution is execution and execution is not Execution.COMPLETED
    )
    if failed_code:
        execution_part["errorCode"] = failed_code
    grading_part: dict[str, Any] = {"status": grading.value}
    if grading is Grading.ERROR:
        grading_part["errorCode"] = "sevro.grader.error"
    elif grading is Grading.UNAVAILABLE:
        grading_part["errorCode"] = "sevro.evidence.unavailable"
    document: dict[str, Any] = {
        "format": CLI_RESULT_FORMAT,
        "runId": run_id,
        "execution": execution_part,
        "grading": grading_part,
        "task": {"verdict": verdict.value},
        "exitCode": int(code),
        "evidencePath": str(evidence_path),
        "cases": cases,
    }
    if diagnostic is not None:
        document["diagnostic"] = {
            "code": diagnostic["code"],
            "message": diagnostic["message"][:MAX_DIAGNOSTIC_CHARS],
        }
    return document


def _with_paths(result: Mapping[str, Any], convert: Any) -> dict[str, Any]:
    out = dict(result)
    if out.get("evidencePath") is not None:
        out["evidencePath"] = convert(out["evidencePath"])
    out["cases"] = [
        {
            **case,
            "trials": [
                {**t, "artifactPath": convert(t["artifactPath"])}
                if t.get("artifactPath") is not None
                else t
                for t in case["trials"]
            ],
        }
        for case in result.get("cases", [])
    ]
    return out


def retained_result(result: Mapping[str, Any], run_dir: Path) -> dict[str, Any]:
    """The result as ``run.json`` keeps it: paths relative to the run directory.

    ``--json`` prints absolute paths, for the caller to open; the retained copy must stay
    valid when the run directory is moved or archived. Paths outside ``run_dir`` (none that
    sevro writes) are left as they are.
    """

    prefix = f"{run_dir}/"  # text, not Path: a result can list 10 000 trials

    def relative(path: str) -> str:
        return path[len(prefix) :] if path.startswith(prefix) else path

    return _with_paths(result, relative)


def located_result(result: Mapping[str, Any], run_dir: Path) -> dict[str, Any]:
    """A retained result with its paths made absolute again, under ``run_dir``."""
    return _with_paths(result, lambda path: path if path[:1] == "/" else f"{run_dir}/{path}")


def pre_run_failure(code: str, message: str, exit_code: ExitCode) -> dict[str, Any]:
    """The result of a run that never started (bad input: 64; internal failure: 70)."""
    return {
        "format": CLI_RESULT_FORMAT,
        "runId": None,
        "execution": {"status": "not_run"},
        "grading": {"status": "not_requested"},
        "task": {"verdict": "not_assessed"},
        "exitCode": int(exit_code),
        "evidencePath": None,
        "cases": [],
        "diagnostic": {"code": code, "message": message[:MAX_DIAGNOSTIC_CHARS]},
    }
