"""The trial engine: fixture → host → graders → verdict → persist → cleanup, for one trial.

Graders never run hosts and hosts never grade. Evidence is written before the workspace is
removed; if writing fails the workspace is kept and named.
"""

from __future__ import annotations

import datetime
import hashlib
import re
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from attrs import evolve, frozen

from sevro_core.errors import GradingError, PersistenceError, SevroError
from sevro_core.fixtures.workspace import PRIVATE_PREFIX, create_workspace, remove_tree
from sevro_core.formats.canonical import canonical_json
from sevro_core.isolation.sandbox import Isolation
from sevro_core.limits import (
    MAX_ARTIFACT_BYTES,
    MAX_ARTIFACTS,
    MAX_CHECK_OBSERVATION_BYTES,
    MAX_DIAGNOSTIC_CHARS,
    MAX_FINAL_MESSAGE_BYTES,
    MAX_FIXTURE_ARTIFACTS,
    MAX_FIXTURE_OBSERVATIONS,
    MAX_OBSERVATION_BYTES,
    MAX_OBSERVATIONS,
    MAX_OBSERVATIONS_PER_CHECK,
    MAX_TOTAL_ARTIFACT_BYTES,
)
from sevro_core.models import (
    UNKNOWN_USAGE,
    CancelToken,
    CheckOutcome,
    HostRequest,
    HostResult,
    Observation,
    TrialStates,
    TrialView,
)
from sevro_core.plugin.protocols import ID_PATTERN, FixtureReport
from sevro_core.run.planning import PlannedCase, RunPlan
from sevro_core.states import (
    CheckStatus,
    Completeness,
    Execution,
    Grading,
    Verdict,
    trial_grading,
)
from sevro_core.store.evidence import TRIAL_FORMAT, EvidenceStore
from sevro_core.vocabulary import ENGINE_OBSERVATION_PREFIX, FINAL_MESSAGE_OBSERVATION

WORKSPACE_TOKEN = "{{sevro.workspace}}"  # noqa: S105 - a template token
_ID_RE = re.compile(ID_PATTERN)


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
        )

    def summary(self) -> dict[str, Any]:
        return {
            "trial": self.trial,
            "execution": self.states.execution.value,
            "grading": self.states.grading.value,
            "task": self.states.verdict.value,
            "checks": [
                {"id": c.id, "grader": c.grader, "status": c.status.value} for c in self.checks
            ],
            "artifactPath": str(self.path) if self.path is not None else None,
        }


def not_admitted(case_id: str, trial: int, *, cancelled: bool) -> TrialRecord:
    execution = Execution.CANCELLED if cancelled else Execution.NOT_RUN
    return TrialRecord(
        case_id=case_id,
        trial=trial,
        states=TrialStates(execution, Grading.NOT_REQUESTED, Verdict.NOT_ASSESSED),
        checks=(),
        path=None,
        error_code="sevro.run.cancelled" if cancelled else "sevro.run.not-admitted",
    )


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="milliseconds")


def _ms(start: float, end: float) -> float:
    return round((end - start) * 1000, 3)


def render_prompt(template: str, workspace: Path) -> str:
    return template.replace(WORKSPACE_TOKEN, str(workspace))


