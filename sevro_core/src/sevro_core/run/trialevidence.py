"""The trial document: what one finished trial's evidence says, built from what the engine found.

The engine establishes the facts (:class:`TrialFindings`); this module turns them into the
``sevro.trial-evidence.v1`` document, writing the raw final message and artifacts as blobs on the
way. Resume and ``sevro report`` read these documents back (:class:`~sevro_core.run.records.
TrialRecord` rebuilds a record from one).
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from attrs import frozen

from sevro_core.judges.advisory import AdvisoryReview
from sevro_core.judges.session import JudgeSession
from sevro_core.limits import MAX_DIAGNOSTIC_CHARS
from sevro_core.models import (
    UNKNOWN_USAGE,
    CheckOutcome,
    HostResult,
    Observation,
    TrialStates,
)
from sevro_core.plugin.casesources import EvaluationResult
from sevro_core.plugin.protocols import FixtureReport
from sevro_core.run.planning import PlannedCase, RunPlan
from sevro_core.run.records import TrialRecord
from sevro_core.store.evidence import TRIAL_FORMAT, EvidenceStore
from sevro_core.vocabulary import FINAL_MESSAGE_OBSERVATION


def timestamp() -> str:
    """Now, in UTC, to the millisecond: the form of every ``startedAt``/``finishedAt``."""
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="milliseconds")


def elapsed_ms(start: float, end: float) -> float:
    return round((end - start) * 1000, 3)


@frozen
class TrialFindings:
    """Everything one trial established, gathered so its evidence is built in one place."""

    plan: RunPlan
    planned: PlannedCase
    trial: int
    workspace: Path
    started_at: str
    t0: float
    """``time.monotonic()`` when the trial started; ``totalMs`` runs until the evidence is built."""
    durations: Mapping[str, float | None]
    """``fixtureMs``, ``candidateMs`` (None when dry) and ``gradingMs``."""
    result: HostResult | None
    report: FixtureReport
    observations: Mapping[str, Observation]
    outcomes: Sequence[CheckOutcome]
    grader_error: Mapping[str, str] | None
    required: Sequence[Mapping[str, str]]
    states: TrialStates
    error: tuple[str, str] | None
    """The execution error (code, message), if the trial did not complete."""
    judges: JudgeSession | None = None
    """The trial's judge calls (prompts, replies, usage per role), when the run has judges."""
    advisory: AdvisoryReview | None = None
    """The advisory review (``advisoryReview``), when the run has an advisory judge."""
    evaluation: EvaluationResult | None = None
    """The case source's evaluation (metrics, domain outcomes, the exchange's record)."""


def _write_blobs(
    findings: TrialFindings, store: EvidenceStore
) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """The raw final message and every artifact, as blob references (None/[] when absent)."""
    case_id, trial, result = findings.planned.unit, findings.trial, findings.result
    raw = None
    artifact_refs = []
    if result is not None and result.final_message is not None:
        raw = store.write_blob(
            case_id,
            f"trial-{trial}-raw.txt",
            result.final_message.encode("utf-8", "surrogatepass"),
        )
    judged = findings.judges.artifacts() if findings.judges is not None else ()
    host = result.artifacts if result is not None else ()
    for artifact in (*host, *findings.report.artifacts, *judged):
        ref = store.write_blob(case_id, f"trial-{trial}-{artifact.id}.bin", artifact.content)
        artifact_refs.append({"id": artifact.id, **ref})
    return raw, artifact_refs


def _routes(findings: TrialFindings) -> list[dict[str, str]]:
    """The candidate's route, then each judge route the trial asked (one per role)."""
    routes = [findings.plan.host_for(findings.planned).route.to_json()]
    if findings.judges is not None:
        asked = {call.role: call.reply.route.to_json() for call in findings.judges.calls}
        routes += [route for _, route in sorted(asked.items())]
    return routes


