"""Aggregation of trial records into case and run states, and the result documents.

``sevro.cli-result.v1`` is what ``--json`` prints and what ``run.json`` embeds; a pre-run
failure has its own minimal form (``runId: null``, exit 64 or 70). ``run.json`` itself
(:func:`run_document`) is built here too, beside the result it retains.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sevro_core.limits import MAX_DIAGNOSTIC_CHARS
from sevro_core.prices import builtin_prices
from sevro_core.run.records import TrialRecord
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
from sevro_core.store.evidence import RUN_FORMAT

if TYPE_CHECKING:  # `sevro report` imports this module and must not load the planner
    from sevro_core.experiments.comparison import ComparatorJudging
    from sevro_core.plugin.casesources import OpenedCaseSource
    from sevro_core.plugin.protocols import Plugin
    from sevro_core.run.planning import RunPlan
    from sevro_core.store.evidence import EvidenceStore

CLI_RESULT_FORMAT = "sevro.cli-result.v1"


def _first_code(records: Sequence[TrialRecord], predicate: Any) -> str | None:
    return next((r.error_code for r in records if predicate(r) and r.error_code), None)


def case_summary(
    case_id: str, records: Sequence[TrialRecord], threshold: float, arm: str | None = None
) -> dict[str, Any]:
    """One case's (in an experiment: one case and arm's) aggregate over its trials."""
    verdicts = [r.states.verdict for r in records]
    passed = sum(1 for v in verdicts if v is Verdict.PASSED)
    assessed = all(v is not Verdict.NOT_ASSESSED for v in verdicts)
    return {
        "caseId": case_id,
        **({"arm": arm} if arm is not None else {}),
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
    units: Sequence[tuple[str, str | None]],
    records: Sequence[TrialRecord],
    threshold: float,
    dry: bool,
    evidence_path: Path,
    signal_exit: ExitCode | None = None,
    diagnostic: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    by_unit: dict[tuple[str, str | None], list[TrialRecord]] = {unit: [] for unit in units}
    for record in records:
        by_unit.setdefault((record.case_id, record.arm), []).append(record)
    cases = [
        case_summary(case_id, by_unit[(case_id, arm)], threshold, arm) for case_id, arm in units
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


def run_document(
    plan: RunPlan,
    store: EvidenceStore,
    status: str,
    started_at: str,
    result: dict[str, Any],
    records: Sequence[TrialRecord],
    attempts: Sequence[dict[str, Any]],
    statistics: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """``run.json``: what was evaluated, how, by which plugins, every attempt and trial file."""
    settings, source = plan.settings, plan.case_source
    return {
        "format": RUN_FORMAT,
        "runId": store.run_id,
        "status": status,
        "startedAt": started_at,
        "finishedAt": _now(),
        "evaluationIdentity": dict(plan.identity),
        "configuration": dict(plan.configuration),
        "runner": dict(plan.runner),
        "project": {k: v for k, v in plan.project.items() if k != "digest"},
        "extension": dict(source.configuration) if source is not None else None,
        "condition": {
            "requested": settings.condition,
            "actual": settings.condition if not settings.dry else "unknown",
            "requestedInstrumentation": _instrumentation(source, "requested"),
            "appliedInstrumentation": _instrumentation(source, "applied"),
        },
        "graders": {
            "active": [dict(g) for g in plan.graders_active],
            "replacedDefaults": list(source.replaced_graders) if source is not None else [],
        },
        "verdictPolicy": _id_version(plan.verdict_policy),
        "routes": [route.to_json() for route in plan.routes],
        "executor": _id_version(plan.executor),  # who ran the trials: not in the identity
        "plugins": [
            {"name": p.name, "distribution": p.distribution, "version": p.version}
            for p in plan.registry.plugins
        ],
        "cases": [
            {
                "caseId": p.case.id,
                "source": p.case.source + (f"#{p.case.pointer}" if p.case.pointer else ""),
                "fixtureProvider": p.fixture_provider,
                "digests": dict(p.digests),
            }
            for p in plan.cases
            if p.arm is None or p.arm == plan.arms[0]
        ],
        "attempts": [dict(a) for a in attempts],
        "trials": [
            {
                "caseId": r.case_id,
                **({"arm": r.arm} if r.arm is not None else {}),
                "trial": r.trial,
                "attempt": r.attempt if r.path is not None else None,
                "path": store.relative(r.path) if r.path is not None else None,
                "sha256": r.sha256 if r.path is not None else None,
            }
            for r in records
        ],
        "result": retained_result(result, store.run_dir),
        "prices": (settings.host_options.prices or builtin_prices()).evidence(),
        **_experiment_parts(plan, statistics),
        **_judge_calibration(plan),
        **({"holdout": dict(settings.holdout)} if settings.holdout is not None else {}),
    }


def _id_version(plugin: Plugin) -> dict[str, str]:
    return {"id": plugin.id, "version": str(plugin.version)}


def _instrumentation(source: OpenedCaseSource | None, which: str) -> list[Any]:
    """What the case source's preparation requested of the host, or what the host applies."""
    record = source.identity.get("instrumentation") if source is not None else None
    return list(record[which]) if isinstance(record, dict) else []


def _experiment_parts(plan: RunPlan, statistics: Mapping[str, Any] | None) -> dict[str, Any]:
    """``arms``, ``experiment`` and ``statistics`` of an experiment's ``run.json`` (nothing for a
    plain run)."""
    experiment = plan.settings.experiment
    if experiment is None:
        return {}
    parts: dict[str, Any] = {
        "arms": [
            {**arm.resolved.to_json(), "route": arm.host.route.to_json()} for arm in plan.arms
        ],
        "experiment": experiment.to_json(),
    }
    if statistics is not None:
        parts["statistics"] = dict(statistics)
    return parts


def run_statistics(
    plan: RunPlan,
    records: Sequence[TrialRecord],
    judging: Mapping[tuple[str, str], ComparatorJudging] | None = None,
) -> dict[str, Any] | None:
    """The experiment's statistics from its trial documents (None for a plain run), with the
    comparator's ``judging`` of its comparisons when the run has a comparator.

    Trials that never ran have no document: their pairs are inconclusive, never dropped."""
    experiment = plan.settings.experiment
    if experiment is None:
        return None
    from sevro_core.experiments.comparison import statistics_of_run

    run = {"arms": [{"id": arm.id} for arm in plan.arms], "experiment": experiment.to_json()}
    documents = [r.document for r in records if r.document is not None]
    cases = list(dict.fromkeys(p.case.id for p in plan.cases))
    return statistics_of_run(run, documents, cases, judging=judging)


def regression_exit(
    plan: RunPlan, result: dict[str, Any], statistics: Mapping[str, Any] | None
) -> dict[str, Any]:
    """``--fail-on-regression``: a run that would exit 0 exits 1 when a comparison regressed."""
    if not plan.settings.fail_on_regression or statistics is None or result["exitCode"] != 0:
        return result
    from sevro_core.experiments.comparison import regressed

    if not regressed(statistics):
        return result
    return {
        **result,
        "exitCode": int(ExitCode.TASK_FAILED),
        "diagnostic": {
            "code": "sevro.experiment.regressed",
            "message": "a comparison regressed (--fail-on-regression)",
        },
    }


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="milliseconds")


def _judge_calibration(plan: RunPlan) -> dict[str, Any]:
    """``judgeCalibration``: whether each verdict-bearing judge was calibrated, and how well
    (absent when the run has no semantic or comparator judge)."""
    if not plan.calibrations:
        return {}
    return {"judgeCalibration": [status.to_json() for status in plan.calibrations]}