def execute_trial(
    plan: RunPlan, planned: PlannedCase, trial: int, cancel: CancelToken, store: EvidenceStore
) -> TrialRecord:
    """Run one trial end to end and persist its evidence."""
    case = planned.case
    started_at = _now()
    t0 = time.monotonic()
    workspace = create_workspace(plan.settings.workspace_root)
    private = create_workspace(plan.settings.workspace_root, prefix=PRIVATE_PREFIX)
    with _fixture_step(case.id, "materialised", workspace, private):
        fixture = planned.fixture.materialise(workspace)
    baseline: Mapping[str, Any] = {}
    if fixture.probe is not None and not plan.settings.dry:
        with _fixture_step(case.id, "inspected before the host", workspace, private):
            baseline = fixture.probe.baseline(cancel)
    t_fixture = time.monotonic()
    report = FixtureReport()
    isolation = plan.sandbox.bind(
        workspace=workspace, private_root=private, cancel=cancel, fixture_bin_dir=fixture.bin_dir
    )
    if plan.settings.dry:
        host_result = None
        execution, error = Execution.NOT_RUN, None
    else:
        prompts = tuple(
            render_prompt(p, workspace)
            for p in (case.prompt, case.follow_up_prompt)
            if p is not None
        )
        request = HostRequest(
            case_id=case.id,
            trial=trial,
            prompts=prompts,
            workspace=workspace,
            condition=plan.settings.condition,
            cancel=cancel,
            private_root=private,
            fixture_bin_dir=fixture.bin_dir,
            isolation=isolation,
        )
        host_result, execution, error = _run_host(plan, request)
    t_host = time.monotonic()
    if fixture.probe is not None and not plan.settings.dry:
        with _fixture_step(case.id, "inspected after the host", workspace, private):
            report = _checked_report(fixture.probe.observe(baseline, cancel), host_result)
    observations = _observations(host_result)
    observations.update((o.id, o) for o in report.observations)
    outcomes: list[CheckOutcome] = []
    grader_error: dict[str, str] | None = None
    if execution is Execution.COMPLETED:
        outcomes, grader_error = _grade(
            planned, trial, host_result, observations, isolation, baseline
        )
        if cancel.cancelled and grader_error is None and len(outcomes) < len(planned.checks):
            execution, error = Execution.CANCELLED, ("sevro.run.cancelled", "run cancelled")
    t_grade = time.monotonic()
    required = _required_evidence(planned, observations, host_result, report)
    grading = trial_grading(
        execution,
        grader_error=grader_error is not None,
        declared_checks=len(planned.checks),
        outcomes=[o.status for o in outcomes],
        required_evidence_missing=any(r["status"] != "complete" for r in required),
    )
    try:
        verdict = plan.verdict_policy.verdict(execution, grading, outcomes)
    except Exception as exc:  # a policy bug leaves the trial unassessed, never passed
        message = f"verdict policy {plan.verdict_policy.id} failed: {type(exc).__name__}: {exc}"
        grader_error = {
            "checkId": planned.case.checks[0].id if planned.case.checks else "-",
            "message": message[:MAX_DIAGNOSTIC_CHARS],
        }
        grading, verdict = Grading.ERROR, Verdict.NOT_ASSESSED
    if verdict is Verdict.PASSED and (
        execution is not Execution.COMPLETED or grading is not Grading.COMPLETED
    ):
        verdict = Verdict.NOT_ASSESSED  # no policy may pass what was not fully graded
    states = TrialStates(execution, grading, verdict)
    error_code = error[0] if error else ("sevro.grader.error" if grader_error else None)
    try:
        evidence = _evidence(
            plan,
            planned,
            trial,
            store,
            host_result,
            report,
            observations,
            outcomes,
            grader_error,
            required,
            states,
            error,
            durations={
                "fixtureMs": _ms(t0, t_fixture),
                "candidateMs": None if plan.settings.dry else _ms(t_fixture, t_host),
                "gradingMs": _ms(t_host, t_grade),
            },
            started_at=started_at,
            workspace=workspace,
            t0=t0,
        )
        path = store.case_dir(case.id) / f"trial-{trial}.json"
        record = TrialRecord(
            case_id=case.id,
            trial=trial,
            states=states,
            checks=tuple(outcomes),
            path=path,
            error_code=error_code,
            attempt=store.attempt,
        )
        document = {
            "format": TRIAL_FORMAT,
            "runId": store.run_id,
            "caseId": case.id,
            "trial": trial,
            "result": {**record.summary(), "artifactPath": store.relative(path)},
            "evidence": evidence,
        }
        _, digest = store.write_trial(document)
    except Exception as exc:
        remove_tree(private)
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise PersistenceError(
            f"trial persistence failed ({reason}); fixture retained at {workspace}"
        ) from exc
    remove_tree(workspace)
    remove_tree(private)
    return evolve(record, document=document, sha256=digest)


@contextmanager
def _fixture_step(case_id: str, step: str, workspace: Path, private: Path) -> Iterator[None]:
    """A fixture that fails is a runner failure (exit 70); its workspace is removed."""
    try:
        yield
    except Exception as exc:
        remove_tree(workspace)
        remove_tree(private)
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise SevroError(f"fixture for case {case_id} could not be {step}: {reason}") from exc


def _checked_report(report: FixtureReport, result: HostResult | None) -> FixtureReport:
    """Hold fixture evidence to the engine's bounds; a violation is a fixture bug."""
    taken = {o.id for o in result.observations} if result is not None else set()
    taken.add(FINAL_MESSAGE_OBSERVATION)
    artifacts = {a.id for a in result.artifacts} if result is not None else set()
    problem = None
    if len(report.observations) > MAX_FIXTURE_OBSERVATIONS:
        problem = f"more than {MAX_FIXTURE_OBSERVATIONS} observations"
    elif len(report.artifacts) > MAX_FIXTURE_ARTIFACTS:
        problem = f"more than {MAX_FIXTURE_ARTIFACTS} artifacts"
    for obs in report.observations:
        if not _ID_RE.match(obs.id) or obs.id in taken:
            problem = f"observation id {obs.id!r} is not namespaced or is already taken"
        taken.add(obs.id)
        if len(canonical_json(obs.to_json())) > MAX_OBSERVATION_BYTES:
            problem = f"observation {obs.id} exceeds {MAX_OBSERVATION_BYTES} bytes"
    for artifact in report.artifacts:
        if not _ID_RE.match(artifact.id) or artifact.id in artifacts:
            problem = f"artifact id {artifact.id!r} is not namespaced or is already taken"
        artifacts.add(artifact.id)
        if len(artifact.content) > MAX_ARTIFACT_BYTES:
            problem = f"artifact {artifact.id} exceeds {MAX_ARTIFACT_BYTES} bytes"
    if problem is not None:
        raise ValueError(f"fixture evidence refused: {problem}")
    return report