def trial_evidence(findings: TrialFindings, store: EvidenceStore) -> dict[str, Any]:
    """The ``evidence`` part of the trial document (blobs are written first)."""
    plan, planned, result, states = (
        findings.plan,
        findings.planned,
        findings.result,
        findings.states,
    )
    raw, artifact_refs = _write_blobs(findings, store)
    execution: dict[str, Any] = {"status": states.execution.value}
    if findings.error is not None:
        code, message = findings.error
        execution["errorCode"], execution["message"] = code, message[:MAX_DIAGNOSTIC_CHARS]
    durations = {**findings.durations, "totalMs": elapsed_ms(findings.t0, time.monotonic())}
    final = findings.observations[FINAL_MESSAGE_OBSERVATION]
    grader_error = findings.grader_error
    judges = findings.judges.evidence() if findings.judges is not None else None
    evidence = {
        "caseId": planned.case.id,
        "trial": findings.trial,
        "attempt": store.attempt,
        "evaluationDigest": plan.identity["digest"],
        "caseDigest": planned.digests["identity"],
        "executionMode": "dry" if plan.settings.dry else "executed",
        "condition": {
            "requested": plan.settings.condition,
            "actual": "unknown" if result is None else plan.settings.condition,
        },
        "execution": execution,
        "grading": {
            "status": states.grading.value,
            "error": dict(grader_error) if grader_error else None,
        },
        "task": {
            "verdict": states.verdict.value,
            "policy": {"id": plan.verdict_policy.id, "version": str(plan.verdict_policy.version)},
        },
        "observationCompleteness": final.completeness.value,
        "observations": [o.to_json() for o in findings.observations.values()],
        "checks": [o.to_json() for o in findings.outcomes],
        "requiredEvidence": [dict(r) for r in findings.required],
        "metrics": [dict(m) for m in findings.evaluation.metrics] if findings.evaluation else [],
        "routes": _routes(findings),
        "usage": (result.usage if result is not None else UNKNOWN_USAGE).to_json(),
        "turnsCompleted": result.turns_completed if result is not None else 0,
        "durations": durations,
        "rawResult": raw,
        "artifactRefs": artifact_refs,
        "fixture": {"provider": planned.fixture_provider, "digest": planned.digests["fixture"]},
        "sandbox": plan.sandbox.evidence(),
        "workspace": str(findings.workspace),
        "startedAt": findings.started_at,
        "finishedAt": timestamp(),
    }
    if judges is not None:
        evidence["judges"] = judges
    evidence.update(_extension_evidence(findings))
    if findings.advisory is not None:
        evidence["advisoryReview"] = findings.advisory.to_json()
    return evidence


def _extension_evidence(findings: TrialFindings) -> dict[str, Any]:
    """What a case source added to the trial: its preparation and evaluation records, domain
    outcomes and the selected task-verdict policy's recommendation (never its configuration)."""
    source = findings.plan.case_source
    if source is None:
        return {}
    evaluation = findings.evaluation
    preparation = source.preparations.get(findings.planned.case.id)
    out: dict[str, Any] = {
        "domainOutcomes": [dict(d) for d in evaluation.domain_outcomes] if evaluation else [],
        "extension": {
            "preparation": dict(preparation.record) if preparation is not None else None,
            "evaluation": dict(evaluation.record) if evaluation is not None else None,
            "error": evaluation.error if evaluation is not None else None,
        },
    }
    if source.task_verdict_policy is not None:
        out["taskVerdictPolicy"] = {
            "id": source.task_verdict_policy,
            "recommendation": evaluation.recommendation if evaluation is not None else None,
        }
    return out


def trial_document(
    record: TrialRecord, path: Path, evidence: Mapping[str, Any], store: EvidenceStore
) -> dict[str, Any]:
    """The whole ``sevro.trial-evidence.v1`` file at ``path``: the record's summary, evidence."""
    document: dict[str, Any] = {
        "format": TRIAL_FORMAT,
        "runId": store.run_id,
        "caseId": record.case_id,
        "trial": record.trial,
        "result": {**record.summary(), "artifactPath": store.relative(path)},
        "evidence": evidence,
    }
    if record.arm is not None:
        document["arm"] = record.arm
    return document