def _run_host(
    plan: RunPlan, request: HostRequest
) -> tuple[HostResult | None, Execution, tuple[str, str] | None]:
    try:
        result = plan.host.run(request)
    except Exception as exc:  # a host bug is an execution failure, never a pass
        return (
            None,
            Execution.FAILED,
            ("sevro.host.failed", f"host raised {type(exc).__name__}: {exc}"),
        )
    if result.cancelled or (request.cancel.cancelled and not result.complete):
        return result, Execution.CANCELLED, ("sevro.run.cancelled", "run cancelled")
    if result.execution_failed:
        return result, Execution.FAILED, ("sevro.host.failed", result.error or "host failed")
    problem = _bounds_problem(result)
    if problem is not None:
        return None, Execution.FAILED, ("sevro.host.invalid-result", problem)
    return result, Execution.COMPLETED, None


def _bounds_problem(result: HostResult) -> str | None:
    final = result.final_message
    if final is not None and len(final.encode("utf-8", "surrogatepass")) > MAX_FINAL_MESSAGE_BYTES:
        return f"final message is larger than {MAX_FINAL_MESSAGE_BYTES} bytes"
    if len(result.observations) > MAX_OBSERVATIONS:
        return f"more than {MAX_OBSERVATIONS} observations"
    seen: set[str] = set()
    total = 0
    for obs in result.observations:
        if not _ID_RE.match(obs.id) or obs.id.startswith(ENGINE_OBSERVATION_PREFIX):
            return f"observation id {obs.id!r} is not namespaced or is reserved for the engine"
        if obs.id in seen:
            return f"observation id {obs.id!r} appears twice"
        seen.add(obs.id)
        try:
            total += len(canonical_json(obs.to_json()))
        except ValueError as exc:
            return f"observation {obs.id} is not JSON: {exc}"
    if total > MAX_OBSERVATION_BYTES:
        return f"observations exceed {MAX_OBSERVATION_BYTES} bytes"
    if len(result.artifacts) > MAX_ARTIFACTS:
        return f"more than {MAX_ARTIFACTS} artifacts"
    ids = [a.id for a in result.artifacts]
    if len(set(ids)) != len(ids) or not all(_ID_RE.match(i) for i in ids):
        return "artifact ids must be namespaced and unique"
    sizes = [len(a.content) for a in result.artifacts]
    if any(s > MAX_ARTIFACT_BYTES for s in sizes) or sum(sizes) > MAX_TOTAL_ARTIFACT_BYTES:
        return "artifacts exceed their size bounds"
    return None


def _final_observation(result: HostResult | None) -> Observation:
    if result is None or result.final_message is None:
        return Observation(FINAL_MESSAGE_OBSERVATION, "sevro.engine", Completeness.UNAVAILABLE, {})
    data = result.final_message.encode("utf-8", "surrogatepass")
    completeness = Completeness.COMPLETE if result.complete else Completeness.PARTIAL
    return Observation(
        FINAL_MESSAGE_OBSERVATION,
        "sevro.engine",
        completeness,
        {"sha256": hashlib.sha256(data).hexdigest(), "byteLength": len(data)},
    )


def _observations(result: HostResult | None) -> dict[str, Observation]:
    out = {FINAL_MESSAGE_OBSERVATION: _final_observation(result)}
    if result is not None:
        out.update((o.id, o) for o in result.observations)
    return out


def _grade(
    planned: PlannedCase,
    trial: int,
    result: HostResult | None,
    observations: dict[str, Observation],
    isolation: Isolation,
    baseline: Mapping[str, Any],
) -> tuple[list[CheckOutcome], dict[str, str] | None]:
    """Grade in stage order; observations that graders record join ``observations``."""
    final = observations[FINAL_MESSAGE_OBSERVATION]
    cancel = isolation.cancel
    view = TrialView(
        case_id=planned.case.id,
        trial=trial,
        final_message=result.final_message if result is not None else None,
        final_message_complete=final.completeness is Completeness.COMPLETE,
        observations=observations,
        workspace=isolation.workspace,
        baseline=baseline,
        fixture_bin_dir=isolation.fixture_bin_dir,
        isolation=isolation,
    )
    by_id: dict[str, CheckOutcome] = {}
    error: dict[str, str] | None = None
    for check in planned.graded_checks:
        if cancel.cancelled:
            break
        declaration = check.declaration
        try:
            outcome = check.compiled.grade(declaration.id, view)
            problem = _check_observations_problem(outcome, observations)
        except GradingError as exc:
            message = str(exc)
        except Exception as exc:  # a grader bug is a grading error, never a pass
            message = f"{type(exc).__name__}: {exc}"
        else:
            if problem is None:
                by_id[declaration.id] = evolve(outcome, observations=())
                observations.update((o.id, o) for o in outcome.observations)
                continue
            message = problem
        if cancel.reason is not None:
            break  # interrupted mid-check: the trial is cancelled, not a grading error
        message = message[:MAX_DIAGNOSTIC_CHARS]
        error = error or {"checkId": declaration.id, "message": message}
        by_id[declaration.id] = CheckOutcome(
            declaration.id,
            declaration.grader,
            CheckStatus.UNAVAILABLE,
            detail=f"grader error: {message}",
        )
    ordered = [by_id[c.id] for c in planned.case.checks if c.id in by_id]
    return ordered, error


def _check_observations_problem(
    outcome: CheckOutcome, observations: Mapping[str, Observation]
) -> str | None:
    """Why a grader's observations cannot be kept, or None: they are bounded like a host's."""
    if len(outcome.observations) > MAX_OBSERVATIONS_PER_CHECK:
        return f"more than {MAX_OBSERVATIONS_PER_CHECK} observations for one check"
    for obs in outcome.observations:
        if not _ID_RE.match(obs.id) or obs.id in observations:
            return f"observation id {obs.id!r} is not namespaced or is already taken"
        try:
            size = len(canonical_json(obs.to_json()))
        except ValueError as exc:
            return f"observation {obs.id} is not JSON: {exc}"
        if size > MAX_CHECK_OBSERVATION_BYTES:
            return f"observation {obs.id} exceeds {MAX_CHECK_OBSERVATION_BYTES} bytes"
    return None


def _required_evidence(
    planned: PlannedCase,
    observations: Mapping[str, Observation],
    result: HostResult | None,
    report: FixtureReport,
) -> list[dict[str, str]]:
    artifacts = {a.id for a in result.artifacts} if result is not None else set()
    artifacts |= {a.id for a in report.artifacts}
    out = []
    for evidence_id in planned.case.required_evidence:
        if evidence_id in observations:
            status = observations[evidence_id].completeness.value
        else:
            status = "complete" if evidence_id in artifacts else "unavailable"
        out.append({"id": evidence_id, "status": status})
    return out


def _evidence(
    plan: RunPlan,
    planned: PlannedCase,
    trial: int,
    store: EvidenceStore,
    result: HostResult | None,
    report: FixtureReport,
    observations: Mapping[str, Observation],
    outcomes: Sequence[CheckOutcome],
    grader_error: Mapping[str, str] | None,
    required: list[dict[str, str]],
    states: TrialStates,
    error: tuple[str, str] | None,
    *,
    durations: dict[str, Any],
    started_at: str,
    workspace: Path,
    t0: float,
) -> dict[str, Any]:
    case_id = planned.case.id
    raw = None
    artifact_refs = []
    if result is not None and result.final_message is not None:
        raw = store.write_blob(
            case_id,
            f"trial-{trial}-raw.txt",
            result.final_message.encode("utf-8", "surrogatepass"),
        )
    for artifact in (*(result.artifacts if result is not None else ()), *report.artifacts):
        ref = store.write_blob(case_id, f"trial-{trial}-{artifact.id}.bin", artifact.content)
        artifact_refs.append({"id": artifact.id, **ref})
    execution: dict[str, Any] = {"status": states.execution.value}
    if error is not None:
        execution["errorCode"], execution["message"] = error[0], error[1][:MAX_DIAGNOSTIC_CHARS]
    durations["totalMs"] = _ms(t0, time.monotonic())
    final = observations[FINAL_MESSAGE_OBSERVATION]
    return {
        "caseId": case_id,
        "trial": trial,
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
        "observations": [o.to_json() for o in observations.values()],
        "checks": [o.to_json() for o in outcomes],
        "requiredEvidence": required,
        "metrics": [],
        "routes": [plan.route.to_json()],
        "usage": (result.usage if result is not None else UNKNOWN_USAGE).to_json(),
        "turnsCompleted": result.turns_completed if result is not None else 0,
        "durations": durations,
        "rawResult": raw,
        "artifactRefs": artifact_refs,
        "fixture": {"provider": planned.fixture_provider, "digest": planned.digests["fixture"]},
        "sandbox": plan.sandbox.evidence(),
        "workspace": str(workspace),
        "startedAt": started_at,
        "finishedAt": _now(),
    }
